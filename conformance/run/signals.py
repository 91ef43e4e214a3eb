"""How a run stops on a signal, at any moment from its first line to its last report.

Until the run touches its directory (parsing, loading specs, opening the backend) a signal ends it at
once: nothing is written yet, so there is nothing to leave half done (exit 130/143, no traceback).  From
then on SIGINT, SIGTERM and SIGHUP (a closed terminal, handled as SIGTERM) only set a flag: the handler never
raises into the code it interrupts, so no moment of the run (a write, the final reports) can leave a
traceback, a half-written file or a lock behind.  The run reads the flag: before it starts (it then writes
an ``interrupted`` summary and nothing else), between variants, and at its end (exit 130/143).  A second
signal, more than a second after the first (a terminal or ``timeout`` signals the whole process group at
once), leaves at once, after the summary.  Nothing large is formatted on this path: the handler is a method
of this small object.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

from .exit import ExitStatus

__all__ = ["StopSignals", "STOP_SIGNALS"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
REPEAT_S = 1.0  # the same signal again within this: one request


class StopSignals:
    """The run's stop request: which signal came first, and what a second one does."""

    def __init__(self, prog: str = "ptxconf run") -> None:
        self.prog = prog
        self.seen: int | None = None
        self._first_at = 0.0
        self._previous: dict[int, object] = {}
        self._at_once: Callable[[], None] | None = None  # writes the summary before a second signal leaves
        self._writing = False  # the run has touched its directory: a signal is a request, no longer an exit
        self.note = "finishing the module in flight, then writing the reports"

    def __repr__(self) -> str:  # cheap: nothing of the run is formatted on a signal
        return f"StopSignals(seen={self.seen})"

    def install(self) -> StopSignals:
        """Take SIGINT, SIGTERM and SIGHUP (in the main thread; elsewhere, as in a test's thread, nothing), each
        unless it is ignored."""
        if threading.current_thread() is threading.main_thread() and not self._previous:
            # A signal ignored by whoever started the run (``nohup``, a background job) stays ignored.
            self._previous = {s: signal.signal(s, self._on_signal) for s in STOP_SIGNALS
                              if signal.getsignal(s) is not signal.SIG_IGN}
        return self

    def release(self) -> None:
        """The handlers there were before :meth:`install` (once the last report is written)."""
        for s, h in self._previous.items():
            signal.signal(s, h)  # type: ignore[arg-type]
        self._previous = {}

    def writing(self) -> None:
        """The run is about to touch its directory: from now on a signal is a flag the run reads."""
        self._writing = True

    def on_second(self, write_summary: Callable[[], None] | None) -> None:
        """What a second signal writes before it leaves (the run's summary), once the run has one."""
        self._at_once = write_summary

    @property
    def requested(self) -> bool:
        return self.seen is not None

    @property
    def exit_status(self) -> ExitStatus:
        return ExitStatus.of_signal(self.seen if self.seen is not None else signal.SIGINT)

    def _on_signal(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        if self.seen is not None and now - self._first_at < REPEAT_S:
            return
        if self.seen is not None:  # a second request: leave at once, files stay whole
            if self._at_once is not None:
                try:
                    self._at_once()
                except Exception:  # noqa: BLE001 - a disk that refuses: the summary says what it said before
                    pass
            os._exit(ExitStatus.of_signal(signum))
        self.seen, self._first_at = signum, now
        if not self._writing:  # nothing written yet: leave now (SystemExit unwinds quietly, with no traceback)
            raise SystemExit(ExitStatus.of_signal(signum))
        line = f"\n{self.prog}: {signal.Signals(signum).name}: {self.note} (again to stop at once)\n"
        try:  # straight to the descriptor: the interrupted code may be inside a write to sys.stderr itself
            os.write(2, line.encode())
        except OSError:  # no stderr to write to: the flag is what counts
            pass
