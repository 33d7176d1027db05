"""Reading a job's alert route (`on_dead`, `on_failure_streak`) from a create or a PATCH
(docs/api.md, "Alert route"). Every refusal is InvalidInput naming the field the client wrote."""

from __future__ import annotations

from typing import Any

from sundial.contract.jobs import JobUpdate
from sundial.contract.targets import HttpTarget
from sundial.shared.errors import InvalidInput
from sundial.shared.models import Job
from sundial.shared.targets import check_target
from sundial.shared.targets.models import check_form

ROUTE_FIELDS = ("on_dead", "on_failure_streak", "alert_on_missed")


def route_changes(patch: JobUpdate) -> dict[str, Any]:
    """The alert route fields a PATCH sets (null removes them; `alert_on_missed: null` is false)."""
    changes = {name: getattr(patch, name) for name in ROUTE_FIELDS if name in patch.model_fields_set}
    if "alert_on_missed" in changes:
        changes["alert_on_missed"] = bool(changes["alert_on_missed"])
    return changes


def check_alert_route(
    job: Job, *, new_route: bool, allow_private: bool, forbidden_queue_urls: frozenset[str]
) -> None:
    """Refuses an on_failure_streak on a one-off job or without a route, and a new route (`new_route`:
    as the client sent it, not as the store keeps it) that would not be a valid target, or whose
    method sends no body. Raises InvalidInput with field "on_dead..." or "on_failure_streak"."""
    if new_route and job.on_dead is not None:
        _check_route(job, allow_private, forbidden_queue_urls)
    if job.alert_on_missed and not job.is_recurring:
        raise InvalidInput(
            "alert_on_missed tells of instants of a schedule passed over, which only a recurring job has",
            field="alert_on_missed",
        )
    if job.alert_on_missed and job.on_dead is None:
        raise InvalidInput(
            "alert_on_missed sends its notices to on_dead: give on_dead too", field="alert_on_missed"
        )
    if job.on_failure_streak is None:
        return
    if not job.is_recurring:
        raise InvalidInput(
            "on_failure_streak counts dead occurrences in a row, which only a recurring job has; "
            "leave it out to hear of the occurrence's death through on_dead",
            field="on_failure_streak",
        )
    if job.on_dead is None:
        raise InvalidInput(
            "on_failure_streak says when on_dead hears of dead occurrences: give on_dead too",
            field="on_failure_streak",
        )


def _check_route(job: Job, allow_private: bool, forbidden_queue_urls: frozenset[str]) -> None:
    route = job.on_dead
    if isinstance(route, HttpTarget) and route.method == "GET":
        raise InvalidInput(
            "on_dead method GET sends no body, and the route must receive the summary: use POST, PUT "
            "or PATCH",
            field="on_dead.method",
        )
    assert route is not None
    try:
        check_form(route, local_stack=allow_private)
        check_target(route, allow_private=allow_private, forbidden_queue_urls=forbidden_queue_urls)
    except InvalidInput as exc:
        # The target checks speak of `target`; here the client wrote `on_dead`.
        field = "on_dead" + (exc.field or "target").removeprefix("target")
        raise InvalidInput(_as_route(exc.message), field=field) from None


def _as_route(message: str) -> str:
    return "on_dead " + message.removeprefix("target ") if message.startswith("target ") else message
