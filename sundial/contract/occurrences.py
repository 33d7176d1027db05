"""GET /jobs/{id}/occurrences: every instant of a job's schedule in a range, and what became of it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from sundial.contract.vocabulary import OccurrenceState, SkipReason

MAX_OCCURRENCES_PAGE = 500
DEFAULT_OCCURRENCES_PAGE = 100


class OccurrenceView(BaseModel):
    scheduled_at: str = Field(description="The instant of the schedule (or of a triggered run).")
    start_at: str = Field(description="When it starts: its instant, or later inside the job's window.")
    state: OccurrenceState
    reason: SkipReason | None = Field(
        default=None,
        description="Why a skipped instant did not run; on a waiting one, `paused` when it waits for a "
        "resume. Null otherwise.",
    )
    attempts: int = Field(default=0, description="Attempts started for it, as far as history is kept.")
    last_status: str | None = Field(
        default=None,
        description="Its last attempt's status (`succeeded`, `dead`, `failed`, `lost`, `timed_out`); "
        "null when no attempt ended or history no longer holds it.",
    )
    backfilled: bool = Field(default=False, description="Run by a backfill.")
    extra: bool = Field(default=False, description="A triggered run: one more row beside the schedule's.")


class OccurrenceList(BaseModel):
    occurrences: list[OccurrenceView]
    next_token: str | None
