"""A job's item as its first write stores it: the state that starts empty is left out, and an item
without it reads as the job it was written from."""

from __future__ import annotations

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import JobStatus
from sundial.shared.models import Job
from sundial.shared.store import items

T0 = 1_772_442_000_000
EMPTY_STATE = (
    "payload_stored_apart",
    "cancel_requested",
    "paused",
    "extra_run",
    "backfill",
    "triggers",
    "retried_after",
    "window_seconds",
    "consecutive_failures",
    "missed",
)


def new_job(**fields: object) -> Job:
    base: dict[str, object] = {
        "id": "01KA0000000000000000000001",
        "status": JobStatus.PENDING,
        "target": PythonTarget(type="python", handler="noop"),
        "schedule": "rate(1 minute)",
        "created_at": T0,
        "updated_at": T0,
        "scheduled_at": T0 + 60_000,
        "due_at": T0 + 60_000,
    }
    return Job.model_validate(base | fields)


def test_a_new_job_s_item_leaves_out_the_state_that_starts_empty_and_reads_back_the_same() -> None:
    job = new_job()
    item = items.job_to_item(job, "w0")

    assert not set(EMPTY_STATE) & set(item)
    assert items.item_to_job(item) == job


def test_state_that_is_not_empty_is_stored() -> None:
    job = new_job(paused=True, triggers=2, consecutive_failures=3, backfill=(T0,), window_seconds=30)
    item = items.job_to_item(job, "w0")

    assert {"paused", "triggers", "consecutive_failures", "backfill", "window_seconds"} <= set(item)
    assert items.item_to_job(item) == job
