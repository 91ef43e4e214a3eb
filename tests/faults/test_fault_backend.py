"""A worker that dies mid-case and a launch that errors, injected through a backend subclass in this process.

``ptxconf.backends.get_backend`` is replaced (as tests/run/test_pipeline.py does) by an emulator
whose ``run`` fails for one chosen variant in three ways: an error result for one of its launches (a
worker that died and was restarted, as the PyCUDA backend reports it), an exception out of ``run``
itself (a worker pipe gone), and fewer results than launches.  That variant's checks are ``error``
verdicts, every other variant runs and passes, the summary is ``complete`` and the exit is 1.

A kernel that traps or hangs on a real GPU is tested in tests/run/test_gpu.py
(``test_fault_is_one_error_and_the_next_launch_runs``, ``test_hang_times_out_and_the_next_launch_runs``);
a damaged observation in tests/run/test_replay_damage.py.  They are not repeated here; the last test
only checks that they are still there.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import ptxconf.backends
import pytest
from faultkit import REPO, read_results, read_summary, run_args, verdicts
from ptxconf import cli
from ptxconf.backends.base import LaunchResult
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.run.observations import observation_name

VICTIM = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"


class DyingWorker(EmulatorBackend):
    """The victim variant's launches fail (``how``); all others run as the emulator runs them."""

    how = "error"

    def run(self, module, launches):
        hit = [i for i, la in enumerate(launches) if la.probe.variant.id == VICTIM]
        if not hit:
            return super().run(module, launches)
        if self.how == "raise":
            raise EOFError("the worker process died mid-case (injected)")
        results = super().run(module, launches)
        if self.how == "short":
            return results[: hit[0]]
        results[hit[-1]] = LaunchResult(None, error="the GPU worker died (injected); worker restarted")
        return results


def _checks_in_the_failed_launch() -> set[str]:
    """The victim's checks with a case in its last launch (the one ``DyingWorker`` fails)."""
    from ptxconf.isa import load_specs
    from ptxconf.oracle import mma
    from ptxconf.run.runner import plan_variant

    v = load_specs().variants[VICTIM]
    backend = EmulatorBackend(mma)
    plan = plan_variant(v, 0, backend.compute_capability(), backend.max_ptx())
    last = np.asarray(plan.launches[-1])
    return {cs.check for cs in plan.case_sets
            if ((last >= plan.slices[cs.check][0]) & (last < plan.slices[cs.check][1])).any()}


@pytest.mark.parametrize("how", ["error", "raise", "short"])
def test_a_dying_worker_is_an_error_verdict_and_the_run_goes_on(how, tmp_path, monkeypatch, capsys, reference, tally):
    backend = type("Injected", (DyingWorker,), {"how": how})
    monkeypatch.setattr(ptxconf.backends, "get_backend", lambda name, **kw: backend(kw["semantics"]))
    out = tmp_path / "run"
    assert cli.main(run_args(out)) == 1
    records, cut = read_results(out / "results.jsonl")
    assert not cut
    got = verdicts(records)
    assert sorted(got) == sorted(reference)  # every (variant, check) once: the run went on
    victim = {k: s for k, s in got.items() if k[0] == VICTIM}
    hit = _checks_in_the_failed_launch() if how == "error" else {check for _, check in victim}
    # A check with a case in the failed launch is an error; a check whose launches all ran is compared as usual.
    assert victim and {k[1] for k, s in victim.items() if s == "error"} == hit
    assert all(s == reference[k] for k, s in victim.items() if k[1] not in hit)
    false_passes = sum(1 for k, s in victim.items() if s == "pass" and k[1] in hit)
    lost = sum(1 for k, s in got.items() if k[0] != VICTIM and s != reference[k])
    summary = read_summary(out)
    assert summary["status"] == "complete"
    assert summary["counts"] == {"pass": len(reference) - len(hit), "error": len(hit)}
    assert not (out / "observations" / observation_name(VICTIM, 0)).exists()  # nothing saved for a failed case
    assert "Traceback" not in capsys.readouterr().err
    tally.check(lost=lost, false_passes=false_passes, injected=1)


def test_trap_hang_and_damaged_observation_tests_live_elsewhere():
    gpu = (REPO / "tests" / "run" / "test_gpu.py").read_text()
    assert "def test_fault_is_one_error_and_the_next_launch_runs" in gpu
    assert "def test_hang_times_out_and_the_next_launch_runs" in gpu
    damage = (REPO / "tests" / "run" / "test_replay_damage.py").read_text()
    assert "def test_a_damaged_observation_is_error_verdicts_naming_the_file" in damage
    assert Path(REPO / "tests" / "run" / "test_pipeline.py").exists()
