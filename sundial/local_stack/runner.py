"""`sundial local`: the whole scheduler on this machine, from the same handlers as the deployed stack.

The emulator holds every bit of state, so this process can be killed at any moment and started again
against the same emulator: leases expire and the next tick reclaims what was in flight. With a state
directory, the emulator it starts keeps its tables there, and both processes can be killed: a start
that finds the directory free hands on at once what was in flight (local_stack.recovery).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
from werkzeug.serving import BaseWSGIServer, make_server

from sundial.local_stack.banner import banner
from sundial.local_stack.child import EmulatorProcess
from sundial.local_stack.environment import handler_settings, use_emulator
from sundial.local_stack.gateway import Gateway
from sundial.local_stack.options import LocalOptions, pool_sizes, state_environment
from sundial.local_stack.pollers import QueuePoller
from sundial.local_stack.recovery import hand_on_in_flight
from sundial.local_stack.resources import (
    Resources,
    ensure_header_key,
    ensure_resources,
    ensure_signing_secret,
)
from sundial.local_stack.signals import Interrupted, Signals, say
from sundial.local_stack.state import directory
from sundial.local_stack.state.directory import DirectoryLock, StateError
from sundial.local_stack.state.tables_on_disk import holds_state
from sundial.local_stack.ticker import Ticker
from sundial.shared import constants as c
from sundial.shared.clock import SystemClock
from sundial.shared.targets.registry import import_handler_modules, registered_handlers

logger = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], Any]
HOST = "127.0.0.1"
# How long a stop waits for attempts in flight; what is still running then is left to its lease.
STOP_GRACE_SECONDS = 10.0
CHILD_CHECK_SECONDS = 1.0


def run_local(options: LocalOptions) -> int:
    """Runs until SIGINT or SIGTERM, which also interrupt its start; returns the exit status. Raises
    StateError (nothing changed) when the state directory cannot be used."""
    signals = Signals("local").install()
    try:
        return _run(options, signals)
    except Interrupted as interrupted:
        say(signals.interrupted_line(interrupted, _left_as(options.state_dir)))
        return interrupted.exit_status


def _run(options: LocalOptions, signals: Signals) -> int:
    if options.endpoint_url:
        return _serve(options, options.endpoint_url, signals, None, recover=False)
    with signals.doing(f"claiming the state directory {options.state_dir}"):
        lock, recover = _claim_state(options.state_dir)
    os.environ.update(state_environment(options.state_dir))
    try:
        # Started before any thread exists (see local_stack.child) and stopped last, after the drain.
        with signals.doing(_starting_emulator(options.state_dir)):
            child = _start_emulator()
        try:
            return _serve(options, child.endpoint_url, signals, child, recover)
        finally:
            child.stop()
    finally:
        if lock is not None:
            lock.release()


def _starting_emulator(state: Path | None) -> str:
    if state is None:
        return "starting its emulator"
    return f"waiting for its emulator to restore the tables from {state}"


def _left_as(state: Path | None) -> str:
    if state is None:
        return ""
    return f"; {state} is left as a crash would leave it: the next start recovers it"


def _claim_state(path: Path | None) -> tuple[DirectoryLock | None, bool]:
    """The directory's `sundial local` lock, and whether it holds tables from an earlier run. Holding
    the lock, we know the last local stack on it is gone, workers and all."""
    if path is None:
        return None, False
    directory.check(path)
    path.mkdir(parents=True, exist_ok=True)
    # Asked before our own lock file is made, so that a directory in use is left as it was; the
    # emulator takes this lock for good once started.
    DirectoryLock(path, directory.EMULATOR_LOCK).acquire().release()
    lock = DirectoryLock(path, directory.LOCAL_LOCK).acquire()
    lock.sign()
    return lock, holds_state(path)


def _start_emulator() -> EmulatorProcess:
    try:
        return EmulatorProcess(HOST).start()
    except (RuntimeError, TimeoutError) as exc:
        # It printed why (a state directory in use, from a newer format...) before it exited.
        raise StateError(f"the emulator did not start: {exc}") from None


def _serve(
    options: LocalOptions,
    endpoint_url: str,
    signals: Signals,
    child: EmulatorProcess | None,
    recover: bool,
) -> int:
    region = use_emulator()
    with signals.doing(f"making the table and queues on the emulator at {endpoint_url}"):
        resources = _resources(endpoint_url, region)
    if recover:
        with signals.doing("handing on the attempts in flight when the last local stack stopped"):
            _hand_on_in_flight(resources, endpoint_url, region)
    os.environ.update(
        handler_settings(
            resources, endpoint_url, allow_private=options.allow_private, handlers=options.handlers
        )
    )
    with signals.doing("loading the handlers and starting the API"):
        _import_own_handlers(options.handlers)
        api, scheduler, worker = (_handler(name) for name in ("api", "scheduler", "worker"))
        server = make_server(HOST, options.port, Gateway(api), threaded=True)
        # Before any thread of ours starts: from here a signal stops them through `stop`.
        signals.serving()
    stop = signals.stop
    threading.Thread(target=server.serve_forever, name="api", daemon=True).start()
    ticker = Ticker(scheduler, options.tick_seconds, region, stop).start()
    pollers = _pollers(resources, endpoint_url, region, options.workers, worker, stop)
    print(banner(_url(server), endpoint_url, own_emulator=child is not None), flush=True)
    print(_state_line(options, child is not None), flush=True)
    status = _wait_for_stop(signals, child)
    logger.info("stopping: no new ticks or messages; waiting for the attempts in flight")
    _shut_down(server, ticker, pollers)
    return status


def _state_line(options: LocalOptions, own_emulator: bool) -> str:
    if not own_emulator:
        return "  State:     kept by the emulator given with --endpoint-url\n"
    if options.state_dir is None:
        return "  State:     in memory only (--ephemeral): it ends with this process\n"
    return f"  State:     {options.state_dir} (kept across restarts and crashes; delete it to start afresh)\n"


def _wait_for_stop(signals: Signals, child: EmulatorProcess | None) -> int:
    """0 after a signal; 1 if our emulator died, taking every job's state with it."""
    while not signals.wait_for_stop(CHILD_CHECK_SECONDS):
        if child is not None and not child.running():
            logger.error("the emulator exited; stopping, since every job's state was in it")
            signals.stop.set()
            return 1
    return 0


