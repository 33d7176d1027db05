"""`sundial apply`: the schedules file's rules and the plan as tables, then the command against one
`sundial local` (the session's), watching every request that changes something."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sundial.cli import cli
from sundial.client import SundialClient
from sundial.client.transport import Answer
from sundial.commands import apply as apply_module
from sundial.commands.plan import DuplicateJobs, Plan, differences, idempotency_key, plan, render
from sundial.commands.schedules_file import FileRefused, SchedulesFile, read
from sundial.contract.jobs import JobCreate, JobView
from tests.client.conftest import NOOP

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a command that calls the API there fails with 5
LATER = '    start_at: "2099-01-01T00:00:00Z"'
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf"


def sundial_apply(api: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["apply", *args, "--api", api], input=input)


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "schedules.yaml"
    path.write_text(text)
    return path


def jobs_file(
    namespace: str, count: int, schedule: Callable[[int], str] = lambda n: f"{n % 60} 3 * * *"
) -> str:
    """`count` entries of five lines each: entry n's key is on line 3 + 5n, its schedule on the next."""
    lines = [f"namespace: {namespace}", "jobs:"]
    for n in range(count):
        lines += [f"  - key: job-{n:02d}", f'    schedule: "{schedule(n)}"', LATER]
        lines += ["    target: {type: python, handler: noop}", f"    payload: {{n: {n}}}"]
    return "\n".join(lines) + "\n"


# --- the file --------------------------------------------------------------------------------------


def refusals(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(FileRefused) as refused:
        read(written(tmp_path, text))
    return [problem.text("f") for problem in refused.value.problems]


ENTRY = "  - key: a\n    schedule: rate(1 day)\n    target: {type: python, handler: noop}\n"
ROUTE = '    on_dead: {type: sns, topic_arn: "arn:aws:sns:us-east-1:123456789012:alerts"}\n'
ONE_OFF_ROUTED = ENTRY.replace("schedule: rate(1 day)", 'run_at: "2099-01-01T00:00:00Z"') + ROUTE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a typo of a field, with what it may have meant
        (
            "namespace: ns\njobs:\n" + ENTRY + "    schedul: x\n",
            "f:6: a: schedul: unknown field (did you mean schedule?)",
        ),
        # a bad value, on the line of its field
        ("namespace: ns\njobs:\n" + ENTRY + "    priority: urgent\n", "f:6: a: priority: Input should be"),
        # deep inside the target (the union's tag is no field)
        (
            "namespace: ns\njobs:\n  - key: a\n    schedule: rate(1 day)\n    target:\n      type: lambda\n",
            "f:5: a: target.function_arn: Field required",
        ),
        ("namespace: ns\ncolour: blue\njobs:\n" + ENTRY, "f:2: colour: unknown top-level key"),
        ("jobs:\n" + ENTRY, "f:1: namespace: is required"),
        ("namespace: Billing\njobs:\n" + ENTRY, "f:1: namespace: is 'Billing'"),
        ("namespace: ns\njobs:\n", "f:2: jobs: must be a list"),
        ("namespace: ns\njobs:\n" + ENTRY + ENTRY, "f:6: a: key given twice (first on line 3)"),
        (
            "namespace: ns\njobs:\n" + ENTRY + "    schedule: rate(2 days)\n",
            "f:6: schedule: given twice (first on line 4)",
        ),
        ("namespace: ns\njobs:\n" + ENTRY + "    name: mine\n", "f:6: a: name: apply names the job ns/<key>"),
        (
            "namespace: ns\njobs:\n" + ENTRY.replace("key: a", "key: a/b"),
            "f:3: jobs[0].key: is 'a/b'",
        ),
        (
            "namespace: ns\njobs:\n  - key: a\n    target: {type: python, handler: noop}\n",
            "f:3: a: give schedule (recurring) or run_at",
        ),
        ("namespace: ns\njobs:\n  - key: a\n    schedule: [unclosed\n", "f:5: YAML:"),
        (
            "namespace: ns\njobs:\n  - key: a\n    schedule: rate(1 day)\n    target: {type: http, url: 'https://e.com/x?token=abc'}\n",
            "f:5: a: target.url: the API answers a URL's query values as '***'",
        ),
        # the alert route's options need the route, and a recurring job
        (
            "namespace: ns\njobs:\n" + ENTRY + "    alert_on_missed: true\n",
            "f:6: a: alert_on_missed: sends its notices to on_dead: give on_dead too",
        ),
        (
            "namespace: ns\njobs:\n" + ENTRY + "    on_failure_streak: 3\n",
            "f:6: a: on_failure_streak: narrows what on_dead hears: give on_dead too",
        ),
        (
            "namespace: ns\njobs:\n" + ONE_OFF_ROUTED + "    alert_on_missed: true\n",
            "f:7: a: alert_on_missed: tells of instants of a schedule passed over, which only a recurring "
            "job has: give a schedule, or leave alert_on_missed out",
        ),
        (
            "namespace: ns\njobs:\n"
            + ONE_OFF_ROUTED.replace('run_at: "2099-01-01T00:00:00Z"', 'schedule: "at(2099-01-01T00:00:00)"')
            + "    on_failure_streak: 2\n",
            "f:7: a: on_failure_streak: counts dead occurrences in a row, which only a recurring job has",
        ),
    ],
)
def test_the_file_is_refused_naming_the_line_and_the_field(tmp_path: Path, text: str, expected: str) -> None:
    assert any(line.startswith(expected) for line in refusals(tmp_path, text)), refusals(tmp_path, text)


