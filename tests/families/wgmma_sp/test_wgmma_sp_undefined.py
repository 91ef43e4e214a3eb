"""wgmma.mma_async.sp inputs the ISA leaves undefined: equal index pairs and out-of-range selectors.

A simulated GPU reads each undefined pair one plausible way; the comparator must name that reading.  An
out-of-range selector is assembled alone first (ptxas 13.0 refuses every one): the refusal is the observation and
the kernel never joins the module.  The emulator answers "not modelled".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.core.family import compare, family_of
from ptxconf.core.verdict import UNDEFINED
from ptxconf.families.mma import undefined as ud
from ptxconf.families.wgmma import probe as wg
from ptxconf.families.wgmma_sp import probe as sp
from ptxconf.isa import load_specs
from ptxconf.isa.packing import pack, unpack
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.oracle import mma
from ptxconf.run.observations import records
from ptxconf.run.runner import plan_variant, run_module

SPECS = load_specs()
P = "wgmma.mma_async.sp.sync.aligned."
F16R = P + "m64n16k32.f32.f16.f16/rs"
TF32S = P + "m64n8k16.f32.tf32.tf32/ss"
E4S = P + "m64n24k64.f32.e4m3.e5m2/ss"
S8R = P + "m64n8k64.s32.s8.s8/rs"
MAX_PTX = EmulatorBackend(mma).max_ptx()


def _record(plan, check: str):
    """The record of ``check`` in ``plan`` (out words to be replaced by the test's own)."""
    return next(r for r in records(plan, np.zeros((len(plan.in_words), 32, plan.out_words), np.uint32)) if r.check == check)


def _plan(vid: str, checks: tuple[str, ...], monkeypatch=None, accepted: bool | None = None):
    if monkeypatch is not None:
        answer = {"ptxas": None, "message": "no ptxas here"} if accepted is None else \
            {"ptxas": "ptxas 99.9", "accepted": accepted, "message": "" if accepted else "unexpected value"}
        monkeypatch.setattr(ud, "assembled", lambda source, version, cc: dict(answer))
    v = SPECS.get(vid)
    return v, plan_variant(v, 0, (9, 0), MAX_PTX, checks, value_cases=2)


def _gpu(v, words, imm, reading_for, selector: int | None = None):
    """D words as a GPU reading each chunk's pair by ``reading_for(pair, readings)`` would write them."""
    spx = sp.sparsity(v)
    model = sp.model_of(v)
    sel = int(imm.get("sel", 0)) if selector is None else selector
    fields = sp.fields_of(v, words[:, :, sp.META_WORD], sel, model).reshape(len(words), 64, v.chunks, 2)
    comp = TYPES[v.atype].decode(sp.compressed_a(v, words, imm, model)).astype(np.float64)
    comp = comp.reshape(len(words), 64, v.chunks, v.nz)
    dense = np.zeros((len(words), 64, v.chunks, v.width))
    for c in range(len(words)):
        for r in range(64):
            for ch in range(v.chunks):
                pair = (int(fields[c, r, ch, 0]), int(fields[c, r, ch, 1]))
                for p, cell in enumerate(reading_for(pair, ud.readings(spx, pair))):
                    dense[c, r, ch, p] = sum(comp[c, r, ch, s] for s in cell)
    B = TYPES[v.btype].decode(sp.matrix_b(v, words, imm, model)).astype(np.float64)
    D = np.einsum("cmk,ckn->cmn", dense.reshape(len(words), 64, v.K) * imm.get("scale_a", 1), B * imm.get("scale_b", 1))
    dop = wg.operand_d(v, model.dense)
    out = np.zeros((len(words), sp.LANES, sp.out_words(v)), dtype=np.uint32)
    out[:, :, : dop.words] = pack(dop, TYPES[v.dtype].encode(D, exact=False)[:, None])
    return out


def _first_of(*names: str):
    return lambda pair, readings: readings[next(n for n in names if n in readings)]


def test_not_in_the_default_checks():
    fam = family_of(SPECS.get(F16R))
    assert not set(fam.checks) & set(ud.UNDEFINED_CHECKS) and fam.undefined_checks == ud.UNDEFINED_CHECKS


@pytest.mark.parametrize("vid", [F16R, TF32S, E4S, S8R])
@pytest.mark.parametrize("equal", ["summed at the one position", "second element dropped", "first element dropped"])
def test_the_reading_the_hardware_used_is_named(vid, equal):
    v, plan = _plan(vid, ("undefined.metadata",))
    assert [cs.check.split("[")[0] for cs in plan.case_sets] == ["undefined.metadata"] * len(v.selectors)
    for cs in plan.case_sets:
        a, b = plan.slices[cs.check]
        words = plan.in_words[a:b]
        out = _gpu(v, words, cs.params["imm"], _first_of(equal, "as given"))
        vd = compare(v, replace(_record(plan, cs.check), out_words=out))
        assert vd.status == UNDEFINED and "?" not in vd.message, vd.message
        pairs = ud.undefined_pairs(sp.sparsity(v), order_required=False)
        for pair in pairs:
            names = ud.readings(sp.sparsity(v), pair)
            want = equal if equal in names else "as given"
            group = next(part for part in vd.message.split("; ") if f"({pair[0]},{pair[1]})" in part)
            assert want in group.split(":")[0], (pair, vd.message)


def test_the_emulator_says_it_does_not_model_them():
    v, plan = _plan(F16R, ("value", "undefined.metadata"))
    (outcome,) = run_module(EmulatorBackend(mma, cc=(9, 0)), [plan])
    for vd in outcome.verdicts:
        if vd.check.startswith("value"):
            assert vd.status == "pass"
        else:
            assert (vd.status, vd.message) == (UNDEFINED, ud.NOT_MODELLED_TEXT)


def test_a_refused_selector_never_joins_the_module(monkeypatch):
    v, plan = _plan(S8R, ("value", "undefined.selector"), monkeypatch, accepted=False)
    odd = [cs for cs in plan.case_sets if cs.check.startswith("undefined.selector")]
    assert [cs.params["imm"]["sel"] for cs in odd] == [1, 2, 3]
    assert all(dict(p.imm)["sel"] == 0 for p in plan.kernels)
    launched = np.concatenate(plan.launches)
    for cs in odd:
        lo, hi = plan.slices[cs.check]
        assert not np.isin(np.arange(lo, hi), launched).any()
    (outcome,) = run_module(EmulatorBackend(mma, cc=(9, 0)), [plan])
    for vd in outcome.verdicts:
        want = ("pass", "") if vd.check.startswith("value") else (UNDEFINED, "refused by ptxas: unexpected value")
        assert (vd.status, vd.message) == want


def test_only_refused_kernels_leave_one_that_assembles(monkeypatch):
    v, plan = _plan(F16R, ("undefined.selector",), monkeypatch, accepted=False)
    assert [dict(p.imm)["sel"] for p in plan.kernels] == [0] and not plan.launches


def test_an_assembled_selector_is_compared_with_every_legal_one(monkeypatch):
    v, plan = _plan(F16R, ("undefined.selector",), monkeypatch, accepted=True)
    (outcome,) = run_module(EmulatorBackend(mma, cc=(9, 0)), [plan])
    assert {vd.message for vd in outcome.verdicts} == {ud.NOT_MODELLED_TEXT}
    cs = plan.case_sets[0]
    a, b = plan.slices[cs.check]
    words = plan.in_words[a:b]
    out = _gpu(v, words, cs.params["imm"], _first_of("as given"), selector=1)  # it reads selector 1's lanes
    vd = compare(v, replace(_record(plan, cs.check), out_words=out))
    assert vd.status == UNDEFINED
    assert vd.message.endswith("D as with selector 1 (the metadata of T2, T3 of each group of four)"), vd.message
    assert unpack(v.operands["D"], out[:, :, : v.operands["D"].words]).any()


@pytest.mark.ptxas
def test_ptxas_refuses_every_out_of_range_selector():
    import shutil

    if not shutil.which("ptxas"):
        pytest.skip("ptxas not on PATH")
    v, plan = _plan(S8R, ("undefined.selector",))
    for cs in plan.case_sets:
        asm = cs.meta["assembler"]
        assert asm["accepted"] is False and "expected to be 0" in asm["message"], asm


def test_undefined_cases_have_kernels_and_launches_of_their_own():
    v, plan = _plan(F16R, ("value", "undefined.metadata"))
    for cases, k in zip(plan.launches, plan.launch_probe):
        checks = {cs.check.split("[")[0] for cs in plan.case_sets
                  if np.isin(np.arange(*plan.slices[cs.check]), cases).any()}
        assert checks == ({"undefined.metadata"} if plan.probes[k].undefined else {"value"})
