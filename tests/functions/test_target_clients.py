"""functions.clients as the worker uses it for targets: Sundial's own queues, and clients whose
timeouts and retries fit inside an attempt's limit."""

from __future__ import annotations

from functions import clients
from local_stack.resources import Resources


def test_own_queue_urls_are_the_priority_queues_and_the_dead_letter_queue(env: Resources) -> None:
    assert clients.own_queue_urls() == frozenset((*env.queue_urls.values(), env.dead_letter_queue_url))