def test_an_inline_secret_header_is_refused_before_any_call(tmp_path: Path) -> None:
    text = (
        "namespace: ns\njobs:\n  - key: hook\n    schedule: rate(1 day)\n    target:\n      type: http\n"
        "      url: https://example.com/hook\n      headers:\n        Content-Type: application/json\n"
        f'        X-Signing: {{secret: "{SECRET_ARN}"}}\n        Authorization: Bearer abc\n'
        '    on_dead: {type: http, url: "https://example.com/dead", headers: {X-Token: t}}\n'
    )
    result = sundial_apply(NOWHERE, "-f", str(written(tmp_path, text)), "--yes")

    assert result.exit_code == 1, result.output
    problems = [line for line in result.stderr.splitlines() if ": hook: " in line]
    assert [line.split(": ")[0].rsplit(":", 1)[1] for line in problems] == ["11", "12"]
    assert "hook: target.headers.Authorization: the API answers this header's value as '***'" in problems[0]
    assert '{"secret": "<Secrets Manager secret ARN or SSM parameter ARN>"}' in problems[0]
    assert "hook: on_dead.headers.X-Token" in problems[1]
    assert "nothing was changed" in result.stderr


def test_the_alert_route_options_off_or_left_out_are_no_problem(tmp_path: Path) -> None:
    text = "namespace: ns\njobs:\n" + ENTRY + "    alert_on_missed: false\n"
    text += (
        ENTRY.replace("key: a", "key: b") + ROUTE + "    alert_on_missed: true\n    on_failure_streak: 2\n"
    )
    text += ONE_OFF_ROUTED.replace("key: a", "key: c")

    a, b, c = read(written(tmp_path, text)).entries

    assert (a.body.alert_on_missed, b.body.alert_on_missed, c.body.alert_on_missed) == (False, True, False)
    assert b.line_of("alert_on_missed") == 11  # where the API's refusal of it would be told


def test_every_problem_is_reported_at_once_and_nothing_is_called(tmp_path: Path) -> None:
    text = (
        "namespace: ns\njobs:\n"
        + ENTRY
        + "    schedul: x\n"
        + ENTRY.replace("key: a", "key: b")
        + "    priority: no\n"
    )

    result = sundial_apply(NOWHERE, "-f", str(written(tmp_path, text)), "--yes")

    assert result.exit_code == 1, result.output  # a call to NOWHERE would have made it 5
    assert "schedules.yaml:6: a: schedul: unknown field" in result.stderr
    assert "schedules.yaml:10: b: priority:" in result.stderr
    assert "refused (2 problem(s)); nothing was changed" in result.stderr


# --- the plan ----------------------------------------------------------------------------------------


def file_of(tmp_path: Path, text: str) -> SchedulesFile:
    return read(written(tmp_path, text))


def view(body: JobCreate, job_id: str, status: str = "pending", **changed: Any) -> JobView:
    """The job the API answers for `body`, as the service builds it."""
    fields = body.model_dump(mode="json", exclude={"name"})
    fields |= {"id": job_id, "name": body.name, "status": status, "next_run_at": None, "attempt": 0}
    fields |= {"paused": False, "last_run": None, "created_at": "2026-01-01T00:00:00Z"}
    fields |= {"updated_at": "2026-01-01T00:00:00Z", **changed}
    return JobView.model_validate(fields)


