"""`sundial config`: where the profiles are read from, and what they hold."""

from __future__ import annotations

import click

from sundial.commands.connection import some_connection_options
from sundial.commands.output import table
from sundial.commands.profiles import KEYS, config_path, read_profiles

_WHY = "it reads the config file, not the API"


@click.group()
def config() -> None:
    """The config file's profiles (`--sundial-profile NAME`; docs/client.md, "Profiles")."""


@config.command()
@some_connection_options((), why=_WHY)
def path(**_connection: object) -> None:
    """Print where the config file is read from ($SUNDIAL_CONFIG, else $XDG_CONFIG_HOME/sundial)."""
    click.echo(str(config_path()))


@config.command(name="list")
@some_connection_options((), why=_WHY)
def list_profiles(**_connection: object) -> None:
    """Print each profile of the config file with its settings."""
    where = config_path()
    profiles = read_profiles(where)
    if not profiles:
        click.echo(f"no profiles in {where}", err=True)
        return
    rows = [(name, *(str(values.get(key, "")) for key in KEYS)) for name, values in sorted(profiles.items())]
    click.echo(table(("PROFILE", *(key.upper() for key in KEYS)), rows))