def _resources(endpoint_url: str, region: str) -> Resources:
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=region)
    sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name=region)
    secretsmanager = boto3.client("secretsmanager", endpoint_url=endpoint_url, region_name=region)
    kms = boto3.client("kms", endpoint_url=endpoint_url, region_name=region)
    made = ensure_resources(dynamodb, sqs)
    return dataclasses.replace(
        made, signing_secret_arn=ensure_signing_secret(secretsmanager), header_key_arn=ensure_header_key(kms)
    )


def _hand_on_in_flight(resources: Resources, endpoint_url: str, region: str) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=region)
    started = time.monotonic()
    done = hand_on_in_flight(dynamodb, resources.table_name, SystemClock())
    logger.info(
        "restarted on saved state: %d queued and %d running jobs handed to the first tick (%.2f s)",
        done.queued,
        done.running,
        time.monotonic() - started,
    )


def _import_own_handlers(modules: tuple[str, ...]) -> None:
    """Imported now, as a cold start would, so that a module that cannot be imported stops the start.
    The working directory comes first on the path, as for `python -m`."""
    if not modules:
        return
    sys.path.insert(0, os.getcwd())
    try:
        import_handler_modules(modules)
    except ValueError as exc:
        raise SystemExit(f"sundial local: --handlers: {exc}") from None
    logger.info("python handlers: %s", ", ".join(registered_handlers()))


def _handler(function: str) -> Handler:
    """A handler reads its settings at its first call, so the environment must be set before that."""
    handler: Handler = importlib.import_module(f"sundial.functions.{function}").handler
    return handler


def _pollers(
    resources: Resources,
    endpoint_url: str,
    region: str,
    workers: int,
    handler: Handler,
    stop: threading.Event,
) -> list[QueuePoller]:
    sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name=region)
    sizes = pool_sizes(workers)
    logger.info("jobs at once per queue: %s", {p.value: n for p, n in sizes.items()})
    return [
        QueuePoller(
            sqs, priority, resources.queue_urls[priority], sizes[priority], handler, region, stop
        ).start()
        for priority in c.PRIORITIES
    ]


def _shut_down(server: BaseWSGIServer, ticker: Ticker, pollers: list[QueuePoller]) -> None:
    server.shutdown()
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    ticker.join(STOP_GRACE_SECONDS)
    for poller in pollers:
        if not poller.drain(max(0.0, deadline - time.monotonic())):
            logger.warning("%s attempts still running; their leases will hand them on", poller.priority.value)


def _url(server: BaseWSGIServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}"