def ulid(n: int) -> str:
    return f"01JD{n:022d}"


PLANNED = f"""namespace: ns
jobs:
  - key: same
    schedule: "0 9 * * *"
    timezone: Europe/Berlin
    start_at: "2099-01-01T01:00:00+01:00"
    target: {{type: python, handler: noop}}
    payload: {{b: 1.5, a: [true, null]}}
  - key: moved
    schedule: "0 10 * * *"
    priority: high
    target: {{type: python, handler: noop}}
  - key: retargeted
    schedule: rate(1 hour)
    target: {{type: http, url: "https://example.com/new", headers: {{X-Token: {{secret: "{SECRET_ARN}"}}}}}}
  - key: new
    run_at: "2099-01-01T00:00:00Z"
    target: {{type: python, handler: noop}}
"""


def stage(file: SchedulesFile) -> Iterator[JobView]:
    same, moved, retargeted, _new = file.entries
    yield view(same.body, ulid(1), start_at="2099-01-01T00:00:00Z")  # one instant, another offset
    yield view(moved.body, ulid(2), schedule="0 9 * * *", priority="medium")
    old_target = {
        "type": "http",
        "url": "https://example.com/old",
        "headers": {"X-Token": {"secret": SECRET_ARN}},
    }
    yield view(retargeted.body, ulid(3), target=old_target)
    other = JobCreate.model_validate({"name": "ns/gone", "schedule": "rate(1 day)", "target": NOOP})
    yield view(other, ulid(4))  # not in the file
    yield view(other, ulid(5), status="cancelled")  # cancelled: no longer managed
    for name in ("NS/same", "ns/eu/same", "ns-same", "other/same"):  # not the namespace's
        yield view(other.model_copy(update={"name": name}), ulid(6))


def test_the_plan_patches_what_differs_replaces_a_target_and_keeps_strays(tmp_path: Path) -> None:
    file = file_of(tmp_path, PLANNED)

    kept, pruned = plan(file, stage(file), prune=False), plan(file, stage(file), prune=True)

    assert [entry.key for entry in kept.unchanged] == ["same"]
    assert [(u.entry.key, u.job.id, u.patch()) for u in kept.updates] == [
        ("moved", ulid(2), {"schedule": "0 10 * * *", "priority": "high"})
    ]
    assert [(r.entry.key, r.job.id, [c.field for c in r.changes]) for r in kept.replaces] == [
        ("retargeted", ulid(3), ["target"])
    ]
    assert [c.entry.key for c in kept.creates] == ["new"]
    assert [(s.key, s.job.id) for s in kept.strays] == [("gone", ulid(4))]
    assert (kept.cancels, kept.changes) == ((), 3)
    assert ([s.key for s in pruned.cancels], pruned.changes) == (["gone"], 4)
    assert list(render(kept, "f.yaml")) == [
        "+ create new (line 16)",
        f"~ update moved ({ulid(2)}, line 9)",
        '    schedule: "0 9 * * *" → "0 10 * * *"',
        '    priority: "medium" → "high"',
        f"± replace retargeted ({ulid(3)}, line 13): a target change needs a new job; the old one is "
        "cancelled once the new one exists",
        '    target.url: "https://example.com/old" → "https://example.com/new"',
        f"  gone ({ulid(4)}): not in the file (kept; --prune cancels)",
        "namespace 'ns': 1 to create, 1 to update, 1 to replace, 1 unchanged",
    ]
    assert list(render(pruned, "f.yaml"))[-2:] == [
        f"- cancel gone ({ulid(4)}): not in the file (--prune)",
        "namespace 'ns': 1 to create, 1 to update, 1 to replace, 1 to cancel, 1 unchanged",
    ]


def test_a_stage_that_matches_says_no_changes(tmp_path: Path) -> None:
    file = file_of(tmp_path, PLANNED)
    answered = [view(entry.body, ulid(n)) for n, entry in enumerate(file.entries)]
    answered[3] = view(file.entries[3].body, ulid(3), run_at="2099-01-01T00:00:00Z")

    matched: Plan = plan(file, answered, prune=True)

    assert matched.changes == 0
    assert list(render(matched, "f.yaml")) == ["no changes: the 4 jobs of namespace 'ns' match f.yaml"]


