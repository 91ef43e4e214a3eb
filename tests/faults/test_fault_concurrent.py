"""Two runs into one ``--out``, and a lock left by a dead process.

While run A (a child process, slowed) writes a directory, run B into the same directory exits 2 with
one line naming A's pid, whether B asks to ``--resume`` it or to ``--force`` (replace) it, and A's
files are untouched: A completes with each (variant, check) once.  A lock whose pid is dead is taken
over with a warning naming that pid, and the run completes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from faultkit import Child, child_env, line_count, read_results, read_summary, run_args, run_child, verdicts, wait_until
from ptxconf import cli


def test_a_second_run_into_a_locked_directory_exits_2_naming_the_holder(tmp_path, reference, tally):
    out = tmp_path / "run"
    # Slow enough (0.5 s a variant, 18 variants) that both B runs start and end while A still holds the lock.
    a = Child(run_args(out), tmp_path / "a", child_env(PTXCONF_FAULT_VERDICT_DELAY="0.5", PTXCONF_FAULT_MODULE_PLANS="2"))
    wait_until(lambda: line_count(out / "results.jsonl") >= 1, 30, a, "run A's first verdicts")
    injected = 0
    for i, mode in enumerate(("--resume", "--force")):
        rc, b = run_child(run_args(out, mode), tmp_path / f"b{i}")
        injected += 1
        err = b.stderr()
        assert rc == 2, err
        assert a.alive(), "run A should still be running while B tries"
        assert f"pid {a.pid}" in err and "another run writes" in err and "Traceback" not in err
        assert len([ln for ln in err.splitlines() if ln.strip() and "RuntimeWarning" not in ln]) == 1, err
        assert (out / "results.jsonl").exists(), "B must not clear A's files"
    assert a.wait() == 0, a.stderr()
    records, cut = read_results(out / "results.jsonl")
    assert not cut
    got = verdicts(records)  # each (variant, check) once: B wrote nothing
    lost = len(set(reference) - set(got))
    false_passes = sum(1 for k in got if k not in reference)
    assert read_summary(out)["status"] == "complete"
    assert not (out / ".ptxconf.lock").exists()
    tally.check(lost=lost, false_passes=false_passes, injected=injected)


def test_a_stale_lock_of_a_dead_process_is_taken_over_with_a_warning(tmp_path, capsys, reference, tally):
    out = tmp_path / "run"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    lock = {"pid": dead.pid, "host": socket.gethostname(), "started": "2026-01-01T00:00:00Z"}
    (out / ".ptxconf.lock").write_text(json.dumps(lock))
    assert cli.main(run_args(out)) == 0
    err = capsys.readouterr().err
    assert "took over the lock" in err and f"pid {dead.pid}" in err
    records, cut = read_results(out / "results.jsonl")
    got = verdicts(records)
    assert not cut and read_summary(out)["status"] == "complete"
    assert not (out / ".ptxconf.lock").exists()
    tally.check(lost=len(set(reference) - set(got)), false_passes=sum(1 for k in got if k not in reference), injected=1)
