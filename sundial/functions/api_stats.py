"""GET /stats (docs/api.md, "Stats"): what the console's overview shows, as one route of the api Lambda."""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools.event_handler.api_gateway import Router

from sundial.contract.stats import StatsView
from sundial.functions import api_errors, clients
from sundial.shared.clock import SystemClock
from sundial.shared.service.stats import StatsService
from sundial.shared.store.stats_reads import StatsReads

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves its __init__ unannotated


@clients.lazy
def _stats() -> StatsService:
    # Cached with the other clients: the census it keeps is what bounds its cost
    # (sundial/shared/service/stats.py).
    config = clients.settings()
    reads = StatsReads(clients.clients().dynamodb(), config.table_name)
    return StatsService(reads, clients.clients().sqs(), config.queue_urls, SystemClock())


@router.get(
    "/stats",
    summary="Jobs per status and priority, dead jobs, queue depths and the last hour's starts",
    tags=["service"],
    operation_id="get_stats",
    # Powertools leaves out the success answer once a route lists any: it is listed here. A failing
    # AWS read is a 500 with the error body, like any route's.
    responses={
        200: {"description": "OK", "content": {"application/json": {"model": StatsView}}},
        **api_errors.documented(HTTPStatus.INTERNAL_SERVER_ERROR),
    },
)
def get_stats() -> StatsView:
    return _stats().stats()
