"""Bulk actions (POST /jobs/actions): one action on every job a filter matches, or on listed ids, run
in the background a slice at a time, and resumed where it stopped after a crash.

The API stores the operation and runs its first slice before answering, so a console's selection of
a page of jobs is done by then. The scheduler's tick advances every running operation for a bounded
time after its own work, under a lease on the operation, so two ticks never run one operation at
once, and the next tick after a crashed runner's lease ends goes on from the last slice saved.

A slice is the next page of ids (the listing's, or the request's). Its ids are saved in the
operation before the first of them is acted on; then each job gets the same call as its single
action, whose write also marks the job with the operation's id. A runner that takes over a slice
left unfinished acts again on its ids: a job already marked is counted done, unchanged, so each job
is acted on once and the counts stay exact. A job refused (its single call would answer a 409 or a
404) is counted with its reason.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ulid import ULID

from sundial.contract.bulk import ActionRequest, OperationView, Refusal
from sundial.contract.jobs import JOB_ID_PATTERN
from sundial.contract.vocabulary import BulkAction, OperationState
from sundial.shared.clock import Clock
from sundial.shared.errors import Conflict, InvalidInput, JobNotFound
from sundial.shared.models import Operation
from sundial.shared.service.requests import list_filter
from sundial.shared.service.service import JobService
from sundial.shared.service.views import operation_view
from sundial.shared.store import JobStore, ListFilter, new_token

logger = logging.getLogger(__name__)
_ID = re.compile(JOB_ID_PATTERN.removeprefix("^").removesuffix("$"))  # operation ids are ULIDs too
SLICE = 100  # jobs per slice: a listing page, and at most this many repeated after a crash
ACTORS = 8  # jobs acted on at once within a slice
LEASE_MS = 30_000  # a runner holds an operation this long past its last save
REFUSALS_KEPT = 100
# The API's own slice stops here, so that its answer stays well inside API Gateway's 29 s.
INLINE_SLICES = 1

Act = Callable[[JobService, str], object]
ACTIONS: dict[BulkAction, Act] = {
    BulkAction.PAUSE: JobService.pause,
    BulkAction.RESUME: JobService.resume,
    BulkAction.CANCEL: JobService.cancel,
    BulkAction.RETRY: JobService.retry,
    BulkAction.TRIGGER: JobService.trigger,
}


class Operations:
    def __init__(self, store: JobStore, service: JobService, clock: Clock, threads: str = "bulk") -> None:
        """`threads` names the threads that act on a slice's jobs: after the function running them."""
        self._store = store
        self._service = service
        self._clock = clock
        self._threads = threads

    def start(self, request: ActionRequest, who: str | None) -> OperationView:
        """Stores the operation and runs its first slice. Raises InvalidInput naming the field."""
        if (request.filter is None) == (request.ids is None):
            raise InvalidInput("send either filter or ids", field="filter")
        chosen = request.filter.model_dump(exclude_none=True, mode="json") if request.filter else None
        if chosen is not None:
            _check_filter(chosen)
        now_ms = self._clock.now_ms()
        ids = list(dict.fromkeys(request.ids)) if request.ids is not None else None
        operation = Operation(
            id=str(ULID()),
            action=request.action,
            filter=chosen,
            ids=ids,
            who=who,
            matched=len(ids) if ids is not None else None,
            created_at=now_ms,
            updated_at=now_ms,
        )
        runner = new_token()  # the API's own: no tick takes the operation before its first slice
        self._store.put_operation(operation, runner, self._lease())
        logger.info(
            "bulk operation started",
            extra={"operation": operation.id, "action": operation.action.value, "who": who, "filter": chosen},
        )
        self._run(operation, runner, now_ms + LEASE_MS, INLINE_SLICES)
        return self.get(operation.id)

    def get(self, operation_id: str) -> OperationView:
        """Raises JobNotFound (a 404) for an id no operation has."""
        operation = self._store.operation(operation_id) if _ID.fullmatch(operation_id) else None
        if operation is None:
            raise JobNotFound(f"operation '{operation_id[:40]}' not found")
        return operation_view(operation)

    def advance_all(self, deadline_ms: int) -> int:
        """Advances every running operation until `deadline_ms`; forgets those done. Returns how many
        are still running."""
        running = 0
        for operation_id in self._store.running_operations():
            if self._clock.now_ms() >= deadline_ms:
                return running + 1
            found = self._store.operation(operation_id)
            if found is None or found.state is OperationState.DONE:
                self._store.forget_operation(operation_id)
                continue
            if self.advance(operation_id, deadline_ms):
                self._store.forget_operation(operation_id)
            else:
                running += 1
        return running

    def advance(self, operation_id: str, deadline_ms: int) -> bool:
        """Takes the operation's lease when free and runs slices until the deadline. True once done."""
        runner = new_token()
        taken = self._store.take_operation(operation_id, runner, self._lease())
        return taken is not None and self._run(taken, runner, deadline_ms, None)

    def _run(self, taken: Operation, runner: str, deadline_ms: int, slices: int | None) -> bool:
        """Runs slices while `runner` holds the lease, until the deadline or `slices` of them; then
        gives the lease up. True once the operation is done."""
        operation: Operation | None = taken
        ran = 0
        while operation is not None and operation.state is OperationState.RUNNING:
            if self._clock.now_ms() >= deadline_ms or (slices is not None and ran >= slices):
                self._store.save_operation(operation, runner, 0)
                return False
            operation = self.run_slice(operation, runner)
            ran += 1
        return operation is not None

    def run_slice(self, operation: Operation, runner: str) -> Operation | None:
        """One slice: listed and saved when none is under way, acted on, counted and saved. None
        when another runner took the operation over."""
        if not operation.slice:
            listed = self._listed(operation)
            saved = self._store.save_operation(listed, runner, self._lease())
            if saved is None or not saved.slice:
                return saved  # taken over, done, or a listing page that found nothing yet
            operation = saved
        acting = self._service.for_operation(operation.id)
        act = ACTIONS[operation.action]
        with ThreadPoolExecutor(max_workers=ACTORS, thread_name_prefix=self._threads) as pool:
            outcomes = list(pool.map(lambda job_id: _outcome(act, acting, job_id), operation.slice))
        return self._store.save_operation(self._counted(operation, outcomes), runner, self._lease())

    def _listed(self, operation: Operation) -> Operation:
        """The operation with its next slice of ids and its cursor past them; done when none are left."""
        now_ms = self._clock.now_ms()
        if operation.exhausted:
            return self._finished(operation, now_ms)
        update: dict[str, object] = {"updated_at": now_ms}
        if operation.ids is not None:
            start = int(operation.cursor or 0)
            ids = operation.ids[start : start + SLICE]
            update.update(cursor=str(start + len(ids)), exhausted=start + len(ids) >= len(operation.ids))
        else:
            chosen = operation.filter or {}
            page = self._store.list_jobs(
                ListFilter(**chosen), SLICE, operation.cursor, self._service.list_indexes
            )
            ids = [job.id for job in page.jobs]
            update.update(cursor=page.next_token, exhausted=page.next_token is None)
            if operation.matched is None:
                update.update(matched=page.total, matched_is_estimate=page.total_is_estimate)
        if not ids and update["exhausted"]:
            return self._finished(operation.model_copy(update=update), now_ms)
        return operation.model_copy(update={**update, "slice": ids})

    def _counted(self, operation: Operation, outcomes: list[Refusal | None]) -> Operation:
        refusals = [outcome for outcome in outcomes if outcome is not None]
        kept = (operation.refusals + refusals)[:REFUSALS_KEPT]
        counted = operation.model_copy(
            update={
                "slice": [],
                "done": operation.done + len(outcomes) - len(refusals),
                "refused": operation.refused + len(refusals),
                "refusals": kept,
                "updated_at": self._clock.now_ms(),
            }
        )
        return self._finished(counted, self._clock.now_ms()) if counted.exhausted else counted

    def _finished(self, operation: Operation, now_ms: int) -> Operation:
        done = operation.model_copy(
            update={"state": OperationState.DONE, "finished_at": now_ms, "updated_at": now_ms}
        )
        logger.info(
            "bulk operation done",
            extra={
                "operation": done.id,
                "action": done.action.value,
                "who": done.who,
                "done": done.done,
                "refused": done.refused,
            },
        )
        return done

    def _lease(self) -> int:
        return self._clock.now_ms() + LEASE_MS


def _outcome(act: Act, service: JobService, job_id: str) -> Refusal | None:
    try:
        act(service, job_id)
    except (Conflict, JobNotFound, InvalidInput) as exc:
        return Refusal(job_id=job_id, message=exc.message)
    return None


def _check_filter(chosen: dict[str, str]) -> None:
    """What GET /jobs refuses in these filters, named as this request's fields."""
    try:
        list_filter(
            chosen.get("status"),
            chosen.get("priority"),
            None,
            chosen.get("health"),
            chosen.get("name_prefix"),
        )
    except InvalidInput as exc:
        raise InvalidInput(exc.message, field=f"filter.{exc.field}") from exc
