"""CPU of a command's process tree by kind of process, read from ``/proc`` while it runs.

Why: a run's stages (planning, comparing, saving) are the workers' own account of their CPU; the benchmark also
wants what the other processes cost (the lanes, the GPU workers, the run's own process) and every process's system
time, which no stage sees.  Each kind of process of a run names itself (:data:`ptxconf.core.lifetime.PROCESS_NAMES`);
here the tree under one pid is read every ``every_s`` and each process's last reading counted under its name.  A
process's time after its last reading (at most ``every_s``) is missed.  Linux only; elsewhere nothing is counted.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections import defaultdict
from pathlib import Path

from ptxconf.core.lifetime import PROCESS_NAMES

__all__ = ["ProcessTree", "run_sampled"]

_ROLE_OF = {name: role for role, name in PROCESS_NAMES.items()}
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: str) -> tuple[str, int, int, int, int] | None:
    """(name, parent pid, user ticks, system ticks, start ticks) of one process, or None (gone, or no /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
    return name, int(rest[1]), int(rest[11]), int(rest[12]), int(rest[19])


class ProcessTree:
    """The processes under ``root`` (itself included) seen so far, each with its last CPU reading."""

    def __init__(self, root: int):
        self.root = root
        self._seen: dict[tuple[int, int], tuple[str, int, int, int]] = {}  # (pid, start) -> name, parent, user, sys
        self._series: list[tuple[float, dict[str, int]]] = []  # (time, CPU ticks so far by kind) at each reading

    def sample(self) -> None:
        try:
            pids = [p for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return
        now = {}
        for pid in pids:
            st = _stat(pid)
            if st is not None:
                now[int(pid)] = st
        ours = {self.root}
        for pid, (_, parent, *_rest) in sorted(now.items()):  # parents are older, so mostly seen first
            if parent in ours:
                ours.add(pid)
        for pid, (_, parent, *_rest) in now.items():  # a child listed before its parent
            if parent in ours:
                ours.add(pid)
        for pid in ours & now.keys():
            name, parent, user, system, start = now[pid]
            self._seen[(pid, start)] = (name, parent, user, system)
        ticks: dict[str, int] = defaultdict(int)
        for (pid, _), (name, _, user, system) in self._seen.items():
            ticks[self._kind(pid, name)] += user + system
        self._series.append((time.time(), dict(ticks)))

    def _kind(self, pid: int, name: str) -> str:
        return "run" if pid == self.root else _ROLE_OF.get(name, "ptxas" if name.startswith("ptxas") else "other")

    def busy(self, start: float, step_s: float = 0.5) -> list[dict]:
        """Cores busy by kind in each ``step_s`` after ``start`` (``time.time()``): ``[{"t": end of the step, kind:
        cores, ...}]``, where a run's wall goes (a serial start, a tail with idle cores), not only its sums."""
        out, last, t_next = [], None, start + step_s
        for at, ticks in self._series:
            if last is None:
                last = (at, ticks)
                continue
            if at < t_next and at != self._series[-1][0]:
                continue
            dt = at - last[0]
            row = {"t": round(at - start, 2)}
            for kind in sorted(set(ticks) | set(last[1])):
                # (a process counts under the name it had when last read: one that named itself after a reading
                # moves its earlier seconds to its new kind, which would read as a kind's negative share)
                row[kind] = round(max(0, ticks.get(kind, 0) - last[1].get(kind, 0)) / _TICK / max(dt, 1e-9), 1)
            out.append(row)
            last, t_next = (at, ticks), at + step_s
        return out

    def by_kind(self) -> dict[str, dict]:
        """``{kind: {"processes", "user_s", "sys_s"}}``: the kinds of :data:`PROCESS_NAMES`, ``run`` for the root,
        ``ptxas``, and ``other`` for the rest."""
        out: dict[str, dict] = defaultdict(lambda: {"processes": 0, "user_s": 0.0, "sys_s": 0.0})
        for (pid, _), (name, _, user, system) in self._seen.items():
            row = out[self._kind(pid, name)]
            row["processes"] += 1
            row["user_s"] += user / _TICK
            row["sys_s"] += system / _TICK
        return {k: {**v, "user_s": round(v["user_s"], 2), "sys_s": round(v["sys_s"], 2)} for k, v in sorted(out.items())}


def run_sampled(cmd: list[str], every_s: float = 0.1, **popen) -> tuple[subprocess.Popen, ProcessTree]:
    """``cmd`` run to its end, its tree read every ``every_s``: the finished process and what was read of it
    (:meth:`ProcessTree.by_kind`, :meth:`ProcessTree.busy`)."""
    proc = subprocess.Popen(cmd, **popen)
    tree = ProcessTree(proc.pid)
    while proc.poll() is None:
        tree.sample()
        time.sleep(every_s)
    proc.wait()
    return proc, tree
