"""wgmma and wgmma.sp bulk cases (families/wgmma/bulk.py, families/wgmma_sp/bulk.py): drawn as array code, they are
what the spec's emulation computes, the comparator passes them and explains a changed word, each case replays alone,
and the bulk fuzzer takes both families."""

from __future__ import annotations

import numpy as np
import pytest
from ptxconf.backends.bulk_device import EmulatedDevice
from ptxconf.cli.main import main as cli_main
from ptxconf.core.bulk import bulk_record
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.isa import load_specs
from ptxconf.isa.targets import PtxVersion
from ptxconf.run.bulkfuzz import fuzz_bulk

SPECS = load_specs()
run_variants_of(SPECS)
CC, MAX_PTX = (9, 0), PtxVersion(9, 0)
DENSE, SPARSE = "wgmma.mma_async.sync.aligned.", "wgmma.mma_async.sp.sync.aligned."
# per family: its A types, a form whose layouts vary, a form to tamper with, forms for the fuzzer and the CLI
FAMILIES = {
    "wgmma": ({"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "b1"}, DENSE + "m64n64k16.f32.bf16.bf16/ss",
              DENSE + "m64n16k16.f32.f16.f16/rs", [DENSE + "m64n8k16.f32.f16.f16/*", DENSE + "m64n8k32.s32.s8.u8*"],
              DENSE + "m64n8k16.f32.f16.f16/ss"),
    "wgmma.sp": ({"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"}, SPARSE + "m64n64k32.f32.bf16.bf16/ss",
                 SPARSE + "m64n16k32.f32.f16.f16/rs", [SPARSE + "m64n8k32.f32.f16.f16/*", SPARSE + "m64n8k64.s32.s8.u8*"],
                 SPARSE + "m64n8k32.f32.f16.f16/ss"),
}


def _sample(family: str) -> list:
    """One form per (A, B, D type, A's source, .satfinite) at N = 8, 24 and 256."""
    seen, out = set(), []
    for v in SPECS.variants.values():
        if v.family != family or v.N not in (8, 24, 256):
            continue
        key = (v.atype, v.btype, v.dtype, v.a_src, bool(v.satfinite))
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_drawn_cases_are_the_spec_s_and_the_comparator_passes_them(family, seed):
    """Every sampled form at three seeds (each a fresh immediate set, swizzle modes, descriptors and base offsets)."""
    sample = _sample(family)
    assert len(sample) >= 30 and {v.atype for v in sample} >= FAMILIES[family][0]
    emulator = EmulatedDevice(cc=CC)._emulator
    for v in sample[seed::3]:
        fam = family_of(v)
        bc = fam.bulk_cases(v, seed, CC, MAX_PTX)
        drawn = bc.draw(np, 100, 3)
        out = fam.emulate(bc.probe, drawn.in_words, bc.out_words, emulator)
        assert np.array_equal(np.where(drawn.defined[None], out, 0), np.where(drawn.defined[None], drawn.expected, 0)), v.id
        assert fam.compare(v, bulk_record(bc, drawn.in_words, out)).status == "pass", v.id
        alone = bc.draw(np, 102, 1)  # case i is a function of (variant, seed, i) alone
        assert np.array_equal(alone.in_words[0], drawn.in_words[2]) and np.array_equal(alone.expected[0], drawn.expected[2])
        assert not np.array_equal(drawn.in_words[0], drawn.in_words[1])


def test_the_metadata_the_selector_s_lanes_hold_is_legal_and_complete():
    """The spec's reader finds a legal index pair for every chunk of every row in the drawn sp-meta words."""
    from ptxconf.families import wgmma_sp as wsp

    for v in _sample("wgmma.sp")[:12]:
        bc = family_of(v).bulk_cases(v, 6, CC, MAX_PTX)
        drawn = bc.draw(np, 0, 2)
        fields = wsp.fields_of(v, drawn.in_words[:, :, wsp.META_WORD], bc.imm["sel"])
        assert (fields >= 0).all(), v.id
        pats = set(wsp.sparsity(v).patterns)
        assert all(tuple(p) in pats for p in fields.reshape(-1, 2).tolist()), v.id


@pytest.mark.parametrize("family", FAMILIES)
def test_the_layouts_vary_with_the_seed_and_a_changed_word_is_explained(family):
    v = SPECS.get(FAMILIES[family][1])
    seen = {repr(family_of(v).bulk_cases(v, s, CC, MAX_PTX).meta["layouts_per_seed"]) for s in range(12)}
    assert len(seen) >= 6
    v = SPECS.get(FAMILIES[family][2])
    fam = family_of(v)
    bc = fam.bulk_cases(v, 4, CC, MAX_PTX)
    drawn = bc.draw(np, 0, 3)
    out = drawn.expected.copy()
    out[1, 70, 3] ^= np.uint32(1 << 9)
    vd = fam.compare(v, bulk_record(bc, drawn.in_words, out))
    assert vd.status == "fail" and "lane 70 register 3" in vd.details(v)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_bulk_fuzzer_and_the_cli_take_the_family(family, capsys):
    vs = SPECS.select(FAMILIES[family][3])
    res = fuzz_bulk(lambda d: EmulatedDevice(cc=CC), [0], vs, budget_s=2.0, first_seed=1, cases=8, batch=8,
                    backend_name="emulator")
    assert res.fatal is None and not res.failures and not res.unsupported and res.cases >= 8 * len(vs)
    form = FAMILIES[family][4]
    assert cli_main(["fuzz", "case", form, "--seed", "3", "--case", "77", "--backend", "emulator"]) == 0
    assert capsys.readouterr().out.startswith(f"PASS {form}:value[")



@pytest.mark.parametrize("vid", [DENSE + "m64n16k32.s32.s8.u8/rs", DENSE + "m64n8k16.f16.f16.f16/ss",
                                 SPARSE + "m64n8k32.f32.bf16.bf16/ss"])
def test_values_cover_their_grids_and_ranges(vid):
    """A and B over the whole grid (integers: their whole range), C over D's grid (integers: half near the s32
    limits, either sign), scale-d both ways: what the plan's cases draw, by the bulk tables."""
    from ptxconf.families.wgmma import probe
    from ptxconf.families.wgmma_sp import probe as sp
    from ptxconf.isa.packing import unpack
    from ptxconf.isa.ptxtypes import TYPES

    v = SPECS.get(vid)
    bc = family_of(v).bulk_cases(v, 2, CC, MAX_PTX)
    words = bc.draw(np, 0, 64).in_words
    if v.family == "wgmma":
        A, B = probe.matrices(v, words, bc.imm, probe.model_of(v))
    else:
        A, B = sp.compressed_a(v, words, bc.imm, sp.model_of(v)), sp.matrix_b(v, words, bc.imm, sp.model_of(v))
    for t, x in ((v.atype, A), (v.btype, B)):
        vals = TYPES[t].decode(x)
        if TYPES[t].is_float:
            assert set(np.unique(vals).tolist()) == set(range(-3, 4)), t
        else:
            assert (vals.min(), vals.max()) == TYPES[t].int_range(), t
    d = v.operands["D"]
    c = TYPES[v.dtype].decode(unpack(d, words[:, :, probe.c_off(v) : probe.c_off(v) + d.words]))
    if TYPES[v.dtype].is_float:
        assert (c.min(), c.max()) == (-64, 64) and (c == np.rint(c)).all()
    else:
        near = np.abs(c) > 2**30
        assert 0.4 < near.mean() < 0.6 and (c[near] > 0).any() and (c[near] < 0).any() and np.abs(c[~near]).max() == 40
    assert set(words[:, 0, 4].tolist()) == {0, 1}  # scale-d
