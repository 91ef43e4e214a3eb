"""A worker ends with the process that started it, however that one ends (core/lifetime.py).

A middle process forks a worker that calls ``die_with_parent`` and then sleeps; the middle process is killed
with SIGKILL (no clean-up of its own runs); the worker must be gone, through the kernel's parent-death signal
and, where that is not available, through the watchdog thread.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

MIDDLE = r"""
import os, sys, time
from ptxconf.core import lifetime
if sys.argv[1] == "watchdog":
    lifetime._parent_death_signal = lambda: False  # as on a system without prctl
parent = os.getpid()
pid = os.fork()
if pid == 0:
    lifetime.die_with_parent(parent)
    time.sleep(600)
    os._exit(0)
print(pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int, wait_s: float = 60.0) -> bool:
    """Whether ``pid`` has ended (or is a zombie) within ``wait_s`` (the outcome, not a time bound)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["parent-death signal", "watchdog"])
def test_a_worker_ends_when_its_parent_is_killed(how):
    middle = subprocess.Popen([sys.executable, "-c", MIDDLE, how], stdout=subprocess.PIPE, text=True)
    worker = int(middle.stdout.readline())
    try:
        assert not _gone(worker, 0.3), "the worker should live while its parent does"
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait(30)
        assert _gone(worker), f"worker {worker} outlived its parent ({how})"
    finally:
        for pid in (worker, middle.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        middle.stdout.close()
