"""GET /jobs/{id}/occurrences: a page of the occurrence ledger (shared.lifecycle.occurrences), read
from the job, its history, its skip ledger and its backfill ledger for the page's instants alone."""

from __future__ import annotations

import base64
import binascii
import itertools

from sundial.contract.occurrences import MAX_OCCURRENCES_PAGE, OccurrenceList, OccurrenceView
from sundial.shared import constants as c
from sundial.shared.clock import Clock, format_rfc3339
from sundial.shared.errors import InvalidInput
from sundial.shared.lifecycle.job_schedule import job_excludes
from sundial.shared.lifecycle.occurrences import Occurrence, Records, occurrences
from sundial.shared.lifecycle.series import iter_instants, one_off_instant
from sundial.shared.models import Job
from sundial.shared.schedules import parse_instant
from sundial.shared.store import JobStore

DAY_MS = 24 * 3600 * 1000
_TOKEN_PREFIX = "from:"


class OccurrenceReader:
    def __init__(self, store: JobStore, clock: Clock, history: c.History = c.History.ALL) -> None:
        self._store = store
        self._clock = clock
        self._history = history

    def page(
        self, job_id: str, from_text: str | None, to_text: str | None, limit: int, next_token: str | None
    ) -> OccurrenceList:
        """Raises JobNotFound, and InvalidInput naming `from`, `to`, `limit` or `next_token`."""
        if not 1 <= limit <= MAX_OCCURRENCES_PAGE:
            raise InvalidInput(f"limit must be 1-{MAX_OCCURRENCES_PAGE}", field="limit")
        now = self._clock.now_ms()
        to_ms = now if to_text is None else parse_instant(to_text, "to")
        from_ms = to_ms - DAY_MS if from_text is None else parse_instant(from_text, "from")
        if to_ms <= from_ms:
            raise InvalidInput("to must be after from", field="to")
        # Nothing older than run history is kept: the answer starts where the records do.
        from_ms = max(from_ms, now - self._store.retention_seconds * 1000)
        if next_token is not None:
            from_ms = max(from_ms, _decode(next_token))
        job = self._store.get(job_id)
        rows, until = self._page(job, from_ms, to_ms, limit, now)
        return OccurrenceList(
            occurrences=[_view(row) for row in rows],
            next_token=_encode(until) if until < to_ms else None,
        )

    def _page(self, job: Job, from_ms: int, to_ms: int, limit: int, now: int) -> tuple[list[Occurrence], int]:
        """Up to `limit` rows from `from`, and where the next page starts."""
        if from_ms >= to_ms:
            return [], to_ms
        instants = self._instants(job, from_ms, to_ms, limit + 1)
        until = instants[limit] if len(instants) > limit else to_ms
        instants = instants[:limit]
        backfilled, passed = self._store.backfill_records(job.id, from_ms, until)
        records = Records(
            runs=self._store.runs_between(job.id, from_ms, until),
            skips=self._store.skips(job.id, from_ms, until),
            backfilled=frozenset(backfilled),
            backfill_skipped=frozenset(passed),
            successes_unrecorded=self._history is c.History.FAILURES and job.is_recurring,
            excluded=lambda instant: job_excludes(job, instant),
        )
        rows = occurrences(job, instants, from_ms, until, records, now)
        if len(rows) > limit:
            # Triggered runs took places in the page: the next starts at the first row left out, and
            # this one keeps no row of that instant, so a page never splits an instant's rows.
            until = rows[limit].scheduled_at
            rows = [row for row in rows[:limit] if row.scheduled_at < until]
        return rows, until

    @staticmethod
    def _instants(job: Job, from_ms: int, to_ms: int, count: int) -> list[int]:
        if not job.is_recurring:
            one = one_off_instant(job)
            return [one] if one is not None and from_ms <= one < to_ms else []
        return list(itertools.islice(iter_instants(job, from_ms, to_ms), count))


def _view(row: Occurrence) -> OccurrenceView:
    return OccurrenceView(
        scheduled_at=format_rfc3339(row.scheduled_at),
        start_at=format_rfc3339(row.start_at),
        state=row.state,
        reason=row.reason,
        attempts=row.attempts,
        last_status=None if row.last_status is None else row.last_status.value,
        backfilled=row.backfilled,
        extra=row.extra,
    )


def _encode(from_ms: int) -> str:
    return base64.urlsafe_b64encode(f"{_TOKEN_PREFIX}{from_ms}".encode()).decode().rstrip("=")


def _decode(token: str) -> int:
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    value = text.removeprefix(_TOKEN_PREFIX)
    if not text.startswith(_TOKEN_PREFIX) or not value.isdigit() or len(value) > 16:
        raise InvalidInput("next_token is not one this API issued", field="next_token")
    return int(value)
