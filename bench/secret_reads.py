"""What references and signatures add per execution: one warm worker environment delivering http jobs
whose header refers to a secret, signed, against the emulator's Secrets Manager, its calls counted.

Time is a clock moved by each delivery's interval, so an hour of deliveries takes a moment; the
resolver and signer keep what they read for their 60 s, as the deployed worker does. Each read is
priced as a Secrets Manager call plus AWS_CALL_MS of the worker's billed time (bench/cost.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench import cost_model as m
from bench.cost import AWS_CALL_MS, MEMORY_GB
from bench.harness import Aws, Row, client
from local_stack.resources import ensure_signing_secret
from shared.targets import Delivery, DeliveryKeys, HttpTarget, SecretRef, SecretResolver, Signer, deliver

PRICE_PER_SECRETS_MANAGER_CALL = 0.05 / 10_000
HOUR_SECONDS = 3600
# Deliveries one warm environment makes per minute: a job a minute (every one misses the cache) up
# to one a second (a busy environment).
RATES_PER_MINUTE = (1, 6, 60)


class _Ok(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _reads_per_execution(aws: Aws, url: str, signing_arn: str, secret_arn: str, per_minute: int) -> float:
    endpoint = aws.emulator.endpoint_url
    made: dict[str, Any] = {}

    def client_for(service: str) -> Any:
        return made.setdefault(service, client(service, endpoint, "us-east-1"))

    clock = _Clock()
    keys = DeliveryKeys(SecretResolver(client_for, clock=clock), Signer(client_for, signing_arn, clock=clock))
    target = HttpTarget(type="http", url=url, headers={"Authorization": SecretRef(secret=secret_arn)})
    executions = per_minute * HOUR_SECONDS // 60
    for n in range(executions):
        delivery = Delivery(
            job_id="bench", scheduled_at="2026-12-01T09:00:00Z", attempt=1, idempotency_key=f"bench:{n}"
        )
        deliver(target, delivery, timeout_seconds=5, clients=None, allow_private=True, keys=keys)  # type: ignore[arg-type]
        clock.now += 60 / per_minute
    assert keys.resolver is not None and keys.signer is not None
    return (keys.resolver.reads + keys.signer.reads) / executions


def measure(aws: Aws) -> list[Row]:
    secretsmanager = client("secretsmanager", aws.emulator.endpoint_url, "us-east-1")
    signing_arn = ensure_signing_secret(secretsmanager, prefix="bench-")
    secret_arn = str(secretsmanager.create_secret(Name="bench-token", SecretString="Bearer bench")["ARN"])
    per_read = (
        PRICE_PER_SECRETS_MANAGER_CALL + AWS_CALL_MS / 1000 * MEMORY_GB["worker"] * m.PRICE_PER_GB_SECOND
    )
    rows = []
    with _receiver() as url:
        for per_minute in RATES_PER_MINUTE:
            reads = _reads_per_execution(aws, url, signing_arn, secret_arn, per_minute)
            rows.append(
                Row(
                    f"cost: a reference and the signature, {per_minute} deliveries/min per environment",
                    round(reads * per_read * 1e6, 4),
                    "$/million executions",
                    detail={
                        "secret_reads_per_execution": round(reads, 4),
                        "cache_hit_fraction": round(1 - reads / 3, 4),  # 3 reads when nothing is kept
                        "price_per_read": per_read,
                    },
                )
            )
    return rows
