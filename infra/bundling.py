"""The Lambda code asset: the server side of the `sundial` package (`sundial/shared/`,
`sundial/functions/` and the wire contract they answer with) plus their pinned dependencies, built
without Docker. The client, the command and the console stay out of it.

pip downloads manylinux wheels for the Lambda platform into the asset, so the host's Python version
and architecture never matter. The asset hash is computed from the sources, the requirements and
the build flags: a change to any of them gives a new asset and a redeploy, while an unchanged tree
reuses the staged asset in `cdk.out` without running pip again.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

ROOT = Path(__file__).resolve().parent.parent
# The package's own `__init__` comes along so that `sundial.shared` imports as it does installed.
PACKAGES = ("sundial/__init__.py", "sundial/contract", "sundial/shared", "sundial/functions")
REQUIREMENTS = Path("sundial") / "functions" / "requirements.txt"
RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
# Derived from RUNTIME so that the wheels always match the interpreter that loads them.
PYTHON_VERSION = RUNTIME.name.removeprefix("python")
PIP_PLATFORM = "manylinux2014_aarch64"
_IGNORED = ("__pycache__", "*.pyc", "*.pyo", ".mypy_cache", ".pytest_cache")


def pip_arguments(requirements: Path, target: str) -> list[str]:
    return [
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--target",
        target,
        "--platform",
        PIP_PLATFORM,
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--only-binary=:all:",
        # Bytecode compiled here would be for the host's interpreter, not the runtime's.
        "--no-compile",
        "--requirement",
        str(requirements),
    ]


def source_files(root: Path) -> Iterator[Path]:
    """Every file the asset copies from `root`, in a stable order."""
    for package in PACKAGES:
        source = root / package
        for path in sorted(source.rglob("*")) if source.is_dir() else [source]:
            if path.is_file() and not _ignored(path.relative_to(root)):
                yield path


def copied_files(root: Path, extra: Sequence[Path] = ()) -> Iterator[tuple[Path, Path]]:
    """Each file the asset holds, with its place in the asset: `root`'s packages, then each `extra`
    package directory or module file (one's own handlers) at the asset's top level."""
    for path in source_files(root):
        yield path, path.relative_to(root)
    for source in extra:
        paths = sorted(source.rglob("*")) if source.is_dir() else [source]
        for path in paths:
            relative = path.relative_to(source.parent)
            if path.is_file() and not _ignored(relative):
                yield path, relative


def _ignored(relative: Path) -> bool:
    return any(fnmatch(part, pattern) for part in relative.parts for pattern in _IGNORED)


def asset_hash(root: Path, extra: Sequence[Path] = ()) -> str:
    digest = hashlib.sha256()
    digest.update(" ".join(pip_arguments(REQUIREMENTS, "<target>")).encode())
    for path, relative in copied_files(root, extra):
        digest.update(relative.as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def build(root: Path, output_dir: Path, extra: Sequence[Path] = ()) -> None:
    """Installs the pinned dependencies for the Lambda platform, then copies the sources.

    Raises RuntimeError with pip's output when the install fails.
    """
    command = [sys.executable, "-m", "pip", *pip_arguments(root / REQUIREMENTS, str(output_dir))]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"bundling the Lambda code failed: {' '.join(command)}\n{result.stderr}")
    # Console scripts carry a shebang pointing at the host's interpreter; the runtime never uses them.
    shutil.rmtree(output_dir / "bin", ignore_errors=True)
    for path, relative in copied_files(root, extra):
        destination = output_dir / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)


@jsii.implements(ILocalBundling)
class LocalBundling:
    def __init__(self, root: Path, extra: Sequence[Path] = ()) -> None:
        self._root = root
        self._extra = tuple(extra)

    def try_bundle(self, output_dir: str, *_args: Any, **_options: Any) -> bool:
        build(self._root, Path(output_dir), self._extra)
        return True


def _docker_command() -> Sequence[str]:
    # Only used if local bundling were unavailable; mirrors build() inside the runtime's image.
    ignore = " ".join(f"--exclude='{pattern}'" for pattern in _IGNORED)
    return [
        "bash",
        "-c",
        f"pip install --no-compile -r {REQUIREMENTS.as_posix()} -t /asset-output && "
        f"tar -c {ignore} {' '.join(PACKAGES)} | tar -x -C /asset-output",
    ]


def code_asset(root: Path = ROOT, extra: Sequence[Path] = ()) -> lambda_.Code:
    """`extra`: one's own handler packages, which only local bundling copies in (it always runs)."""
    return lambda_.Code.from_asset(
        str(root),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=asset_hash(root, extra),
        bundling=BundlingOptions(
            image=RUNTIME.bundling_image,
            platform="linux/arm64",
            command=list(_docker_command()),
            local=LocalBundling(root, extra),
        ),
    )
