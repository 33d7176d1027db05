"""The `console` command: `sundial console --api URL [--port 8001]` (or `--stack NAME`)."""

from __future__ import annotations

import click

from sundial.client import api_url_of_stack
from sundial.commands.connection import API_URL_ENV, Connection, some_connection_options
from sundial.console.server import DEFAULT_PORT, Target, build_server

TRACE_URL_ENV = "SUNDIAL_TRACE_URL"


@click.command("console")
@click.option("--port", default=DEFAULT_PORT, show_default=True, help="The console's port on 127.0.0.1.")
@click.option(
    "--sign/--no-sign",
    default=None,
    help="Sign the API calls with SigV4 (default: for execute-api URLs only).",
)
@click.option(
    "--trace-url",
    envvar=TRACE_URL_ENV,
    help="Link each run's trace: an http(s) URL holding {trace_id} (W3C) or {xray_trace_id} (X-Ray), "
    "such as https://console.aws.amazon.com/cloudwatch/home#xray:traces/{xray_trace_id} "
    f"[env {TRACE_URL_ENV}].",
)
@some_connection_options(
    ("api", "stack", "profile", "region", "sundial_profile"),
    why="the console forwards the page's calls as they come, each with its own time limit",
)
def console(connection: Connection, port: int, sign: bool | None, trace_url: str | None) -> None:
    """Serve the console on loopback, forwarding its API calls (signed for a deployed stage)."""
    api_url = _api_url(connection)
    trace_url = trace_url or ""
    if trace_url and not _links_traces(trace_url):
        raise click.UsageError("--trace-url must be an http(s) URL holding {trace_id} or {xray_trace_id}")
    try:
        target = Target.of(api_url, sign, connection.region, connection.profile)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        server = build_server(target, port, trace_url)
    except OSError as exc:  # most often: the port is taken
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc}") from exc
    host, bound = server.server_address[:2]
    signing = f"signed for {target.signer.region}" if target.signer else "unsigned"
    click.echo(
        f"Sundial console on http://{host!s}:{bound}/ for {target.api_url} ({signing}); Ctrl-C stops it",
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _api_url(connection: Connection) -> str:
    if connection.api and connection.stack:
        raise click.UsageError(f"give --api (or ${API_URL_ENV}) or --stack, not both")
    if connection.stack:
        return api_url_of_stack(connection.stack, profile=connection.profile, region=connection.region)
    if not connection.api:
        raise click.UsageError(f"give the API's URL with --api or ${API_URL_ENV}, or --stack")
    return connection.api


def _links_traces(url: str) -> bool:
    return url.startswith(("https://", "http://")) and ("{trace_id}" in url or "{xray_trace_id}" in url)
