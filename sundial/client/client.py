"""A typed client of the HTTP API v1 (docs/api.md): one method per operation, on the API's own models."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, PrivateAttr, TypeAdapter, ValidationError

from sundial.client.bodies import validated
from sundial.client.errors import ApiError, InvalidInput
from sundial.client.wire import WireClient
from sundial.contract.bounds import IDEMPOTENCY_KEY_MEMBER, LIMIT_KEY_PATTERN
from sundial.contract.bulk import BatchAnswer, OperationView
from sundial.contract.jobs import (
    BackfillRequest,
    BackfillView,
    Instant,
    JobCreate,
    JobList,
    JobUpdate,
    JobView,
    PreviewRequest,
    PreviewResponse,
    RunList,
    RunView,
)
from sundial.contract.limits import LimitList, LimitPut, LimitView
from sundial.contract.occurrences import OccurrenceList, OccurrenceView
from sundial.contract.stats import StatsView

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


class Health(BaseModel):
    status: str


class TaggedJob(JobView):
    """A job as an answer carried it, with that answer's ETag: pass `job.etag` as `if_match` to act
    only on the job as it was read (docs/api.md, "ETag and If-Match")."""

    _etag: str | None = PrivateAttr(default=None)

    @property
    def etag(self) -> str | None:
        return self._etag

    def tagged(self, tag: str | None) -> TaggedJob:
        self._etag = tag
        return self


class _Page(Protocol):
    @property
    def next_token(self) -> str | None: ...


P = TypeVar("P", bound=_Page)


class SundialClient(WireClient):
    """Calls a Sundial API: the local stack (unsigned) or a deployed stage (SigV4-signed).

    Requests that are safe to repeat are retried on throttling, 5xx and lost connections; every
    request is retried on throttling and when it could not be sent at all (docs/client.md, Retries).
    Error answers raise the subclasses of ApiError in sundial.client.errors.
    """

    # --- jobs -------------------------------------------------------------------------------------

    def create_job(
        self,
        job: JobCreate | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        traceparent: str | None = None,
    ) -> TaggedJob:
        """POST /jobs. A key is generated unless given; retries send the same key and body, so a
        create whose answer was lost is answered with the job it made rather than made twice.
        `traceparent` (W3C) is the trace its deliveries carry; without one the API starts one."""
        spec = validated(JobCreate, job)
        key = {"Idempotency-Key": idempotency_key or str(uuid.uuid4()), **_traced(traceparent)}
        return self._job_call("POST", "/jobs", body=spec, headers=key, safe=True)

    def create_jobs(self, jobs: Sequence[JobCreate | Mapping[str, Any]]) -> BatchAnswer:
        """POST /jobs/batch: up to 100 jobs, each answered on its own, in order. An item may hold its
        own `idempotency_key`; one is generated for every item without, so that retries of the
        request answer the jobs it made instead of making them twice. A mapping is sent as it is:
        the API refuses a bad item alone, naming `jobs[index].field`."""
        body = [_batch_item(job) for job in jobs]
        return self._call_json("POST", "/jobs/batch", BatchAnswer, {"jobs": body}, safe=True)

    def start_action(
        self,
        action: str,
        *,
        ids: Sequence[str] | None = None,
        filter: Mapping[str, str] | None = None,  # the API's own name for it
    ) -> OperationView:
        """POST /jobs/actions: one action on the jobs listed or matching `filter` (status, priority,
        health, name_prefix). Not repeated after a lost answer: that would start a second operation
        (harmless to jobs already acted on, but counted twice)."""
        body: dict[str, Any] = {"action": action}
        if ids is not None:
            # Ids in any case, as every single-job call takes them (_job_path).
            body["ids"] = [job_id.upper() for job_id in ids]
        if filter is not None:
            body["filter"] = dict(filter)
        return self._call_json("POST", "/jobs/actions", OperationView, body, safe=False)

    def get_action(self, operation_id: str) -> OperationView:
        return self._call("GET", "/jobs/actions/" + quote(operation_id, safe=""), OperationView)

    def wait_action(
        self,
        operation_id: str,
        *,
        every: float = 1.0,
        timeout: float | None = None,
        seen: Callable[[OperationView], None] = lambda _: None,
    ) -> OperationView:
        """Polls an operation until it is done (`seen` gets each answer); raises TimeoutError."""
        started = time.monotonic()
        while True:
            operation = self.get_action(operation_id)
            seen(operation)
            if operation.state == "done":
                return operation
            if timeout is not None and time.monotonic() - started > timeout:
                raise TimeoutError(f"operation {operation_id} is still running after {timeout} s")
            self._sleep(every)

    def get_job(self, job_id: str) -> TaggedJob:
        """The job, with its ETag (`etag`)."""
        return self._job_call("GET", _job_path(job_id))

    def list_jobs(
        self,
        *,
        status: str | None = None,
        priority: str | None = None,
        name: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
        health: str | None = None,
        name_prefix: str | None = None,
    ) -> JobList:
        """One page, newest first; `next_token` of the answer asks for the next."""
        query = {
            "status": status,
            "priority": priority,
            "name": name,
            "health": health,
            "name_prefix": name_prefix,
            "limit": limit,
            "next_token": next_token,
        }
        return self._call("GET", "/jobs", JobList, query=query)

    def iter_jobs(
        self,
        *,
        status: str | None = None,
        priority: str | None = None,
        name: str | None = None,
        page_size: int = 100,
        health: str | None = None,
        name_prefix: str | None = None,
    ) -> Iterator[JobView]:
        """Every job that matches, newest first, fetching pages as it goes."""

        def page(token: str | None) -> JobList:
            return self.list_jobs(
                status=status,
                priority=priority,
                name=name,
                limit=page_size,
                next_token=token,
                health=health,
                name_prefix=name_prefix,
            )

        return _each(page, lambda answer: answer.jobs)

    # Each change takes `if_match`, an ETag as an answer carried it (`TaggedJob.etag`), or "*": the
    # change is made only while the job is still as that answer showed it, else PreconditionFailed.

    def update_job(
        self,
        job_id: str,
        patch: JobUpdate | Mapping[str, Any],
        *,
        traceparent: str | None = None,
        if_match: str | None = None,
    ) -> TaggedJob:
        """PATCH: only the fields set on `patch` are sent, so only they change."""
        body = validated(JobUpdate, patch)
        headers = _traced(traceparent) | _condition(if_match)
        return self._job_call("PATCH", _job_path(job_id), body=body, headers=headers, safe=False)

    def cancel_job(self, job_id: str, *, if_match: str | None = None) -> TaggedJob:
        # Safe to repeat: cancelling a cancelled job changes nothing and answers it. Not under a
        # condition: a repeat of a cancel that was applied finds the job changed, by itself.
        headers = _condition(if_match)
        return self._job_call("DELETE", _job_path(job_id), headers=headers, safe=if_match is None)

    def pause_job(self, job_id: str, *, if_match: str | None = None) -> TaggedJob:
        path, headers = f"{_job_path(job_id)}/pause", _condition(if_match)
        return self._job_call("POST", path, headers=headers, safe=False)

    def resume_job(
        self, job_id: str, *, traceparent: str | None = None, if_match: str | None = None
    ) -> TaggedJob:
        path, headers = f"{_job_path(job_id)}/resume", _traced(traceparent) | _condition(if_match)
        return self._job_call("POST", path, headers=headers, safe=False)

    def trigger_job(
        self, job_id: str, *, traceparent: str | None = None, if_match: str | None = None
    ) -> TaggedJob:
        path, headers = f"{_job_path(job_id)}/trigger", _traced(traceparent) | _condition(if_match)
        return self._job_call("POST", path, headers=headers, safe=False)

    def retry_job(
        self, job_id: str, *, traceparent: str | None = None, if_match: str | None = None
    ) -> TaggedJob:
        path, headers = f"{_job_path(job_id)}/retry", _traced(traceparent) | _condition(if_match)
        return self._job_call("POST", path, headers=headers, safe=False)

    def backfill_job(
        self,
        job_id: str,
        start: datetime | str,
        end: datetime | str,
        *,
        dry_run: bool = False,
    ) -> BackfillView:
        """Runs the occurrences the job's schedule had in [start, end) before the job existed, each
        at most once (docs/api.md, "Backfill"); `dry_run` answers what would run and changes nothing.
        Safe to repeat: a repeat finds the instants recorded and runs none of them again."""
        body = validated(BackfillRequest, {"from": start, "to": end, "dry_run": dry_run})
        data = body.model_dump(mode="json", by_alias=True)
        return self._call_json("POST", f"{_job_path(job_id)}/backfill", BackfillView, data, safe=True)

    # --- limits per key -----------------------------------------------------------------------------

    def put_limit(
        self,
        key: str,
        *,
        max_concurrent: int | None = None,
        per_second: float | None = None,
        burst: int | None = None,
    ) -> LimitView:
        """PUT /limits/{key}: sets the whole limit (a bound left out is no bound), at least one of
        `max_concurrent` and `per_second`; `burst` defaults to max(1, ceil(per_second)). Safe to
        repeat: a second PUT of the same limit leaves it as the first did."""
        body = validated(
            LimitPut, {"max_concurrent": max_concurrent, "per_second": per_second, "burst": burst}
        )
        data = body.model_dump(mode="json", exclude_none=True)
        return self._call_json("PUT", _limit_path(key), LimitView, data, safe=True)

    def get_limit(self, key: str) -> LimitView:
        """The key's limit and what runs and waits on it now; NotFound when the key has none."""
        return self._call("GET", _limit_path(key), LimitView)

    def list_limits(self, *, limit: int | None = None, next_token: str | None = None) -> LimitList:
        """One page of limits, by key; `next_token` of the answer asks for the next."""
        return self._call("GET", "/limits", LimitList, query={"limit": limit, "next_token": next_token})

    def iter_limits(self, *, page_size: int = 100) -> Iterator[LimitView]:
        """Every key's limit, by key, fetching pages as it goes."""
        return _each(lambda token: self.list_limits(limit=page_size, next_token=token), lambda a: a.limits)

    def delete_limit(self, key: str) -> LimitView:
        """DELETE /limits/{key}: the limit as it was; the jobs naming the key then run unlimited.
        Not repeated after a lost answer: the repeat would find no limit and raise NotFound, hiding
        that the first one succeeded."""
        return self._call("DELETE", _limit_path(key), LimitView, safe=False)

    # --- runs, schedules, service -----------------------------------------------------------------

    def list_runs(self, job_id: str, *, limit: int | None = None, next_token: str | None = None) -> RunList:
        """One page of the job's attempt history, newest first."""
        query = {"limit": limit, "next_token": next_token}
        return self._call("GET", f"{_job_path(job_id)}/runs", RunList, query=query)

    def iter_runs(self, job_id: str, *, page_size: int = 100) -> Iterator[RunView]:
        """Every run of the job, newest first, fetching pages as it goes."""
        return _each(
            lambda token: self.list_runs(job_id, limit=page_size, next_token=token), lambda a: a.runs
        )

    def list_occurrences(
        self,
        job_id: str,
        *,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> OccurrenceList:
        """One page of every instant of the job's schedule in [from_, to) and what became of it,
        oldest first (docs/api.md, "Occurrences"); without a range, the 24 hours before now. An
        instant is an aware datetime or an RFC 3339 string with an offset."""
        query = {
            "from": _instant(from_, "from"),
            "to": _instant(to, "to"),
            "limit": limit,
            "next_token": next_token,
        }
        return self._call("GET", f"{_job_path(job_id)}/occurrences", OccurrenceList, query=query)

    def iter_occurrences(
        self,
        job_id: str,
        *,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
        page_size: int = 100,
    ) -> Iterator[OccurrenceView]:
        """Every occurrence of the range, oldest first, fetching pages as it goes."""
        return _each(
            lambda token: self.list_occurrences(
                job_id, from_=from_, to=to, limit=page_size, next_token=token
            ),
            lambda answer: answer.occurrences,
        )

    def preview(self, request: PreviewRequest | Mapping[str, Any]) -> PreviewResponse:
        # A POST that changes nothing: safe to repeat.
        body = validated(PreviewRequest, request)
        return self._call("POST", "/schedules/preview", PreviewResponse, body=body, safe=True)

    def health(self) -> Health:
        return self._call("GET", "/health", Health)

    def stats(self) -> StatsView:
        """GET /stats: jobs per status and priority, dead jobs, queue depths, the last hour's starts."""
        return self._call("GET", "/stats", StatsView)

    # --- the wire ---------------------------------------------------------------------------------

    def _job_call(
        self,
        method: str,
        path: str,
        *,
        body: BaseModel | None = None,
        headers: Mapping[str, str] | None = None,
        safe: bool | None = None,
    ) -> TaggedJob:
        """A call whose answer carries one job: the job, with the answer's ETag."""
        data = body.model_dump(mode="json", exclude_unset=True) if body is not None else None
        answer = self.send(method, path, data, headers=headers, safe=safe)
        return self._answered(method, path, TaggedJob, answer).tagged(answer.headers.get("etag"))


def _traced(traceparent: str | None) -> dict[str, str]:
    """The W3C trace header of a call that schedules a run: its deliveries carry that trace."""
    return {"traceparent": traceparent} if traceparent is not None else {}


def _condition(if_match: str | None) -> dict[str, str]:
    """The If-Match header of a change: an ETag as answered; a bare revision such as 7 is quoted."""
    if if_match is None:
        return {}
    tag = if_match.strip()
    if tag != "*" and not tag.startswith(('"', 'W/"')):
        tag = f'"{tag}"'
    return {"If-Match": tag}


def _batch_item(job: JobCreate | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(job, JobCreate):
        item: dict[str, Any] = job.model_dump(mode="json", exclude_unset=True)
    else:
        item = dict(job)
    item.setdefault(IDEMPOTENCY_KEY_MEMBER, str(uuid.uuid4()))
    return item


_INSTANT: TypeAdapter[datetime] = TypeAdapter(Instant)


def _instant(value: datetime | str | None, field: str) -> str | None:
    """An instant of a query, checked as the API checks one (RFC 3339 with an offset, in range) so
    that a bad one is refused naming its parameter; sent in UTC."""
    if value is None:
        return None
    try:
        instant = _INSTANT.validate_python(value)
    except ValidationError as exc:
        raise InvalidInput(f"{field}: {exc.errors()[0]['msg']}", field=field) from None
    if isinstance(value, str):
        return value
    text = instant.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def _job_path(job_id: str) -> str:
    """Ids are ULIDs, whose Crockford base 32 ignores case: the API's form is upper case."""
    if not job_id:
        raise ApiError("a job id is required", field="job_id")
    return "/jobs/" + quote(job_id.upper(), safe="")


def _limit_path(key: str) -> str:
    """Checked here, as the API checks it, so that a key the API would refuse is refused naming the
    field rather than reaching another path: `/` is a character of keys, sent as %2F."""
    if not re.fullmatch(LIMIT_KEY_PATTERN, key):
        raise InvalidInput("the limit key must be 1-128 characters of A-Z a-z 0-9 . _ : / -", field="key")
    return "/limits/" + quote(key, safe="")


def _each(fetch: Callable[[str | None], P], items: Callable[[P], list[T]]) -> Iterator[T]:
    token: str | None = None
    while True:
        page = fetch(token)
        yield from items(page)
        token = page.next_token
        if not token:
            return
