"""kill -9, SIGINT and SIGTERM against a real ``ptxconf run`` (a child process on the emulator backend).

A kill -9 lands at several points (during planning, after 1, 10, 25 and 45 results lines): every
whole results.jsonl line parses (only the last may be cut), summary.json parses and says ``running``
or ``interrupted``, never ``complete``, and counts no verdict results.jsonl lacks; ``replay`` gives
every recorded verdict again for the observations present; ``--resume`` (taking over the dead run's
lock with a warning) completes the run with each (variant, check) exactly once and the verdicts
recorded before the kill unchanged.  SIGINT and SIGTERM exit 130/143 with ``interrupted`` and the
variants not run, no traceback; a second signal more than a second later exits at once.

The child is slowed by ``fault_driver.py`` (a sleep before each variant's verdicts are written, two
variants per module) so that the signals land in mid-run; every wait has a timeout.
"""

from __future__ import annotations

import signal
import time

import pytest
from faultkit import (
    Child,
    child_env,
    line_count,
    processes_marked,
    read_results,
    read_summary,
    replay_verdicts,
    run_args,
    run_child,
    wait_until,
)
from faultkit import verdicts as as_verdicts
from ptxconf.run.observations import observation_files

KILL_POINTS = ["planning", 1, 10, 25, 45]


def _check_recorded(out, reference) -> tuple[dict, int]:
    """The strict look at a run directory after a fault: (verdicts recorded, false passes found)."""
    records, _cut = read_results(out / "results.jsonl")
    recorded = as_verdicts(records)
    false_passes = sum(1 for k, s in recorded.items() if s == "pass" and reference.get(k) != "pass")
    summary = read_summary(out)
    assert summary["status"] in ("running", "interrupted"), summary["status"]
    claimed = sum(summary["counts"].values())
    false_passes += max(0, summary["counts"].get("pass", 0) - sum(s == "pass" for s in recorded.values()))
    assert claimed <= len(recorded), f"summary counts {claimed} verdicts, results.jsonl holds {len(recorded)}"
    return recorded, false_passes


def _replay_matches(out, tmp_path, recorded) -> tuple[int, int]:
    """Replay what observations are present: (verdicts that differ from the recorded ones, false passes)."""
    if not observation_files(out / "observations"):
        return 0, 0
    replayed = replay_verdicts(out, tmp_path / "replay")
    differ = false = 0
    for key, status in replayed.items():
        if key in recorded and recorded[key] != status:
            differ += 1
        if status == "pass" and key not in recorded:
            false += 1  # an observation whose verdict was never recorded: it must not come back as a pass
    return differ, false


@pytest.mark.parametrize("point", KILL_POINTS)
def test_kill_9_then_resume_completes_and_replays(point, tmp_path, reference, tally):
    out = tmp_path / "run"
    results = out / "results.jsonl"
    delays = {"PTXCONF_FAULT_VERDICT_DELAY": "0.06", "PTXCONF_FAULT_MODULE_PLANS": "2"}
    if point == "planning":
        delays["PTXCONF_FAULT_PLAN_DELAY"] = "0.5"
    # Two workers plan and compare beside the run's process: the kill must take them with it.
    child = Child(run_args(out, "--jobs", "2"), tmp_path / "logs", child_env(**delays))
    wait_until(lambda: len(processes_marked(child.mark)) >= 3, 30, child, "the run's workers")
    if point == "planning":
        wait_until(lambda: (out / "summary.json").exists(), 30, child, "summary.json")
        time.sleep(0.3)
        assert line_count(results) == 0
    else:
        wait_until(lambda: line_count(results) >= point, 30, child, f"{point} results lines")
    child.kill_now()
    assert child.proc.returncode == -signal.SIGKILL
    recorded, false_passes = _check_recorded(out, reference)
    if point == "planning":
        assert read_summary(out)["status"] == "running"  # the summary exists from the first second
    differ, false = _replay_matches(out, tmp_path, recorded)
    false_passes += false

    rc, resumed = run_child(run_args(out, "--resume"), tmp_path / "logs2", driver=True)
    assert rc == 0, resumed.stderr()
    assert "took over the lock" in resumed.stderr()
    assert "Traceback" not in resumed.stderr()
    records, cut = read_results(results)
    assert not cut
    final = as_verdicts(records)  # each (variant, check) exactly once
    lost = sum(1 for k, s in recorded.items() if final.get(k) != s) + len(set(reference) - set(final))
    false_passes += sum(1 for k in final if k not in reference)
    summary = read_summary(out)
    assert summary["status"] == "complete" and summary["counts"] == {"pass": len(reference)}
    assert sorted(final) == sorted(reference)
    replayed = replay_verdicts(out, tmp_path / "replay2")
    differ += sum(1 for k, s in final.items() if replayed.get(k) != s)
    tally.check(lost=lost + differ, false_passes=false_passes, injected=1)


