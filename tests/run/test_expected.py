"""Predicted out words: a plan's checks compared in one expression give the comparator's verdicts, field for field.

A family that predicts what its probes write (``Plan.expected``, drawn with the cases) lets the run skip its
comparator for the checks whose words agree; a check that differs, or one not predicted, still goes to the
comparator.  These tests run small variants of every predicting family on the emulator (dense and sparse
mma, including the undefined checks, which are never predicted; wgmma from shared memory and from registers;
wgmma.sp) and hold the one-expression verdicts to the per-check comparator's: on the emulator's words, on words
with one injected wrong bit (the comparator's failure, its text and counts), and with the padding bits changed
(not defined by the ISA: still a pass).
"""

from __future__ import annotations

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.core.verdict import Verdict
from ptxconf.isa import load_specs
from ptxconf.oracle import mma
from ptxconf.run.observations import records
from ptxconf.run.runner import RunRequest, compare_plan, launch_module, module_of

SPECS = load_specs()
run_variants_of(SPECS)

UNDEFINED = ("value", "map.A", "map.B", "map.C", "map.metadata", "undefined.metadata", "undefined.selector")
CASES = [  # (variant, checks: None for the family's default)
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", None),
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16", None),
    ("mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32", UNDEFINED),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16/ss", None),
    ("wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.u8/rs", None),
    ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f16.f16.f16/ss", UNDEFINED),
    ("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16", None),
    ("wmma.load.a.sync.aligned.col.m16n16k16.bf16", None),
]


def _run(vid: str, checks):
    v = SPECS.variants[vid]
    backend = EmulatorBackend(mma, cc=family_of(v).emulated_cc or (12, 0))
    plan = RunRequest(seed=11, checks=checks).plan(v, backend.compute_capability(), backend.max_ptx())
    (out, errors), = launch_module(backend, [plan], module_of([plan]))
    assert not errors
    return v, plan, out


def _fields(verdict: Verdict, v) -> dict:
    """Everything a verdict says (the mismatches as the report writes them)."""
    got = {k: val for k, val in vars(verdict).items() if k not in ("mismatches", "observed")}
    got["mismatches"] = [m.describe(v) for m in verdict.mismatches]
    got["observed"] = None if verdict.observed is None else verdict.observed.tolist()
    got["details"] = verdict.details(v)
    return got


def _same_as_comparator(v, plan, out) -> list[Verdict]:
    fast = compare_plan(plan, out)
    slow = [family_of(v).compare(v, rec) for rec in records(plan, out)]
    assert [_fields(a, v) for a in fast] == [_fields(b, v) for b in slow]
    return fast


@pytest.mark.parametrize("vid, checks", CASES)
def test_predicted_words_are_what_the_emulator_writes_and_the_verdicts_the_comparators(vid, checks):
    v, plan, out = _run(vid, checks)
    exp = plan.expected
    assert exp is not None and exp.checks
    assert not any(c.startswith("undefined.") for c in exp.checks)  # observations, never predicted
    agree = exp.agreeing(out)
    for check in exp.checks:
        a, b = plan.slices[check]
        assert agree[a:b].all(), f"{check}: the prediction differs from the emulator's words"
    verdicts = _same_as_comparator(v, plan, out)
    assert {x.status for x in verdicts if x.check in exp.checks} == {"pass"}


@pytest.mark.parametrize("vid, checks", CASES)
def test_a_wrong_bit_gets_the_comparators_failure(vid, checks):
    v, plan, out = _run(vid, checks)
    exp = plan.expected
    check = exp.checks[-1]
    a, _ = plan.slices[check]
    lane, word = map(int, np.argwhere(exp.defined != 0)[0])
    bit = np.uint32(1 << int(np.flatnonzero([(int(exp.defined[lane, word]) >> i) & 1 for i in range(32)])[0]))
    bad = out.copy()
    bad[a, lane, word] ^= bit
    assert not exp.agreeing(bad)[a]
    verdicts = _same_as_comparator(v, plan, bad)
    failed = next(x for x in verdicts if x.check == check)
    assert failed.status == "fail" and failed.message


@pytest.mark.parametrize("vid, checks", [CASES[0], CASES[2]])
def test_bits_the_isa_leaves_undefined_are_not_compared(vid, checks):
    v, plan, out = _run(vid, checks)
    exp = plan.expected
    spare = ~exp.defined
    assert spare.any()  # these forms' out rows hold a word that no register writes
    noisy = out ^ (spare[None] & np.uint32(0xA5A5A5A5))
    agree = exp.agreeing(noisy)
    assert all(agree[slice(*plan.slices[check])].all() for check in exp.checks)
    _same_as_comparator(v, plan, noisy)
