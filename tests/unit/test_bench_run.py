"""A bench run keeps what each part measured as soon as it is measured, records a failed part and
goes on, and ends every child's process group when it is stopped: its parts here stand in for the
real ones, in a process of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

RUN = textwrap.dedent(
    """
    import sys, time
    from bench import __main__ as bench, parts, processes
    from bench.harness import Row

    def measured(context):
        return [Row("measured at once", 1.5, "s", spread="median of 3, range 1.4-1.6")]

    def broken(context):
        raise RuntimeError("this part broke")

    def hangs(context):
        child = processes.spawn([sys.executable, "-c", "import time; time.sleep(600)"])
        print(f"child {child.pid}", flush=True)
        time.sleep(600)

    parts.PARTS = tuple(
        parts.Part(name, name, measure) for name, measure in
        (("measured", measured), ("broken", broken), ("hangs", hangs))
    )
    sys.exit(bench.main(["--results", sys.argv[1]]))
    """
)


def test_a_bench_stopped_halfway_keeps_its_figures_and_leaves_no_child(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    log = tmp_path / "bench.log"
    with log.open("wb") as output:
        bench = subprocess.Popen([sys.executable, "-c", RUN, str(results)], stdout=output, stderr=output)
    try:
        child = _child_pid(log, bench)
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(30) == 128 + signal.SIGTERM
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()

    document = json.loads(results.read_text())
    assert [(f["name"], f["value"], f["part"]) for f in document["figures"]] == [
        ("measured at once", 1.5, "measured")
    ]
    assert document["parts"]["measured"]["status"] == "ok"
    assert document["parts"]["broken"]["status"] == "failed"
    assert "RuntimeError: this part broke" in document["parts"]["broken"]["error"]
    assert "hangs" not in document["parts"]  # stopped before it measured anything
    assert not _alive(child), "the bench's child outlived it"


def _child_pid(log: Path, bench: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("child "):
                return int(line.split()[1])
        assert bench.poll() is None, log.read_text()
        time.sleep(0.05)
    raise AssertionError(f"the hanging part never started its child:\n{log.read_text()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie, not yet reaped by init, is gone for every purpose here.
    try:
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return status != "Z"
