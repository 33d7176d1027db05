"""`sundial upgrade-listing` and `sundial reseal-headers`: a deployed table's backfills
(docs/operations.md, "Upgrading the listing indexes" and "Sealed header values"). They talk to DynamoDB
(and KMS) with the caller's AWS credentials, not to the API."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import click

from sundial.commands.connection import Connection, some_connection_options

# Why the API's connection options mean nothing to these commands.
_WHY = "it talks to DynamoDB (and KMS) with your AWS credentials, not to the API"


@click.command(name="upgrade-listing")
@click.option("--table", required=True, help="the jobs table (the stack's JobsTable resource)")
@click.option("--start", help="where a stopped run said to go on from (one segment's next_start)")
@click.option("--segment", type=click.IntRange(min=0), default=None, help="only this segment of --segments")
@click.option("--segments", type=click.IntRange(min=1, max=64), default=1, show_default=True)
@click.option("--endpoint-url", help="DynamoDB endpoint (the emulator's, say)")
@some_connection_options(("profile", "region"), why=_WHY)
def upgrade_listing(
    connection: Connection,
    table: str,
    start: str | None,
    segment: int | None,
    segments: int,
    endpoint_url: str | None,
) -> None:
    """Give every job written before the sharded listing indexes its listing keys. Safe to stop
    and to run again: it writes only the keys still missing, each conditional on the job's version."""
    # Only these commands load the store and boto3: the rest of the command talks HTTP.
    import boto3  # noqa: PLC0415

    from sundial.shared.store.upgrade import Progress, backfill_listing  # noqa: PLC0415

    client: Any = boto3.Session(profile_name=connection.profile, region_name=connection.region).client(
        "dynamodb", endpoint_url=endpoint_url
    )
    if start is not None and segment is None and segments > 1:
        raise click.UsageError("--start goes with --segment: each segment stops at its own place")
    chosen = [segment] if segment is not None else list(range(segments))

    def run(n: int) -> Progress:
        def report(progress: Progress) -> None:
            click.echo(
                f"segment {n}: {progress.scanned} items read, {progress.written} jobs given keys, "
                f"next_start {progress.next_start or '-'}"
            )

        return backfill_listing(client, table, start, n, segments, on_page=report)

    with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
        done = list(pool.map(run, chosen))
    click.echo(
        f"done: {sum(p.scanned for p in done)} items read, {sum(p.written for p in done)} jobs given keys"
    )


@click.command(name="reseal-headers")
@click.option("--table", required=True, help="the jobs table (the stack's JobsTable resource)")
@click.option("--key", required=True, help="the header key's ARN (the API's SUNDIAL_HEADER_KEY_ARN)")
@click.option("--endpoint-url", help="DynamoDB and KMS endpoint (the emulator's, say)")
@some_connection_options(("profile", "region"), why=_WHY)
def reseal_headers_command(connection: Connection, table: str, key: str, endpoint_url: str | None) -> None:
    """Seal the inline header values and url queries of jobs stored before sealing. Safe to stop and
    to run again: it writes only targets that still hold a plain value, each conditional on the
    target read."""
    import boto3  # noqa: PLC0415  # only the table commands need DynamoDB and KMS themselves

    from sundial.shared.service.sealing import HeaderSealer  # noqa: PLC0415
    from sundial.shared.store.reseal import reseal_headers  # noqa: PLC0415

    session = boto3.Session(profile_name=connection.profile, region_name=connection.region)
    sealer = HeaderSealer(session.client("kms", endpoint_url=endpoint_url), key)
    client: Any = session.client("dynamodb", endpoint_url=endpoint_url)
    done = reseal_headers(client, table, sealer.sealed)
    click.echo(f"done: {done.scanned} items read, {done.sealed} jobs' header values and queries sealed")
