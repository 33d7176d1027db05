"""The console tells the truth: loading is never shown as an empty result, actions are offered only
where the job's state allows them, cancel asks first, every control has a name of its own, and the
list says how many jobs match and which page it is on. Found by role and accessible name."""

from __future__ import annotations

import re
import time

import pytest

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import choose, confirm, dead_job, field, open_job, type_into, unique
from tests.e2e.api import rfc3339

pytestmark = pytest.mark.e2e
LATER = 3600.0
NOOP = {"type": "python", "handler": "noop"}


def _hide_tab(browser: Browser) -> None:
    """The open page's tab reads as hidden, so that it stops refreshing itself: a change made behind
    its back stays unseen until the reader acts on what the page shows (a reload ends it)."""
    browser.script(
        "Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true})"
    )


def test_loading_is_shown_as_loading_and_an_unknown_page_says_so(
    browser: Browser, console_stack: Stack
) -> None:
    browser.open(f"{console_stack.url}/console/#/")
    browser.find("heading", "Overview")
    # A slow network: every answer takes two and a half seconds.
    browser.driver.set_network_conditions(
        offline=False, latency=2500, download_throughput=100_000_000, upload_throughput=100_000_000
    )
    try:
        browser.open(f"{console_stack.url}/console/#/jobs?status=dead")
        paging = browser.find("status", "Paging")
        assert paging.text == "Loading jobs…"
        assert browser.find("button", "Next page").get_attribute("disabled") is not None
        assert browser.find("button", "Previous page").get_attribute("disabled") is not None
        assert "No jobs match." not in browser.find("table", "Jobs, newest first").text
    finally:
        browser.driver.delete_network_conditions()
    browser.wait(lambda: paging.text.startswith("Page 1 of "), 15, lambda: f"paging says {paging.text!r}")

    browser.open(f"{console_stack.url}/console/#/nowhere")
    browser.find("heading", "Page not found")
    browser.find("link", "Go to the overview").click()
    browser.find("heading", "Overview")
    browser.open(f"{console_stack.url}/console/#/jobs/01M8ZZZZZZZZZZZZZZZZZZZZZZ")
    browser.find("heading", "No such job")
    assert browser.absent("button", "Pause") and browser.absent("button", "Cancel")


def _disabled_because(browser: Browser, label: str) -> str | None:
    """Why the button says it is disabled (its title, its accessible description), or None if enabled."""
    button = browser.find("button", label)
    return button.get_attribute("title") if button.get_attribute("disabled") is not None else None


