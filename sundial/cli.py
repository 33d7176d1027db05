"""The `sundial` command.

`jobs`, `limits` and `preview` talk to an API through sundial.client; `local`, `emulator` and `smoke` run the
local stack and keep their own parsing (sundial/local_stack/cli.py), loaded only when asked for so that the
API commands never load the emulator. A new command group is one `cli.add_command(...)` line below.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import click

from sundial import __version__
from sundial.commands.apply import apply
from sundial.commands.config import config
from sundial.commands.connection import GIVEN_BEFORE, global_connection_options, some_connection_options
from sundial.commands.exits import USAGE, SundialGroup
from sundial.commands.jobs import jobs
from sundial.commands.limits import limits
from sundial.commands.local_options import local_stack_args
from sundial.commands.preview import preview
from sundial.commands.stats import stats
from sundial.commands.upgrade import reseal_headers_command, upgrade_listing
from sundial.console.command import console

COMPLETE_VAR = "_SUNDIAL_COMPLETE"
LOCAL_STACK_COMMANDS = {
    "local": "Run the API, the tick and the workers on an emulator, on this machine",
    "emulator": "Run the AWS emulator (moto server) on 127.0.0.1",
    "smoke": "Check a running Sundial end to end",
}


@click.group(name="sundial", cls=SundialGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="sundial", message="%(prog)s %(version)s")
def cli() -> None:
    """Sundial: schedule jobs on a deployed or a local Sundial, or run one on this machine.

    The connection options (--api, --stack, --profile, --region, --timeout, --sundial-profile,
    --debug) go before the command or after it. --profile is the AWS profile; --sundial-profile
    (or $SUNDIAL_PROFILE) a profile of the config file (`sundial config path`).

    Exit codes: 0 ok, 1 usage or invalid input, 2 not found, 3 conflict, 4 authentication or
    permission, 5 server error, throttling or network; a job waited for or watched to its end: 6
    dead, 7 cancelled, 124 `jobs wait --timeout`; 8 the job changed since the ETag given with
    --if-match; 10 `apply --dry-run --exit-code` found changes; 130 when Ctrl-C stops it.
    """


global_connection_options(cli)


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@some_connection_options(
    (), why="it prints a script; the completions it makes read the API of the command completed"
)
def completion(shell: str, **_connection: object) -> None:
    """Print the completion script for SHELL, e.g. `eval "$(sundial completion bash)"`."""
    from click.shell_completion import get_completion_class  # noqa: PLC0415

    completer = get_completion_class(shell)
    assert completer is not None  # click ships these three
    click.echo(completer(cli, {}, "sundial", COMPLETE_VAR).source())


def _local_stack_command(name: str, summary: str) -> click.Command:
    settings = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}

    @click.command(
        name=name, help=f"{summary} (`sundial {name} --help` for its options)", context_settings=settings
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...]) -> int:
        before = click.get_current_context().meta.get(GIVEN_BEFORE, {})
        return _local_stack_main()([name, *local_stack_args(name, args, before)])

    return command


def _local_stack_main() -> Callable[[list[str]], int]:
    try:
        from sundial.local_stack.cli import main as local_stack_main  # noqa: PLC0415
    except ImportError as exc:  # `pip install .` leaves the emulator and the handlers' libraries out
        raise SystemExit(
            f"sundial: the local stack needs what `pip install '.[local]'` adds ({exc.name} is missing)"
        ) from None
    return local_stack_main


cli.add_command(jobs)
cli.add_command(limits)
cli.add_command(preview)
cli.add_command(stats)
cli.add_command(console)
cli.add_command(upgrade_listing)
cli.add_command(reseal_headers_command)
cli.add_command(config)
cli.add_command(apply)
for _name, _summary in LOCAL_STACK_COMMANDS.items():
    cli.add_command(_local_stack_command(_name, _summary))


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in LOCAL_STACK_COMMANDS:
        # The arguments given, untouched by click's parsing but for the connection options.
        try:
            own = local_stack_args(args[0], args[1:], {})
        except click.UsageError as exc:
            exc.show()
            sys.exit(USAGE)
        sys.exit(_local_stack_main()([args[0], *own]))
    cli.main(args, prog_name="sundial", complete_var=COMPLETE_VAR)


if __name__ == "__main__":
    main()
