"""wgmma.mma_async: spec load and invariants, descriptor codec, emulator runs, fault naming on
replayed observations (the H100's in results/h100-wgmma when committed, else emulator-recorded),
figures, ptxas."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ptxconf.cli import main
from ptxconf.core.family import compare
from ptxconf.core.record import CheckRecord
from ptxconf.families.wgmma import cases as wgc
from ptxconf.families.wgmma import probe as wg
from ptxconf.families.wgmma.desc import DescriptorError, decode, encode, with_leading_byte_offset
from ptxconf.generators.ptx import Surroundings
from ptxconf.isa import SpecError, load_specs
from ptxconf.isa.loader import load_file
from ptxconf.run.observations import load_observation, read_observation, recorded_checks
from ptxconf.run.replay import replay_file

ROOT = Path(__file__).resolve().parents[3]
YAML = ROOT / "specs" / "wgmma.yaml"
H100 = ROOT / "results" / "h100-wgmma"

V16 = "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16/ss"
V16R = "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16/rs"
V8 = "wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.s8/ss"
RECORDED = (V16, V16R, V8)


@pytest.fixture(scope="module")
def specs():
    return load_specs()


@pytest.fixture(scope="module")
def doc(specs):
    return specs.documents["wgmma"]


def test_form_counts_and_axes(doc):
    counts = {}
    for v in doc.variants:
        counts[v.atype] = counts.get(v.atype, 0) + 1
    # every N of 8..256 step 8 for the float types, the 18 integer N for s8/u8/b1; A from shared or registers
    assert counts == {"f16": 128, "bf16": 64, "tf32": 64, "e4m3": 256, "e5m2": 256, "s8": 144, "u8": 144, "b1": 36}
    assert len(doc.variants) == 1092
    v = doc.select(ptx="wgmma.mma_async.sync.aligned.m64n24k32.satfinite.s32.u8.s8", a_src="registers")[0]
    assert str(v.min_ptx) == "8.4" and v.satfinite and [t.name for t in v.requires] == ["sm_90a"]
    assert doc.select(ptx="wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16")[0].immediates == ("scale_a", "scale_b", "trans_a", "trans_b")
    assert doc.select(ptx="wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16", a_src="registers")[0].immediates == ("scale_a", "scale_b", "trans_b")
    assert doc.select(ptx="wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32", a_src="shared")[0].immediates == ("scale_a", "scale_b")


def test_one_d_layout_for_every_n(doc):
    names = {v.operands["D"].layout.name.split("[")[0] for v in doc.variants}
    assert names == {"D.m64nN"}
    for n in (8, 136, 256):
        lay = doc.layout("D.m64nN", n)
        assert (lay.lanes, lay.rows, lay.cols, lay.elements) == (128, 64, n, n // 2)
        m = lay.map()
        # warp w owns rows 16w..16w+15
        assert set(np.unique(m[32:64, :, 1]).tolist()) == set(range(16, 32))
    a = doc.layout("A.m64k16").map()
    assert a.shape == (128, 8, 3) and tuple(a[127, 7]) == (0, 63, 15)


def _broken(tmp_path, old, new, name="wgmma.yaml"):
    text = YAML.read_text()
    assert old in text, old
    p = tmp_path / name
    p.write_text(text.replace(old, new, 1))
    return p


def test_invariants_name_file_and_line(tmp_path):
    bad = _broken(tmp_path, 'col: "8 * (i >> 2) + 2 * threadID_in_group + (i & 1)"', 'col: "8 * (i >> 2) + 2 * threadID_in_group"')
    with pytest.raises(SpecError, match=r"wgmma.yaml:\d+: layouts.D.m64nN.*held 2 times"):
        load_file(bad)
    bad = _broken(tmp_path, "stride_byte_offset: {lo: 32, hi: 45", "stride_byte_offset: {lo: 29, hi: 42")
    with pytest.raises(SpecError, match="overlaps another field"):
        load_file(bad)
    bad = _broken(tmp_path, 'swizzle: "addr ^ ((((addr >> 7) - BO) & (W // 16 - 1)) << 4)"', 'swizzle: "addr | ((((addr >> 7) - BO) & (W // 16 - 1)) << 4)"')
    with pytest.raises(SpecError, match="not a permutation"):
        load_file(bad)
    bad = _broken(tmp_path, 'swizzled: "(mn % 8) * W + (mn // 8) * SBO + kb"', 'swizzled: "(mn % 8) * 16 + (mn // 8) * SBO + kb"')
    with pytest.raises(SpecError, match="share a byte"):
        load_file(bad)
    bad = _broken(tmp_path, "k: 8\n", "k: 16\n")
    with pytest.raises(SpecError, match="A.m64k8 is 64x8"):
        load_file(bad)


def test_descriptor_codec(doc):
    d, sm = doc.descriptor, doc.smem
    x = encode(d, sm, 0x400, 128, 1024, "128B")
    assert x == 0x4000004000080040
    got = decode(d, sm, x)
    assert (got.start, got.lbo, got.sbo, got.base_offset, sm.name_of(got.swizzle), got.problems) == (0x400, 128, 1024, 0, "128B", ())
    for kw, why in (
        (dict(start=0x408, lbo=16, sbo=16), "not 16-byte aligned"),
        (dict(start=0x40000, lbo=16, sbo=16), "does not fit"),
        (dict(start=0, lbo=16, sbo=16, swizzle="none", base_offset=1), "except no-swizzle"),
        (dict(start=0, lbo=16, sbo=16, swizzle="16B"), "unknown swizzle"),
        (dict(start=0, lbo=16, sbo=16, swizzle="64B", base_offset=8), "does not fit 3 bits"),
    ):
        kw.setdefault("swizzle", "none")
        with pytest.raises(DescriptorError, match=why):
            encode(d, sm, kw["start"], kw["lbo"], kw["sbo"], kw["swizzle"], kw.get("base_offset", 0))
    assert decode(d, sm, x | (1 << 14)).problems == ("reserved bits set: 0x0000000000004000",)


def test_leading_byte_offset_put_in_is_the_encoded_one(doc):
    d, sm = doc.descriptor, doc.smem
    for start, sbo, sw, bo in ((0x400, 1024, "128B", 3), (0x3FFF0, 0x3FFF0, "none", 0), (0, 16, "64B", 7)):
        x = encode(d, sm, start, 0x3FFF0, sbo, sw, bo)
        for lbo in (0, 16, 32, 1008, 0x3FFF0):
            assert with_leading_byte_offset(d, sm, x, lbo) == encode(d, sm, start, lbo, sbo, sw, bo)
    with pytest.raises(DescriptorError, match="leading dimension byte offset 0x18 is not 16-byte aligned"):
        with_leading_byte_offset(d, sm, x, 24)


def test_cli_desc(capsys):
    assert main(["wgmma", "desc", "encode", "--start", "0x400", "--lbo", "128", "--sbo", "1024", "--swizzle", "128B"]) == 0
    assert capsys.readouterr().out.strip() == "0x4000004000080040"
    assert main(["wgmma", "desc", "encode", "--start", "0x408", "--lbo", "128", "--sbo", "1024"]) == 1
    assert "not 16-byte aligned" in capsys.readouterr().err
    assert main(["wgmma", "desc", "decode", "--json", "0x0002004000080040"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["swizzle"] == "none" and out["problems"] == ["base offset set with no swizzle (valid only for swizzled modes)"]


def test_swizzle_and_canonical_layouts(doc):
    sm = doc.smem
    # 128B: chunk c of row r lands in chunk c ^ (r % 8)
    r, c = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    assert np.array_equal(sm.swizzled("128B", r * 128 + c * 16), r * 128 + (c ^ r) * 16)
    assert np.array_equal(sm.swizzled("32B", r * 32 + (c % 2) * 16), r * 32 + ((c % 2) ^ ((r >> 2) & 1)) * 16)
    # K-major no-swizzle f16: core matrix = 8 rows of 16 bytes; LBO between K chunks, SBO between 8-row groups
    off = sm.offsets("K", "none", np.array([0, 1, 0, 8]), np.array([0, 0, 8, 0]), 16, 128, 256)
    assert off.tolist() == [0, 16, 128, 256]
    # MN-major swizzled: LBO between MN stripes of the width, SBO between 8-row K groups
    off = sm.offsets("MN", "64B", np.array([0, 32, 0]), np.array([0, 0, 8]), 16, 4096, 512)
    assert off.tolist() == [0, 4096, 512]


def _run(variants, tmp_path, seed=0):
    from ptxconf.backends.emulator import EmulatorBackend
    from ptxconf.oracle import mma
    from ptxconf.run.runner import RunRequest, run_variants

    outs = []
    run_variants(EmulatorBackend(mma), variants, RunRequest(seed, observations=tmp_path / "observations"), outs.append)
    return outs


def test_emulator_runs_every_type(specs, tmp_path):
    picks = [
        "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16/rs",
        "wgmma.mma_async.sync.aligned.m64n24k8.f32.tf32.tf32/ss",
        "wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e4m3/ss",
        "wgmma.mma_async.sync.aligned.m64n8k32.satfinite.s32.u8.s8/rs",
        "wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc/ss",
    ]
    outs = _run([specs.get(p) for p in picks], tmp_path)
    verdicts = [vd for o in outs for vd in o.verdicts]
    assert len(outs) == 5 and verdicts and all(vd.status == "pass" for vd in verdicts), [vd.message for vd in verdicts]
    checks = {vd.check for vd in verdicts}
    assert {"value[sa+1,sb+1,tb0]", "map.A[sa+1,sb+1,tb0]", "map.B[sa-1,sb+1,tb1]"} <= checks
    # every swizzle mode and both scale-d values appear in the value cases
    plan = outs[0].plan
    cs = plan.case_sets[0]
    assert {c["B"][0] for c in cs.meta["layouts"]} == {"none", "128B", "64B", "32B"}
    assert set(cs.words[:, 0, 4].tolist()) == {0, 1}


def test_probe_kernel_shape(specs):
    v = specs.get(V16)
    p = wg.WgProbe(v, (("scale_a", -1), ("scale_b", 1), ("trans_a", 1), ("trans_b", 0)))
    src = p.source()
    assert "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7}, %q6, %q7, %p1, -1, 1, 1, 0;" in src
    for need in ("fence.proxy.async.shared::cta;", "wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;",
                 "wgmma.wait_group.sync.aligned 0;", ".shared .align 1024"):
        assert need in src
    r = wg.WgProbe(specs.get(V16R), (("scale_a", 1), ("scale_b", 1), ("trans_b", 0)), reuse=True).source()
    issue, wait = r.index("wgmma.mma_async"), r.index("wgmma.commit_group")
    assert "mov.b32 %a0, 0;" in r[issue:wait]


# --- fault naming on replayed observations -----------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, specs):
    """Observations of RECORDED: the H100's where committed, else recorded now by the emulator."""
    from ptxconf.run.observations import find_observation, observation_name

    have = {}
    if (H100 / "observations").is_dir():
        for vid in RECORDED:
            p = find_observation(H100 / "observations", vid, 0)
            if p is not None:
                have[vid] = p
    missing = [vid for vid in RECORDED if vid not in have]
    if missing:
        d = tmp_path_factory.mktemp("wg-rec")
        _run([specs.get(vid) for vid in missing], d)
        for vid in missing:
            have[vid] = d / "observations" / observation_name(vid, 0)
    return have


