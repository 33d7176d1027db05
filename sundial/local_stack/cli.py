"""The `sundial` command: `sundial emulator`, `sundial local` and `sundial smoke`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from sundial.commands.connection import API_URL_ENV
from sundial.local_stack.child import tell_port
from sundial.local_stack.emulator import DEFAULT_PORT as EMULATOR_PORT
from sundial.local_stack.emulator import Emulator
from sundial.local_stack.faults import FAULT_SEED_ENV, FAULTS_ENV, FaultSpec
from sundial.local_stack.logs import configure_logging
from sundial.local_stack.options import (
    DEFAULT_PORT,
    DEFAULT_WORKERS,
    EPHEMERAL_ENV,
    STATE_DIR_ENV,
    LocalOptions,
    handler_modules,
    state_dir,
)
from sundial.local_stack.signals import Interrupted, Signals, say
from sundial.local_stack.state.directory import StateError
from sundial.local_stack.state.tables_on_disk import TablesOnDisk
from sundial.shared import constants as c


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging()
    try:
        if args.command == "emulator":
            path = state_dir(_given(args, "state_dir"), _given(args, "ephemeral"))
            _leave(run_emulator(args.port, args.faults, args.fault_seed, path, args.ready_fd))
        if args.command == "smoke":
            return _run_smoke(args)
        _hand_faults_to_child(args)
        return _run_local(_local_options(args))
    except (OSError, StateError) as exc:  # most often: the port is taken, or the state is in use
        print(f"sundial {args.command}: {exc}", file=sys.stderr)
        return 1


def run_emulator(
    port: int,
    faults: FaultSpec | None = None,
    fault_seed: int | None = None,
    state: Path | None = None,
    ready_fd: int | None = None,
) -> int:
    """The emulator in the foreground until SIGINT or SIGTERM, which also interrupt its start (a
    restore included); its tables in `state` (None: memory). Returns the exit status. Raises
    StateError before it listens when `state` cannot be used."""
    signals = Signals("emulator").install()
    emulator: Emulator | None = None
    try:
        with signals.doing(f"opening the state directory {state}"):
            tables = TablesOnDisk.open(state) if state is not None else None
        if tables is not None:
            print(f"emulator state: restoring {state}", flush=True)
        with signals.doing(tables.restoring if tables is not None else "starting moto"):
            emulator = Emulator("127.0.0.1", port, faults, fault_seed, tables)
            # Its port accepts connections from here on: a client may take it as started.
            signals.serving()
        emulator.start()
    except Interrupted as interrupted:
        say(signals.interrupted_line(interrupted, _left_as(state)))
        if emulator is not None:
            emulator.stop()
        return interrupted.exit_status
    print(f"emulator listening on {emulator.endpoint_url}", flush=True)
    print(f"emulator state: {_state_line(state, emulator)}", flush=True)
    if emulator.faults.spec:
        spec, seed = emulator.faults.spec, emulator.faults.seed
        print(f"emulator faults: {spec} (seed {seed}); counts at GET /_sundial/faults", flush=True)
    if ready_fd is not None:
        tell_port(ready_fd, emulator.port)
    signals.wait_for_stop()
    emulator.stop()
    return 0


def _left_as(state: Path | None) -> str:
    if state is None:
        return ""
    return f"; {state} is left as a crash would leave it: the next start restores it"


def _leave(status: int) -> NoReturn:
    """Ends the emulator without freeing its tables object by object, which took seconds with
    100,000 items, after the stop: every write it answered is on disk already."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _state_line(state: Path | None, emulator: Emulator) -> str:
    restored = emulator.restored
    if state is None or restored is None:
        return "in memory only (--ephemeral): it ends with this process"
    return f"{state} ({restored.items} items restored in {restored.seconds:.2f} s)"


def _hand_faults_to_child(args: argparse.Namespace) -> None:
    """`sundial local` starts its emulator as `sundial emulator`, which reads its faults from here."""
    if args.faults is None and args.fault_seed is None:
        return
    if args.endpoint_url:
        raise SystemExit("sundial local: --faults and --fault-seed need its own emulator, not --endpoint-url")
    if args.faults is not None:
        os.environ[FAULTS_ENV] = str(args.faults)
    if args.fault_seed is not None:
        os.environ[FAULT_SEED_ENV] = str(args.fault_seed)


def _run_local(options: LocalOptions) -> int:
    # Imported here: it loads every handler, which `sundial emulator` (started by it) never needs.
    from sundial.local_stack.runner import run_local  # noqa: PLC0415

    return run_local(options)


def _run_smoke(args: argparse.Namespace) -> int:
    # Imported here: only this command needs boto3's signing and the stack's outputs.
    from sundial.local_stack.smoke import run_smoke  # noqa: PLC0415
    from sundial.local_stack.smoke_client import Api, Deployment, execute_api_region  # noqa: PLC0415

    region = execute_api_region(args.api)
    if region is None and not args.endpoint_url:
        raise SystemExit(
            "sundial smoke: a local API needs --endpoint-url, the emulator it runs on "
            "(`sundial local` prints it as Emulator)"
        )
    deployment = (
        Deployment.of_stack(args.stack, region) if region else Deployment.of_emulator(args.endpoint_url)
    )
    report = run_smoke(Api(args.api), deployment, args.timeout)
    print("\n".join(report.lines), flush=True)
    print(f"smoke: {'passed' if not report.failures else f'{report.failures} checks failed'}", flush=True)
    return 0 if not report.failures else 1


