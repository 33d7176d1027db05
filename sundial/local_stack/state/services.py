"""The emulator's KMS keys, Secrets Manager secrets and SSM parameters, kept in the state directory
beside its tables, so that a restart still opens every sealed value and resolves every reference.

Each service is one file, `<service>.state`: the whole of moto's state for it, pickled, written anew
after each request that may change it (a key, secret or parameter made, put, labelled or deleted).
They change rarely, and are small. Each write goes to `<service>.tmp`, is fsync'd, then renamed over
the file and the directory fsync'd: a kill at any point leaves the old file or the new one, whole.
It runs under the emulator's lock for that service, so no request of it is half-applied meanwhile.

moto keeps a few things pickle cannot take (a KMS key's private key, defaultdicts made by lambdas):
`_Pickler` stores them by value and they are rebuilt alike.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import pickle
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from moto.core.base_backend import BackendDict
from moto.kms.models import kms_backends
from moto.secretsmanager.models import secretsmanager_backends
from moto.ssm.models import ssm_backends

from sundial.local_stack.state import records
from sundial.local_stack.state.app import WsgiApp, whole_response
from sundial.local_stack.state.directory import StateError

logger = logging.getLogger(__name__)

# X-Amz-Target's service part -> (the file's name, moto's backends)
KEPT: dict[str, tuple[str, BackendDict[Any]]] = {
    "TrentService": ("kms", kms_backends),
    "secretsmanager": ("secretsmanager", secretsmanager_backends),
    "AmazonSSM": ("ssm", ssm_backends),
}
# Actions that change nothing kept: the hot path (a worker's Decrypt and GetSecretValue) writes nothing.
_READ_PREFIXES = ("Get", "Describe", "List", "BatchGet", "Validate")
_READS = frozenset(
    {
        "Decrypt",
        "Encrypt",
        "ReEncrypt",
        "GenerateDataKey",
        "GenerateDataKeyWithoutPlaintext",
        "GenerateDataKeyPair",
        "GenerateDataKeyPairWithoutPlaintext",
        "GenerateRandom",
        "GenerateMac",
        "VerifyMac",
        "Sign",
        "Verify",
    }
)
_PRIVATE_KEYS = (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey)


def changes_state(action: str) -> bool:
    return action not in _READS and not action.startswith(_READ_PREFIXES)


class ServicesOnDisk:
    """The three services' files in `path` (a state directory the caller has locked)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def restore(self) -> list[str]:
        """Puts every kept service back into moto; returns the services restored. Raises StateError
        for a file that does not read back (written by another moto, say), naming it."""
        restored = []
        for name, backends in KEPT.values():
            file = self.path / f"{name}.state"
            if not file.exists():
                continue
            try:
                accounts = pickle.loads(file.read_bytes())
            except Exception as exc:  # an unpickling error can be of any type
                raise StateError(
                    f"state directory {self.path}: {file.name} does not read back ({type(exc).__name__}: "
                    f"{exc}); move it aside to start that service afresh (its keys, secrets or "
                    "parameters are then lost)"
                ) from exc
            for account, regions in accounts.items():
                for region, backend in regions.items():
                    backends[account][region] = backend
            restored.append(name)
        for name, _ in KEPT.values():
            # What a kill mid-write left: never renamed, so never the service's state.
            (self.path / f"{name}.tmp").unlink(missing_ok=True)
        return restored

    def record(self, service: str) -> None:
        """Writes `service`'s state anew (the caller holds its lock). Raises OSError."""
        name, backends = KEPT[service]
        accounts = {account: dict(regions) for account, regions in backends.items()}
        buffer = io.BytesIO()
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(accounts)
        tmp = self.path / f"{name}.tmp"
        with tmp.open("wb") as file:
            file.write(buffer.getvalue())
            file.flush()
            os.fsync(file.fileno())
        tmp.replace(self.path / f"{name}.state")
        records.sync_directory(self.path)


class KeptServicesApp:
    """Wraps moto's WSGI app, inside the emulator's per-service lock: after a request that changed a
    kept service, that service's file is written before the answer leaves."""

    def __init__(self, app: WsgiApp, services: ServicesOnDisk) -> None:
        self._app = app
        self._services = services

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        service, _, action = str(environ.get("HTTP_X_AMZ_TARGET", "")).partition(".")
        if service not in KEPT or not changes_state(action):
            return self._app(environ, start_response)
        status, headers, body = whole_response(self._app, environ)
        if status.startswith("2"):
            try:
                self._services.record(service)
            except OSError as exc:
                # moto holds a change that a restart would lose: say so rather than acknowledge it.
                logger.critical("state: cannot keep %s of %s", action, service, exc_info=True)
                return _failed(start_response, f"the state directory failed: {exc.strerror}")
        start_response(status, headers)
        return [body]


def _failed(start_response: Callable[..., Any], message: str) -> list[bytes]:
    body = json.dumps({"__type": "InternalFailure", "message": message}).encode()
    start_response(
        "500 Internal Server Error",
        [("Content-Type", "application/x-amz-json-1.1"), ("Content-Length", str(len(body)))],
    )
    return [body]


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _PRIVATE_KEYS):
            pem = obj.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            return _private_key, (pem,)
        if isinstance(obj, defaultdict):
            return _defaultdict, (
                type(obj),
                _factory(obj.default_factory),
                dict(obj),
                getattr(obj, "__dict__", {}),
            )
        return NotImplemented


def _private_key(pem: bytes) -> Any:
    return serialization.load_pem_private_key(pem, None)


def _factory(factory: Callable[[], Any] | None) -> Callable[[], Any] | None:
    """`factory`, or one that makes the same: a lambda cannot be pickled, what it makes can be."""
    if factory is None or getattr(factory, "__name__", "") != "<lambda>":
        return factory
    sample = factory()
    if isinstance(sample, defaultdict):
        return functools.partial(defaultdict, _factory(sample.default_factory))
    return type(sample)


def _defaultdict(
    kind: type[defaultdict[Any, Any]],
    factory: Callable[[], Any] | None,
    items: dict[Any, Any],
    attributes: dict[str, Any],
) -> defaultdict[Any, Any]:
    # Not kind(...): a subclass's __init__ may want arguments of its own (moto's ParameterDict does).
    made = kind.__new__(kind)
    defaultdict.__init__(made, factory, items)
    if attributes:
        made.__dict__.update(attributes)
    return made