def test_recorded_observations_pass_today(specs, recorded):
    for path in recorded.values():
        assert all(vd.status == "pass" for vd in replay_file(specs, path))


FAULTS = [
    ("lbo-sbo", "leading_byte_offset: {lo: 16, hi: 29, encoded: true}\n    stride_byte_offset: {lo: 32, hi: 45, encoded: true}",
     "leading_byte_offset: {lo: 32, hi: 45, encoded: true}\n    stride_byte_offset: {lo: 16, hi: 29, encoded: true}",
     (V16, V8), "LBO and SBO swapped"),
    ("unencoded", 'encode: "(x & 0x3FFFF) >> 4"', 'encode: "x & 0x3FFFF"', (V16, V8), "encoded differently"),
    ("transposed", "transpose: [K, MN]", "transpose: [MN, K]", (V16,), "transposed"),
    ("transposed-b", "transpose: [K, MN]", "transpose: [MN, K]", (V16R,), "B transposed"),
    ("swizzle", "64B: {code: 2, width: 64, repeat: 512}\n    32B: {code: 3, width: 32, repeat: 256}",
     "64B: {code: 3, width: 64, repeat: 512}\n    32B: {code: 2, width: 32, repeat: 256}", (V16, V8), "wrong swizzle"),
    ("core", 'none: "(mn % 8) * 16 + (mn // 8) * SBO + kb % 16 + (kb // 16) * LBO"',
     'none: "((k % 8) * 16 + (mn % 8) * 2 if bits == 16 else (mn % 8) * 16 + kb % 16) + (mn // 8) * SBO + (kb // 16) * LBO"',
     (V16R,), "permutation inside the core matrices"),
    ("d-fragment", 'col: "8 * (i >> 2) + 2 * threadID_in_group + (i & 1)"', 'col: "8 * (i >> 2) + threadID_in_group + 4 * (i & 1)"',
     (V16R, V8), "wrong D fragment"),
]


