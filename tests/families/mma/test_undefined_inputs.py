"""mma.sp inputs the ISA leaves undefined: what is fed, and what is read back from simulated hardware.

A "GPU" is simulated by reading each undefined index pair one plausible way (``undefined.readings``) and
computing D exactly; the comparator must name that reading for every pair, and report an ``undefined``
observation, never a pass or a failure.  The out-of-range selector is assembled alone first: a refusal is the
observation and the kernel never joins the module.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.core.family import compare, family_of
from ptxconf.core.verdict import UNDEFINED
from ptxconf.families.mma import undefined as ud
from ptxconf.families.mma.compare import split_inputs
from ptxconf.families.mma.probe import buffer_layout
from ptxconf.generators.ptx import checksum
from ptxconf.isa import load_specs
from ptxconf.isa.packing import pack, unpack
from ptxconf.isa.sparse import Sparsity, sparsity
from ptxconf.oracle import mma
from ptxconf.run.observations import records
from ptxconf.run.runner import plan_variant, run_module

SPECS = load_specs()
ORDERED_BF16 = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32"
ORDERED_TF32 = "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32"
ORDERED_U4 = "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.s32.u4.u4.s32"
PLAIN_E4M3 = "mma.sp.sync.aligned.m16n8k64.row.col.f32.e5m2.e4m3.f32"
MAX_PTX = EmulatorBackend(mma).max_ptx()


def _record(plan, check: str):
    """The record of ``check`` in ``plan`` (out words to be replaced by the test's own)."""
    return next(r for r in records(plan, np.zeros((len(plan.in_words), 32, plan.out_words), np.uint32)) if r.check == check)


def _plan(vid: str, checks: tuple[str, ...], monkeypatch=None, accepted: bool | None = None):
    if monkeypatch is not None:  # ptxas's answer for the out-of-range selector, without ptxas
        answer = {"ptxas": None, "message": "no ptxas here"} if accepted is None else \
            {"ptxas": "ptxas 99.9", "accepted": accepted, "message": "" if accepted else "value '2' out of range"}
        monkeypatch.setattr(ud, "assembled", lambda source, version, cc: dict(answer))
    v = SPECS.get(vid)
    return v, plan_variant(v, 0, (12, 0), MAX_PTX, checks, value_cases=2)


def _gpu(v, in_words, params, surroundings, reading_for):
    """D words as a GPU reading each undefined pair by ``reading_for(pair, readings)`` would write them."""
    ops = v.operands
    words = split_inputs(v, in_words)
    bits = {n: unpack(ops[n], w, params.get(n)) for n, w in words.items()}
    sp = sparsity(v)
    cases = len(in_words)
    a = ops["A"].type.decode(bits["A"]).astype(np.float64).reshape(cases, sp.m, sp.chunks, sp.nz)
    fields = bits["metadata"].astype(np.int64).reshape(cases, sp.m, sp.chunks, 2)
    dense = np.zeros((cases, sp.m, sp.chunks, sp.width))
    for c in range(cases):
        for r in range(sp.m):
            for ch in range(sp.chunks):
                pair = (int(fields[c, r, ch, 0]), int(fields[c, r, ch, 1]))
                for p, cell in enumerate(reading_for(pair, ud.readings(sp, pair))):
                    dense[c, r, ch, p] = sum(a[c, r, ch, s] for s in cell)
    dense = dense.reshape(cases, 1, sp.m, sp.k)
    d = ops["D"].type.encode(dense @ ops["B"].type.decode(bits["B"]) + ops["C"].type.decode(bits["C"]), exact=False)
    lay = buffer_layout(v)
    out = np.zeros((cases, 32, lay.out_words), dtype=np.uint32)
    out[:, :, : ops["D"].words] = pack(ops["D"], d)
    out[:, :, lay.checksum_offset] = checksum(np.arange(32), surroundings)[None]
    return out


def _first_of(*names: str):
    def pick(pair, readings):
        return readings[next(n for n in names if n in readings)]
    return pick


def test_undefined_pairs_follow_the_spec_notes():
    two = Sparsity(16, 32, 8, 4, 2, ordered=False)
    assert ud.undefined_pairs(two, order_required=False) == ((0, 0), (1, 1), (2, 2), (3, 3))
    ordered = ud.undefined_pairs(two, order_required=True)
    assert set(ordered) == {(a, b) for a in range(4) for b in range(4) if a >= b}
    tf32 = Sparsity(16, 16, 8, 2, 1, ordered=True)
    assert len(ud.undefined_pairs(tf32, True)) == 14 and (0, 1) not in ud.undefined_pairs(tf32, True)
    assert ud.out_of_range([0, 1, 2, 3]) == [4] and ud.out_of_range([0]) == [1, 2, 3]


def test_not_in_the_default_checks_and_not_for_dense_forms():
    fam = family_of(SPECS.get(ORDERED_BF16))
    assert not set(fam.checks) & set(ud.UNDEFINED_CHECKS)
    assert fam.checks_of(SPECS.get(ORDERED_BF16), ud.UNDEFINED_CHECKS) == ud.UNDEFINED_CHECKS
    assert fam.checks_of(SPECS.get("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), ud.UNDEFINED_CHECKS) == ()


def test_asking_for_them_changes_no_other_check():
    v = SPECS.get(ORDERED_BF16)
    base = plan_variant(v, 3, (12, 0), MAX_PTX, ("value", "map.A", "map.B", "map.C", "map.metadata"), 2)
    more = plan_variant(v, 3, (12, 0), MAX_PTX, ("value", "map.A", "map.B", "map.C", "map.metadata",
                                                  "undefined.metadata"), 2)
    for cs in base.case_sets:
        a, b = base.slices[cs.check]
        c, d = more.slices[cs.check]
        assert np.array_equal(base.in_words[a:b], more.in_words[c:d]), cs.check


@pytest.mark.parametrize("vid", [ORDERED_BF16, ORDERED_TF32, ORDERED_U4, PLAIN_E4M3])
@pytest.mark.parametrize("distinct,equal", [("as given", "summed at the one position"),
                                            ("as if sorted", "second element dropped"),
                                            ("as given", "first element dropped")])
def test_the_reading_the_hardware_used_is_named(vid, distinct, equal):
    v, plan = _plan(vid, ("undefined.metadata",))
    (cs,) = plan.case_sets
    a, b = plan.slices[cs.check]
    out = _gpu(v, plan.in_words[a:b], cs.params, plan.probe.surroundings, _first_of(distinct, equal, "as given"))
    vd = compare(v, replace(_record(plan, cs.check), out_words=out))
    assert vd.status == UNDEFINED and "?" not in vd.message, vd.message
    sp = sparsity(v)
    for pair in ud.undefined_pairs(sp, sp.ordered):
        names = list(ud.readings(sp, pair))
        want = next(n for n in (distinct, equal, "as given") if n in names)
        group = next(part for part in vd.message.split("; ") if f"({pair[0]},{pair[1]})" in part)
        assert want in group.split(":")[0], (pair, vd.message)
    assert vd.details(v).startswith("undefined by the ISA: ")


def test_readback_of_elements_from_elsewhere_and_nothing():
    sp = Sparsity(2, 8, 2, 4, 2, ordered=True)
    slots = np.array([[[[1, 2], [4, 8]], [[16, 32], [64, 128]]]], dtype=np.float64)  # [digit, row, chunk, slot]
    fields = np.array([[[1, 1], [1, 1]], [[2, 0], [2, 0]]])
    dense = np.zeros((1, 2, 8))
    dense[0, 0, [1, 5]] = [4, 12]  # row 0: chunk 0 reads chunk 1's first element (x), chunk 1 the sum
    dense[0, 1, [2, 0, 6, 4]] = [16, 32, 64, 128]  # row 1: (2, 0) as given
    message, lines = ud.chunk_readback(sp, slots, dense, fields)
    assert "as given: (2,0)" in message
    assert "(1,1) -> [. x . .] in 1 of 2 chunks" in message
    assert any(line.startswith("(1,1): [. x . .]") for line in lines)
    nothing, _ = ud.chunk_readback(sp, slots, np.zeros((1, 2, 8)), fields)
    assert nothing == "nothing stored: (1,1) (2,0)"


def test_the_emulator_says_it_does_not_model_them():
    v, plan = _plan(ORDERED_BF16, ("value", "undefined.metadata"))
    (outcome,) = run_module(EmulatorBackend(mma, cc=(12, 0)), [plan])
    by = {vd.check: vd for vd in outcome.verdicts}
    assert by["value"].status == "pass"
    assert by["undefined.metadata"].status == UNDEFINED and by["undefined.metadata"].message == ud.NOT_MODELLED_TEXT


def test_a_refused_selector_never_joins_the_module(monkeypatch):
    v, plan = _plan(ORDERED_BF16, ("value", "undefined.selector"), monkeypatch, accepted=False)
    odd = [cs for cs in plan.case_sets if cs.check.startswith("undefined.selector")]
    assert [cs.check for cs in odd] == ["undefined.selector[2]", "undefined.selector[3]"]
    assert all(p.params["metadata"]["selector"] in (0, 1) for p in plan.kernels)
    launched = np.concatenate(plan.launches)
    for cs in odd:
        lo, hi = plan.slices[cs.check]
        assert not np.isin(np.arange(lo, hi), launched).any()
    (outcome,) = run_module(EmulatorBackend(mma, cc=(12, 0)), [plan])
    by = {vd.check: vd for vd in outcome.verdicts}
    assert by["undefined.selector[2]"].status == UNDEFINED
    assert by["undefined.selector[2]"].message == "refused by ptxas: value '2' out of range"
    assert by["value"].status == "pass"


def test_no_ptxas_means_not_run(monkeypatch):
    v, plan = _plan(ORDERED_BF16, ("undefined.selector",), monkeypatch, accepted=None)
    assert not plan.launches or not len(np.concatenate(plan.launches))
    assert all(p.params["metadata"]["selector"] in (0, 1) for p in plan.kernels)  # the module still assembles
    (outcome,) = run_module(EmulatorBackend(mma, cc=(12, 0)), [plan])
    assert {vd.status for vd in outcome.verdicts} == {"skip"}
    assert "no ptxas here" in outcome.verdicts[0].message


def test_an_assembled_selector_is_compared_with_every_legal_one(monkeypatch):
    v, plan = _plan(ORDERED_BF16, ("undefined.selector",), monkeypatch, accepted=True)
    cs = plan.case_sets[0]
    a, b = plan.slices[cs.check]
    (outcome,) = run_module(EmulatorBackend(mma, cc=(12, 0)), [plan])
    assert outcome.verdicts[0].message == ud.NOT_MODELLED_TEXT
    # A GPU that reads the lanes of selector 1 for the out-of-range value.
    ops = v.operands
    words = split_inputs(v, plan.in_words[a:b])
    bits = {n: unpack(ops[n], w, cs.params.get(n)) for n, w in words.items()}
    bits["metadata"] = unpack(ops["metadata"], words["metadata"], {"selector": 1})
    lay = buffer_layout(v)
    out = np.zeros((b - a, 32, lay.out_words), dtype=np.uint32)
    out[:, :, : ops["D"].words] = pack(ops["D"], mma(v, bits))
    out[:, :, lay.checksum_offset] = checksum(np.arange(32), plan.probe.surroundings)[None]
    vd = compare(v, replace(_record(plan, cs.check), out_words=out))
    assert vd.status == UNDEFINED
    assert vd.message == "selector 2 assembled (ptxas 99.9): D as with selector 1 (the metadata of T2, T3 of each group of four)"


@pytest.mark.ptxas
def test_ptxas_refuses_an_out_of_range_selector():
    import shutil

    if not shutil.which("ptxas"):
        pytest.skip("ptxas not on PATH")
    v, plan = _plan(ORDERED_BF16, ("undefined.selector",))
    assert plan.case_sets[0].meta["assembler"]["accepted"] is False
    assert "2" in plan.case_sets[0].meta["assembler"]["message"]


def test_undefined_cases_have_kernels_and_launches_of_their_own():
    """A launch that faults on undefined inputs holds no case of another check."""
    v, plan = _plan(ORDERED_BF16, ("value", "map.A", "undefined.metadata"))
    lo, hi = plan.slices["undefined.metadata"]
    for cases, k in zip(plan.launches, plan.launch_probe):
        mine = (cases >= lo) & (cases < hi)
        assert mine.all() == plan.probes[k].undefined and (mine.all() or not mine.any())
    fam = family_of(v)
    rec = {r.check: r for r in records(plan, np.zeros((len(plan.in_words), 32, plan.out_words), np.uint32))}
    assert fam.failed(v, rec["undefined.metadata"], "illegal instruction").status == UNDEFINED
    assert fam.failed(v, replace(rec["undefined.metadata"], check="undefined.selector[2]"), "x").message == \
        "the probe did not finish: x"
    assert fam.failed(v, rec["value"], "illegal instruction").status == "error"