def _local_options(args: argparse.Namespace) -> LocalOptions:
    given, ephemeral = _given(args, "state_dir"), _given(args, "ephemeral")
    if args.endpoint_url and (given is not None or ephemeral is not None):
        raise SystemExit(
            "sundial local: the emulator at --endpoint-url keeps its own state: "
            "give --state-dir or --ephemeral to `sundial emulator` instead"
        )
    return LocalOptions(
        port=args.port,
        endpoint_url=args.endpoint_url,
        tick_seconds=args.tick_seconds,
        workers=args.workers,
        allow_private=args.allow_private,
        state_dir=None if args.endpoint_url else state_dir(given, ephemeral),
        handlers=handler_modules(args.handlers),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sundial", description="Sundial on this machine.")
    commands = parser.add_subparsers(dest="command", required=True)
    shown = argparse.ArgumentDefaultsHelpFormatter
    emulator = commands.add_parser(
        "emulator", help="the AWS emulator (moto server) on 127.0.0.1", formatter_class=shown
    )
    emulator.add_argument("--port", type=int, default=EMULATOR_PORT, help="its port on 127.0.0.1")
    # `sundial local`'s child: the port it got from --port 0, written here once it serves.
    emulator.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    _state_options(emulator)
    _fault_options(emulator, from_environment=True)
    local = commands.add_parser(
        "local", help="the API, the tick and the workers, on an emulator", formatter_class=shown
    )
    local.add_argument("--port", type=int, default=DEFAULT_PORT, help="the API's port on 127.0.0.1")
    local.add_argument(
        "--endpoint-url",
        help="a running emulator; without it, one is started on a free port and stopped on exit",
    )
    local.add_argument(
        "--tick-seconds",
        type=_positive,
        default=float(c.TICK_SECONDS),
        help="how often the scheduler handler runs, on multiples of this period, as deployed",
    )
    local.add_argument(
        "--workers",
        type=_positive_int,
        default=DEFAULT_WORKERS,
        help="jobs run at once, split 10:4:1 high:medium:low",
    )
    local.add_argument(
        "--allow-private",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="let http targets reach loopback and private addresses",
    )
    local.add_argument(
        "--handlers",
        metavar="MODULES",
        default=os.environ.get(c.ENV_HANDLERS) or None,
        help="modules of your own python handlers, comma-separated (docs/handlers.md), importable from "
        f"the working directory, PYTHONPATH or this environment; also ${c.ENV_HANDLERS}",
    )
    _state_options(local)
    _fault_options(local, from_environment=False)
    _smoke_options(
        commands.add_parser("smoke", help="check a running Sundial end to end", formatter_class=shown)
    )
    return parser


def _smoke_options(smoke: argparse.ArgumentParser) -> None:
    api = os.environ.get(API_URL_ENV) or None
    smoke.add_argument(
        "--api",
        required=api is None,
        default=api,
        help="the API's base URL: an execute-api URL with its stage (signed with your AWS credentials) "
        f"or the local stack's; also ${API_URL_ENV}",
    )
    smoke.add_argument(
        "--stack",
        default="Sundial",
        help="a deployed API's stack, whose outputs name the dead-letter queue (Sundial-<stage> for a stage)",
    )
    smoke.add_argument("--endpoint-url", help="the emulator a local API runs on")
    smoke.add_argument("--timeout", type=_positive, default=120.0, help="seconds to wait for the jobs")


def _state_options(parser: argparse.ArgumentParser) -> None:
    # Not set unless given (SUPPRESS: no "default: None" in the help either): state_dir() then
    # reads the environment.
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--state-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help=f"where the tables are kept across restarts and crashes (default: ${STATE_DIR_ENV}, "
        "else .sundial in the working directory); delete it to start afresh",
    )
    where.add_argument(
        "--ephemeral",
        action="store_const",
        const=True,
        default=argparse.SUPPRESS,
        help=f"keep the tables in memory only: they end with the emulator (also ${EPHEMERAL_ENV}=1)",
    )


def _given(args: argparse.Namespace, name: str) -> Any:
    return getattr(args, name, None)


def _fault_options(parser: argparse.ArgumentParser, from_environment: bool) -> None:
    # argparse runs a string default through `type`, so a bad variable is reported as a bad option.
    faults = os.environ.get(FAULTS_ENV) or None if from_environment else None
    seed = os.environ.get(FAULT_SEED_ENV) or None if from_environment else None
    parser.add_argument(
        "--faults",
        type=_fault_spec,
        default=faults,
        metavar="SPEC",
        help="make the emulator misbehave as AWS can, e.g. "
        "'lost-answer=0.03,throttle=0.08,sqs-refuse=0.05,sqs-duplicate=0.03'; "
        f"the emulator also reads ${FAULTS_ENV}",
    )
    parser.add_argument(
        "--fault-seed",
        type=int,
        default=seed,
        metavar="N",
        help=f"seed of the faults' dice; also ${FAULT_SEED_ENV}; without either, a random one, printed",
    )


def _fault_spec(text: str) -> FaultSpec:
    try:
        return FaultSpec.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive whole number")
    return value


if __name__ == "__main__":
    sys.exit(main())
