"""What references, sealed values and signatures cost per execution: one worker environment delivering
http jobs against the emulator's Secrets Manager and KMS, its calls counted.

Each job's target has a header that refers to a secret, an inline header value and a url query, both
sealed as the API stores them, and every delivery is signed: two secrets to read (the reference and
the signing secret) and two values to decrypt. A cold environment's first delivery reads each once;
a warm one reads them from what it keeps for 60 s (sundial/shared/targets/kept.py), so the counts per
execution include the cache's hits.

Time is a clock moved by each delivery's interval, so an hour of deliveries takes a moment; the
intervals vary by up to a fifth either way (seeded), as real arrivals do, and each rate is measured
REPETITIONS times. Each call is priced at its service's published price plus AWS_CALL_MS of the
worker's billed time (bench/cost.py).
"""

from __future__ import annotations

import random
import statistics
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench import cost_model as m
from bench.cost import AWS_CALL_MS, MEMORY_GB
from bench.harness import Aws, Repeated, Row, client
from sundial.local_stack.resources import ensure_header_key, ensure_signing_secret
from sundial.shared.service.sealing import HeaderSealer
from sundial.shared.targets import (
    Delivery,
    DeliveryKeys,
    HeaderOpener,
    HttpTarget,
    SecretRef,
    SecretResolver,
    Signer,
    deliver,
)

PRICE_PER_SECRETS_MANAGER_CALL = 0.05 / 10_000
PRICE_PER_KMS_REQUEST = 0.03 / 10_000
PRICE_PER_CALL_MS = AWS_CALL_MS / 1000 * MEMORY_GB["worker"] * m.PRICE_PER_GB_SECOND
HOUR_SECONDS = 3600
# Deliveries one warm environment makes per minute: a job a minute (every one misses the cache) up
# to one a second (a busy environment).
RATES_PER_MINUTE = (1, 6, 60)
REPETITIONS = 3
JITTER = 0.2
SECRETS = 2  # the reference and the signing secret
SEALED_VALUES = 2  # the inline header and the query
JOB_ID = "01JD0000000000000000000000"


@dataclass(frozen=True)
class Calls:
    """Calls per execution."""

    secret_reads: float
    decrypts: float
    hits: float  # values taken from what was kept

    @property
    def dollars(self) -> float:
        return self.secret_reads * (PRICE_PER_SECRETS_MANAGER_CALL + PRICE_PER_CALL_MS) + self.decrypts * (
            PRICE_PER_KMS_REQUEST + PRICE_PER_CALL_MS
        )


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


@dataclass(frozen=True)
class _Setup:
    target: HttpTarget
    keys: Callable[[_Clock], DeliveryKeys]


def _setup(aws: Aws, url: str) -> _Setup:
    endpoint = aws.emulator.endpoint_url
    made: dict[str, Any] = {}

    def client_for(service: str) -> Any:
        return made.setdefault(service, client(service, endpoint, "us-east-1"))

    secretsmanager, kms = client_for("secretsmanager"), client_for("kms")
    signing_arn = ensure_signing_secret(secretsmanager, prefix="bench-")
    secret_arn = str(secretsmanager.create_secret(Name="bench-token", SecretString="Bearer bench")["ARN"])
    plain = HttpTarget(
        type="http",
        url=f"{url}?api_key=bench-query",
        headers={"Authorization": SecretRef(secret=secret_arn), "X-Pass": "bench-inline"},
    )
    sealed = HeaderSealer(kms, ensure_header_key(kms, prefix="bench-")).sealed(plain, JOB_ID)
    assert isinstance(sealed, HttpTarget)

    def keys(clock: _Clock) -> DeliveryKeys:
        return DeliveryKeys(
            resolver=SecretResolver(client_for, clock=clock),
            signer=Signer(client_for, signing_arn, clock=clock),
            opener=HeaderOpener(client_for, clock=clock),
        )

    return _Setup(sealed, keys)


def _calls(keys: DeliveryKeys, executions: int) -> Calls:
    assert keys.resolver is not None and keys.signer is not None and keys.opener is not None
    reads = keys.resolver.reads + keys.signer.reads
    return Calls(reads / executions, keys.opener.reads / executions, keys.opener.hits / executions)


