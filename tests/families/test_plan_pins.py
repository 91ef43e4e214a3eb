"""A seed names the same wgmma, wgmma.sp, mma.sync, mma.sp and wmma cases as when they were pinned
(``plan_pin.py``): a few plans of the pinned sample replanned and hashed whole (input and predicted words, slices,
launches, kernels and their module text, meta, build).  ``python tests/families/plan_pin.py check`` replans all of
them."""

from __future__ import annotations

import pytest
from plan_pin import SPARSE, make_plan, pin_key, pinned, plan_hash

QUICK = [
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16/ss", 7, None),
    ("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8/rs", 0, None),
    ("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc/ss", 7, None),
    ("wgmma.mma_async.sp.sync.aligned.m64n136k16.f32.tf32.tf32/ss", 0, None),
    ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f16.f16.f16/rs", 0, SPARSE["wgmma.sp"]),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 7, None),
    ("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", 4099, None),
    ("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32", 0, None),
    ("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite.s32.s8.u8.s32", 4099, None),
    ("mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32", 0, SPARSE["mma.sp"]),
    ("wmma.load.a.sync.aligned.row.m16n16k16.f16", 0, None),
    ("wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32", 4099, None),
    ("wmma.store.d.sync.aligned.col.m16n16k16.f16", 7, None),
]


@pytest.mark.parametrize("vid,seed,checks", QUICK, ids=[pin_key(*q) for q in QUICK])
def test_plan_as_pinned(vid, seed, checks):
    assert plan_hash(make_plan(vid, seed, checks)) == pinned(vid, seed, checks)
