"""Calendars from the user's side: `jobs create/update --exclude-date/--holidays/--no-calendar`,
`sundial preview` with a calendar and `--explain`, a schedules file's `calendar:` through `sundial
apply`, and the typed client."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from sundial.client import Calendar, SundialClient
from sundial.client.errors import InvalidInput
from sundial.commands.plan import plan
from sundial.commands.schedules_file import read
from tests.client.test_apply import recorded, sundial_apply, ulid, view, writes, written
from tests.client.test_cli import created, sundial
from tests.client.test_signing import JOB, JOB_ID
from tests.support.sigv4_stub import Reply, StubApi

CHRISTMAS = ("--after", "2026-12-22T00:00:00Z", "-n", "4")


@pytest.mark.e2e
def test_create_and_update_set_replace_and_remove_a_calendar(local_api: str) -> None:
    job = created(
        local_api,
        *("--schedule", "0 9 * * *", "--target-python", "noop"),
        *("--exclude-date", "2099-12-31", "--exclude-date", "2099-01-02", "--holidays", "DE-BY"),
    )
    assert job["calendar"] == {"exclude_dates": ["2099-01-02", "2099-12-31"], "holidays": "DE-BY"}

    replaced = sundial(local_api, "jobs", "update", str(job["id"]), "--holidays", "FR", "-o", "json")
    removed = sundial(local_api, "jobs", "update", str(job["id"]), "--no-calendar", "-o", "json")
    table = sundial(local_api, "jobs", "get", str(job["id"]))

    assert replaced.exit_code == 0, replaced.stderr
    assert json.loads(replaced.stdout)["calendar"] == {"exclude_dates": [], "holidays": "FR"}
    assert removed.exit_code == 0, removed.stderr
    assert json.loads(removed.stdout)["calendar"] is None
    assert any(line.split() == ["calendar"] for line in table.stdout.splitlines())


@pytest.mark.e2e
def test_a_bad_calendar_exits_1_naming_its_field(local_api: str) -> None:
    base = ("jobs", "create", "--schedule", "0 9 * * *", "--target-python", "noop")

    unknown = sundial(local_api, *base, "--holidays", "Atlantis")
    bad_date = sundial(local_api, *base, "--exclude-date", "2026-02-30")
    one_off = sundial(
        local_api, "jobs", "create", "--in", "1h", "--target-python", "noop", "--holidays", "DE"
    )

    assert unknown.exit_code == 1 and "calendar.holidays" in unknown.stderr
    assert bad_date.exit_code == 1 and "calendar.exclude_dates" in bad_date.stderr
    assert "no such date" in bad_date.stderr
    assert one_off.exit_code == 1 and "field calendar" in one_off.stderr


def test_update_sends_the_calendar_only_when_a_flag_gives_it() -> None:
    with StubApi(default=Reply(200, JOB)) as stub:
        other = sundial(stub.url, "jobs", "update", JOB_ID, "--priority", "low")
        dates = sundial(stub.url, "jobs", "update", JOB_ID, "--exclude-date", "2027-01-01")
        none = sundial(stub.url, "jobs", "update", JOB_ID, "--no-calendar")
    both = sundial("http://127.0.0.1:9", "jobs", "update", JOB_ID, "--no-calendar", "--holidays", "DE")

    assert [r.exit_code for r in (other, dates, none)] == [0, 0, 0]
    assert [request.json() for request in stub.received] == [
        {"priority": "low"},
        {"calendar": {"exclude_dates": ["2027-01-01"]}},
        {"calendar": None},
    ]
    assert both.exit_code == 1 and "not both" in both.stderr


@pytest.mark.e2e
def test_preview_with_holidays_lists_the_runs_and_marks_what_it_excluded(local_api: str) -> None:
    plain = sundial(local_api, "preview", "0 9 * * *", "--holidays", "DE", *CHRISTMAS)
    explained = sundial(local_api, "preview", "0 9 * * *", "--holidays", "DE", "--explain", *CHRISTMAS)
    as_json = sundial(
        local_api, "preview", "0 9 * * *", "--holidays", "DE", "--explain", *CHRISTMAS, "-o", "json"
    )

    assert plain.exit_code == 0, plain.stderr
    assert [line.split()[0] for line in plain.stdout.splitlines()[1:]] == [
        "2026-12-22T09:00:00Z",
        "2026-12-23T09:00:00Z",
        "2026-12-24T09:00:00Z",
        "2026-12-27T09:00:00Z",
    ]
    header, *rows = explained.stdout.splitlines()
    assert header.split()[-1] == "CALENDAR"
    assert [row.split()[0] for row in rows if row.split()[-1] == "excluded"] == [
        "2026-12-25T09:00:00Z",
        "2026-12-26T09:00:00Z",
    ]
    assert len(rows) == 6
    assert json.loads(as_json.stdout)["excluded"] == ["2026-12-25T09:00:00Z", "2026-12-26T09:00:00Z"]


@pytest.mark.e2e
def test_the_typed_client_sends_and_reads_a_calendar(client: SundialClient) -> None:
    job = client.create_job(
        {
            "name": f"calendar-{uuid.uuid4().hex[:8]}",
            "schedule": "0 9 * * *",
            "calendar": Calendar(holidays="GB-SCT"),
            "target": {"type": "python", "handler": "noop"},
        }
    )
    answer = client.preview(
        {"schedule": "0 9 * * *", "calendar": {"holidays": "DE"}, "after": "2026-12-22T00:00:00Z", "count": 4}
    )

    assert job.calendar == Calendar(holidays="GB-SCT")
    assert answer.next_runs[-1] == "2026-12-27T09:00:00Z" and answer.excluded is None
    with pytest.raises(InvalidInput) as refused:
        client.update_job(job.id, {"calendar": {"holidays": "GB-XYZ"}})
    assert refused.value.field == "calendar.holidays"


CALENDAR_FILE = """namespace: {namespace}
jobs:
  - key: report
    schedule: "0 9 * * MON-FRI"
    timezone: Europe/Berlin
    calendar:
      holidays: {holidays}
      exclude_dates: ["2099-12-31", "2099-12-24"]
    target: {{type: python, handler: noop}}
