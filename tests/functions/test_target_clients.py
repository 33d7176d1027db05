"""sundial.functions.clients as the worker uses it for targets: Sundial's own queues, and clients whose
timeouts and retries fit inside an attempt's limit, proven against a server that never answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from sundial.functions import clients
from sundial.local_stack.resources import Resources
from sundial.shared.targets import (
    Delivery,
    EventBridgeTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    Target,
    TargetTimedOut,
    deliver,
)
from sundial.shared.targets.timeouts import call_limits

SERVICES = {"sqs": "sqs", "sns": "sns", "eventbridge": "events"}

DELIVERY = Delivery(
    job_id="01JD0000000000000000000000", scheduled_at="2026-12-01T09:00:00Z", attempt=1, idempotency_key="k"
)
# The exact budget is tests/unit/test_targets_timeouts.py's, from the clients' settings. Over the wire
# the attempts the server counts are exact, and a call must have waited its read timeouts; the upper
# bound only tells a client that gives up from one that waits for the held answer (30 s), since a
# loaded machine (five test runs on two cores) has been seen to take 1.6 s more than the limit.
LOADED_MACHINE_SECONDS = 6.0


class _Holding(BaseHTTPRequestHandler):
    """Reads each request, counts it, and holds its answer until the test ends."""

    server: _HoldingServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.requests += 1
        self.server.release.wait(30)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _HoldingServer(ThreadingHTTPServer):
    daemon_threads = True
    requests = 0
    lock = threading.Lock()
    release = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client gave up first: that is the point


@pytest.fixture
def holding() -> Iterator[_HoldingServer]:
    server = _HoldingServer(("127.0.0.1", 0), _Holding)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


def assert_gave_up_within(started: float, *, limit: float, waited_at_least: float) -> None:
    elapsed = time.monotonic() - started
    assert waited_at_least - 0.05 <= elapsed <= limit + LOADED_MACHINE_SECONDS


def endpoint(server: _HoldingServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_own_queue_urls_are_the_priority_queues_and_the_dead_letter_queue(env: Resources) -> None:
    own = clients.dispatcher().own_queue_urls
    assert own == frozenset((*env.queue_urls.values(), env.dead_letter_queue_url))


def test_an_invoke_that_outlasts_its_limit_times_out_within_it_and_is_not_retried(
    holding: _HoldingServer,
) -> None:
    target = LambdaTarget(type="lambda", function_arn="arn:aws:lambda:us-east-1:123456789012:function:slow")
    started = time.monotonic()
    with pytest.raises(TargetTimedOut, match=r"^lambda Invoke of .*:slow timed out: Read timeout"):
        deliver(
            target,
            DELIVERY,
            timeout_seconds=1,
            clients=clients.TargetClients(endpoint(holding)),
            allow_private=False,
        )
    assert_gave_up_within(started, limit=1, waited_at_least=call_limits("lambda", 1).read_seconds)
    assert holding.requests == 1


@pytest.mark.parametrize(
    "target",
    [
        SqsTarget(type="sqs", queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q"),
        SnsTarget(type="sns", topic_arn="arn:aws:sns:us-east-1:123456789012:t"),
        EventBridgeTarget(type="eventbridge", detail_type="d", source="s"),
    ],
    ids=["sqs", "sns", "eventbridge"],
)
def test_a_send_that_stalls_times_out_with_its_retries_inside_the_limit(
    holding: _HoldingServer, target: Target
) -> None:
    started = time.monotonic()
    with pytest.raises(TargetTimedOut, match=r"timed out: Read timeout"):
        deliver(
            target,
            DELIVERY,
            timeout_seconds=2,
            clients=clients.TargetClients(endpoint(holding)),
            allow_private=False,
        )
    planned = call_limits(SERVICES[target.type], 2)
    assert_gave_up_within(started, limit=2, waited_at_least=planned.attempts * planned.read_seconds)
    assert holding.requests == planned.attempts


def test_clients_are_built_once_per_service_and_limit() -> None:
    made = clients.TargetClients("http://127.0.0.1:9")
    lambda_300 = made.client("lambda", 300)
    assert made.client("lambda", 300) is lambda_300
    assert made.client("lambda", 60) is not lambda_300
    assert made.client("sqs", 300) is not lambda_300
    config = lambda_300.meta.config
    assert config.connect_timeout + config.read_timeout <= 300
    assert config.retries["total_max_attempts"] == 1


def test_the_worker_gets_one_set_of_target_clients_for_its_settings(env: Resources) -> None:
    first = clients.aws_clients()
    assert clients.aws_clients() is first
    assert isinstance(first, clients.TargetClients)


def test_a_stalled_send_is_retried_when_the_limit_leaves_room(holding: _HoldingServer) -> None:
    # 12 s leaves room for two attempts and the longest backoff between them (see aws_client_config).
    target = SqsTarget(type="sqs", queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q")
    started = time.monotonic()
    with pytest.raises(TargetTimedOut):
        deliver(
            target,
            DELIVERY,
            timeout_seconds=12,
            clients=clients.TargetClients(endpoint(holding)),
            allow_private=False,
        )
    planned = call_limits("sqs", 12)
    assert planned.attempts == 2
    assert_gave_up_within(started, limit=12, waited_at_least=planned.attempts * planned.read_seconds)
    assert holding.requests == 2
