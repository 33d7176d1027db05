"""SIGINT (Ctrl-C) and SIGTERM for `sundial emulator` and `sundial local`, honoured at every point.

While a command starts (restoring a state directory, waiting for its emulator, making its tables,
handing on what was in flight), a signal raises Interrupted in the main thread, whatever it is in
the middle of: a flag checked once start-up is over would leave a restore of 100,000 jobs running
for as long as it takes. The state directory changes only by fsync'd appends and renames, so an
interrupted start leaves it as a crash there would, which the next start recovers.

Once serving, a signal asks for a graceful stop (the `stop` event); a second one, while that stop is
under way or after an interrupted start, ends the process at once.

The handler takes no lock. It runs in the main thread between two of its steps, and that thread may be
holding the very lock the handler would wait for: setting `stop` there (an Event, whose lock its own
waits take) hung the process whenever the signal came while the main thread was inside `stop.wait`.
The handler only notes the request; the main thread, waiting in `wait_for_stop`, sets `stop`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)
WAKE_SECONDS = 0.2
Describe = Callable[[], str]


class Interrupted(BaseException):
    """A signal during start-up. A BaseException, as KeyboardInterrupt is, so that no `except
    Exception` on its way out takes it for an error to handle."""

    def __init__(self, signum: int, doing: str) -> None:
        super().__init__(f"{signal.Signals(signum).name} while {doing}")
        self.signum = signum
        self.doing = doing  # when raised: the steps it unwinds forget what they were

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class Signals:
    """Installed first thing in the main thread; `doing` names each step of the start-up, for the
    line printed when one is interrupted."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.stop = threading.Event()
        self._serving = False
        self._interrupted = False
        self._stop_asked = False  # written by the handler: a plain flag, since it may take no lock
        self._doing: Describe = lambda: "starting"

    def install(self) -> Signals:
        for signum in HANDLED:
            signal.signal(signum, self._on_signal)
        return self

    @contextmanager
    def doing(self, what: str | Describe) -> Iterator[None]:
        """Names what start-up does within the block (a function: asked only when interrupted)."""
        before = self._doing
        self._doing = what if callable(what) else lambda: what
        try:
            yield
        finally:
            self._doing = before

    def serving(self) -> None:
        """From now on a signal asks for a graceful stop."""
        self._serving = True

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """In the main thread: True once a signal asked for a stop, `stop` then set for every other
        thread; False when `timeout` passed first. In short sleeps: the kernel may hand a signal to
        any thread, and one handed to another thread does not wake the main thread from an untimed
        wait, so its handler would not run until something else did."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._stop_asked:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(WAKE_SECONDS)
        self.stop.set()
        return True

    def describe(self) -> str:
        try:
            return self._doing()
        except Exception:  # a description must never hide the interruption it describes
            return "starting"

    def interrupted_line(self, interrupted: Interrupted, consequence: str = "") -> str:
        return f"sundial {self.command}: stopped by {interrupted.name} while {interrupted.doing}{consequence}"

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self._interrupted or self._stop_asked or self.stop.is_set():
            say(f"sundial {self.command}: {name} again while stopping: exiting at once")
            os._exit(128 + signum)
        if self._serving:
            say(f"sundial {self.command}: {name}: stopping")
            self._stop_asked = True
            return
        self._interrupted = True
        raise Interrupted(signum, self.describe())


def say(line: str) -> None:
    """One line on stderr, written at once (a signal handler may run while stderr's buffer is held)."""
    with suppress(OSError, ValueError):
        os.write(sys.stderr.fileno(), f"{line}\n".encode())
