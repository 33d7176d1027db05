"""The console in a real headless Chromium against `sundial local`: each flow a user has, found by
role and accessible name. One stack and one browser for the module; each page's screenshot is kept."""

from __future__ import annotations

import re
import time

import pytest

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import DEAD_SECONDS, confirm, dead_job, error_at, field, open_job, type_into, unique
from tests.e2e.api import rfc3339, wait_until

pytestmark = pytest.mark.e2e
DURATION = r"[\d.,]+ (ms|s|min|h|d)"


def test_create_a_job_through_the_form_with_a_live_preview_and_find_it_listed(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("monthly-report")
    browser.open(f"{console_stack.url}/console/#/new")
    browser.find("heading", "New job")
    type_into(browser.find("textbox", "Name"), name)
    schedule = browser.find("textbox", "Schedule")
    type_into(schedule, "61 * * * *")
    browser.wait(lambda: schedule.get_attribute("aria-invalid") == "true", 10, "no error at Schedule")
    assert error_at(browser, schedule) == "cron expression '61 * * * *': minute must be 0-59"

    type_into(schedule, "0 12 1 * *")
    type_into(browser.find("combobox", "Time zone"), "Europe/Berlin")
    preview = browser.find("table", "Next 10 runs in Europe/Berlin")
    assert schedule.get_attribute("aria-invalid") is None
    # Ten monthly runs always span a change between Berlin's winter and summer time.
    changes = [row[3] for row in browser.rows(preview) if row[3]]
    assert changes and all(re.fullmatch(r"DST change: UTC\+[12] → UTC\+[12]", c) for c in changes), changes
    browser.screenshot("new-job")

    browser.find("button", "Create job").click()
    browser.find("heading", f"Job {name}")
    assert field(browser, "schedule") == "0 12 1 * *" and field(browser, "timezone") == "Europe/Berlin"
    browser.find("link", "Jobs").click()
    browser.find("table", "Jobs, newest first")
    browser.find("link", name)
    browser.screenshot("jobs")


def test_a_bad_field_is_shown_at_its_input_and_nothing_is_created(
    browser: Browser, console_stack: Stack
) -> None:
    browser.open(f"{console_stack.url}/console/#/new")
    handler = browser.find("textbox", "Handler")
    type_into(handler, "no-such-handler")
    browser.find("button", "Create job").click()
    browser.wait(lambda: handler.get_attribute("aria-invalid") == "true", 10, "no error at Handler")
    assert "no-such-handler" in error_at(browser, handler)
    assert browser.find("heading", "New job")


def test_filter_by_priority_status_and_name(browser: Browser, console_stack: Stack) -> None:
    later = rfc3339(time.time() + 3600)
    high = unique("filter-high")
    low = unique("filter-low")
    for name, priority in ((high, "high"), (low, "low")):
        console_stack.api.create(
            name=name, priority=priority, run_at=later, target={"type": "python", "handler": "noop"}
        )
    browser.open(f"{console_stack.url}/console/#/jobs")
    browser.find("link", low)
    choice = browser.find("combobox", "Priority")
    choice.find_element("css selector", "option[value=high]").click()
    browser.find("button", "Apply filters").click()
    table = browser.find("table", "Jobs, newest first")
    browser.wait(lambda: browser.absent("link", low), 10, "the low job is still listed")
    browser.find("link", high)
    priorities = {row[3] for row in browser.rows(table)}
    assert priorities == {"high"}, priorities

    browser.open(f"{console_stack.url}/console/#/jobs?status=pending")
    type_into(browser.find("searchbox", "Name or job id"), low)
    browser.find("button", "Apply filters").click()
    browser.wait(lambda: browser.absent("link", high), 10, "the name filter kept another job")
    browser.find("link", low)
    table = browser.find("table", "Jobs, newest first")
    assert [row[1] for row in browser.rows(table)] == [low]


def test_open_a_job_and_see_its_runs(browser: Browser, console_stack: Stack) -> None:
    name = unique("nightly")
    job = console_stack.api.create(name=name, target={"type": "python", "handler": "noop"})
    console_stack.api.wait_for_status(job["id"], {"succeeded"}, DEAD_SECONDS)
    browser.open(f"{console_stack.url}/console/#/jobs")
    browser.find("link", name).click()
    browser.find("heading", f"Job {name}")
    runs = browser.find("table", "Attempts, newest first")
    (row,) = browser.rows(runs)
    assert row[1:3] == ["1", "succeeded"], row
    assert row[7] == console_stack.api.runs(job["id"])[0]["trace_id"], row
    assert field(browser, "status") == "succeeded"
    browser.screenshot("job-one-off")


def _started(stack: Stack, job_id: str) -> str:
    return str(stack.api.job(job_id)["last_run"]["started_at"])


def test_retry_a_dead_job_and_see_it_run(browser: Browser, console_stack: Stack) -> None:
    name = unique("always-fails")
    job_id = dead_job(console_stack, name)
    before = _started(console_stack, job_id)
    open_job(browser, console_stack, job_id, name)
    first = browser.rows(browser.find("table", "Attempts, newest first"))
    assert len(first) == 1 and first[0][2] == "dead"
    assert first[0][5] == "RuntimeError: fail handler always fails"
    shown_before = field(browser, "last_run")
    assert shown_before.startswith(f"dead, started {before.replace('T', ' ')}")
    browser.find("button", "Retry").click()
    # The retried attempt runs (and fails again); the page refreshes itself, without a reload, to
    # show it as the last run. (Its history row keeps the first attempt's key: see the report.)
    browser.wait(lambda: _started(console_stack, job_id) > before, 20, "the retried job never ran")
    after = _started(console_stack, job_id)
    browser.wait(
        lambda: field(browser, "last_run").startswith(f"dead, started {after.replace('T', ' ')}"),
        20,
        lambda: f"the retried attempt never appeared on the page: {field(browser, 'last_run')}",
    )
    browser.screenshot("job-retried")


def test_pause_resume_run_now_and_edit(browser: Browser, console_stack: Stack) -> None:
    name = unique("hourly")
    job = console_stack.api.create(
        name=name, schedule="rate(1 hour)", target={"type": "python", "handler": "noop"}
    )
    open_job(browser, console_stack, job["id"], name)
    browser.find("table", re.compile(r"^Next 10 runs in UTC$"))
    browser.find("button", "Pause").click()
    browser.wait(lambda: field(browser, "paused") == "true", 10, "never shown paused")
    assert console_stack.api.job(job["id"])["paused"] is True
    browser.find("button", "Resume").click()
    browser.wait(lambda: field(browser, "paused") == "false", 10, "never shown resumed")
    assert console_stack.api.job(job["id"])["paused"] is False

    browser.find("button", "Run now").click()
    browser.wait(
        lambda: browser.rows(browser.find("table", "Attempts, newest first")), 20, "run now never ran"
    )

    # Edit waits for the attempt to end: the API refuses a change while one runs.
    edit = browser.wait(
        lambda: next((b for b in browser.find_all("button", "Edit") if b.is_enabled()), None),
        20,
        "Edit never became available after the run",
    )
    edit.click()
    form = browser.find("form", "Edit job")
    schedule = browser.find("textbox", "Schedule", within=form)
    type_into(schedule, "61 * * * *")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: schedule.get_attribute("aria-invalid") == "true", 10, "no error at Schedule")
    assert "minute must be 0-59" in error_at(browser, schedule)
    type_into(schedule, "rate(2 hours)")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: field(browser, "schedule") == "rate(2 hours)", 10, "the edit was not shown")
    assert console_stack.api.job(job["id"])["schedule"] == "rate(2 hours)"
    assert browser.absent("form", "Edit job")  # saved: the editor closed
    browser.screenshot("job")


