"""Every registered family honours the interface: one contract test, parametrised over the registry.

For a few variants of each runnable family: the plan is a function of (seed, variant) alone;
the emulator's output compares as a pass; a replay of the recorded words gives the same
verdict; one wrong output word turns the verdict into a failure; the module names each kernel.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from ptxconf import registry
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.core.family import Family, compare, family_of, run_variants_of
from ptxconf.isa import load_specs
from ptxconf.oracle import mma
from ptxconf.run.observations import records
from ptxconf.run.runner import plan_variant, run_module

SPECS = load_specs()
run_variants_of(SPECS)
PER_FAMILY = 3


def _samples() -> list:
    out = []
    for fam in registry.families():
        vs = [v for v in SPECS.variants.values() if v.family in fam.spec_families]
        step = max(1, len(vs) // PER_FAMILY)
        out += [pytest.param(v, id=f"{fam.name}:{v.id}") for v in vs[::step][:PER_FAMILY]]
    return out


def _backend(v) -> EmulatorBackend:
    cc = family_of(v).emulated_cc or max(t.cc for t in v.requires) if v.requires else (12, 0)
    return EmulatorBackend(mma, cc=cc)


@pytest.mark.parametrize("fam", registry.families(), ids=lambda f: f.name)
def test_registered_family_is_a_family(fam):
    assert isinstance(fam, Family) and fam.name and registry.get(fam.name) is fam
    for name in fam.spec_families:
        assert registry.family_of(type("V", (), {"family": name, "id": "x"})()) is fam


@pytest.mark.parametrize("v", _samples())
def test_plan_emulate_compare_replay(v):
    backend = _backend(v)
    cc, max_ptx = backend.cc_for(v), backend.max_ptx()
    a = plan_variant(v, 7, cc, max_ptx, value_cases=2)
    b = plan_variant(v, 7, cc, max_ptx, value_cases=2)
    assert np.array_equal(a.in_words, b.in_words) and (a.version, a.target) == (b.version, b.target)
    assert [list(x) for x in a.launches] == [list(x) for x in b.launches]
    module = family_of(v).module_source(a.kernels, a.version, a.target)
    assert module.startswith(f".version {a.version}\n.target {a.target.name}")
    assert all(k.name in module for k in a.kernels)
    (outcome,) = run_module(backend, [a])
    assert outcome.verdicts and all(vd.status == "pass" for vd in outcome.verdicts), [vd.message for vd in outcome.verdicts]
    recs = records(a, outcome.out_words)
    for rec, live in zip(recs, outcome.verdicts):
        again = compare(v, rec)
        assert (again.status, again.check) == (live.status, live.check)
    # One flipped bit in the first check's outputs is a failure, not a pass.
    bad = recs[0].out_words.copy()
    bad[0, :, 0] ^= np.uint32(0x00010001)
    broken = compare(v, replace(recs[0], out_words=bad))
    assert broken.status == "fail", f"{v.id}: a corrupted output passed {recs[0].check}"


@pytest.mark.parametrize("vid", [
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32",
    "ldmatrix.sync.aligned.m8n8.x4.b16",
])
def test_same_seed_same_test_on_every_device(vid):
    """Only the build (.target/.version: what a GPU loads) may depend on the device; inputs, surroundings
    and the launch split of a seed are the same on an sm_80, an H100 and the emulator's sm_120."""
    v = SPECS.variants.get(vid) or SPECS.select([vid])[0]
    plans = [plan_variant(v, 3, cc, EmulatorBackend(mma).max_ptx(), value_cases=4) for cc in ((8, 0), (9, 0), (12, 0))]
    first = plans[0]
    for p in plans[1:]:
        assert np.array_equal(p.in_words, first.in_words)
        assert [list(x) for x in p.launches] == [list(x) for x in first.launches]
        assert p.probe.surroundings == first.probe.surroundings and p.warps_per_block == first.warps_per_block


def test_planning_in_worker_processes_gives_the_same_plans():
    """--jobs N: the plans made in forked workers equal those made here, variant objects included."""
    from ptxconf.run.planpool import plan_in_parallel

    vs = [v for v in SPECS.variants.values() if v.family in ("mma.sync", "ldmatrix")][:6]
    vs += SPECS.select(["wgmma.mma_async.sync.aligned.m64n16k16*"])[:2]
    items = [(v.id, (9, 0)) for v in vs]
    max_ptx = EmulatorBackend(mma).max_ptx()
    got = list(plan_in_parallel(2, lambda v, cc: plan_variant(v, 5, cc, max_ptx, value_cases=2), {v.id: v for v in vs},
                                items))
    for v, p in zip(vs, got):
        want = plan_variant(v, 5, (9, 0), EmulatorBackend(mma).max_ptx(), value_cases=2)
        assert p.variant is v and p.probe.variant is v
        assert np.array_equal(p.in_words, want.in_words) and (p.version, p.target) == (want.version, want.target)