def test_actions_fit_the_jobs_state_and_a_refusal_reads_as_a_sentence(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("dead-once")
    open_job(browser, console_stack, dead_job(console_stack, name), name)
    assert _disabled_because(browser, "Pause") == "Only recurring jobs pause; this one runs once."
    assert _disabled_because(browser, "Resume") == "Only recurring jobs resume; this one runs once."
    assert _disabled_because(browser, "Retry") is None
    assert _disabled_because(browser, "Cancel") is None

    recurring = unique("hourly-truth")
    job = console_stack.api.create(name=recurring, schedule="rate(1 hour)", target=NOOP)
    open_job(browser, console_stack, job["id"], recurring)
    _hide_tab(browser)
    assert _disabled_because(browser, "Retry") == "Only a dead job can be retried; this one is pending."
    assert _disabled_because(browser, "Resume") == "It is not paused."
    # Cancelled behind the page's back: the API refuses the pause, in words naming the job.
    assert console_stack.api.call("DELETE", f"/jobs/{job['id']}")[0] == 200
    browser.find("button", "Pause").click()
    status = browser.find("status", "")
    browser.wait(lambda: status.text.startswith("Pause refused"), 10, lambda: f"announced {status.text!r}")
    assert status.text == f"Pause refused: {recurring} is cancelled"
    assert job["id"] not in status.text
    # The page reads the job again after the refusal, and offers what a cancelled job allows.
    browser.wait(
        lambda: _disabled_because(browser, "Edit") == "It is cancelled: create a new job instead.",
        10,
        "Edit is still offered on the cancelled job",
    )
    assert _disabled_because(browser, "Cancel") == "It is cancelled already."


def test_cancel_asks_first_and_says_it_cannot_be_undone(browser: Browser, console_stack: Stack) -> None:
    name = unique("cancel-me")
    job = console_stack.api.create(name=name, run_at=rfc3339(time.time() + LATER), target=NOOP)
    open_job(browser, console_stack, job["id"], name)
    browser.find("button", "Cancel").click()
    detail = confirm(browser, f"Cancel {name}?", "No, keep it")
    assert detail.endswith("This cannot be undone.")
    assert console_stack.api.job(job["id"])["status"] == "pending"
    browser.find("button", "Cancel").click()
    confirm(browser, f"Cancel {name}?", "Yes, cancel it")
    browser.wait(lambda: field(browser, "status") == "cancelled", 10, "never shown cancelled")
    assert console_stack.api.job(job["id"])["status"] == "cancelled"


def test_bulk_cancel_confirms_with_counts_and_marks_what_it_left_out(
    browser: Browser, console_stack: Stack
) -> None:
    prefix = unique("bulk-cancel")
    later = rfc3339(time.time() + LATER)
    ids = [console_stack.api.create(name=f"{prefix}-{n}", run_at=later, target=NOOP)["id"] for n in range(3)]
    gone = console_stack.api.create(name=f"{prefix}-gone", run_at=later, target=NOOP)["id"]
    assert console_stack.api.call("DELETE", f"/jobs/{gone}")[0] == 200
    browser.open(f"{console_stack.url}/console/#/jobs?name={prefix}")
    browser.find("link", f"{prefix}-gone")
    browser.find("checkbox", "Select all jobs on this page").click()
    browser.find("button", "Cancel selected").click()
    detail = confirm(browser, "Cancel 3 jobs?", "Yes, cancel 3 jobs")
    assert detail == "This cannot be undone. 1 job of the selection cannot be cancelled and is left out."
    status = browser.find("status", "")
    browser.wait(lambda: status.text.startswith("Cancel: "), 15, lambda: f"announced {status.text!r}")
    assert status.text == "Cancel: 3 of 4 selected jobs done; 1 refused, each marked in the list with why."
    assert {console_stack.api.job(job_id)["status"] for job_id in ids} == {"cancelled"}
    table = browser.find("table", "Jobs, newest first")
    marked = [row for row in browser.rows(table) if "refused" in row[2]]
    assert [row[1] for row in marked] == [f"{prefix}-gone"]
    assert marked[0][2].endswith("Cancel refused: It is cancelled already.")


def test_two_jobs_of_one_name_have_controls_of_their_own(browser: Browser, console_stack: Stack) -> None:
    name = unique("flaky")
    later = rfc3339(time.time() + LATER)
    first, second = (console_stack.api.create(name=name, run_at=later, target=NOOP)["id"] for _ in range(2))
    browser.open(f"{console_stack.url}/console/#/jobs?name={name}")
    for job_id in (first, second):
        browser.find("checkbox", f"Select {name} ({job_id})")
        browser.find("link", f"{name} ({job_id})")
    names = [box.accessible_name for box in browser.find_all("checkbox")]
    assert len(names) == len(set(names)), names


def _paging_as_the_api_counts(stack: Stack, name: str, page: int, shown: int) -> str:
    """What the paging line must say: the API's total, marked "about" where it is an estimate."""
    status, answer = stack.api.call("GET", f"/jobs?name={name}&limit=50")
    assert status == 200, answer
    about = "about " if answer["total_is_estimate"] else ""
    pages = max(page, -(-answer["total"] // 50))
    return f"Page {page} of {about}{pages}, {shown} of {about}{answer['total']} jobs"


def test_the_list_counts_pages_keeps_the_page_in_the_address_and_finds_a_job_by_id(
    browser: Browser, console_stack: Stack
) -> None:
    prefix = unique("paged")
    later = rfc3339(time.time() + LATER)
    jobs = [console_stack.api.create(name=f"{prefix}-{n:02}", run_at=later, target=NOOP) for n in range(55)]
    browser.open(f"{console_stack.url}/console/#/jobs?name={prefix}")
    paging = browser.find("status", "Paging")
    first = _paging_as_the_api_counts(console_stack, prefix, 1, 50)
    browser.wait(lambda: paging.text == first, 15, lambda: f"paging says {paging.text!r}, not {first!r}")
    browser.find("button", "Next page").click()
    second = _paging_as_the_api_counts(console_stack, prefix, 2, 5)
    browser.wait(lambda: paging.text == second, 15, lambda: f"paging says {paging.text!r}, not {second!r}")
    address = browser.driver.current_url
    assert address.endswith(f"#/jobs?name={prefix}&page=2"), address
    assert browser.find("button", "Next page").get_attribute("disabled") is not None

    browser.open(f"{console_stack.url}/console/#/")
    browser.open(address)  # the address alone brings the page back
    paging = browser.find("status", "Paging")
    browser.wait(lambda: paging.text == second, 15, lambda: f"paging says {paging.text!r}, not {second!r}")
    shown = [row[1] for row in browser.rows(browser.find("table", "Jobs, newest first"))]
    assert len(shown) == 5 and set(shown) <= {job["name"] for job in jobs}, shown

    wanted = jobs[7]
    choose(browser.find("combobox", "Status"), "dead")  # the id alone decides, whatever else is chosen
    type_into(browser.find("searchbox", "Name or job id"), wanted["id"].lower())
    browser.find("button", "Apply filters").click()
    browser.find("heading", f"Job {wanted['name']}")
    assert re.search(rf"#/jobs/{wanted['id']}$", browser.driver.current_url)
