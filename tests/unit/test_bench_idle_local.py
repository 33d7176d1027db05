"""The idle local stack's CPU figure reads a process and the processes below it."""

from __future__ import annotations

import subprocess
import sys
import time

from bench import idle_local

BUSY = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\ntime.sleep(30)"


def test_a_busy_grandchild_counts_and_a_process_outside_the_tree_does_not() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BUSY!r}])"]
    )
    outside = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        deadline = time.monotonic() + 30
        while idle_local._cpu_seconds(parent.pid) < 0.5:  # the grandchild's half second, counted
            assert time.monotonic() < deadline, idle_local._tree(parent.pid)
            time.sleep(0.1)
        assert len(idle_local._tree(parent.pid)) == 2
        assert outside.pid not in idle_local._tree(parent.pid)
        assert idle_local._cpu_seconds(parent.pid) < 0.9  # not the outside process's half second too
    finally:
        for process in (parent, outside):
            process.kill()
            process.wait()
