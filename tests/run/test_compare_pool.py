"""Comparing in worker processes (``--jobs N``): the same verdicts, in the same order, as comparing here."""

from __future__ import annotations

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.core.family import run_variants_of
from ptxconf.isa import load_specs
from ptxconf.oracle import mma
from ptxconf.run import runner

SPECS = load_specs()
run_variants_of(SPECS)


def _variants():
    vs = [v for v in SPECS.variants.values() if v.family in ("mma.sync", "ldmatrix", "mma.sp")][:10]
    return vs + SPECS.select(["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16/rs"])


def _run(jobs: int, backend=None) -> list[tuple[str, str, int, str, str]]:
    got = []
    runner.run_variants(backend or EmulatorBackend(mma), _variants(), runner.RunRequest(4, value_cases=2, jobs=jobs),
                        on_outcome=lambda o: got.extend((d.variant, d.check, d.seed, d.status, d.message)
                                                        for d in o.verdicts))
    return got


def test_workers_give_the_same_verdicts_in_the_same_order():
    here = _run(1)
    assert here and {s for *_, s, _ in here} == {"pass"}
    assert _run(2) == here


class _Corrupting(EmulatorBackend):
    """Flips one bit of every launch's first output word: every value check must fail, in the workers too."""

    def run(self, module, launches):
        results = super().run(module, launches)
        for r in results:
            if r.out is not None:
                r.out[0, 0, 0] ^= np.uint32(1)
        return results


def test_a_failure_found_in_a_worker_is_reported_with_its_explanation():
    got = _run(2, _Corrupting(mma))
    assert any(status == "fail" for *_, status, _ in got)
    here = _run(1, _Corrupting(mma))
    assert got == here


def test_a_comparator_that_raises_is_an_error_verdict_not_a_lost_variant(monkeypatch):
    def boom(plan, out):
        raise RuntimeError("comparator bug")

    monkeypatch.setattr(runner, "compare_plan", boom)
    got = _run(2)
    assert len({(v, c) for v, c, *_ in got}) == len(got) and got
    assert all(status == "error" and "comparator bug" in msg for *_, status, msg in got)


@pytest.mark.parametrize("jobs", [1, 2])
def test_stopping_keeps_every_launched_module(jobs):
    seen = []
    runner.run_variants(EmulatorBackend(mma), _variants(), runner.RunRequest(4, value_cases=2, jobs=jobs),
                        on_outcome=lambda o: seen.append(o.plan.variant.id), stop=lambda: len(seen) > 0)
    assert seen and len(seen) == len(set(seen))


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_workers_run_blas_on_one_thread_and_leave_the_parent_alone():
    """Every core already has a worker: a BLAS pool in each would oversubscribe them; the run's process keeps its own."""
    from ptxconf.run.planpool import ComparePool

    before = _blas_threads()
    pool = ComparePool(2, _blas_threads, {})
    try:
        got, _ = pool.result(pool.submit())
    finally:
        pool.close()
    assert got and set(got) == {1}
    assert _blas_threads() == before


def test_a_variant_of_the_run_travels_as_its_id_and_any_other_by_value():
    from dataclasses import replace

    from ptxconf.run import planpool

    v = SPECS.select(["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16/rs"])[0]
    codec = planpool._Codec({v.id: v})
    data = codec.dumps({"plan": [v, v], "n": 3})
    assert len(data) < 200 + len(v.id)  # not the spec document a wgmma variant carries
    back = codec.loads(data)
    assert back["plan"][0] is v and back["plan"][1] is v and back["n"] == 3
    other = replace(v, N=16)  # the same id, but not the run's object
    copy = codec.loads(codec.dumps(other))
    assert copy is not v and copy == other and copy.N == 16
    assert not [k for k, val in vars(planpool).items() if isinstance(val, dict) and v.id in val]  # no global holds it


def test_without_worker_processes_the_run_plans_and_compares_here(monkeypatch, capsys):
    """No usable /dev/shm (multiprocessing's semaphores fail): one line says why, and the run gives the same
    verdicts from its own process."""
    from ptxconf.run import planpool

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/dev/shm/sem.mp-x")

    here = _run(1)
    monkeypatch.setattr(planpool, "ProcessPoolExecutor", refused)
    monkeypatch.setattr(runner, "_SAID", set())
    assert _run(2) == here
    err = capsys.readouterr().err
    assert err.count("no worker processes") == 1 and "/dev/shm" in err and "in this process instead" in err


def test_a_plan_goes_to_its_comparison_in_the_bytes_it_arrived_in_unless_changed():
    """Forwarded bytes are the plan as planned; a plan changed here (a new object) is pickled again."""
    from dataclasses import replace

    from ptxconf.run import planpool

    v = _variants()[0]
    plan = runner.plan_variant(v, 3, (8, 0), runner.PTX_VERSIONS[-1], value_cases=2)
    codec = planpool._Codec({v.id: v})
    raw = codec.dumps(planpool.slim(plan))
    arrived = planpool.PlanBytes()
    got = codec.loads(raw)
    arrived.keep(got, raw)
    changed = replace(got, seed=4)
    assert arrived.take(changed) is None, "another object: never the bytes of the plan it came from"
    assert arrived.take(got) is raw and arrived.take(got) is None, "taken once"
    arrived.keep(got, raw)
    arrived.drop(got)
    assert arrived.take(got) is None
    pool = planpool.ComparePool(2, lambda p, n: (p.variant.id, p.seed, n), {v.id: v}, arrived)
    try:
        arrived.keep(got, raw)
        first, _ = pool.result(pool.submit(got, 1))
        second, _ = pool.result(pool.submit(changed, 2))
    finally:
        pool.close()
    assert first == (v.id, 3, 1) and second == (v.id, 4, 2)


def test_kernels_rendered_where_planned_travel_with_the_plan_and_render_the_same_module():
    """A worker renders its plan's kernels; the module built from the received plan is the one rendered here."""
    import pickle

    from ptxconf.generators import ptx

    v = SPECS.select(["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16/rs"])[0]
    request = runner.RunRequest(5, value_cases=2, jobs=2)
    here = runner.plan_variant(v, 5, (9, 0), runner.PTX_VERSIONS[-1], value_cases=2)
    there = pickle.loads(pickle.dumps(request.plan(v, (9, 0), runner.PTX_VERSIONS[-1])))
    assert all(ptx._RENDERED in vars(p) for p in there.kernels), "the text came with the probes"
    assert runner.module_of([there]) == runner.module_of([here])
    probe = there.kernels[0]
    assert ptx.rendered(probe, lambda p: "other") == "other", "another renderer never reads the kept text"
    assert ptx._RENDERED in vars(probe) and vars(probe)[ptx._RENDERED][1] != "other", "a lambda's text is not kept"
