"""A seed names the same wgmma and wgmma.sp cases as when they were pinned (``plan_pin.py``): a few plans of
the pinned sample replanned and hashed whole (input and predicted words, slices, launches, kernels, meta, build).
``python tests/families/wgmma/plan_pin.py check`` replans all of them."""

from __future__ import annotations

import json

import pytest
from plan_pin import PINS, make_plan, pin_key, plan_hash

QUICK = [
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16/ss", 7, None),
    ("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8/rs", 0, None),
    ("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc/ss", 7, None),
    ("wgmma.mma_async.sp.sync.aligned.m64n136k16.f32.tf32.tf32/ss", 0, None),
    ("wgmma.mma_async.sp.sync.aligned.m64n8k32.f16.f16.f16/rs", 0,
     ("value", "map.A", "map.B", "map.metadata", "undefined.metadata", "undefined.selector")),
]


@pytest.mark.parametrize("vid,seed,checks", QUICK, ids=[pin_key(*q) for q in QUICK])
def test_plan_as_pinned(vid, seed, checks):
    want = json.loads(PINS.read_text())[pin_key(vid, seed, checks)]
    assert plan_hash(make_plan(vid, seed, checks)) == want
