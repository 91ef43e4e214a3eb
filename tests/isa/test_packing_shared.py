"""pack/unpack keep what they derive from a layout per (layout, selector values, the fragment's slots, the type's
mask), shared by every operand of the layout: operands of one layout with other types and fragments must each pack
and unpack exactly as they do alone."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from ptxconf.isa import packing
from ptxconf.isa.loader import load_specs
from ptxconf.isa.model import Fragment
from ptxconf.isa.ptxtypes import TYPES


def _alone(op, bits, filler=None):
    """pack and unpack of ``op`` with nothing kept from any other operand."""
    packing._INDEX.clear()
    words = packing.pack(op, bits, filler=filler)
    return words, packing.unpack(op, words)


def test_operands_of_one_layout_pack_as_alone():
    a = load_specs().variants["mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"].operands["A"]
    lay = a.layout
    ops = [a, replace(a, type=TYPES["f16"]),  # the same mask and slots: one entry for both
           replace(a, type=TYPES["u8"], fragment=Fragment("u8", "b32", 4, 0)),
           replace(a, type=TYPES["f32"], fragment=Fragment("f32", "f32", 1, 0)),
           replace(a, type=TYPES["f16"], fragment=Fragment("f16x", "b64", 2, 8))]
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, size=(3, lay.matrices, lay.rows, lay.cols), dtype=np.uint64)
    filler = rng.integers(0, 2**32, size=(3, lay.lanes, lay.elements), dtype=np.uint64)
    alone = [(_alone(op, bits), _alone(op, bits, filler)) for op in ops]
    packing._INDEX.clear()
    for op, ((words, back), (filled, _)) in zip(ops * 2, alone * 2):  # each in turn, twice over, sharing entries
        got = packing.pack(op, bits)
        assert got.dtype == words.dtype and np.array_equal(got, words)
        assert np.array_equal(packing.pack(op, bits, filler=filler), filled)
        assert np.array_equal(packing.unpack(op, got), back)
        assert np.array_equal(back, bits & np.uint64(op.type.mask))  # every element held once: read back masked
    assert len({id(e[0]) for e in packing._INDEX.values()}) == 1  # every entry the one layout's
