"""A pytest plugin that records every AWS call the code makes, and which function made it.

`pytest -p tests.infra.aws_calls` with SUNDIAL_AWS_CALLS=<file> writes, at the end of the run, one
JSON line per kind of call with its count: the function (api, scheduler or worker) whose code made
it, the service, the operation and the parameters that name its resources. botocore's
`before-parameter-build` hook sees every call of every client, before any fault a test injects at
`before-call` or `before-send`. tests/infra/conftest.py installs the same recorder in a whole run,
where only the calls made during the recorded suites' tests count.

A call is the function's whose code is on the stack: its handler (tests/functions) or the engine
part only it runs (tests/adapter drives those directly). Calls from anywhere else (a test's own
setup and checks, or a test that drives the store directly) are recorded without a function.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import Counter
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

CALLS_ENV = "SUNDIAL_AWS_CALLS"
# The suites whose calls are recorded: in a whole run, the calls of every other suite (the scale
# model's, the chaos harness's) are left out.
RECORDED_SUITES = ("tests/functions/", "tests/adapter/")
ROOT = Path(__file__).resolve().parents[2]
# The entry points of each function: the innermost one on the stack makes the call. A test may act
# from inside another function's step (a cancel from a target, a tick from a fence hook): that call
# is still the API's or the tick's, as it would be in AWS, where each runs in its own function.
OWNERS = (
    ("sundial/functions/api.py", "api"),
    ("sundial/functions/scheduler.py", "scheduler"),
    ("sundial/functions/worker.py", "worker"),
    ("sundial/shared/service/", "api"),
    ("sundial/shared/engine/scheduler.py", "scheduler"),
    ("sundial/shared/engine/tick_sends.py", "scheduler"),  # the tick's sender threads
    ("sundial/shared/engine/worker.py", "worker"),
    # Only the worker calls job targets.
    ("sundial/shared/targets/", "worker"),
)
# The engine's shared steps (settle, heartbeat, alerts) belong to whichever entry point called them;
# with none on the stack (a test calling a step alone), to the worker, whose steps they mostly are.
SHARED_STEPS = ("sundial/shared/engine/", "worker")
# The parameters that say which resource a call is on.
NAMING = (
    "TableName",
    "IndexName",
    "QueueUrl",
    "FunctionName",
    "Qualifier",
    "TopicArn",
    "TargetArn",
    "SecretId",
    "VersionStage",
    "Name",
)

# The bulk operations' runner runs in the API (its first slice) and in the tick (the rest), and acts
# through the API's service: its calls are the function's that runs it. On the runner's own thread
# that is the entry point outside it on the stack; its threads carry that function in their names.
RUNNER = "sundial/shared/service/operations.py"
RUNNER_THREADS = (("bulk-api", "api"), ("bulk-tick", "scheduler"))

_lock = threading.Lock()


def owner(frame: FrameType | None) -> str | None:
    thread = threading.current_thread().name
    by_thread = next((name for start, name in RUNNER_THREADS if thread.startswith(start)), None)
    if by_thread is not None:
        return by_thread
    prefix = str(ROOT) + os.sep
    frames: list[tuple[FrameType, str]] = []
    while frame is not None:
        path = frame.f_code.co_filename
        frames.append((frame, path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else ""))
        frame = frame.f_back
    runner = [i for i, (_, relative) in enumerate(frames) if relative == RUNNER]
    if runner:
        outside = frames[runner[-1] + 1 :]
        return next((name for _, rel in outside for start, name in OWNERS if rel.startswith(start)), None)
    return _innermost(frames[0][0] if frames else None)


def _innermost(frame: FrameType | None) -> str | None:
    fallback = None
    prefix = str(ROOT) + os.sep
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(prefix):
            relative = path[len(prefix) :].replace(os.sep, "/")
            found = next((name for start, name in OWNERS if relative.startswith(start)), None)
            if found is not None:
                return found
            if relative.startswith(SHARED_STEPS[0]):
                fallback = SHARED_STEPS[1]
        frame = frame.f_back
    return fallback


def describe(service: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    named: dict[str, Any] = {key: params[key] for key in NAMING if key in params}
    if "RequestItems" in params:
        named["Tables"] = sorted(params["RequestItems"])
    if "TransactItems" in params:
        named["TransactItems"] = [
            [kind, body["TableName"]] for item in params["TransactItems"] for kind, body in item.items()
        ]
    if "EncryptionContext" in params:
        # The keys alone: a key policy's condition is on them, and values (job ids) vary per call.
        named["EncryptionContextKeys"] = sorted(params["EncryptionContext"])
    if "Entries" in params and service == "events":
        named["EventBusNames"] = sorted({e.get("EventBusName", "default") for e in params["Entries"]})
    return named


class Recorder:
    """Counts distinct calls: a JSON line per kind of call, so a long run stays small. Each line names
    the first test that made its kind of call, so that a refused call can be traced to its test."""

    def __init__(self, suites: tuple[str, ...] = RECORDED_SUITES) -> None:
        self.suites = suites
        self.counts: Counter[str] = Counter()
        self.first_test: dict[str, str] = {}

    def on_call(self, params: dict[str, Any], model: Any, region: str, **_: Any) -> None:
        test = current_test()
        if test is not None and not test.startswith(self.suites):
            return
        service = model.service_model.service_name
        line = {
            "function": owner(sys._getframe(1)),
            "region": region,
            "service": service,
            "operation": model.name,
            "params": describe(service, model.name, params),
        }
        key = json.dumps(line, sort_keys=True)
        with _lock:
            self.counts[key] += 1
            self.first_test.setdefault(key, test or "")

    def lines(self) -> list[str]:
        """One JSON object per distinct call, with its count and the first test that made it."""
        with _lock:
            return [
                json.dumps({**json.loads(k), "count": n, "first_test": self.first_test[k]})
                for k, n in sorted(self.counts.items())
            ]


def current_test() -> str | None:
    """The node id of the test running now, as pytest publishes it for each phase of a test."""
    running = os.environ.get("PYTEST_CURRENT_TEST")
    return running.rsplit(" ", 1)[0] if running else None


_installed: list[Recorder] = []


def install() -> Recorder:
    """Records the calls of every botocore client created from now on (once per process)."""
    if _installed:
        return _installed[0]
    import botocore.client

    recorder = Recorder()
    create_client = botocore.client.ClientCreator.create_client

    def recording_create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
        client = create_client(self, *args, **kwargs)
        region = client.meta.region_name
        client.meta.events.register("before-parameter-build.*.*", partial(recorder.on_call, region=region))
        return client

    botocore.client.ClientCreator.create_client = recording_create_client  # type: ignore[method-assign]
    _installed.append(recorder)
    return recorder


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(CALLS_ENV):
        install()


def pytest_unconfigure(config: pytest.Config) -> None:
    target = os.environ.get(CALLS_ENV)
    if target and _installed:
        Path(target).write_text("".join(line + "\n" for line in _installed[0].lines()))