"""


def test_a_file_s_calendar_is_compared_as_the_api_answers_it(tmp_path: Path) -> None:
    file = read(written(tmp_path, CALENDAR_FILE.format(namespace="ns-cal", holidays="DE-BY")))
    [entry] = file.entries
    answered = view(entry.body, ulid(1))

    same = plan(file, [answered], prune=False)
    moved = plan(file, [answered.model_copy(update={"calendar": Calendar(holidays="DE")})], prune=False)

    assert same.changes == 0
    [update] = moved.updates
    assert update.patch() == {
        "calendar": {"exclude_dates": ["2099-12-24", "2099-12-31"], "holidays": "DE-BY"}
    }


@pytest.mark.e2e
def test_apply_creates_a_calendar_and_refuses_an_unknown_code_naming_its_line(
    local_api: str, client: SundialClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = f"t{uuid.uuid4().hex[:10]}"
    path = written(tmp_path, CALENDAR_FILE.format(namespace=namespace, holidays="DE-BY"))

    first = sundial_apply(local_api, "-f", str(path), "--yes")
    again = sundial_apply(local_api, "-f", str(path), "--yes")
    path.write_text(CALENDAR_FILE.format(namespace=namespace, holidays="DE-XX"))
    sent = recorded(monkeypatch)
    refused = sundial_apply(local_api, "-f", str(path), "--yes")

    assert first.exit_code == 0, first.output
    [job] = client.iter_jobs(name_prefix=namespace + "/")
    assert job.calendar == Calendar.model_validate(
        {"holidays": "DE-BY", "exclude_dates": ["2099-12-24", "2099-12-31"]}
    )
    assert again.stdout.startswith("no changes"), again.output
    assert refused.exit_code == 1, refused.output
    assert f"{path}:7: report: calendar.holidays:" in refused.stderr
    assert writes(sent) == []
