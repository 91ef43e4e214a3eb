"""The failure kind a verdict names: layout when elements moved, numerics when values differ in place.

Two A elements that trade places (a GPU, or a spec, that maps them the other way round) change every product
they feed, so D's values are found nowhere in the expected D; the map check's tags still show that the
elements moved, and the verdict says layout.  A D value off by one unit in place is numerics.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.core.family import compare
from ptxconf.families.mma.compare import split_inputs
from ptxconf.families.mma.probe import buffer_layout
from ptxconf.generators.ptx import checksum
from ptxconf.isa import load_specs
from ptxconf.isa.packing import pack, unpack
from ptxconf.oracle import mma
from ptxconf.run.observations import records
from ptxconf.run.runner import plan_variant, run_module

SPECS = load_specs()
V = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def _map_a():
    v = SPECS.get(V)
    backend = EmulatorBackend(mma)
    plan = plan_variant(v, 5, backend.compute_capability(), backend.max_ptx(), ("map.A",), value_cases=2)
    (outcome,) = run_module(backend, [plan])
    (rec,) = records(plan, outcome.out_words)
    return v, plan, rec


def test_two_a_elements_that_trade_places_are_a_layout_failure():
    v, plan, rec = _map_a()
    assert compare(v, rec).status == "pass"
    ops = v.operands
    bits = {n: unpack(ops[n], w, rec.params.get(n)) for n, w in split_inputs(v, rec.in_words).items()}
    a = bits["A"].copy()
    a[:, 0, 0, 0], a[:, 0, 0, 1] = bits["A"][:, 0, 0, 1], bits["A"][:, 0, 0, 0]  # A(0,0) and A(0,1) swapped
    lay = buffer_layout(v)
    out = np.zeros_like(rec.out_words)
    out[:, :, : ops["D"].words] = pack(ops["D"], mma(v, {**bits, "A": a}))
    out[:, :, lay.checksum_offset] = checksum(np.arange(32), rec.surroundings)[None]
    vd = compare(v, replace(rec, out_words=out))
    assert vd.status == "fail" and "(layout)" in vd.message and "numerics" not in vd.message, vd.message
    assert vd.map_diff, "the observed map names the slots that moved"


def test_a_value_off_in_place_is_numerics():
    v, plan, rec = _map_a()
    out = rec.out_words.copy()
    out[0, 0, 0] ^= np.uint32(1)  # one unit in the last place of one D element
    vd = compare(v, replace(rec, out_words=out))
    assert vd.status == "fail" and "(numerics)" in vd.message, vd.message
