"""A worker's life has an owner: every worker process of a run ends when the run's process ends.

Workers ignore SIGINT and SIGTERM (the run decides when they stop), so a run killed with SIGKILL, or one
that crashed, would leave them waiting forever, each holding its share of memory.  One rule for every
pool: at start a worker asks the kernel for SIGKILL when its parent dies (Linux's parent-death signal,
through ``prctl``), and where that is not available a watchdog thread ends it once its parent is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

__all__ = ["die_with_parent", "ignore_stop_signals", "name_process", "PROCESS_NAMES", "WATCH_S"]

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# What each kind of process of a run is called where the system shows names (``ps``, ``top``, ``/proc/PID/comm``; at
# most 15 bytes there): the benchmark adds a run's CPU up by these.
PROCESS_NAMES = {"plan": "ptxconf-plan", "compare": "ptxconf-compare", "lane": "ptxconf-lane", "gpu": "ptxconf-gpu",
                 "device": "ptxconf-device"}
WATCH_S = 0.5  # how often the watchdog (where there is no parent-death signal) looks at its parent


def _parent_death_signal() -> bool:
    """SIGKILL to this process when the thread that started it ends; whether the kernel took the request."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_S)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` (the pid that started it) ends, also if it already has.

    The parent-death signal fires when the thread that forked this process ends, so a pool is started from
    the run's main thread; the check of ``os.getppid()`` after the request covers a parent that died before
    it was made (the process is then re-parented)."""
    if not _parent_death_signal():
        threading.Thread(target=_watch, args=(parent,), name="ptxconf-parent-watch", daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def ignore_stop_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP are the run's to handle: a Ctrl-C or a closed terminal reaches the whole process
    group, and the run finishes the module in flight before its workers stop."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)


def name_process(role: str) -> None:
    """This process's name in the system's lists, :data:`PROCESS_NAMES` of ``role`` (where the system lets a process
    name itself: Linux; elsewhere nothing)."""
    with contextlib.suppress(OSError):
        with open("/proc/self/comm", "w") as fh:
            fh.write(PROCESS_NAMES[role])