def test_a_one_off_made_recurring_sends_the_schedule_alone(tmp_path: Path) -> None:
    file = file_of(tmp_path, PLANNED)
    moved = file.entries[1]
    job = view(moved.body, ulid(1), schedule=None, run_at="2099-01-01T00:00:00Z")

    (update,) = plan(file_of(tmp_path, PLANNED), [job], prune=False).updates

    assert [change.field for change in differences(moved.body, job)] == ["schedule", "run_at"]
    assert update.patch() == {
        "schedule": "0 10 * * *"
    }  # run_at cannot be sent as null: the schedule clears it


def test_missed_instants_turned_on_and_off_are_one_field_of_a_patch(tmp_path: Path) -> None:
    text = "namespace: ns\njobs:\n" + ENTRY + ROUTE + "    alert_on_missed: true\n"
    file = file_of(tmp_path, text)
    (entry,) = file.entries
    before = view(entry.body, ulid(1), alert_on_missed=False)
    routeless = file_of(tmp_path, "namespace: ns\njobs:\n" + ENTRY)

    (on,) = plan(file, [before], prune=False).updates
    (off,) = plan(routeless, [view(entry.body, ulid(1))], prune=False).updates

    assert on.patch() == {"alert_on_missed": True}
    assert list(render(plan(file, [before], prune=False), "f.yaml"))[:2] == [
        f"~ update a ({ulid(1)}, line 3)",
        "    alert_on_missed: false → true",
    ]
    # The route and its option go in one PATCH, which the API takes as a whole.
    assert off.patch() == {"on_dead": None, "alert_on_missed": False}
    assert plan(file, [view(entry.body, ulid(1))], prune=False).changes == 0


def test_two_live_jobs_with_one_key_are_refused_naming_both(tmp_path: Path) -> None:
    file = file_of(tmp_path, PLANNED)
    twice = [view(file.entries[1].body, ulid(7)), view(file.entries[1].body, ulid(8))]

    with pytest.raises(DuplicateJobs) as refused:
        plan(file, twice, prune=False)

    assert f"key 'moved' (line 9): live jobs {ulid(7)} and {ulid(8)} are both named 'ns/moved'" in str(
        refused.value
    )


def test_the_create_key_is_stable_and_moves_on_after_a_cancel_or_an_edit(tmp_path: Path) -> None:
    entry = file_of(tmp_path, PLANNED).entries[3]
    edited = file_of(tmp_path, PLANNED.replace("2099-01-01T00:00:00Z", "2099-01-02T00:00:00Z")).entries[3]

    first = idempotency_key("ns", entry, None)

    assert first == idempotency_key("ns", file_of(tmp_path, PLANNED).entries[3], None)
    assert first.startswith("apply-") and len(first) <= 128
    assert len({first, idempotency_key("ns", entry, ulid(1)), idempotency_key("ns", edited, None)}) == 3
    assert idempotency_key("other", entry, None) != first


# --- against the local stack -------------------------------------------------------------------------


def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """Every request a client sends from now on: (method, path, body)."""
    sent: list[tuple[str, str, Any]] = []
    original = SundialClient.send

    def send(self: SundialClient, method: str, path: str, body: Any = None, **options: Any) -> Answer:
        sent.append((method, path, body))
        return original(self, method, path, body, **options)

    monkeypatch.setattr(SundialClient, "send", send)
    return sent


