"""The `sundial` command: `sundial emulator` and `sundial local`."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from local_stack.emulator import DEFAULT_PORT as EMULATOR_PORT
from local_stack.emulator import Emulator
from local_stack.logs import configure_logging
from local_stack.options import DEFAULT_PORT, DEFAULT_WORKERS, LocalOptions
from shared import constants as c


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging()
    try:
        if args.command == "emulator":
            return run_emulator(args.port)
        return _run_local(_local_options(args))
    except OSError as exc:  # most often: the port is taken
        print(f"sundial {args.command}: {exc}", file=sys.stderr)
        return 1


def run_emulator(port: int) -> int:
    """The emulator in the foreground until SIGINT or SIGTERM."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    emulator = Emulator("127.0.0.1", port).start()
    print(f"emulator listening on {emulator.endpoint_url}", flush=True)
    stop.wait()
    emulator.stop()
    return 0


def _run_local(options: LocalOptions) -> int:
    # Imported here: it loads every handler, which `sundial emulator` (started by it) never needs.
    from local_stack.runner import run_local  # noqa: PLC0415

    return run_local(options)


def _local_options(args: argparse.Namespace) -> LocalOptions:
    return LocalOptions(
        port=args.port,
        endpoint_url=args.endpoint_url,
        tick_seconds=args.tick_seconds,
        workers=args.workers,
        allow_private=args.allow_private,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sundial", description="Sundial on this machine.")
    commands = parser.add_subparsers(dest="command", required=True)
    shown = argparse.ArgumentDefaultsHelpFormatter
    emulator = commands.add_parser(
        "emulator", help="the AWS emulator (moto server) on 127.0.0.1", formatter_class=shown
    )
    emulator.add_argument("--port", type=int, default=EMULATOR_PORT, help="its port on 127.0.0.1")
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
        help="worker threads, split 4:2:1 high:medium:low",
    )
    local.add_argument(
        "--allow-private",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="let http targets reach loopback and private addresses",
    )
    return parser


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
