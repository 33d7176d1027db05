"""`sundial jobs import` and the bulk actions against `sundial local`, and the client's batch create."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from sundial.client import SundialClient
from tests.client.conftest import NOOP
from tests.client.test_cli import sundial

pytestmark = pytest.mark.e2e
LATER = {"schedule": "rate(1 day)", "start_at": "2099-01-01T00:00:00Z"}


def test_import_creates_each_line_and_again_finds_them_there(local_api: str, tmp_path: Path) -> None:
    tag = f"imp-{uuid.uuid4().hex[:8]}"
    lines = [
        json.dumps({"name": f"{tag}-1", "target": NOOP, **LATER}),
        "",
        json.dumps({"name": f"{tag}-2", "target": NOOP, "idempotency_key": f"{tag}-own", **LATER}),
        "{not json",
        json.dumps({"name": f"{tag}-3", "schedule": "61 * * * *", "target": NOOP}),
        json.dumps({"name": f"{tag}-4", "target": NOOP, **LATER}),
    ]
    file = tmp_path / "jobs.jsonl"
    file.write_text("\n".join(lines) + "\n")

    first = sundial(local_api, "jobs", "import", str(file))
    again = sundial(local_api, "jobs", "import", str(file))

    assert first.exit_code == 3, first.output
    assert first.stdout.strip() == "created 3, already there 0, refused 2"
    assert "line 4: not JSON" in first.stderr
    assert "line 5: cron expression '61 * * * *': minute must be 0-59 (schedule)" in first.stderr
    assert again.stdout.strip() == "created 0, already there 3, refused 2"
    listed = sundial(local_api, "jobs", "list", "--name-prefix", tag, "-o", "json")
    names = sorted(job["name"] for job in json.loads(listed.stdout)["jobs"])
    assert names == [f"{tag}-{n}" for n in (1, 2, 4)]


def test_import_with_requests_in_flight_reports_in_the_file_s_order(local_api: str, tmp_path: Path) -> None:
    tag = f"imf-{uuid.uuid4().hex[:8]}"
    wrong = json.dumps({"name": f"{tag}-bad", "schedule": "61 * * * *", "target": NOOP})
    bad = {150: "{not json", 420: wrong}
    lines = [bad.get(n) or json.dumps({"name": f"{tag}-{n}", "target": NOOP, **LATER}) for n in range(1, 451)]
    file = tmp_path / "many.jsonl"
    file.write_text("\n".join(lines) + "\n")

    first = sundial(local_api, "jobs", "import", "--in-flight", "3", str(file))
    again = sundial(local_api, "jobs", "import", "--in-flight", "5", str(file))

    assert first.exit_code == 3, first.output
    assert first.stdout.strip() == "created 448, already there 0, refused 2"
    refusals = [line for line in first.stderr.splitlines() if line.startswith("line ")]
    assert [line.split(":")[0] for line in refusals] == ["line 150", "line 420"]
    assert again.stdout.strip() == "created 0, already there 448, refused 2"
    names = [job.name for job in SundialClient(local_api).iter_jobs(name_prefix=tag)]
    assert len(names) == len(set(names)) == 448


def test_bulk_actions_by_ids_and_by_filter(local_api: str, client: SundialClient) -> None:
    tag = f"blk-{uuid.uuid4().hex[:8]}"
    answer = client.create_jobs([{"name": f"{tag}-{n}", "target": NOOP, **LATER} for n in range(5)])
    assert (answer.created, answer.refused) == (5, 0)
    ids = [result.job.id for result in answer.results if result.job]

    paused = sundial(local_api, "jobs", "pause", ids[0], ids[1], "-o", "json")
    asked = sundial(local_api, "jobs", "cancel", "--filter", f"name_prefix={tag}", input="n\n")
    cancelled = sundial(local_api, "jobs", "cancel", "--filter", f"name_prefix={tag}", "--yes", "-o", "json")

    assert paused.exit_code == 0, paused.output
    assert (json.loads(paused.stdout)["done"], json.loads(paused.stdout)["state"]) == (2, "done")
    assert asked.exit_code != 0  # declined: nothing was started
    assert cancelled.exit_code == 0, cancelled.output
    assert json.loads(cancelled.stdout)["done"] == 5
    assert {client.get_job(job_id).status for job_id in ids} == {"cancelled"}
    assert [client.get_job(job_id).paused for job_id in ids] == [True, True, False, False, False]
