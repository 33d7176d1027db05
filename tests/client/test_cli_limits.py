"""`sundial limits ...`, a job's `--limit-key`, and the typed client's limit calls, against the local
stack over HTTP."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sundial.client import InvalidInput, NotFound, SundialClient
from sundial.client.errors import error_for
from tests.client.conftest import NOOP
from tests.client.test_cli import created, sundial

pytestmark = pytest.mark.e2e
# Generous: the console and process suites share two cores with the in-process ones in `make test`.
WAIT_SECONDS = 60.0


def _key(label: str) -> str:
    # One stack serves the whole session: a key of each test's own keeps the tests apart. Every
    # kind of character a key may hold is in it, "/" (sent as %2F) included.
    return f"cli/{label}_{uuid.uuid4().hex[:8]}.x-y:v1"


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _rows(text: str) -> dict[str, str]:
    return {
        name: value.strip()
        for name, _, value in (line.partition(" ") for line in text.splitlines()[1:])
        if value.strip()
    }


def test_put_get_list_and_delete_a_limit(local_api: str) -> None:
    first, second = _key("a"), _key("b")
    put = _json(sundial(local_api, "limits", "put", first, "--max-concurrent", "3", "-o", "json"))
    assert (put["key"], put["max_concurrent"], put["per_second"]) == (first, 3, None)
    assert (put["running"], put["waiting"]) == (0, 0)
    rate = _json(
        sundial(local_api, "limits", "put", second, "--per-second", "2.5", "--burst", "4", "-o", "json")
    )
    assert (rate["max_concurrent"], rate["per_second"], rate["burst"]) == (None, 2.5, 4)
    # A put replaces the whole limit: the bound left out is gone.
    replaced = _json(sundial(local_api, "limits", "put", second, "--per-second", "2", "-o", "json"))
    assert (replaced["per_second"], replaced["burst"]) == (2.0, 2)

    got = _json(sundial(local_api, "limits", "get", first, "-o", "json"))
    assert got == put
    as_table = sundial(local_api, "limits", "get", second)
    assert as_table.exit_code == 0, as_table.stderr
    assert _rows(as_table.stdout)["per_second"] == "2" and _rows(as_table.stdout)["max_concurrent"] == "-"

    listed = _json(sundial(local_api, "limits", "list", "--all", "-o", "json"))
    assert {first, second} <= {limit["key"] for limit in listed["limits"]}
    assert listed["next_token"] is None
    keys = [limit["key"] for limit in listed["limits"]]
    assert keys == sorted(keys)
    table = sundial(local_api, "limits", "list", "--all")
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["KEY", "MAX", "CONCURRENT"]
    assert first in [row.split()[0] for row in rows]

    unconfirmed = sundial(local_api, "limits", "delete", first)
    assert unconfirmed.exit_code == 1 and "--yes" in unconfirmed.stderr
    assert _json(sundial(local_api, "limits", "get", first, "-o", "json"))["max_concurrent"] == 3
    deleted = _json(sundial(local_api, "limits", "delete", first, "--yes", "-o", "json"))
    assert deleted["key"] == first and deleted["max_concurrent"] == 3
    gone = sundial(local_api, "limits", "get", first)
    assert gone.exit_code == 2 and first in gone.stderr
    again = sundial(local_api, "limits", "delete", first, "--yes")
    assert again.exit_code == 2
    assert _json(sundial(local_api, "limits", "delete", second, "--yes", "-o", "json"))["key"] == second


def test_list_pages_with_max_items_and_starting_token(local_api: str) -> None:
    keys = sorted(_key("page") for _ in range(3))
    for key in keys:
        _json(sundial(local_api, "limits", "put", key, "--max-concurrent", "1", "-o", "json"))
    try:
        seen: list[str] = []
        token: str | None = None
        while True:
            args = ["--starting-token", token] if token else []
            page = _json(sundial(local_api, "limits", "list", "--max-items", "2", *args, "-o", "json"))
            assert len(page["limits"]) <= 2
            seen += [limit["key"] for limit in page["limits"]]
            token = page["next_token"]
            if not token:
                break
        assert [key for key in seen if key in keys] == keys
    finally:
        for key in keys:
            sundial(local_api, "limits", "delete", key, "--yes")


@pytest.mark.parametrize(
    ("key", "flags", "field"),
    [
        ("valid", ("--max-concurrent", "0"), "max_concurrent"),
        ("valid", ("--max-concurrent", "10001"), "max_concurrent"),
        ("valid", ("--per-second", "-1"), "per_second"),
        ("a b", ("--max-concurrent", "1"), "key"),
    ],
)
def test_a_bad_limit_is_refused_naming_the_field_and_stores_nothing(
    local_api: str, key: str, flags: tuple[str, ...], field: str
) -> None:
    key = _key("bad") if key == "valid" else key
    result = sundial(local_api, "limits", "put", key, *flags)
    assert result.exit_code == 1, result.stderr
    assert f"error: {field}:" in result.stderr and f"(field {field}" in result.stderr
    listed = _json(sundial(local_api, "limits", "list", "--all", "-o", "json"))
    assert key not in [limit["key"] for limit in listed["limits"]]


def test_a_limit_without_a_bound_or_a_burst_without_a_rate_is_a_usage_error(local_api: str) -> None:
    key = _key("usage")
    neither = sundial(local_api, "limits", "put", key)
    assert neither.exit_code == 1 and "--max-concurrent, --per-second or both" in neither.stderr
    burst = sundial(local_api, "limits", "put", key, "--max-concurrent", "2", "--burst", "3")
    assert burst.exit_code == 1 and "--burst goes with --per-second" in burst.stderr
    assert sundial(local_api, "limits", "get", key).exit_code == 2


def test_the_client_refuses_what_the_api_refuses_naming_the_same_field(client: SundialClient) -> None:
    key = _key("client")
    for body, field in (
        ({"max_concurrent": 0}, "max_concurrent"),
        ({"per_second": -1}, "per_second"),
        ({"per_second": 1, "burst": 0}, "burst"),
    ):
        with pytest.raises(InvalidInput) as refused:
            client.put_limit(key, **body)
        assert refused.value.field == field
        answer = client.send("PUT", f"/limits/{key}", body)
        assert answer.status == 400
        assert error_for(answer.status, answer.body).field == field
    with pytest.raises(InvalidInput) as bad_key:
        client.get_limit("a b")
    assert bad_key.value.field == "key"
    with pytest.raises(NotFound):
        client.get_limit(key)

    put = client.put_limit(key, max_concurrent=2, per_second=3)
    assert (put.max_concurrent, put.per_second, put.burst) == (2, 3.0, 3)
    assert client.get_limit(key) == put
    assert key in [limit.key for limit in client.iter_limits(page_size=1)]
    assert client.delete_limit(key).key == key
    assert key not in [limit.key for limit in client.iter_limits()]


def test_jobs_create_with_a_limit_key_and_get_show_it_and_update_removes_it(local_api: str) -> None:
    key = _key("job")
    job = created(local_api, "--in", "1d", "--target-python", "noop", "--limit-key", key)
    assert job["limit_key"] == key and job["waiting_on_limit_since"] is None
    shown = sundial(local_api, "jobs", "get", str(job["id"]))
    assert shown.exit_code == 0, shown.stderr
    assert _rows(shown.stdout)["limit_key"] == key

    other = _key("other")
    moved = _json(sundial(local_api, "jobs", "update", str(job["id"]), "--limit-key", other, "-o", "json"))
    assert moved["limit_key"] == other
    removed = _json(sundial(local_api, "jobs", "update", str(job["id"]), "--no-limit-key", "-o", "json"))
    assert removed["limit_key"] is None
    both = sundial(local_api, "jobs", "update", str(job["id"]), "--no-limit-key", "--limit-key", key)
    assert both.exit_code == 1 and "not both" in both.stderr


def test_a_bad_limit_key_on_a_job_is_refused_naming_the_field(local_api: str) -> None:
    result = sundial(
        local_api, "jobs", "create", "--in", "1d", "--target-python", "noop", "--limit-key", "a b"
    )
    assert result.exit_code == 1 and "limit_key" in result.stderr


def test_a_job_held_back_by_its_key_shows_the_wait(local_api: str, client: SundialClient) -> None:
    key = _key("held")
    # One start per 100 s: of two jobs due now, the second waits on the key.
    _json(sundial(local_api, "limits", "put", key, "--per-second", "0.01", "-o", "json"))
    try:
        first = client.create_job({"target": NOOP, "limit_key": key})
        second = client.create_job({"target": NOOP, "limit_key": key})
        held = _until(lambda: [j for j in (client.get_job(first.id), client.get_job(second.id)) if _held(j)])
        assert len(held) == 1
        job_id = held[0].id

        shown = sundial(local_api, "jobs", "get", job_id)
        assert shown.exit_code == 0, shown.stderr
        waiting = _rows(shown.stdout)["waiting_on_limit_since"]
        assert waiting.startswith(str(held[0].waiting_on_limit_since)) and f"held back by {key}" in waiting
        listed = sundial(local_api, "jobs", "list", "--max-items", "5")
        row = next(line for line in listed.stdout.splitlines() if line.startswith(job_id))
        assert f"queued (waiting on {key})" in row
        limit = _json(sundial(local_api, "limits", "get", key, "-o", "json"))
        assert limit["waiting"] >= 1 and limit["oldest_wait_seconds"] is not None
    finally:
        sundial(local_api, "limits", "delete", key, "--yes")


def test_runs_show_how_long_the_key_held_an_attempt_back(local_api: str, client: SundialClient) -> None:
    key = _key("runs")
    # One start every 4 s: however far apart a loaded machine hands the jobs over, the later ones
    # wait on the key's rate.
    client.put_limit(key, per_second=0.25)
    try:
        # One request, so that the jobs are due at once.
        answer = client.create_jobs([{"target": NOOP, "limit_key": key} for _ in range(3)])
        ids = [item.job.id for item in answer.results if item.job is not None]
        assert len(ids) == 3

        def waited() -> list[tuple[str, int]]:
            runs = {job_id: client.list_runs(job_id).runs for job_id in ids}
            if not all(runs.values()):
                return []
            return [
                (job_id, run.limit_wait_ms) for job_id in ids for run in runs[job_id] if run.limit_wait_ms
            ]

        found = _until(waited)
        job_id, wait_ms = found[0]
        table = sundial(local_api, "jobs", "runs", job_id)
        assert table.exit_code == 0, table.stderr
        header, row = table.stdout.splitlines()[:2]
        assert "LIMIT WAIT" in header and f"{wait_ms} ms" in row
    finally:
        client.delete_limit(key)


def _held(job: Any) -> bool:
    return job.waiting_on_limit_since is not None


def _until(found: Any) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not seen within {WAIT_SECONDS} s")


def _schedules(tmp_path: Path, namespace: str, limits: str, limit_key: str) -> Path:
    path = tmp_path / "schedules.yaml"
    path.write_text(
        f"namespace: {namespace}\n"
        f"limits:\n{limits}"
        "jobs:\n"
        "  - key: nightly\n"
        "    schedule: rate(1 day)\n"
        '    start_at: "2099-01-01T00:00:00Z"\n'
        "    target: {type: python, handler: noop}\n"
        f"    limit_key: {limit_key}\n"
    )
    return path


def test_apply_sets_the_file_s_limits_and_a_job_s_limit_key(
    local_api: str, client: SundialClient, tmp_path: Path
) -> None:
    namespace, api, rate = f"lim{uuid.uuid4().hex[:8]}", _key("apply-api"), _key("apply-rate")
    limits = f"  {api}: {{max_concurrent: 2}}\n  {rate}:\n    per_second: 5\n    burst: 2\n"
    path = _schedules(tmp_path, namespace, limits, api)
    applied = sundial(local_api, "apply", "-f", str(path), "--yes")
    assert applied.exit_code == 0, applied.stderr
    assert f"+ set limit {api} (line 3)" in applied.stdout
    assert (client.get_limit(api).max_concurrent, client.get_limit(rate).burst) == (2, 2)
    job = next(client.iter_jobs(name_prefix=f"{namespace}/"))
    assert job.limit_key == api

    again = sundial(local_api, "apply", "-f", str(path), "--dry-run", "--exit-code")
    assert again.exit_code == 0 and "no changes" in again.stdout, again.output

    path = _schedules(tmp_path, namespace, limits.replace("max_concurrent: 2", "max_concurrent: 3"), rate)
    changed = sundial(local_api, "apply", "-f", str(path), "--dry-run", "--exit-code")
    assert changed.exit_code == 10, changed.output
    assert f"~ change limit {api} (line 3)" in changed.stdout and "max_concurrent: 2 → 3" in changed.stdout
    assert f'limit_key: "{api}" → "{rate}"' in changed.stdout
    assert sundial(local_api, "apply", "-f", str(path), "--yes").exit_code == 0
    assert client.get_limit(api).max_concurrent == 3
    assert client.get_job(job.id).limit_key == rate
    for key in (api, rate):
        client.delete_limit(key)


def test_apply_refuses_bad_limits_naming_their_lines(tmp_path: Path) -> None:
    limits = "  'a b': {max_concurrent: 2}\n  k1: {max_concurent: 2}\n  k2: {}\n  k3: {per_second: -1}\n"
    path = _schedules(tmp_path, "limbad", limits, "k3")
    refused = sundial("http://127.0.0.1:9", "apply", "-f", str(path), "--yes")
    assert refused.exit_code == 1
    assert f"{path}:3: limits.a b: give 1-128 characters" in refused.stderr
    assert (
        f"{path}:4: limits.k1: max_concurent: unknown field (did you mean max_concurrent?)" in refused.stderr
    )
    assert f"{path}:5: limits.k2: give max_concurrent, per_second or both" in refused.stderr
    assert f"{path}:6: limits.k3: per_second: Input should be greater than or equal to 0.01" in refused.stderr
    assert "refused (4 problem(s)); nothing was changed" in refused.stderr
