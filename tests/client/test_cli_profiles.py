"""Named profiles (the config file, `--sundial-profile`, `$SUNDIAL_PROFILE`) and their precedence,
and the connection options on every command: taken where they mean something, refused where not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from sundial.cli import cli
from sundial.commands.local_options import local_stack_args
from sundial.commands.profiles import config_path, load_profile
from tests.client.test_signing import JOB, JOB_ID
from tests.support.sigv4_stub import Reply, StubApi

UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture
def stub() -> Iterator[StubApi]:
    with StubApi(default=Reply(200, JOB)) as api:
        yield api


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.toml"
    monkeypatch.setenv("SUNDIAL_CONFIG", str(path))
    for name in ("SUNDIAL_API_URL", "SUNDIAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    return path


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def test_the_config_file_is_found_as_xdg_says() -> None:
    assert config_path({"SUNDIAL_CONFIG": "/etc/s.toml", "XDG_CONFIG_HOME": "/x"}) == Path("/etc/s.toml")
    assert config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/sundial/config.toml")
    assert config_path({}) == Path.home() / ".config" / "sundial" / "config.toml"


def test_a_profile_gives_the_api_and_the_output(config: Path, stub: StubApi) -> None:
    config.write_text(f'[profiles.dev]\napi = "{stub.url}"\noutput = "yaml"\ntimeout = 5\n')
    picked = invoke("jobs", "get", JOB_ID, "--sundial-profile", "dev")
    from_env = invoke("jobs", "get", JOB_ID, env={"SUNDIAL_PROFILE": "dev"})
    before = invoke("--sundial-profile", "dev", "jobs", "get", JOB_ID)
    for result in (picked, from_env, before):
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"---\nid: {JOB_ID}\n")
    assert len(stub.received) == 3


def test_options_and_the_environment_win_over_the_profile(config: Path, stub: StubApi) -> None:
    config.write_text(f'[profiles.default]\napi = "{UNREACHABLE}"\noutput = "yaml"\n')
    after = invoke("jobs", "get", JOB_ID, "--api", stub.url, "-o", "json")
    before = invoke("--api", stub.url, "jobs", "get", JOB_ID)
    environment = invoke("jobs", "get", JOB_ID, env={"SUNDIAL_API_URL": stub.url})
    assert after.exit_code == 0 and after.output.startswith("{")
    assert before.exit_code == 0 and environment.exit_code == 0
    # What the options leave unset still comes from the profile.
    assert before.output.startswith("---\n") and environment.output.startswith("---\n")
    assert len(stub.received) == 3
    # Without any of them, the default profile applies.
    assert invoke("jobs", "get", JOB_ID).exit_code == 5


def test_a_missing_profile_or_a_bad_key_is_an_error_naming_it(config: Path) -> None:
    config.write_text('[profiles.dev]\napi = "http://127.0.0.1:9"\n')
    missing = invoke("jobs", "list", "--sundial-profile", "prod")
    assert missing.exit_code == 1
    assert f"no profile 'prod' in {config} (its profiles: dev)" in missing.output
    config.write_text('[profiles.dev]\napi_url = "http://127.0.0.1:9"\n')
    typo = invoke("jobs", "list", "--sundial-profile", "dev")
    assert typo.exit_code == 1 and "[profiles.dev]: unknown key 'api_url'" in typo.output
    config.write_text('[profiles.dev]\noutput = "xml"\n')
    assert "output must be one of" in invoke("jobs", "list", "--sundial-profile", "dev").output


def test_the_aws_profile_key_is_the_aws_profile(config: Path) -> None:
    config.write_text('[profiles.ops]\naws_profile = "admin"\nregion = "eu-west-1"\n')
    profile = load_profile("ops", config)
    assert (profile.get("profile"), profile.get("region")) == ("admin", "eu-west-1")
    assert "ops" in invoke("config", "list").output


@pytest.mark.parametrize(
    ("args", "refused"),
    [
        (
            ("--api", UNREACHABLE, "upgrade-listing", "--table", "t"),
            "--api means nothing for `sundial upgrade-listing`",
        ),
        (("reseal-headers", "--table", "t", "--key", "k", "--timeout", "3"), "--timeout means nothing for"),
        (("console", "--debug"), "--debug means nothing for `sundial console`"),
        (("--region", "eu-west-1", "completion", "bash"), "--region means nothing for `sundial completion`"),
        (("config", "list", "--api", UNREACHABLE), "--api means nothing for `sundial config list`"),
    ],
)
def test_an_option_that_means_nothing_is_refused(config: Path, args: tuple[str, ...], refused: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 1 and refused in result.output


def test_the_options_that_mean_something_reach_the_table_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str | None, str | None]] = []

    class Session:
        def __init__(self, profile_name: str | None, region_name: str | None) -> None:
            seen.append((profile_name, region_name))
            raise click.ClickException("stop here")

    monkeypatch.setattr("boto3.Session", Session)
    before = invoke("--profile", "ops", "--region", "eu-west-1", "upgrade-listing", "--table", "t")
    after = invoke(
        "--region", "us-east-1", "reseal-headers", "--table", "t", "--key", "k", "--region", "eu-west-2"
    )
    assert before.exit_code == after.exit_code == 1
    assert seen == [("ops", "eu-west-1"), (None, "eu-west-2")]


def test_the_local_stack_commands_take_what_means_something_to_them() -> None:
    environ: dict[str, str] = {"SUNDIAL_CONFIG": "/nonexistent/config.toml"}
    assert local_stack_args("local", ["--api", "http://127.0.0.1:8123", "--workers", "2"], {}, environ) == [
        "--workers",
        "2",
        "--port",
        "8123",
    ]
    assert local_stack_args("local", [], {"api": "http://localhost:8124/"}, environ) == ["--port", "8124"]
    smoke = local_stack_args("smoke", ["--profile=ops", "--timeout", "9"], {"api": "http://x"}, environ)
    assert smoke == ["--api", "http://x", "--timeout", "9"] and environ["AWS_PROFILE"] == "ops"
    refusals = {
        ("emulator", ("--api", "http://x")): "--api means nothing for `sundial emulator`",
        ("local", ("--stack", "S")): "--stack means nothing for `sundial local`",
        ("local", ("--api", "https://x.example")): "--api must be http://127.0.0.1:PORT",
        ("local", ("--api", "http://127.0.0.1:1", "--port", "2")): "--api or --port, not both",
        ("smoke", ("--region", "eu-west-1")): "--region means nothing for `sundial smoke`",
    }
    for (name, args), message in refusals.items():
        with pytest.raises(click.UsageError, match=message.replace("(", r"\(")):
            local_stack_args(name, list(args), {}, environ)