def test_bulk_retry_of_selected_dead_jobs(browser: Browser, console_stack: Stack) -> None:
    names = [unique(f"bulk-dead-{n}") for n in range(3)]
    ids = [dead_job(console_stack, name) for name in names]
    started = [_started(console_stack, job_id) for job_id in ids]
    browser.open(f"{console_stack.url}/console/#/jobs?status=dead")
    for name in names:
        browser.find("checkbox", f"Select {name}").click()
    browser.find("button", "Retry selected").click()
    assert confirm(browser, "Retry 3 jobs?", "Yes, retry 3 jobs") == "Each is retried now."
    status = browser.find("status", "")
    browser.wait(
        lambda: status.text == "Retry: 3 of 3 selected jobs done.", 15, lambda: f"announced {status.text!r}"
    )
    for job_id, before in zip(ids, started, strict=True):
        browser.wait(
            lambda job_id=job_id, before=before: _started(console_stack, job_id) > before,
            20,
            f"{job_id} never ran again",
        )


def test_a_recurring_job_whose_occurrence_died_is_listed_by_health_and_shown_with_the_dead(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("recurring-dead")
    api = console_stack.api
    job = api.create(
        name=name, schedule="rate(1 day)", max_retries=0, target={"type": "python", "handler": "fail"}
    )
    status, _ = api.call("POST", f"/jobs/{job['id']}/trigger")  # an occurrence now, and it dies
    assert status == 200
    wait_until(lambda: api.job(job["id"])["health"] == "dead", DEAD_SECONDS, f"{name} never died")

    browser.open(f"{console_stack.url}/console/#/jobs?health=dead")
    table = browser.find("table", "Jobs, newest first")
    browser.find("link", name)
    row = next(row for row in browser.rows(table) if row[1] == name)
    assert row[2].startswith("pending") and "(dead)" in row[2], row  # its next occurrence waits
    browser.open(f"{console_stack.url}/console/#/")
    census_age = 40.0
    dead = browser.find("table", "Dead jobs, most recent first", timeout=census_age)
    browser.wait(
        lambda: any(r[0] == name and r[4] == "recurring, 1 in a row dead" for r in browser.rows(dead)),
        census_age,
        "the overview does not show the recurring job with the dead",
    )


def test_overview_shows_counts_queues_dead_jobs_and_charts(browser: Browser, console_stack: Stack) -> None:
    dead_job(console_stack, unique("overview-dead"))
    browser.open(f"{console_stack.url}/console/#/")
    # The census behind the counts may be up to 30 s old (an earlier test may have asked for it
    # before any job died): the page refreshes itself until a newer one shows the dead jobs.
    census_age = 40.0
    browser.find("table", "Dead jobs, most recent first", timeout=census_age)
    browser.find("button", re.compile(r"^Retry \S+-[0-9a-f]{6}$"))
    counts = browser.find("table", "Jobs per status and priority")
    dead_row = next(row for row in browser.rows(counts) if row[0] == "dead")
    assert int(dead_row[4]) >= 1, dead_row
    queues = browser.find("table", "Queue depth and oldest waiting work per priority")
    assert [row[0] for row in browser.rows(queues)] == ["high", "medium", "low"]
    browser.find("img", re.compile(r"^Executions per minute over the last hour: [1-9]\d* in all"))
    browser.find(
        "img",
        re.compile(rf"^Start lateness per minute over the last hour: p50 {DURATION}, p99 {DURATION}"),
    )
    browser.screenshot("overview")
