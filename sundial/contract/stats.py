"""The body of GET /stats (docs/api.md, "Stats")."""

from __future__ import annotations

from pydantic import BaseModel, Field

from sundial.contract.vocabulary import Health, JobStatus, Priority


class JobCounts(BaseModel):
    """Jobs per status and priority, as of `counted_at` (at most `max_age_seconds` old)."""

    counted_at: str
    max_age_seconds: float
    total: int
    paused: int
    by_status: dict[JobStatus, dict[Priority, int]]
    by_health: dict[Health, int] = Field(
        description="ok; failing: the last attempt failed and a retry waits; dead: the last occurrence died."
    )


class DeadJobView(BaseModel):
    id: str
    name: str | None
    priority: Priority
    died_at: str
    error: str | None
    dead_in_a_row: int = Field(
        description="A recurring job whose last occurrence died: how many in a row have (0: a dead one-off)."
    )


class QueueView(BaseModel):
    """One priority's queue (SQS's approximate counts) and its most overdue due-index entry."""

    priority: Priority
    visible: int
    in_flight: int
    delayed: int
    oldest_due_seconds: float


class MinuteView(BaseModel):
    minute: str
    starts: int
    lateness_p50_ms: int | None
    lateness_p99_ms: int | None


class ExecutionsView(BaseModel):
    """Attempts started in the last hour, per minute, with the start lateness of first attempts."""

    window_minutes: int
    starts: int
    lateness_p50_ms: int | None
    lateness_p99_ms: int | None
    per_minute: list[MinuteView]


class StatsView(BaseModel):
    generated_at: str
    jobs: JobCounts
    dead: list[DeadJobView]
    dead_total: int
    queues: list[QueueView]
    executions: ExecutionsView
