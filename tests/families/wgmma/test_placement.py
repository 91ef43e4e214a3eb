"""A placement's scatter units are kept only where no two elements share a unit: counted, unless the tile's offsets
are distinct and the swizzle table one-to-one (then distinct elements of a byte or more are on distinct units)."""

from __future__ import annotations

import numpy as np
from ptxconf.families.wgmma import probe
from ptxconf.families.wgmma.desc import Desc
from ptxconf.families.wgmma.spec import canonical_strides
from ptxconf.isa.loader import load_specs


def _smem():
    return probe.model_of(load_specs().variants["wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16/ss"]).smem


def test_units_where_elements_are_distinct():
    smem = _smem()
    for sw in smem.swizzles:
        for major in ("K", "MN"):
            lbo, sbo = canonical_strides(major, sw, smem.width(sw), 16, 64, 16)
            desc = Desc(256, lbo, sbo, 0, smem.code_of(sw))
            _, addr, units, low, high = probe.placement(smem, major, desc, 64, 16, 16, "B")
            assert units is not None and (low, high) == (addr.min(), addr.max())
            assert np.array_equal(units, (addr.reshape(64, 16).T // 2).ravel())  # B's units in (k, n) order
            assert len(np.unique(units)) == units.size


def test_no_units_where_elements_share_one():
    smem = _smem()
    for sw in smem.swizzles:
        # K-major: the 8-row groups SBO apart; SBO 0 puts every group on the first one's bytes
        lbo, _ = canonical_strides("K", sw, smem.width(sw), 16, 64, 16)
        desc = Desc(0, lbo, 0, 0, smem.code_of(sw))
        assert "SBO" in smem.strides_read("K", sw)
        assert probe.placement(smem, "K", desc, 64, 16, 16, "A")[2] is None


def test_a_swizzle_table_that_maps_two_addresses_to_one_is_not_one_to_one():
    smem = _smem()
    assert probe._one_to_one(smem, "128B", 0, np.arange(64, dtype=np.int64))
    assert not probe._one_to_one(smem, "128B", 0, np.array([0, 5, 5, 7], dtype=np.int64))
    assert not probe._one_to_one(smem, "128B", 0, np.array([-16, 0, 16], dtype=np.int64))
