"""wmma in bulk: drawn cases hold the drawn A, B, C where their header says, at strides and offsets the hardware
takes, equal what the emulator computes, and are drawn alike alone or in a batch (the fuzzing loop itself,
failures and replays: tests/run/test_bulkfuzz.py)."""

from __future__ import annotations

import numpy as np
import pytest
from ptxconf.backends.bulk_device import EmulatedDevice
from ptxconf.core.bulk import bulk_record
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.families.wmma.memory import SLACK, as_bytes, header, max_stride, read_operands
from ptxconf.isa import load_specs
from ptxconf.isa.targets import PtxVersion

SPECS = load_specs()
run_variants_of(SPECS)
CC, MAX_PTX = (12, 0), PtxVersion(9, 2)


def _sample() -> list[str]:
    """One form per (load, store or mma; first element type; shape)."""
    seen: dict[tuple, str] = {}
    for v in SPECS.variants.values():
        if v.family == "wmma":
            seen.setdefault((v.op, v.types[0][1], v.shape_name), v.id)
    return list(seen.values())


SAMPLE = _sample()


@pytest.mark.parametrize("vid", SAMPLE)
def test_drawn_cases_hold_the_drawn_operands_and_are_what_the_emulator_computes(vid):
    v = SPECS.get(vid)
    fam = family_of(v)
    bc = fam.bulk_cases(v, 7, CC, MAX_PTX)
    drawn = bc.draw(np, 500, 16)
    out = fam.emulate(bc.probe, drawn.in_words, bc.out_words, EmulatedDevice(cc=CC)._emulator)
    assert drawn.defined.all() and np.array_equal(out, drawn.expected)
    assert fam.compare(v, bulk_record(bc, drawn.in_words, out)).status == "pass"
    assert (as_bytes(drawn.expected) != 0).any()  # D was stored
    # The loads read back exactly the values drawn for A, B and C.
    mv, spec = bc.mma, v.doc
    ops = read_operands(spec, mv, bc.routes, drawn.in_words)
    values = bc.values.bits(np, 500, 16)
    for m in "ABC":
        assert np.array_equal(ops[m], values[m]), m
    assert len(np.unique(ops["A"])) >= 2 and not np.array_equal(ops["C"][0], ops["C"][1])
    # Strides and offsets are legal, and vary.
    hdr = header(drawn.in_words)
    assert set(hdr[:, 0]) <= set(range(len(bc.routes)))
    for k, m in enumerate("abcd"):
        t, shape = mv.type_of(m), mv.shape_name
        for case in range(16):
            lay = mv.layout_of(m) if m in "ab" else bc.routes[hdr[case, 0]][k - 2]
            assert spec.min_stride(m, t, shape, lay) <= hdr[case, 1 + k] <= max_stride(spec, mv, m, lay)
            assert (hdr[case, 1 + k] - spec.min_stride(m, t, shape, lay)) % spec.stride_unit(m, t, shape, lay) == 0
        align = spec.base_alignment(m, t, shape)
        start = bc.size.slots[k] if m != "d" else 0
        assert ((hdr[:, 5 + k] - start) % align == 0).all() and (hdr[:, 5 + k] <= start + SLACK * align).all()
    assert len({tuple(h) for h in hdr[:, 1:]}) > 1
    alone = bc.draw(np, 509, 1)  # case i is a function of (variant, seed, i) alone
    assert np.array_equal(alone.in_words[0], drawn.in_words[9]) and np.array_equal(alone.expected[0], drawn.expected[9])


def test_every_route_is_drawn():
    v = SPECS.get("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32")
    bc = family_of(v).bulk_cases(v, 1, CC, MAX_PTX)
    assert set(header(bc.draw(np, 0, 64).in_words)[:, 0]) == set(range(len(bc.routes))) and len(bc.routes) == 4
