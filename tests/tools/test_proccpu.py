"""The benchmark's CPU by kind of process: a command's tree read from /proc, each process under the name it gave
itself."""

from __future__ import annotations

import sys
import time

import pytest
from ptxconf.tools.proccpu import run_sampled

CHILDREN = """
import os, sys, time
from ptxconf.core.lifetime import name_process
kids = []
for role in ("plan", "plan", "gpu"):
    pid = os.fork()
    if pid == 0:
        name_process(role)
        t = time.process_time()
        while time.process_time() - t < 0.4:  # CPU, not sleep: the sampler must see it
            pass
        time.sleep(0.3)  # alive at a reading after the work
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc: Linux only")
def test_each_process_counts_under_the_name_it_gave_itself():
    started = time.time()
    proc, tree = run_sampled([sys.executable, "-c", CHILDREN], every_s=0.05)
    by_kind = tree.by_kind()
    assert proc.returncode == 0
    assert by_kind["plan"]["processes"] == 2 and by_kind["gpu"]["processes"] == 1 and by_kind["run"]["processes"] == 1
    assert by_kind["plan"]["user_s"] + by_kind["plan"]["sys_s"] >= 0.6, by_kind
    assert by_kind["gpu"]["user_s"] + by_kind["gpu"]["sys_s"] >= 0.3, by_kind
    busy = tree.busy(started, step_s=0.2)
    assert [r["t"] for r in busy] == sorted(r["t"] for r in busy) and busy[-1]["t"] <= time.time() - started
    # the two plan processes' 0.8 CPU-s, read as cores busy over the steps (each step's share of its seconds)
    seconds = [b - a for a, b in zip([0.0] + [r["t"] for r in busy], [r["t"] for r in busy])]
    assert sum(r.get("plan", 0) * dt for r, dt in zip(busy, seconds)) == pytest.approx(
        by_kind["plan"]["user_s"] + by_kind["plan"]["sys_s"], abs=0.15)