def _run(setup: _Setup, executions: int, per_minute: float, rng: random.Random) -> Calls:
    """One environment from cold: `executions` deliveries, `per_minute` on average."""
    clock = _Clock()
    keys = setup.keys(clock)
    for n in range(executions):
        delivery = Delivery(
            job_id=JOB_ID, scheduled_at="2026-12-01T09:00:00Z", attempt=1, idempotency_key=f"bench:{n}"
        )
        deliver(setup.target, delivery, timeout_seconds=5, clients=None, allow_private=True, keys=keys)  # type: ignore[arg-type]
        clock.now += 60 / per_minute * rng.uniform(1 - JITTER, 1 + JITTER)
    return _calls(keys, executions)


def measure(aws: Aws) -> list[Row]:
    rng = random.Random(25)
    with _receiver() as url:
        setup = _setup(aws, url)
        cold = _run(setup, 1, 1, rng)
        warm = {
            per_minute: [
                _run(setup, per_minute * HOUR_SECONDS // 60, per_minute, rng) for _ in range(REPETITIONS)
            ]
            for per_minute in RATES_PER_MINUTE
        }
    rows = _cold_rows(cold)
    for per_minute, runs in warm.items():
        rows += _warm_rows(per_minute, runs)
    return rows


def _cold_rows(cold: Calls) -> list[Row]:
    detail = {"kms_decrypts": cold.decrypts, "secret_reads": cold.secret_reads, "dollars": cold.dollars}
    return [
        Row(
            "secrets: a cold worker's first delivery, Secrets Manager reads",
            cold.secret_reads,
            "reads",
            f"<= {SECRETS} (one per secret)",
            cold.secret_reads <= SECRETS,
            detail,
        ),
        Row(
            "secrets: a cold worker's first delivery, KMS Decrypt calls",
            cold.decrypts,
            "calls",
            f"<= {SEALED_VALUES} (one per sealed value)",
            cold.decrypts <= SEALED_VALUES,
            detail,
        ),
    ]


def _warm_rows(per_minute: int, runs: list[Calls]) -> list[Row]:
    """Reads and decrypts per execution, each held to one per value a minute, and their cost."""
    where = f"{per_minute} deliveries/min per environment"
    # A delivery reads a value only once its minute is over: one read per value per (jittered) minute.
    per_value = min(1.0, 1 / (per_minute * (1 - JITTER)))
    reads = Repeated(tuple(run.secret_reads for run in runs))
    decrypts = Repeated(tuple(run.decrypts for run in runs))
    dollars = Repeated(tuple(run.dollars * 1e6 for run in runs))
    hits = statistics.median(run.hits for run in runs)
    return [
        Row(
            f"secrets: Secrets Manager reads per execution, {where}",
            round(reads.median, 4),
            "reads",
            f"<= {SECRETS * per_value:.3g} (one per secret a minute)",
            reads.median <= SECRETS * per_value,
            {"repetitions": reads.as_dict(), "price_per_read": PRICE_PER_SECRETS_MANAGER_CALL},
            reads.describe(4),
        ),
        Row(
            f"secrets: KMS Decrypt calls per execution, {where}",
            round(decrypts.median, 4),
            "calls",
            f"<= {SEALED_VALUES * per_value:.3g} (one per sealed value a minute)",
            decrypts.median <= SEALED_VALUES * per_value,
            {
                "repetitions": decrypts.as_dict(),
                "cache_hits_per_execution": round(hits, 4),
                "price_per_call": PRICE_PER_KMS_REQUEST,
                "dollars_per_million": round(decrypts.median * PRICE_PER_KMS_REQUEST * 1e6, 4),
            },
            decrypts.describe(4),
        ),
        Row(
            f"cost: a reference, a sealed header and query, and the signature, {where}",
            round(dollars.median, 4),
            "$/million executions",
            None,
            None,
            {
                "secrets_manager": round(reads.median * PRICE_PER_SECRETS_MANAGER_CALL * 1e6, 4),
                "kms": round(decrypts.median * PRICE_PER_KMS_REQUEST * 1e6, 4),
                "worker_time": round((reads.median + decrypts.median) * PRICE_PER_CALL_MS * 1e6, 4),
                "aws_call_ms": AWS_CALL_MS,
            },
            dollars.describe(4),
        ),
    ]
