"""A comparator says what it said when pinned (``compare_pin.py``): a few plans of the pinned sample run on the
emulator, every check compared as recorded and, for the map checks, with lanes swapped, words zeroed and one
lane's tags twice, each verdict (status, message, mismatches, observed map, map diff) hashed.
``python tests/families/compare_pin.py check`` recompares all of them."""

from __future__ import annotations

import pytest
from compare_pin import emulated, pin_key, pinned, verdict_hash

QUICK = [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 0),
    ("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 1),
    ("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc", 0),
    ("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32", 1),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.u8.s32", 0),
    ("ldmatrix.sync.aligned.m8n8.x4.trans.b16", 0),
    ("stmatrix.sync.aligned.m8n8.x2.b16", 1),
    ("movmatrix.sync.aligned.m8n8.trans.b16", 0),
]


@pytest.mark.parametrize("vid,seed", QUICK, ids=[pin_key(*q) for q in QUICK])
def test_verdicts_as_pinned(vid, seed):
    assert verdict_hash(*emulated(vid, seed)) == pinned(vid, seed)
