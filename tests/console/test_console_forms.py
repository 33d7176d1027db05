"""The console's forms cover the API (every target type, the policies, the window, the retry fields,
with the live preview in New job and Edit), its next runs follow the API's next_run_at, times show
in the zone the reader picks, and the pages fit a dark, 390 px wide screen. By role and name."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from selenium.common.exceptions import StaleElementReferenceException

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import choose, error_at, field, open_job, type_into, unique
from tests.e2e.api import Json, rfc3339

pytestmark = pytest.mark.e2e
SECRET = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:billing/token-AbCdEf"
NOOP = {"type": "python", "handler": "noop"}
# target type -> (field label, value) for each of its fields
TARGETS: dict[str, list[tuple[str, str]]] = {
    "python": [("Handler", "noop")],
    "lambda": [("Function ARN", "arn:aws:lambda:eu-west-1:111122223333:function:report")],
    "sqs": [("Queue URL", "https://sqs.eu-west-1.amazonaws.com/111122223333/reports")],
    "sns": [("Topic ARN", "arn:aws:sns:eu-west-1:111122223333:reports")],
    "eventbridge": [
        ("Event bus", "reports"),
        ("Detail type", "report.due"),
        ("Source", "com.example.reports"),
    ],
}


def _create_through_the_form(browser: Browser, stack: Stack, name: str, fill: Callable[[], None]) -> Json:
    browser.open(f"{stack.url}/console/#/new")
    type_into(browser.find("textbox", "Name"), name)
    fill()
    browser.find("button", "Create job").click()
    browser.find("heading", f"Job {name}")
    job_id = browser.driver.current_url.rsplit("/", 1)[1]
    return stack.api.job(job_id)


def test_new_job_offers_every_target_type_policy_window_and_retry_field(
    browser: Browser, console_stack: Stack
) -> None:
    later = rfc3339(time.time() + 3600)
    for kind, fields in TARGETS.items():

        def fill(kind: str = kind, fields: list[tuple[str, str]] = fields) -> None:
            type_into(browser.find("textbox", "Run at"), later)
            choose(browser.find("combobox", "Target type"), kind)
            for label, value in fields:
                type_into(browser.find("textbox", label), value)

        job = _create_through_the_form(browser, console_stack, unique(f"to-{kind}"), fill)
        expected = {re.sub(r"\W", "_", label.lower()): value for label, value in fields}
        expected = {{"event_bus": "event_bus_name"}.get(k, k): v for k, v in expected.items()}
        assert {k: job["target"].get(k) for k in expected} == expected, job["target"]

    start, end = rfc3339(time.time() + 60), rfc3339(time.time() + 86400 * 30)

    def fill_http() -> None:
        type_into(browser.find("textbox", "Schedule"), "rate(1 hour)")
        browser.find("table", "Next 10 runs in UTC")  # previewed as typed
        type_into(browser.find("textbox", "Active from"), start)
        type_into(browser.find("textbox", "Active until"), end)
        choose(browser.find("combobox", "Misfire policy"), "skip")
        choose(browser.find("combobox", "Overlap policy"), "buffer")
        choose(browser.find("combobox", "Priority"), "high")
        type_into(browser.find("textbox", "Payload (JSON)"), '{"report": "monthly"}')
        type_into(browser.find("spinbutton", "Max retries"), "2")
        type_into(browser.find("textbox", "Backoff (seconds, comma-separated)"), "10, 60")
        type_into(browser.find("spinbutton", "Timeout (seconds)"), "45")
        choose(browser.find("combobox", "Target type"), "http")
        type_into(browser.find("textbox", "URL"), "https://example.com/hook")
        choose(browser.find("combobox", "Method"), "PUT")
        headers = browser.find("group", "Headers")
        for n, (header, value, secret) in enumerate(
            (("X-Team", "finance", False), ("Authorization", SECRET, True)), 1
        ):
            browser.find("button", "Add header", within=headers).click()
            type_into(browser.find("textbox", f"Header {n} name"), header)
            type_into(browser.find("textbox", f"Header {n} value"), value)
            if secret:
                browser.find("checkbox", f"Header {n} value is a secret ARN").click()

    job = _create_through_the_form(browser, console_stack, unique("to-http"), fill_http)
    assert job["target"] == {
        "type": "http",
        "url": "https://example.com/hook",
        "method": "PUT",
        "headers": {"X-Team": "***", "Authorization": {"secret": SECRET, "json_key": None}},
    }, job["target"]
    assert (job["schedule"], job["misfire_policy"], job["overlap_policy"], job["priority"]) == (
        "rate(1 hour)",
        "skip",
        "buffer",
        "high",
    )
    assert (job["start_at"], job["end_at"]) == (start, end)
    assert (job["payload"], job["max_retries"], job["backoff"], job["timeout_seconds"]) == (
        {"report": "monthly"},
        2,
        [10, 60],
        45,
    )


def test_edit_takes_what_patch_takes_previews_as_typed_and_clears_a_fixed_error(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("to-edit")
    job = console_stack.api.create(name=name, schedule="rate(1 hour)", target=NOOP)
    open_job(browser, console_stack, job["id"], name)
    browser.find("button", "Edit").click()
    form = browser.find("form", "Edit job")
    browser.find("table", "Next 10 runs in UTC, after this edit")
    schedule = browser.find("textbox", "Schedule", within=form)
    type_into(schedule, "61 * * * *")
    browser.wait(lambda: schedule.get_attribute("aria-invalid") == "true", 10, "no error at Schedule")
    assert "minute must be 0-59" in error_at(browser, schedule)
    type_into(schedule, "0 9 * * 1-5")
    browser.wait(
        lambda: schedule.get_attribute("aria-invalid") is None, 10, "the fixed schedule kept its error"
    )
    assert error_at(browser, schedule) == ""
    zone = browser.find("combobox", "Time zone", within=form)
    assert zone.get_attribute("list") and browser.driver.find_element(
        "css selector", f"#{zone.get_attribute('list')} option[value='Europe/Berlin']"
    )
    type_into(zone, "Europe/Berlin")
    browser.find("table", "Next 10 runs in Europe/Berlin, after this edit")

    timeout = browser.find("spinbutton", "Timeout (seconds)", within=form)
    type_into(timeout, "0")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: timeout.get_attribute("aria-invalid") == "true", 10, "no error at Timeout")
    type_into(timeout, "60")
    assert timeout.get_attribute("aria-invalid") is None and error_at(browser, timeout) == ""
    choose(browser.find("combobox", "Misfire policy", within=form), "run_all")
    choose(browser.find("combobox", "Overlap policy", within=form), "buffer")
    end = rfc3339(time.time() + 86400 * 60)
    type_into(browser.find("textbox", "Active until", within=form), end)
    type_into(browser.find("textbox", "Backoff (seconds, comma-separated)", within=form), "7")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: browser.absent("form", "Edit job"), 10, "the editor stayed open")
    saved = console_stack.api.job(job["id"])
    assert (saved["schedule"], saved["timezone"], saved["timeout_seconds"]) == (
        "0 9 * * 1-5",
        "Europe/Berlin",
        60,
    )
    assert (saved["misfire_policy"], saved["overlap_policy"], saved["end_at"], saved["backoff"]) == (
        "run_all",
        "buffer",
        end,
        [7],
    )


def _first_next_run(browser: Browser) -> str | None:
    """The first of the job's next runs as the page lists them (None while it lists none)."""
    try:
        tables = browser.find_all("table", re.compile(r"^Next \d+ runs in UTC$"))
        rows = browser.rows(tables[0]) if tables else []
    except StaleElementReferenceException:  # redrawn as it was read
        return None
    return rows[0][0].replace(" ", "T") if rows else None


