"""Named profiles: connection settings kept in a TOML file, as the AWS and Temporal CLIs keep theirs.

    # ~/.config/sundial/config.toml
    [profiles.prod]
    stack = "Sundial-prod"
    aws_profile = "ops"
    region = "eu-west-1"
    output = "yaml"

`--sundial-profile NAME` (or `$SUNDIAL_PROFILE`) picks one; without either, `[profiles.default]` applies
when the file has it. `--profile` stays the AWS profile, as everywhere else in the command.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

CONFIG_ENV = "SUNDIAL_CONFIG"
PROFILE_ENV = "SUNDIAL_PROFILE"
DEFAULT_PROFILE = "default"

# A profile's key → the option it stands for (the connection's name for it), and what it must be.
KEYS: dict[str, tuple[str, type]] = {
    "api": ("api", str),
    "stack": ("stack", str),
    "aws_profile": ("profile", str),
    "region": ("region", str),
    "timeout": ("timeout", float),
    "output": ("output", str),
}


@dataclass(frozen=True)
class Profile:
    name: str | None
    values: Mapping[str, Any]  # by the connection's names: api, stack, profile, region, timeout, output

    def get(self, name: str) -> Any:
        return self.values.get(name)


NO_PROFILE = Profile(None, {})


def config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """`$SUNDIAL_CONFIG`, else `$XDG_CONFIG_HOME/sundial/config.toml` (default `~/.config`)."""
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV]).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sundial" / "config.toml"


def read_profiles(path: Path) -> dict[str, dict[str, Any]]:
    """Every profile of the file, checked; none when there is no file. Raises click.UsageError
    naming the file and the key at fault."""
    try:
        document = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise click.UsageError(f"{path}: {exc}") from None
    profiles = document.get("profiles", {})
    if not isinstance(profiles, dict):
        raise click.UsageError(f"{path}: 'profiles' must be a table of [profiles.NAME] tables")
    return {name: _checked(path, name, table) for name, table in profiles.items()}


def load_profile(chosen: str | None, path: Path) -> Profile:
    """The profile chosen, or `default` when none was chosen and the file has it. A profile chosen
    that the file lacks is an error naming it: a typo must not talk to the wrong API."""
    profiles = read_profiles(path)
    if chosen is None:
        found = profiles.get(DEFAULT_PROFILE)
        return NO_PROFILE if found is None else _profile(DEFAULT_PROFILE, found)
    if chosen not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise click.UsageError(f"no profile '{chosen}' in {path} (its profiles: {known})")
    return _profile(chosen, profiles[chosen])


def _profile(name: str, table: Mapping[str, Any]) -> Profile:
    return Profile(name, {KEYS[key][0]: value for key, value in table.items()})


def _checked(path: Path, name: str, table: Any) -> dict[str, Any]:
    where = f"{path}: [profiles.{name}]"
    if not isinstance(table, dict):
        raise click.UsageError(f"{where} must be a table")
    checked: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            raise click.UsageError(f"{where}: unknown key '{key}' (known: {', '.join(KEYS)})")
        kind = KEYS[key][1]
        # TOML writes 30 as an integer: a number is fine where seconds are asked.
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            checked[key] = float(value)
        elif kind is str and isinstance(value, str) and value:
            checked[key] = value
        else:
            wanted = "a positive number" if kind is float else "a non-empty string"
            raise click.UsageError(f"{where}: {key} must be {wanted}, not {value!r}")
    return checked