@pytest.mark.parametrize("name,old,new,vids,fault", FAULTS, ids=[f[0] for f in FAULTS])
def test_comparator_names_the_fault(tmp_path, recorded, name, old, new, vids, fault):
    wrong = load_file(_broken(tmp_path, old, new))
    for vid in vids:
        verdicts = replay_file(wrong, recorded[vid])
        failed = [vd for vd in verdicts if vd.status == "fail"]
        assert failed, f"{name}: the wrong spec passed {vid}"
        for vd in failed:
            assert fault in vd.message, (vid, vd.check, vd.message)
        if name == "transposed":  # value cases tell A and B apart; tagged ones with an identity selection may not
            assert any("A and B transposed" in vd.message for vd in failed)



def test_tagged_readback_names_positions(specs, tmp_path):
    """A live run under a wrong spec (tags placed by it, the hardware = today's spec): the map check
    says which element the hardware used at each position."""
    old, new = FAULTS[5][1], FAULTS[5][2]  # core-matrix permutation in the no-swizzle layout
    wrong = load_file(_broken(tmp_path, old, new)).get(V16R)
    right = specs.get(V16R)
    cs = next(c for c in wgc.make_cases(wrong, 0, ("map.B",)) if c.check.startswith("map.B"))
    hw = wg.apply(right, cs.words, cs.params["imm"])
    vd = compare(wrong, CheckRecord(wrong.id, cs.check, 0, cs.params, cs.meta, Surroundings(), cs.words, hw))
    assert vd.status == "fail" and "permutation inside the core matrices" in vd.message
    lines = [ln for ln in vd.map_diff if "the hardware used the element the spec places at" in ln]
    assert lines and lines[0].startswith("B(0, 1): the hardware used the element the spec places at B(1, 0)"), vd.map_diff


