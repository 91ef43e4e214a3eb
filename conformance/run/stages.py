"""Seconds per stage of one run (plan, module, launch, compare, save, report, ...), owned by that run.

The run's session holds one :class:`Stages` and hands it down; a stage is timed with
``with stages("launch"):`` or, for seconds measured elsewhere (a worker's), ``stages.add``.
summary.json records them as ``stages_s``.  Stages are wall seconds; ``plan_cpu``, ``compare_cpu`` and
``save_cpu`` are the CPU seconds of the host's work per variant (summed over processes), which a busy machine
or a disk wait does not inflate.

Marks are moments (wall-clock time, comparable across a run's processes): the first time each named event
happened (``mark``) or the last (``mark_last``).  summary.json records them as ``timeline_s``, seconds from the
run's start, the lanes' each under their own name: where the wall time of a run goes, which summed stages cannot
say (a serial start-up, one lane finishing late).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Stages", "process_started"]


def process_started() -> float | None:
    """When this process began, as ``time.time()`` (the kernel's record, to its clock tick: the interpreter's start
    and every import before the run's first step included), or None where the system does not say (not Linux)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        since_boot = ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Stages:
    """Seconds per stage name, summed."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}
        self._marks: dict[str, float] = {}
        self._lock = threading.Lock()  # launch threads (one per device) add at once

    def __repr__(self) -> str:
        return f"Stages({self.rounded()})"

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def mark(self, name: str, at: float | None = None) -> None:
        """The first time ``name`` happened (``at``: a moment measured elsewhere, ``time.time()``)."""
        with self._lock:
            self._marks.setdefault(name, time.time() if at is None else at)

    def mark_last(self, name: str) -> None:
        """The last time ``name`` happened."""
        with self._lock:
            self._marks[name] = time.time()

    def marks(self) -> dict[str, float]:
        """Every mark, ``time.time()`` by name (what a lane sends its run)."""
        with self._lock:
            return dict(self._marks)

    def timeline(self, start: float) -> dict[str, float]:
        """Every mark as seconds after ``start``, in the order they happened."""
        return {k: round(t - start, 3) for k, t in sorted(self.marks().items(), key=lambda kv: kv[1])}

    def rounded(self) -> dict[str, float]:
        """Every stage's seconds to the millisecond, by name (what summary.json records)."""
        return {k: round(v, 3) for k, v in sorted(self._seconds.items())}