def test_kill_9_of_a_run_whose_device_makes_the_value_checks_then_resume(tmp_path, reference, tally):
    """``--values device``: the device's workers die with the run; ``--resume`` makes each value check it had not
    recorded (and no other) once, and the whole run replays, its value checks from their digests."""
    out = tmp_path / "run"
    results = out / "results.jsonl"
    extra = ("--values", "device", "--device-cases", "8", "--jobs", "2")
    delays = {"PTXCONF_FAULT_VERDICT_DELAY": "0.06", "PTXCONF_FAULT_MODULE_PLANS": "2"}
    child = Child(run_args(out, *extra), tmp_path / "logs", child_env(**delays))
    wait_until(lambda: line_count(results) >= 10, 30, child, "10 results lines")
    child.kill_now()  # and no process of the run is left, the device's workers included
    recorded, false_passes = _check_recorded(out, reference)
    rc, resumed = run_child(run_args(out, "--resume", *extra), tmp_path / "logs2", driver=True)
    assert rc == 0, resumed.stderr()
    records, cut = read_results(results)
    assert not cut
    final = as_verdicts(records)  # each (variant, check) exactly once
    assert sorted(final) == sorted(reference)
    lost = sum(1 for k, s in recorded.items() if final.get(k) != s)
    false_passes += sum(1 for k, s in final.items() if s == "pass" and reference[k] != "pass")
    replayed = replay_verdicts(out, tmp_path / "replay")
    differ = sum(1 for k, s in final.items() if replayed.get(k) != s)
    tally.check(lost=lost + differ, false_passes=false_passes, injected=1)


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_run_as_interrupted(signum, code, tmp_path, reference, tally):
    out = tmp_path / "run"
    # 0.3 s per variant leaves seconds of run after the 4th line: with 0.1 s a loaded two-core host sometimes let the
    # run finish before the signal landed (it then exits 143 with a complete run, and there is nothing to resume).
    delays = {"PTXCONF_FAULT_VERDICT_DELAY": "0.3", "PTXCONF_FAULT_MODULE_PLANS": "2"}
    child = Child(run_args(out), tmp_path / "logs", child_env(**delays))
    wait_until(lambda: line_count(out / "results.jsonl") >= 4, 30, child, "4 results lines")
    child.signal(signum)
    assert child.wait() == code, child.stderr()
    err = child.stderr()
    assert "Traceback" not in err and signal.Signals(signum).name in err
    recorded, false_passes = _check_recorded(out, reference)
    summary = read_summary(out)
    assert summary["status"] == "interrupted"
    not_run = set(summary["variants_not_run"])
    assert not_run, "the run should have been stopped part way"
    assert summary["variants_done"] + len(not_run) == summary["variants_selected"]
    false_passes += sum(1 for (v, _c) in recorded if v in not_run)  # a verdict for a variant said not to have run
    assert sum(summary["counts"].values()) == len(recorded)  # a clean stop: the summary counts exactly the lines
    rc, resumed = run_child(run_args(out, "--resume"), tmp_path / "logs2")
    assert rc == 0, resumed.stderr()
    final = as_verdicts(read_results(out / "results.jsonl")[0])
    lost = sum(1 for k, s in recorded.items() if final.get(k) != s) + len(set(reference) - set(final))
    assert sorted(final) == sorted(reference)
    tally.check(lost=lost, false_passes=false_passes, injected=1)


def test_a_second_signal_exits_at_once_leaving_whole_files(tmp_path, reference, tally):
    out = tmp_path / "run"
    # Each module waits 2.5 s before it launches: the second signal lands while the module in flight still waits.
    delays = {"PTXCONF_FAULT_MODULE_DELAY": "2.5", "PTXCONF_FAULT_MODULE_PLANS": "4"}
    child = Child(run_args(out), tmp_path / "logs", child_env(**delays))
    wait_until(lambda: line_count(out / "results.jsonl") >= 1, 30, child, "the first module's results")
    time.sleep(0.1)
    child.signal(signal.SIGINT)
    time.sleep(1.2)
    assert child.alive(), "the module in flight should still be finishing"
    lines = line_count(out / "results.jsonl")
    child.signal(signal.SIGINT)
    assert child.wait() == 130
    # At once: the module in flight (still waiting to launch) never wrote its verdicts.
    assert line_count(out / "results.jsonl") == lines, "a second signal must exit at once"
    assert "Traceback" not in child.stderr()
    recorded, false_passes = _check_recorded(out, reference)
    summary = read_summary(out)
    assert summary["status"] == "interrupted" and summary["variants_not_run"]
    assert recorded, "the first module's verdicts are kept"
    false_passes += sum(1 for (v, _c) in recorded if v in set(summary["variants_not_run"]))
    tally.check(lost=0, false_passes=false_passes, injected=2)