def test_comparator_says_numerics(specs, recorded, tmp_path):
    _, rec, _ = next(recorded_checks(read_observation(recorded[V16])))
    outw = rec.out_words.copy()
    outw[0, 5, 0] ^= 1  # one ulp in one f32 D element
    vd = compare(specs.get(V16), replace(rec, out_words=outw))
    assert vd.status == "fail" and "numerics" in vd.message, vd.message


# --- swizzle patterns off their repeat boundary (the descriptor's base offset) ------------------


def test_base_offset_rule(doc, tmp_path):
    sm, d = doc.smem, doc.descriptor
    # §9.7.15.5.1.2.2: 0 on the repeat boundary (1024 / 512 / 256), else (pattern start >> 7) & 7
    assert [d.base_offset_for(sm, "128B", p) for p in range(0, 2048, 128)] == [0, 1, 2, 3, 4, 5, 6, 7] * 2
    assert [d.base_offset_for(sm, "64B", p) for p in range(0, 1024, 128)] == [0, 1, 2, 3, 0, 5, 6, 7]
    assert [d.base_offset_for(sm, "32B", p) for p in range(0, 512, 128)] == [0, 1, 0, 3]
    assert d.base_offset_for(sm, "none", 384) == 0
    # with the rule's base offset, the pattern starting at P is the boundary pattern moved to P
    a = np.arange(1024)
    assert np.array_equal(sm.swizzled("128B", 384 + a, 3) - 384, sm.swizzled("128B", a))
    assert not np.array_equal(sm.swizzled("128B", 384 + a, 0) - 384, sm.swizzled("128B", a))
    # a rule or a swizzle formula that disagree are refused on load, naming the field
    bad = _broken(tmp_path, 'base_offset: "0 if P % R == 0 else (P >> 7) & 7"', 'base_offset: "(P >> 7) & 3"')
    with pytest.raises(SpecError, match=r"descriptor.base_offset.*128B: a pattern starting at 512 with base offset 0"):
        load_file(bad)
    bad = _broken(tmp_path, 'swizzle: "addr ^ ((((addr >> 7) - BO) & (W // 16 - 1)) << 4)"', 'swizzle: "addr ^ (((addr >> 7) & (W // 16 - 1)) << 4)"')
    with pytest.raises(SpecError, match="not the pattern moved there"):
        load_file(bad)