def test_next_runs_after_run_now_follow_the_apis_next_run(browser: Browser, console_stack: Stack) -> None:
    name = unique("every-minute")
    job = console_stack.api.create(name=name, schedule="rate(1 minute)", target=NOOP)
    open_job(browser, console_stack, job["id"], name)
    before = job["next_run_at"]
    browser.wait(lambda: _first_next_run(browser) == before, 10, "the first next run is not the API's")
    browser.find("button", "Run now").click()
    # What the API answers as the next scheduled run (none is a triggered run), and what the page lists.
    answered, shown = {before}, set()
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline:
        now = console_stack.api.job(job["id"])
        if now["triggers_waiting"] == 0 and now["next_run_at"]:
            answered.add(now["next_run_at"])
        if (first := _first_next_run(browser)) is not None:
            shown.add(first)
        time.sleep(0.2)
    triggered = console_stack.api.job(job["id"])["last_run"]["scheduled_at"]
    assert triggered not in shown
    assert shown <= answered, (shown, answered)
    browser.wait(
        lambda: _first_next_run(browser) == console_stack.api.job(job["id"])["next_run_at"],
        10,
        "the page's next run is not the API's",
    )


@pytest.fixture
def times_reset(browser: Browser) -> Iterator[None]:
    yield
    browser.script("localStorage.removeItem('sundial.times')")
    browser.cdp("Emulation.setTimezoneOverride", timezoneId="")


