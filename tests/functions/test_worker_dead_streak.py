"""A recurring job whose occurrences all die, through the api and worker functions: each death puts
the streak in the metric the alarm watches (DeadOccurrencesInARow, at its length), and the job is
listed by GET /jobs?health=dead while its next occurrence waits."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from tests.functions.conftest import api_event, emf_metrics, invoke_api
from tests.functions.test_worker import create, job, run, sqs_event, take

FAIL = {"type": "python", "handler": "fail"}


def test_each_dead_occurrence_in_a_row_is_the_alarms_metric_and_the_job_is_listed_as_dead(
    env: Resources, sqs: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    job_id = create(target=FAIL, schedule="rate(1 day)", max_retries=0)
    capfd.readouterr()
    for streak in (1, 2):
        triggered = invoke_api(api_event("POST", f"/jobs/{job_id}/trigger"))  # an occurrence now
        assert triggered.status == 200, triggered.body
        [body] = take(sqs, env.queue_urls[Priority.MEDIUM])

        assert run(sqs_event(body)) == {"batchItemFailures": []}

        metrics = emf_metrics(capfd.readouterr().out)
        assert metrics[c.Metric.DEAD_OCCURRENCES_IN_A_ROW] == streak
        assert (job(job_id)["health"], job(job_id)["consecutive_failures"]) == ("dead", streak)

    assert job(job_id)["status"] != "dead"  # recurring: its next occurrence is still to come
    listed = invoke_api(api_event("GET", "/jobs", query={"health": "dead"}))
    assert listed.status == 200, listed.body
    assert job_id in [found["id"] for found in listed.body["jobs"]]
    healthy = invoke_api(api_event("GET", "/jobs", query={"health": "ok"}))
    assert job_id not in [found["id"] for found in healthy.body["jobs"]]