def _off_boundary(cs, op):
    return [c for c in cs.meta["layouts"] if op in c and c[op][0] != "none" and c[op][4] % {"128B": 1024, "64B": 512, "32B": 256}[c[op][0]]]


def test_cases_start_patterns_off_the_boundary(specs):
    v = specs.get(V16)
    sets = {cs.check: cs for cs in wgc.make_cases(v, 0, ("value", "map.A", "map.B"))}
    value = sets["value[sa+1,sb+1,ta0,tb0]"]
    assert value.cases == 7  # 4 on the repeat boundary, one more per swizzled mode off it
    for op in "AB":
        off = _off_boundary(value, op)
        assert {c[op][0] for c in off} == {"128B", "64B", "32B"}
        assert all(c[op][5] == (c[op][4] >> 7) & 7 != 0 for c in off)
    # every tagged set again off the boundary (the tagged operand only); older names unchanged
    for name in ("map.A[sa-1,sb+1,ta1,tb1,bo]", "map.B[sa-1,sb+1,ta1,tb1,bo]"):
        op = name[4]
        assert len(_off_boundary(sets[name], op)) == sets[name].cases
        assert not _off_boundary(sets[name], "B" if op == "A" else "A")
    assert "map.A[sa-1,sb+1,ta1,tb1]" in sets and not _off_boundary(sets["map.A[sa-1,sb+1,ta1,tb1]"], "A")
    # integer forms (one tagged set, unswizzled) get a 128B set off the boundary; A in registers none
    s8 = {cs.check for cs in wgc.make_cases(specs.get(V8), 0, ("map.A", "map.B"))}
    assert s8 == {"map.A", "map.B", "map.A[bo]", "map.B[bo]"}
    assert "map.A[sa-1,sb+1,tb1,bo]" not in {cs.check for cs in wgc.make_cases(specs.get(V16R), 0, ("map.A", "map.B"))}
    # the descriptor carries it; the emulator reads the matrices back where the generator put them
    for cs in sets.values():
        for c, cfg in enumerate(cs.meta["layouts"]):
            for op, (lo, hi) in (("A", (0, 1)), ("B", (2, 3))):
                d = wg.decode_words(wg.model_of(v), cs.words[c, 0, lo], cs.words[c, 0, hi])
                assert (d.start, d.base_offset) == (cfg[op][1], cfg[op][5])


def _tamper(path, dest, change):
    """Rewrite an observation: change(check, meta, in_words, out_words) per check, in place."""
    import json as json_

    from ptxconf.run.observations import observation_bytes

    meta, inw, outw = load_observation(path)
    inw, outw = inw.copy(), outw.copy()
    for chk in meta["checks"]:
        a, b = chk["slice"]
        change(chk, inw[a:b], outw[a:b])
    dest.mkdir(parents=True, exist_ok=True)
    (dest / path.name).write_bytes(observation_bytes(in_words=inw, out_words=outw, meta=np.array(json_.dumps(meta))))
    return dest / path.name