def writes(sent: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """The requests that change something (a preview changes nothing)."""
    return [request for request in sent if request[0] != "GET" and request[1] != "/schedules/preview"]


def versions(client: SundialClient, ids: list[str]) -> dict[str, str]:
    """Each job's updated_at, which every write of a job sets."""
    return {job_id: client.get_job(job_id).updated_at for job_id in ids}


def managed(client: SundialClient, namespace: str) -> dict[str, JobView]:
    return {
        job.name or "": job
        for job in client.iter_jobs(name_prefix=namespace + "/")
        if job.status != "cancelled"
    }


def namespace() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.mark.e2e
def test_forty_jobs_are_created_then_left_alone_then_one_field_patched(
    local_api: str, client: SundialClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace()
    path = written(tmp_path, jobs_file(ns, 40))
    sent = recorded(monkeypatch)

    first = sundial_apply(local_api, "-f", str(path), "--yes")
    jobs = managed(client, ns)
    before = versions(client, [job.id for job in jobs.values()])
    sent.clear()
    again = sundial_apply(local_api, "-f", str(path), "--yes")
    unchanged_writes, unchanged = writes(sent), versions(client, list(before))
    path.write_text(jobs_file(ns, 40, lambda n: "15 4 * * *" if n == 17 else f"{n % 60} 3 * * *"))
    sent.clear()
    dry = sundial_apply(local_api, "-f", str(path), "--dry-run", "--exit-code")
    dry_writes = writes(sent)
    sent.clear()
    changed = sundial_apply(local_api, "-f", str(path), "--yes")
    after = versions(client, [job.id for job in jobs.values()])

    assert first.exit_code == 0, first.output
    assert first.stdout.count("\ncreated job-") == 40 and "applied 40 change(s)" in first.stdout
    assert sorted(jobs) == [f"{ns}/job-{n:02d}" for n in range(40)]
    assert again.exit_code == 0, again.output
    assert again.stdout == f"no changes: the 40 jobs of namespace '{ns}' match {path}\n"
    assert unchanged_writes == []
    assert unchanged == before
    assert dry.exit_code == apply_module.CHANGES_PENDING, dry.output
    assert '    schedule: "17 3 * * *" → "15 4 * * *"' in dry.stdout and dry_writes == []
    assert changed.exit_code == 0, changed.output
    patched = jobs[f"{ns}/job-17"].id
    assert writes(sent) == [("PATCH", f"/jobs/{patched}", {"schedule": "15 4 * * *"})]
    assert [job_id for job_id in before if after[job_id] != before[job_id]] == [patched]


@pytest.mark.e2e
def test_prune_cancels_exactly_the_entries_removed_and_nothing_outside_the_namespace(
    local_api: str, client: SundialClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace()
    path = written(tmp_path, jobs_file(ns, 8))
    assert sundial_apply(local_api, "-f", str(path), "--yes").exit_code == 0
    outside = [
        client.create_job(
            {"name": name, "schedule": "rate(1 day)", "start_at": "2099-01-01T00:00:00Z", "target": NOOP}
        )
        for name in (f"{ns}-manual", f"{ns.upper()}/job-01", f"{ns}/nested/job-02", "manual/job-03")
    ]
    jobs = managed(client, ns)
    removed = [jobs[f"{ns}/job-{n:02d}"].id for n in (1, 4, 6)]
    kept_text = jobs_file(ns, 8).split("  - key: ")
    path.write_text("  - key: ".join(part for n, part in enumerate(kept_text) if n - 1 not in (1, 4, 6)))
    sent = recorded(monkeypatch)

    kept = sundial_apply(local_api, "-f", str(path), "--yes")
    kept_writes = writes(sent)
    sent.clear()
    pruned = sundial_apply(local_api, "-f", str(path), "--yes", "--prune")

    assert kept.exit_code == 0, kept.output
    assert kept.stdout.count("not in the file (kept; --prune cancels)") == 3 and kept_writes == []
    assert pruned.exit_code == 0, pruned.output
    assert sorted(writes(sent)) == sorted(("DELETE", f"/jobs/{job_id}", None) for job_id in removed)
    assert {job.id: job.status for job in jobs.values() if job.id in removed} == dict.fromkeys(
        removed, "pending"
    )
    statuses = {job.id: client.get_job(job.id).status for job in [*jobs.values(), *outside]}
    assert sorted(job_id for job_id, status in statuses.items() if status == "cancelled") == sorted(removed)


@pytest.mark.e2e
def test_a_bad_cron_refuses_the_whole_file_naming_its_line(
    local_api: str, client: SundialClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace()
    path = written(tmp_path, jobs_file(ns, 5, lambda n: "61 * * * *" if n == 3 else "0 3 * * *"))
    sent = recorded(monkeypatch)

    result = sundial_apply(local_api, "-f", str(path), "--yes")

    assert result.exit_code == 1, result.output
    # entry 3's key is on line 3 + 5 * 3 = 18, its schedule on 19
    assert f"{path}:19: job-03: schedule: cron expression '61 * * * *': minute must be 0-59" in result.stderr
    assert "nothing was changed" in result.stderr
    assert writes(sent) == [] and managed(client, ns) == {}


@pytest.mark.e2e
def test_a_target_change_replaces_the_job_and_a_refused_entry_leaves_the_others_applied(
    local_api: str, client: SundialClient, tmp_path: Path
) -> None:
    ns = namespace()
    text = jobs_file(ns, 2)
    path = written(tmp_path, text)
    assert sundial_apply(local_api, "-f", str(path), "--yes").exit_code == 0
    old = managed(client, ns)[f"{ns}/job-00"]
    # job-00 gets another target; job-02 asks for a policy the API refuses (it cannot be seen here)
    text = text.replace("handler: noop}\n    payload: {n: 0}", "handler: fail}\n    payload: {n: 0}", 1)
    text += "  - key: job-02\n    schedule: rate(1 day)\n    overlap_policy: allow\n"
    text += "    target: {type: python, handler: noop}\n"
    path.write_text(text)

    partial = sundial_apply(local_api, "-f", str(path), "--yes")
    text = text.replace("    overlap_policy: allow\n", "")
    path.write_text(text)
    resumed = sundial_apply(local_api, "-f", str(path), "--yes")

    assert partial.exit_code == 3, partial.output
    assert f"± replace job-00 ({old.id}, line 3)" in partial.stdout
    assert '    target.handler: "noop" → "fail"' in partial.stdout
    assert f"cancelled {old.id}" in partial.stdout
    assert f"failed: {path}:15: job-02: overlap_policy:" in partial.stderr
    assert "applied 1 of 2 change(s), 1 failed. Run apply again to resume" in partial.stderr
    assert client.get_job(old.id).status == "cancelled"
    assert resumed.exit_code == 0, resumed.output
    assert "+ create job-02" in resumed.stdout and "1 to create, 2 unchanged" in resumed.stdout
    assert managed(client, ns)[f"{ns}/job-00"].target.model_dump()["handler"] == "fail"


@pytest.mark.e2e
def test_without_yes_apply_asks_at_a_terminal_and_refuses_elsewhere(
    local_api: str, client: SundialClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace()
    path = written(tmp_path, jobs_file(ns, 1))

    scripted = sundial_apply(local_api, "-f", str(path))
    monkeypatch.setattr(apply_module, "_at_terminal", lambda: True)
    declined = sundial_apply(local_api, "-f", str(path), input="n\n")
    nothing = managed(client, ns)
    accepted = sundial_apply(local_api, "-f", str(path), input="y\n")

    assert scripted.exit_code == 1 and "without a terminal, give --yes" in scripted.stderr
    assert declined.exit_code == 130 and nothing == {}
    assert accepted.exit_code == 0, accepted.output
    assert list(managed(client, ns)) == [f"{ns}/job-00"]


@pytest.mark.e2e
def test_missed_instants_alerts_round_trip_through_apply(
    local_api: str, client: SundialClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace()
    plain = jobs_file(ns, 1)
    path = written(tmp_path, plain + ROUTE + "    alert_on_missed: true\n")
    created = sundial_apply(local_api, "-f", str(path), "--yes")
    job = managed(client, ns)[f"{ns}/job-00"]
    sent = recorded(monkeypatch)
    again = sundial_apply(local_api, "-f", str(path), "--yes")
    again_writes = writes(sent)
    path.write_text(plain)  # the route and its option dropped together
    sent.clear()
    dry = sundial_apply(local_api, "-f", str(path), "--dry-run", "--exit-code")
    dry_writes = writes(sent)
    removed = sundial_apply(local_api, "-f", str(path), "--yes")
    after = client.get_job(job.id)

    assert created.exit_code == 0, created.output
    assert (job.alert_on_missed, job.on_dead is not None) == (True, True)
    assert again.exit_code == 0 and again.stdout.startswith("no changes"), again.output
    assert again_writes == []
    assert dry.exit_code == apply_module.CHANGES_PENDING, dry.output
    assert "    alert_on_missed: true → false" in dry.stdout and dry_writes == []
    assert removed.exit_code == 0, removed.output
    assert writes(sent) == [("PATCH", f"/jobs/{job.id}", {"on_dead": None, "alert_on_missed": False})]
    assert (after.alert_on_missed, after.on_dead) == (False, None)