def test_times_in_utc_the_jobs_zone_or_the_browsers_with_relative_times(
    browser: Browser, console_stack: Stack, times_reset: None
) -> None:
    browser.cdp("Emulation.setTimezoneOverride", timezoneId="America/New_York")
    name = unique("in-kolkata")
    job = console_stack.api.create(name=name, schedule="0 9 * * *", timezone="Asia/Kolkata", target=NOOP)
    open_job(browser, console_stack, job["id"], name)
    relative = r"\((\d+ (s|min|h|d) ago|now)\)"
    created = job["created_at"]
    assert re.fullmatch(rf"{re.escape(created.replace('T', ' '))} {relative}", field(browser, "created_at"))
    times = browser.find("combobox", "Times in")
    choose(times, "job")
    browser.wait(lambda: "UTC+5:30" in field(browser, "created_at"), 10, "not shown in the job's zone")
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{{3}} UTC\+5:30 {relative}", field(browser, "created_at")
    )
    assert re.search(r"\(in \d+ (s|min|h)\)$", field(browser, "next_run_at"))
    times = browser.find("combobox", "Times in")
    assert [o.text for o in times.find_elements("css selector", "option")][
        2
    ] == "Browser's time zone (America/New_York)"
    choose(times, "browser")
    browser.wait(
        lambda: re.search(r" UTC-[45] ", field(browser, "created_at")), 10, "not in the browser's zone"
    )
    browser.open(f"{console_stack.url}/console/#/jobs?name={name}")  # the choice is kept
    table = browser.find("table", "Jobs, newest first")
    browser.wait(
        lambda: any(len(row) == 7 and re.search(r" UTC-[45] ", row[6]) for row in browser.rows(table)),
        10,
        "the list is not in the browser's zone",
    )


@pytest.fixture
def small_dark_screen(browser: Browser) -> Iterator[None]:
    """A phone's width (390 CSS px) in the reader's dark theme."""
    browser.cdp("Emulation.setEmulatedMedia", features=[{"name": "prefers-color-scheme", "value": "dark"}])
    browser.cdp(
        "Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=1, mobile=False
    )
    yield
    browser.cdp("Emulation.clearDeviceMetricsOverride")
    browser.cdp("Emulation.setEmulatedMedia", features=[])


def test_every_page_fits_a_dark_390_px_screen(
    browser: Browser, console_stack: Stack, small_dark_screen: None
) -> None:
    name = unique("narrow")
    job = console_stack.api.create(name=name, schedule="rate(1 hour)", target=NOOP)
    for address, heading in (
        ("#/", "Overview"),
        ("#/jobs", "Jobs"),
        (f"#/jobs/{job['id']}", f"Job {name}"),
        ("#/new", "New job"),
        ("#/limits", "Limits"),
    ):
        browser.open(f"{console_stack.url}/console/{address}")
        browser.find("heading", heading)
        if heading == "Jobs":
            browser.find("link", name)
        assert browser.script("return window.innerWidth") == 390
        wide = browser.script("const d = document.documentElement; return [d.scrollWidth, d.clientWidth]")
        assert wide[0] <= wide[1], (address, wide)
        background = browser.script("return getComputedStyle(document.body).backgroundColor")
        channels = [int(c) for c in re.findall(r"\d+", str(background))[:3]]
        assert max(channels) < 64, (address, background)  # dark, as the reader's setting asks
        browser.screenshot(f"dark-390-{heading.split()[0].lower()}")


def test_lateness_is_shown_in_units_that_fit_with_labels_inside_the_chart(
    browser: Browser, console_stack: Stack
) -> None:
    browser.open(f"{console_stack.url}/console/#/")
    browser.find("heading", "Overview")
    # The chart as the overview draws it, for lateness from milliseconds to years.
    drawn = browser.driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const charts = document.querySelector('link[href$="/charts.js"]').href;
        import(charts).then(({ latenessChart, duration }) => {
          const minutes = [0, 1].map((i) => ({ minute: `2026-12-01T09:0${i}:00Z`, starts: 1,
            lateness_p50_ms: 840, lateness_p99_ms: i ? 218321278788 : 95000 }));
          const figure = latenessChart(minutes, 840, 218321278788);
          document.querySelector('main').append(figure);
          const svg = figure.querySelector('svg');
          const box = svg.viewBox.baseVal;
          const outside = [...svg.querySelectorAll('text')].map((t) => [t.textContent, t.getBBox()])
            .filter(([, b]) => b.x < 0 || b.y < 0 || b.x + b.width > box.width || b.y + b.height > box.height)
            .map(([text]) => text);
          done({ units: [840, 12300, 95000, 7560000, 218321278788].map(duration), outside,
                 name: svg.getAttribute('aria-label') });
        });
        """
    )
    assert drawn["units"] == ["840 ms", "12 s", "1.6 min", "2.1 h", "2,527 d"], drawn["units"]
    assert drawn["outside"] == [], drawn["outside"]
    assert drawn["name"].endswith("p50 840 ms, p99 2,527 d over the hour")