@pytest.fixture(scope="module")
def off_recorded(tmp_path_factory, specs):
    """Emulator-recorded observations of V16 and V8 with today's generator (off-boundary cases)."""
    from ptxconf.run.observations import observation_name

    d = tmp_path_factory.mktemp("wg-bo")
    _run([specs.get(V16), specs.get(V8)], d)
    return {vid: d / "observations" / observation_name(vid, 0) for vid in (V16, V8)}


def test_replay_names_hardware_ignoring_the_base_offset(specs, off_recorded, tmp_path):
    """A device that swizzles by the address alone: every off-boundary case differs, and the
    comparator names it; the cases on the boundary still pass."""
    from dataclasses import replace

    from ptxconf.run.replay import replay_dir

    for vid, path in off_recorded.items():
        v = specs.get(vid)
        hw = replace(wg.model_of(v), ignore_base_offset=True)

        def change(chk, inw, outw, v=v, hw=hw):
            outw[:] = wg.apply(v, inw, chk["params"]["imm"], hw)[:, :, : outw.shape[2]]

        bad = _tamper(path, tmp_path / vid.replace("/", "_") / "observations", change)
        assert replay_dir(specs, bad.parent.parent, quiet=True) != 0
        verdicts = replay_file(specs, bad)
        failed = {vd.check: vd for vd in verdicts if vd.status == "fail"}
        assert all("[bo]" in c or ",bo]" in c or c.startswith("value") for c in failed), sorted(failed)
        assert any(c.startswith("value") for c in failed) and any("bo]" in c for c in failed)
        for vd in failed.values():
            assert "fault: base offset ignored" in vd.message, (vd.check, vd.message)


def test_replay_catches_a_wrong_base_offset_in_the_descriptor(specs, off_recorded, tmp_path):
    """The descriptors of off-boundary cases carry 0, the device honours what they say. The emulator
    reads a descriptor as the device does, so D alone agrees with it: the comparator checks the
    base offset against the rule and where the generator started the pattern (recorded per case)."""
    from ptxconf.run.replay import replay_dir

    path = off_recorded[V16]
    v = specs.get(V16)
    field = v.doc.descriptor.fields["base_offset"]

    def change(chk, inw, outw):
        inw[:, :, 1] &= ~np.uint32(field.mask << (field.lo - 32))
        inw[:, :, 3] &= ~np.uint32(field.mask << (field.lo - 32))
        outw[:] = wg.apply(v, inw, chk["params"]["imm"])[:, :, : outw.shape[2]]

    bad = _tamper(path, tmp_path / "observations", change)
    assert replay_dir(specs, tmp_path, quiet=True) != 0
    failed = [vd for vd in replay_file(specs, bad) if vd.status == "fail"]
    assert {vd.check for vd in failed} == {c for c in (ch["check"] for ch in load_observation(path)[0]["checks"])
                                          if c.startswith("value") or "bo]" in c}
    for vd in failed:
        assert "break the base-offset rule" in vd.message and "descriptor base offset 0 where §9.7.15.5.1.2.2 requires" in vd.message, vd.message
        assert "off its" in vd.message


# --- figures, reuse, ptxas --------------------------------------------------------------------


