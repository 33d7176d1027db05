"""The job service: one method per API call, over the store and dispatch. Handlers stay thin."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from sundial.contract.jobs import (
    JOB_ID_PATTERN,
    BackfillRequest,
    BackfillView,
    JobCreate,
    JobList,
    JobUpdate,
    JobView,
    PreviewRequest,
    PreviewResponse,
    RunList,
)
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import Clock, to_epoch_ms
from sundial.shared.dispatch import Dispatcher, JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.settle import send
from sundial.shared.errors import Conflict, InvalidInput, JobNotFound, StaleDelivery
from sundial.shared.lifecycle import Placement, backfill
from sundial.shared.models import Job, Run
from sundial.shared.service.alert_routes import check_alert_route, route_changes
from sundial.shared.service.conditions import IfMatch
from sundial.shared.service.effects import Action, effects_of
from sundial.shared.service.placing import new_job, refuse_moving_onto_a_run, replacement, rewindowed
from sundial.shared.service.previews import preview_schedule
from sundial.shared.service.requests import (
    TIMING_FIELDS,
    changes_of,
    check_job_window,
    list_filter,
    payload_json,
)
from sundial.shared.service.sealing import HeaderSealer
from sundial.shared.service.views import backfill_view, job_view, run_view
from sundial.shared.store import IdempotencyRecord, JobStore, new_token

SECOND_MS = 1000
_JOB_ID = re.compile(JOB_ID_PATTERN.removeprefix("^").removesuffix("$"))
# A call that keeps meeting concurrent changes gives up with a 409 after this many rounds.
ACTION_ROUNDS = 5

logger = logging.getLogger(__name__)


class JobService:
    def __init__(
        self,
        store: JobStore,
        dispatcher: Dispatcher,
        clock: Clock,
        allow_private_targets: bool,
        list_indexes: frozenset[str] | None = None,
        sealer: HeaderSealer | None = None,
        history: c.History = c.History.ALL,
    ) -> None:
        """Without `sealer`, inline header values are stored as sent: for in-process tests of the
        state machine only; the API function always has one (sundial/functions/api.py)."""
        self._sealer = sealer
        self._history = history
        self._list_indexes = list_indexes
        self._store = store
        self._dispatcher = dispatcher
        self._clock = clock
        self._allow_private = allow_private_targets
        self._operation: str | None = None
        self._trace: str | None = None
        self._if_match: IfMatch | None = None

    def for_operation(self, operation_id: str) -> JobService:
        """This service acting for a bulk operation: a job its action already changed is answered as
        it is, unchanged (a slice repeated after a crash acts once on each job)."""
        acting = copy.copy(self)
        acting._store = self._store.for_operation(operation_id)
        acting._operation = operation_id
        return acting

    @contextlib.contextmanager
    def sends_gathered(self) -> Iterator[JobService]:
        """This service for one batch of creates made side by side: their messages go ten to a
        request (shared.dispatch.GatheredSends), what gathered last when the block ends. A message
        that cannot be sent releases its job to the next tick, as any create's does."""
        gathering = self._dispatcher.gathering()
        acting = copy.copy(self)
        acting._dispatcher = gathering
        try:
            yield acting
        finally:
            send(EngineContext(self._store, self._dispatcher, self._clock), gathering.rest())

    def traced(self, traceparent: str | None) -> JobService:
        """This service for a call whose W3C `traceparent` (sundial/shared/tracing.py) goes with the runs
        it schedules: a created job's, a trigger's, a retry's, a resume's and a change's that places
        an occurrence."""
        traced = copy.copy(self)
        traced._store = self._store.traced(traceparent)
        traced._trace = traceparent
        return traced

    def conditional(self, if_match: IfMatch | None) -> JobService:
        """This service acting on a job only while `if_match` holds for it: checked on the job each
        write is conditional on, so a change between the read and the write fails the write, and the
        job read again fails the check (PreconditionFailed) rather than being written."""
        conditional = copy.copy(self)
        conditional._if_match = if_match
        return conditional

    @property
    def list_indexes(self) -> frozenset[str] | None:
        return self._list_indexes

    # --- create and read ------------------------------------------------------------------------

    def create(self, spec: JobCreate, idempotency_key: str | None = None) -> tuple[JobView, bool]:
        """Validates and stores a job; dispatches it at once when due before the next tick.

        Returns (job, created). Raises InvalidInput, PayloadTooLarge, or Conflict (a reused
        Idempotency-Key with a different body)."""
        if self._sealer is None:
            logger.warning("no header key: inline header values are stored unsealed")
        now_ms = self._clock.now_ms()
        encoded = payload_json(spec.payload)
        job = self._new_job(spec, now_ms, len(encoded.encode()))
        record = None
        if idempotency_key is not None:
            body_hash = hashlib.sha256(spec.model_dump_json().encode()).hexdigest()
            expires = now_ms // SECOND_MS + c.IDEMPOTENCY_TTL_SECONDS
            record = IdempotencyRecord(idempotency_key, body_hash, job.id, expires)
        stored, created = self._store.create(job, record, self._sealed)
        if stored.status is JobStatus.QUEUED:
            # A replay sends again too: its first answer may have been lost before its send, and the
            # fence drops a duplicate.
            send(EngineContext(self._store, self._dispatcher, self._clock), [JobMessage.for_job(stored)])
        return self._view(stored), created

    def get(self, job_id: str) -> JobView:
        """Raises JobNotFound."""
        return self._view(self._job(job_id))

    def list(
        self,
        status: str | None,
        priority: str | None,
        limit: int,
        next_token: str | None,
        name: str | None = None,
        health: str | None = None,
        name_prefix: str | None = None,
    ) -> JobList:
        """Newest first, filters combined; a page is short only when nothing more matches (or, for a
        filter no index decides, when the page read its bound: JobStore.list_jobs). Raises
        InvalidInput for a bad filter, limit or token."""
        wanted = list_filter(status, priority, name, health, name_prefix)
        if not 1 <= limit <= 100:
            raise InvalidInput("limit must be 1-100", field="limit")
        page = self._store.list_jobs(wanted, limit, next_token, self._list_indexes)
        return JobList(
            jobs=[self._view(job) for job in page.jobs],
            next_token=page.next_token,
            total=page.total,
            total_is_estimate=page.total_is_estimate,
        )

    def runs(self, job_id: str, limit: int, next_token: str | None) -> RunList:
        """Raises JobNotFound, InvalidInput."""
        if not 1 <= limit <= 100:
            raise InvalidInput("limit must be 1-100", field="limit")
        job = self._job(job_id)
        settled = job.last_run
        if settled is not None and not lifecycle.shown_in_runs(self._history, job, settled):
            settled = None
        runs, token = self._store.runs(
            job_id, limit, next_token, None if settled is None else Run.of(job_id, settled)
        )
        return RunList(runs=[run_view(run) for run in runs], next_token=token)

    def preview(self, request: PreviewRequest) -> PreviewResponse:
        """Raises InvalidInput naming the field at fault."""
        return preview_schedule(request, self._clock.now_ms())

    # --- changes to an existing job: read, decide, write on the version read; again on a race ------

    def update(self, job_id: str, patch: JobUpdate) -> JobView:
        """Changes take effect from the next occurrence: never re-runs one that ran, never revives a
        finished or cancelled job, never resets attempts. Raises JobNotFound, Conflict, InvalidInput."""

        def decide(job: Job) -> tuple[Job, Placement | None]:
            if job.status is JobStatus.RUNNING:
                raise Conflict(f"job '{job_id}' is running; change it after this attempt")
            changes = changes_of(job, patch) | self._route_changes(job, patch)
            updated = job.model_copy(update=changes)
            check_job_window(updated)
            self._check_route(updated, new_route="on_dead" in patch.model_fields_set)
            if not any(name in patch.model_fields_set for name in TIMING_FIELDS):
                moved = (
                    rewindowed(job, updated, self._clock.now_ms()) if "window_seconds" in changes else None
                )
                return self._write(moved, lambda p, t: self._store.update(updated, changes, p, t)), moved
            refusal = lifecycle.timing_change_refusal(job, updated)
            if refusal is not None:
                raise Conflict(refusal, field=next(n for n in TIMING_FIELDS if n in patch.model_fields_set))
            # New timing starts a new series from now, read once: its first occurrence counts from the
            # instant the occurrence ledger says it began (a rate's first is one period after it).
            now_ms = self._clock.now_ms()
            changes["schedule_since"] = now_ms
            updated = job.model_copy(update=changes)
            placement = replacement(updated, now_ms) if lifecycle.replaces_occurrence(job) else None
            if job.deferred_at is not None or lifecycle.resumes_behind_retry(job, updated):
                # A triggered run, or a retry, is current: it still runs, and the job resumes where the
                # change says.
                changes["deferred_at"] = replacement(updated, now_ms).scheduled_at
                updated = job.model_copy(update=changes)
            refuse_moving_onto_a_run(job, placement.scheduled_at if placement else updated.deferred_at, patch)
            if placement is not None and job.deferred_at is not None:
                placement = replace(placement, clear_deferred=True)
            return self._write(placement, lambda p, t: self._store.update(updated, changes, p, t)), placement

        return self._act(job_id, decide, "update")

    def cancel(self, job_id: str) -> JobView:
        """No further attempt starts; a running one finishes, then the job is cancelled."""

        def decide(job: Job) -> tuple[Job, Placement | None]:
            if job.status is JobStatus.CANCELLED or job.cancel_requested:
                return job, None
            placement = lifecycle.on_cancel(job)
            return self._store.cancel(job, placement), placement

        return self._act(job_id, decide, "cancel")

    def pause(self, job_id: str) -> JobView:
        def decide(job: Job) -> tuple[Job, Placement | None]:
            _check_recurring(job)
            if job.paused and job.status is not JobStatus.QUEUED and not lifecycle.waiting_triggers(job):
                return job, None  # a queued or waiting run is a trigger since: the pause drops it
            placement = lifecycle.on_pause(job)
            return self._store.pause(job, placement), placement

        return self._act(job_id, decide, "pause")

    def resume(self, job_id: str) -> JobView:
        def decide(job: Job) -> tuple[Job, Placement | None]:
            _check_recurring(job)
            if not job.paused:
                return job, None
            placement = lifecycle.on_resume(job, self._clock.now_ms())
            return self._write(placement, lambda p, t: self._store.resume(job, p, t)), placement

        return self._act(job_id, decide, "resume")

    def trigger(self, job_id: str) -> JobView:
        """One extra occurrence now, or as soon as what runs or waits before it has ended: every
        acknowledged trigger runs once, unless a later pause or cancel drops it. Raises Conflict
        when cancelled, or when the most triggered runs already wait."""

        def decide(job: Job) -> tuple[Job, Placement | None]:
            placement = lifecycle.on_trigger(job, self._clock.now_ms())
            return self._write(placement, lambda p, t: self._store.trigger(job, p, t)), placement

        return self._act(job_id, decide, "trigger")

    def backfill(self, job_id: str, request: BackfillRequest) -> BackfillView:
        """Runs the occurrences the job's schedule had in [from, to) before the job existed, each at
        most once however often asked, under its overlap policy. Raises JobNotFound, Conflict (a
        one-off, cancelled or finished job; too many waiting) and InvalidInput (field "to": an empty
        window, or more than MAX_BACKFILL_OCCURRENCES in it)."""
        from_ms, to_ms = to_epoch_ms(request.from_), to_epoch_ms(request.to)
        planned: list[backfill.BackfillPlan] = []

        def decide(job: Job) -> tuple[Job, Placement | None]:
            skipped = None
            if request.include_skipped:
                skips = self._store.skips(job.id, from_ms, to_ms)
                skipped = backfill.skipped_to_run(job, skips, from_ms, to_ms, self._clock.now_ms())
            instants, until = backfill.window_instants(job, from_ms, to_ms, skipped)
            the_plan = backfill.plan(job, instants, until, self._store.backfilled(job.id, from_ms, until))
            planned[:] = [the_plan]
            if request.dry_run or not the_plan.recorded:
                return job, None
            placement = backfill.on_backfill(job, the_plan.runs, self._clock.now_ms())
            waiting = backfill.waiting_after(job, the_plan.runs)
            return self._write(
                placement,
                lambda p, t: self._store.backfill(job, p, t, waiting, the_plan.recorded, the_plan.skipped),
            ), placement

        view = self._act(job_id, decide, "backfill")
        return backfill_view(job_id, from_ms, planned[0], request.dry_run, view)

    def retry(self, job_id: str) -> JobView:
        """Revives a dead job: it runs now, its retry policy counted afresh. Raises Conflict unless dead."""

        def decide(job: Job) -> tuple[Job, Placement | None]:
            placement = lifecycle.on_retry(job, self._clock.now_ms())
            return self._write(placement, lambda p, t: self._store.revive(job, placement, t)), placement

        return self._act(job_id, decide, "retry")

    # --- helpers ----------------------------------------------------------------------------------

    def _act(
        self, job_id: str, decide: Callable[[Job], tuple[Job, Placement | None]], action: Action
    ) -> JobView:
        """Reads the job, decides and writes on the version read; when anything changed meanwhile (a
        heartbeat, a settle, another call), decides again from the job as it now is. An If-Match
        precondition is part of each decision, so it holds for the job the write was made on. The
        answer says what the call did to what was waiting (effects_of). Raises PreconditionFailed."""
        job = self._job(job_id)
        for _ in range(ACTION_ROUNDS):
            if self._operation is not None and job.operation == self._operation:
                return self._view(job)
            if self._if_match is not None:
                self._if_match.check(job)
            try:
                written, _ = decide(job)
            except StaleDelivery as exc:
                if exc.current is None:
                    raise JobNotFound(f"job '{job_id}' not found") from exc
                job = exc.current
                continue
            if written.status is JobStatus.QUEUED and written.token != job.token:
                send(EngineContext(self._store, self._dispatcher, self._clock), [JobMessage.for_job(written)])
            effects = effects_of(action, job, written, self._clock.now_ms())
            return job_view(written, self._store.load_payload(written), effects)
        raise Conflict(f"job '{job_id}' kept changing while being updated; try again")

    def _write(
        self, placement: Placement | None, write: Callable[[Placement | None, str | None], Job]
    ) -> Job:
        """A placement due before the next tick is claimed in the same write (sent by `_act`)."""
        next_token = None
        if placement is not None and placement.dispatches_now(self._clock.now_ms()):
            next_token = new_token()
        return write(placement, next_token)

    def _job(self, job_id: str) -> Job:
        # Ids are ULIDs: anything else cannot exist, and DynamoDB would refuse an oversized key.
        if not _JOB_ID.fullmatch(job_id):
            raise JobNotFound(f"job '{job_id[:40]}' not found")
        return self._store.get(job_id)

    def _sealed(self, job: Job) -> Job:
        return job if self._sealer is None else self._sealer.sealed_job(job)

    def _route_changes(self, job: Job, patch: JobUpdate) -> dict[str, Any]:
        """The alert route a PATCH sets, its inline header values sealed as a create seals them."""
        changes = route_changes(patch)
        route = changes.get("on_dead")
        if route is not None and self._sealer is not None:
            changes["on_dead"] = self._sealer.sealed(route, job.id)
        return changes

    def _check_route(self, job: Job, new_route: bool) -> None:
        check_alert_route(
            job,
            new_route=new_route,
            allow_private=self._allow_private,
            forbidden_queue_urls=self._dispatcher.own_queue_urls,
        )

    def _view(self, job: Job) -> JobView:
        return job_view(job, self._store.load_payload(job))

    def _new_job(self, spec: JobCreate, now_ms: int, payload_size: int) -> Job:
        return new_job(
            spec,
            now_ms,
            payload_size,
            allow_private=self._allow_private,
            forbidden_queue_urls=self._dispatcher.own_queue_urls,
            traceparent=self._trace,
        )


def _check_recurring(job: Job) -> None:
    if not job.is_recurring:
        raise Conflict(f"job '{job.id}' is not recurring; only recurring jobs pause and resume")
    if job.status is JobStatus.CANCELLED:
        raise Conflict(f"job '{job.id}' is cancelled")
