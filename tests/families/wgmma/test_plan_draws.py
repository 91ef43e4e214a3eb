"""Planning draws several integers in one call where the cases drew them one by one: the same numbers from the
same stream, the generator left where the one-by-one draws leave it (a seed keeps naming its cases)."""

from __future__ import annotations

import numpy as np
import pytest
from ptxconf.families.wgmma import cases as wgc
from ptxconf.families.wgmma import probe as wg
from ptxconf.isa import load_specs


def _one_by_one(seed: int, spans) -> tuple[list[int], np.ndarray]:
    rng = np.random.default_rng(seed)
    got = [int(rng.integers(0, int(s))) for s in spans]
    return got, rng.integers(0, 1000, size=4)


@pytest.mark.parametrize("high", [64, 2**31])  # small spans as the planners draw; huge ones, often rejected
def test_bounded_draws_are_the_one_by_one_draws(high):
    for seed in range(40):
        spans = np.random.default_rng(seed).integers(1, high, size=60)
        spans[::9] = 1  # a span of one draws nothing
        rng = np.random.default_rng(seed + 100)
        rng.integers(-64, 65, size=seed % 3)  # half of a 64-bit output left over, or not
        got = wgc.bounded_draws(rng, spans).tolist()
        ref = np.random.default_rng(seed + 100)
        ref.integers(-64, 65, size=seed % 3)
        want = [int(ref.integers(0, int(s))) for s in spans]
        assert got == want
        assert (rng.integers(0, 1000, size=4) == ref.integers(0, 1000, size=4)).all()


@pytest.mark.parametrize("span", [2, 81, 129, 2**20, 3 * 2**29])  # C's spans; a power of two; a huge one (rejected 1 in 4)
def test_skipped_draws_leave_the_generator_as_the_draws(span):
    for seed in range(30):
        for count in (0, 1, 2, 3, 1000 + seed, wgc._SKIP_FROM + seed):  # (made below _SKIP_FROM, skipped from it)
            rng, ref = np.random.default_rng(seed), np.random.default_rng(seed)
            for g in (rng, ref):
                g.integers(0, 7, size=seed % 3, dtype=np.int32)  # half of a 64-bit output left over, or not
            wgc.skip_draws(rng, span, count)
            ref.integers(0, span, size=count, dtype=np.int32)
            assert rng.bit_generator.state == ref.bit_generator.state
            assert (rng.integers(0, 1000, size=5, dtype=np.int32) == ref.integers(0, 1000, size=5, dtype=np.int32)).all()


def test_case_layouts_draw_as_each_choice_alone():
    v = load_specs().get("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16/ss")
    model = wg.model_of(v)
    modes = list(model.smem.swizzles)
    b_asks = [(t, sw, v.bits, v.N, v.K, wg.b_base(v), 1 << 16, off) for t in (0, 1) for sw in modes for off in (0, 1)]
    a_asks = [(t, sw, v.bits, 64, v.K, 0, wg.A_REGION, off) for t in (1, 0) for sw in modes[::-1] for off in (1, 0)]
    head = np.zeros((len(b_asks), 5), dtype=np.uint32)
    cfgs, b_placed, a_placed = wgc.case_layouts(np.random.default_rng(3), model, b_asks, a_asks, head, 1 << 16)
    rng = np.random.default_rng(3)
    for i, (b, a) in enumerate(zip(b_asks, a_asks)):
        db, pb = wgc.descriptor_choice(rng, model, *b)
        da, pa = wgc.descriptor_choice(rng, model, *a)
        assert cfgs[i] == {"B": [b[1], db.start, db.lbo, db.sbo, pb, db.base_offset],
                           "A": [a[1], da.start, da.lbo, da.sbo, pa, da.base_offset]}
        assert tuple(head[i, :4]) == wg._words(model, da) + wg._words(model, db)
        major = model.smem.major_of(b[0])
        assert (b_placed[i][0] == wg._placed(model.smem, major, db, v.N, v.K, v.bits, "B", 1 << 16)[0]).all()