def test_figures(tmp_path, capsys):
    assert main(["wgmma", "figures", "-o", str(tmp_path), "--n", "16"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["A.m64k16.svg", "A.m64k256.svg", "A.m64k32.svg", "A.m64k8.svg", "D-m64n16.svg",
                     "swizzle-128B.svg", "swizzle-32B.svg", "swizzle-64B.svg", "swizzle-none.svg"]
    d = (tmp_path / "D-m64n16.svg").read_text()
    assert "T127: d7" in d and "T0: d0" in d  # the one figure engine's labels, as the ISA draws them
    a = (tmp_path / "A.m64k16.svg").read_text()
    assert "T127: a7" in a and "d0" not in a  # register A cells are a<i>, not d<i>
    assert "r7 c7" in (tmp_path / "swizzle-128B.svg").read_text()


def test_reuse_probe_on_emulator(tmp_path, capsys):
    out = tmp_path / "reuse"
    assert main(["wgmma", "reuse", "--backend", "emulator", "--select", V16R, "--out", str(out)]) == 0
    rep = json.loads((out / "reuse.json").read_text())
    assert rep["forms"][0]["cases"] and set(rep["forms"][0]["cases"]) == {"issued"}
    assert "register-reuse probe on the emulator (no hardware observed" in capsys.readouterr().out


SAMPLE = [
    "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16/ss",
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16/rs",
    "wgmma.mma_async.sync.aligned.m64n136k8.f32.tf32.tf32/ss",
    "wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e5m2/rs",
    "wgmma.mma_async.sync.aligned.m64n24k32.satfinite.s32.s8.u8/ss",
    "wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc/rs",
]


@pytest.mark.ptxas
@pytest.mark.parametrize("which", ["path", "pinned"])
def test_ptxas_accepts_sampled_forms(specs, which):
    from ptxconf.backends.ptxas import find_pinned_ptxas
    from ptxconf.families.wgmma.assemble import assemble_forms

    exe = shutil.which("ptxas") if which == "path" else find_pinned_ptxas()
    if not exe:
        pytest.skip(f"no {which} ptxas (the pinned one comes from pip install nvidia-cuda-nvcc==13.5.37, see .ci/run)")
    forms = [specs.get(i) for i in SAMPLE]
    rows = assemble_forms(forms, "sm_90a", exe) + assemble_forms(forms[:2], "sm_100a", exe, below_min=False)
    bad = [r for r in rows if not r.agrees]
    assert not bad, bad
    assert {(r.arch, r.expected, r.actual) for r in rows} >= {("sm_90a", "valid", "assembles"), ("sm_100a", "invalid", "rejected")}
    # mixed integer types: rejected below .version 8.4
    assert any(r.version == "8.3" and r.actual == "rejected" for r in rows)


@pytest.mark.skipif(not (H100 / "observations").exists(), reason="no recorded H100 wgmma run yet (results/h100-wgmma)")
def test_recorded_h100_wgmma_replays():
    from ptxconf.run.replay import replay_dir

    assert replay_dir(load_specs(), H100, quiet=True) == 0


@pytest.mark.gpu
def test_wgmma_on_the_gpu(specs, tmp_path):
    from ptxconf.backends.pycuda_backend import PyCudaBackend, gpu_available
    from ptxconf.run.runner import RunRequest, run_variants

    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    backend = PyCudaBackend()
    if backend.compute_capability() != (9, 0):
        pytest.skip("wgmma needs sm_90a (an H100/H200)")
    outs = []
    run_variants(backend, [specs.get(v) for v in RECORDED], RunRequest(0), on_outcome=outs.append)
    backend.close()
    bad = [(vd.variant, vd.check, vd.message) for o in outs for vd in o.verdicts if vd.status != "pass"]
    assert not bad, bad


@pytest.mark.parametrize("vid", [V16, V8, "wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc/ss"])
def test_all_cases_read_at_once_as_one_by_one(specs, vid):
    """The comparator reads every case's A and B in one gather (``read_matrices``): the same bits as reading them
    case by case, under the spec's model and under fault hypotheses that move the layout."""
    v = specs.variants[vid]
    model = wg.model_of(v)
    sets = wgc.make_cases(v, 3, ("value", "map.A", "map.B"))
    for m in (model, replace(model, swap_lbo_sbo=True), replace(model, core_transpose=True, major_flip=("B",))):
        for cs in sets:
            words, trans = cs.words, cs.params["imm"]
            img = wg.image_of(v, words)
            for op, lo, hi in (("A", 0, 1), ("B", 2, 3)):
                t = trans.get(f"trans_{op.lower()}", 0)
                got = wg.read_matrices(m, v, img, words[:, 0, lo], words[:, 0, hi], op, t)
                one = [wg.read_matrix(m, v, img[c], wg.decode_words(m, words[c, 0, lo], words[c, 0, hi]), op, t)
                       for c in range(len(words))]
                assert np.array_equal(got, np.stack(one)) and got.shape[0] == len(words)
