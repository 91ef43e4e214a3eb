"""wgmma.mma_async.sp: form counts, spec invariants and literal maps, emulator runs, fault naming on
replayed observations under a wrong spec, ptxas acceptance."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from ptxconf.cli import main
from ptxconf.families.wgmma_sp import cases as spc
from ptxconf.families.wgmma_sp import probe as sp
from ptxconf.isa import SpecError, load_specs
from ptxconf.isa.loader import check_layout, load_file
from ptxconf.run.replay import replay_file

ROOT = Path(__file__).resolve().parents[3]
YAML = ROOT / "specs" / "wgmma_sp.yaml"
P = "wgmma.mma_async.sp.sync.aligned."
F16R = P + "m64n16k32.f32.f16.f16/rs"
F16S = P + "m64n8k32.f16.f16.f16/ss"
TF32S = P + "m64n16k16.f32.tf32.tf32/ss"
S8R = P + "m64n16k64.s32.s8.u8/rs"
E4S = P + "m64n24k64.f32.e4m3.e5m2/ss"
RECORDED = (F16R, F16S, TF32S, S8R)


@pytest.fixture(scope="module")
def specs():
    return load_specs()


@pytest.fixture(scope="module")
def doc(specs):
    return specs.documents["wgmma.sp"]


# --- forms and invariants ----------------------------------------------------------------------


def test_form_counts(doc):
    assert len(doc.variants) == 1056
    by = Counter((v.atype, v.a_src) for v in doc.variants)
    per_type = {"f16": 64, "bf16": 32, "tf32": 32, "e4m3": 128, "e5m2": 128, "s8": 72, "u8": 72}
    assert by == Counter({(t, a): n for t, n in per_type.items() for a in ("shared", "registers")})
    assert {v.K for v in doc.variants if v.atype in ("f16", "bf16")} == {32}
    assert {v.K for v in doc.variants if v.atype == "tf32"} == {16}
    assert {v.K for v in doc.variants if v.bits == 8} == {64}
    mixed = [v for v in doc.variants if {v.atype, v.btype} == {"s8", "u8"}]
    assert len(mixed) == 144 and {str(v.min_ptx) for v in mixed} == {"8.4"}
    assert {str(v.min_ptx) for v in doc.variants if v not in mixed} == {"8.2"}
    assert all([t.name for t in v.requires] == ["sm_90a"] for v in doc.variants)
    v = doc.select(id=P + "m64n8k32.f16.f16.f16/rs")[0]
    assert v.immediates == ("scale_a", "scale_b", "trans_b") and v.selectors == (0, 1)
    assert doc.select(id=P + "m64n8k64.s32.u8.u8/ss")[0].immediates == () and doc.select(id=P + "m64n8k64.s32.u8.u8/ss")[0].selectors == (0,)
    assert all(v.section and v.table and v.operands["metadata"].layout.figure for v in doc.variants)


def test_specs_list_json_lists_every_form(capsys):
    assert main(["specs", "list", "--json", "--select", "wgmma.mma_async.sp*"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1056 and all(r["family"] == "wgmma.sp" for r in rows)
    row = next(r for r in rows if r["id"] == F16R)
    assert row["operands"]["A"] == {"type": "f16", "layout": "A.sp.k32.b16", "registers": 4, "register_type": "b32"}
    assert row["operands"]["metadata"]["registers"] == 1 and row["operands"]["D"]["registers"] == 8


def test_fragments_cover_their_tiles_once(doc):
    seen = set()
    for v in doc.variants:
        for op in v.operands.values():
            for params in op.param_combinations():
                key = (op.layout.name, op.layout.cols, tuple(params.items()))
                if key not in seen:
                    seen.add(key)
                    check_layout(op.layout, params=params or None)
    assert {k[0].split("[")[0] for k in seen} == {"D.m64nN", "A.sp.k32.b16", "A.sp.k16.b32", "A.sp.k64.b8", "meta.pair", "meta.quad"}


@pytest.mark.parametrize("vid,lanes", [(F16R, {0: (0, 1), 1: (2, 3)}), (TF32S, {0: (0, 1), 1: (2, 3)}), (S8R, {0: (0, 1, 2, 3)})])
def test_metadata_threads_per_selector(specs, vid, lanes):
    """Which threads of each group of four supply the metadata, per selector (§9.7.15.6.1)."""
    op = specs.get(vid).operands["metadata"]
    assert op.params["selector"] == tuple(lanes)
    for sel, tids in lanes.items():
        held = op.layout.held({"selector": sel})
        supplying = sorted({int(ln) % 4 for ln in np.nonzero(held.any(1))[0]})
        assert supplying == list(tids)
        assert held[np.isin(np.arange(128) % 4, tids)].all()  # every field of a supplying lane describes a chunk


# Literal headline maps, (lane, field) -> (row, field col), transcribed by hand from the ISA figures.
META_PAIR_SEL1 = {(2, 0): (0, 0), (2, 7): (0, 7), (2, 8): (8, 0), (3, 0): (0, 8), (3, 15): (8, 15),
                  (38, 3): (17, 3), (127, 9): (63, 9), (126, 9): (63, 1)}
META_QUAD = {(0, 0): (0, 0), (0, 15): (0, 15), (1, 0): (8, 0), (2, 0): (0, 16), (3, 15): (8, 31),
             (33, 4): (24, 4), (34, 4): (16, 20), (127, 15): (63, 31)}
A_K32 = {(0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (8, 0), (0, 4): (0, 8), (5, 0): (1, 2), (5, 7): (9, 11), (32, 0): (16, 0)}


def _cell(lay, lane, e, params=None):
    m = lay.map(params)
    return int(m[lane, e, 1]), int(m[lane, e, 2])


def test_literal_headline_maps(specs):
    f16 = specs.get(F16R)
    for (lane, i), cell in META_PAIR_SEL1.items():
        assert _cell(f16.operands["metadata"].layout, lane, i, {"selector": 1}) == cell, (lane, i)
    q = specs.get(S8R).operands["metadata"].layout
    for (lane, i), cell in META_QUAD.items():
        assert _cell(q, lane, i, {"selector": 0}) == cell, (lane, i)
    for (lane, e), cell in A_K32.items():
        assert _cell(f16.operands["A"].layout, lane, e) == cell, (lane, e)


def test_specs_show_metadata_json(capsys):
    assert main(["specs", "show", S8R, "--operand", "metadata", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["shape"] == [64, 32] and out["params"] == {"selector": 0}
    rows = {(lane, e): (r, c) for lane, e, r, c in out["map"]}
    assert len(rows) == 128 * 16 and rows[(34, 4)] == (16, 20)


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = YAML.read_text()
    assert old in text, old
    p = tmp_path / "wgmma_sp.yaml"
    p.write_text(text.replace(old, new, 1))
    return p


@pytest.mark.parametrize("old,new,field,line_of", [
    ('col: "8 * (threadID_in_group & 1) + (i & 7)"', 'col: "(i & 7)"', "layouts.meta.pair.", "  meta.pair:"),
    ('where: "selector == 0"', 'where: "selector == 1"', "layouts.meta.quad.", "  meta.quad:"),
    ("f16: {width: 4, nz: 2}", "f16: {width: 4, nz: 1}", "sparsity.types.f16", "    f16: {width: 4, nz: 2}"),
    ("k: 16\n", "k: 15\n", "forms[1].k", "    k: 16"),
])
def test_bad_spec_names_file_line_field(tmp_path, old, new, field, line_of):
    path = _broken(tmp_path, old, new)
    with pytest.raises(SpecError) as exc:
        load_file(path)
    lines = YAML.read_text().splitlines()
    want_line = next(n for n, text in enumerate(lines, 1) if text.startswith(line_of))
    assert exc.value.field.startswith(field) and exc.value.file == str(path), str(exc.value)
    assert exc.value.line is not None and abs(exc.value.line - want_line) <= 12, str(exc.value)
    assert main(["specs", "list", "--specs", str(tmp_path)]) == 2


# --- emulator ---------------------------------------------------------------------------------


def _run(variants, out: Path):
    from ptxconf.backends.emulator import EmulatorBackend
    from ptxconf.oracle import mma
    from ptxconf.run.runner import RunRequest, run_variants

    outs = []
    run_variants(EmulatorBackend(mma), variants, RunRequest(0, observations=out / "observations"), outs.append)
    return outs


def test_emulator_runs_a_sample_of_every_type(tmp_path, capsys):
    sel = [F16R, F16S, TF32S, S8R, E4S, P + "m64n256k32.f32.bf16.bf16/ss", P + "m64n8k64.satfinite.s32.u8.s8/rs"]
    args = ["run", "--backend", "emulator", "--out", str(tmp_path / "run")]
    for vid in sel:
        args += ["--select", vid]
    assert main(args) == 0
    results = _results(tmp_path / "run")
    assert {r.get("status") for r in results} == {"pass"}
    assert any("map.metadata" in json.dumps(r) for r in results)


def _results(d: Path) -> list[dict]:
    return [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines() if line.strip()]


def test_cases_vary_selector_metadata_and_swizzle(specs):
    v = specs.get(F16S)
    sets = spc.make_cases(v, 0, ("value", "map.A", "map.B", "map.metadata"))
    assert {cs.params["imm"]["sel"] for cs in sets} == {0, 1}
    assert {cs.check.split("[")[0] for cs in sets} == {"value", "map.A", "map.B", "map.metadata"}
    value = next(cs for cs in sets if cs.check.startswith("value"))
    modes = {cfg["A"][0] for cfg in value.meta["layouts"]} | {cfg["B"][0] for cfg in value.meta["layouts"]}
    assert modes == {"none", "32B", "64B", "128B"}
    words = value.words[:, :, sp.META_WORD]
    assert len({tuple(w) for w in words}) == len(words) and len(set(words[0].tolist())) > 64  # lanes and cases differ
    # lanes outside the selector carry legal metadata too: no nibble with equal indices
    nib = (words[..., None] >> (4 * np.arange(8, dtype=np.uint32))) & 0xF
    assert not np.isin(nib, [0b0000, 0b0101, 0b1010, 0b1111]).any()


def test_k_major_b_wider_than_the_swizzle_row_is_not_probed(specs):
    v = specs.get(S8R)  # B: 64 bytes along K
    for cs in spc.make_cases(v, 3, ("value",)):
        assert "32B" not in {cfg["B"][0] for cfg in cs.meta["layouts"]}


# --- fault naming on replayed observations -----------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, specs):
    from ptxconf.run.observations import observation_name

    d = tmp_path_factory.mktemp("wgsp-rec")
    _run([specs.get(vid) for vid in RECORDED], d)
    return {vid: d / "observations" / observation_name(vid, 0) for vid in RECORDED}


def test_recorded_observations_pass_today(specs, recorded):
    for path in recorded.values():
        assert all(vd.status == "pass" for vd in replay_file(specs, path))


FAULTS = [
    ("selector-inverted", 'where: "threadID_in_group >> 1 == selector"', 'where: "threadID_in_group >> 1 != selector"',
     (F16R, TF32S), "metadata from the lanes of selector"),
    ("meta-one-row-per-lane", 'row: "16 * warp + groupID + 8 * (i >> 3)"\n    col: "8 * (threadID_in_group & 1) + (i & 7)"',
     'row: "16 * warp + groupID + 8 * (threadID_in_group & 1)"\n    col: "i"', (F16R, F16S), "in 16-bit halves"),
    ("meta-halves", 'row: "16 * warp + groupID + 8 * (threadID_in_group & 1)"\n    col: "16 * (threadID_in_group >> 1) + i"',
     'row: "16 * warp + groupID + 8 * (i >> 3)"\n    col: "8 * threadID_in_group + (i & 7)"', (S8R,), "each metadata lane describes one row"),
    ("d-fragment", 'col: "8 * (i >> 2) + 2 * threadID_in_group + (i & 1)"', 'col: "8 * (i >> 2) + threadID_in_group + 4 * (i & 1)"',
     (F16R, S8R), "wrong D fragment"),
    ("swizzle", "64B: {code: 2, width: 64, repeat: 512}\n    32B: {code: 3, width: 32, repeat: 256}",
     "64B: {code: 3, width: 64, repeat: 512}\n    32B: {code: 2, width: 32, repeat: 256}", (F16S, TF32S), "wrong swizzle"),
]


@pytest.mark.parametrize("name,old,new,vids,fault", FAULTS, ids=[f[0] for f in FAULTS])
def test_comparator_names_the_fault(tmp_path, recorded, name, old, new, vids, fault):
    wrong = load_file(_broken(tmp_path, old, new))
    for vid in vids:
        failed = [vd for vd in replay_file(wrong, recorded[vid]) if vd.status == "fail"]
        assert failed, f"{name}: the wrong spec passed {vid}"
        assert any(fault in vd.message for vd in failed), (vid, [vd.message for vd in failed])
        for vd in failed:
            assert "lane" in vd.details(None), vd.details(None)


def test_wrong_metadata_layout_names_the_lanes(tmp_path, recorded):
    """Replay under a metadata layout with the pair's halves exchanged: map.metadata names, per chunk,
    the lane and bits the hardware took the indices from and the lane the (wrong) spec says."""
    wrong = load_file(_broken(tmp_path, 'col: "8 * (threadID_in_group & 1) + (i & 7)"', 'col: "8 * (1 - (threadID_in_group & 1)) + (i & 7)"'))
    vds = [vd for vd in replay_file(wrong, recorded[F16R]) if vd.check.startswith("map.metadata") and vd.status == "fail"]
    assert vds
    lines = [ln for vd in vds for ln in vd.map_diff if "the hardware's indices match lane" in ln]
    assert lines, [vd.map_diff for vd in vds]
    # row 0 chunk 0 comes from lane 0 (selector 0) or lane 2 (selector 1); the wrong spec says lane 1 / lane 3
    assert any(ln.startswith("row 0 chunk 0 field 0: the hardware's indices match lane 0 bits [1:0]") and "the spec: lane 1" in ln
               or ln.startswith("row 0 chunk 0 field 0: the hardware's indices match lane 2 bits [1:0]") and "the spec: lane 3" in ln
               for ln in lines), lines


def test_wrong_a_fragment_names_lanes_and_positions(tmp_path, recorded):
    wrong = load_file(_broken(tmp_path, 'col: "2 * threadID_in_group + (i & 1) + 8 * (i >> 2)"',
                              'col: "2 * threadID_in_group + (i & 1) + 8 * ((i >> 2) ^ (warp & 1))"'))
    vds = [vd for vd in replay_file(wrong, recorded[F16R]) if vd.status == "fail"]
    assert vds and any(vd.check.startswith("map.A") for vd in vds)
    detail = "\n".join(vd.details(None) for vd in vds if vd.check.startswith("map.A"))
    assert "lane 32 register" in detail or "lane 3" in detail
    assert "(dense): the hardware has stored A(" in detail, detail


# --- ptxas ------------------------------------------------------------------------------------


@pytest.mark.ptxas
def test_ptxas_accepts_sampled_forms_for_sm90a_only(doc):
    from ptxconf.backends.ptxas import assemble

    exe = shutil.which("ptxas") or ("/usr/local/bin/ptxas" if Path("/usr/local/bin/ptxas").exists() else None)
    if exe is None:
        pytest.skip("no ptxas")
    from ptxconf.isa.targets import PtxVersion, parse_target

    sample = doc.variants[::53] + [doc.select(id=S8R)[0], doc.select(id=P + "m64n256k32.f16.f16.f16/ss")[0]]
    for v in sample:
        probe = sp.SpProbe(v, tuple(sorted(spc.immediate_sets(v)[-1].items())))
        ok, log = assemble(sp.module_source([probe], v.min_ptx, parse_target("sm_90a")), "sm_90a", exe)
        assert ok, (v.id, log)
        ok, _ = assemble(sp.module_source([probe], max(v.min_ptx, PtxVersion(8, 0)), parse_target("sm_90")), "sm_90", exe)
        assert not ok, f"{v.id}: ptxas accepted it for sm_90"
        below = PtxVersion(8, 3) if str(v.min_ptx) == "8.4" else PtxVersion(8, 1)
        ok, _ = assemble(sp.module_source([probe], below, parse_target("sm_90a")), "sm_90a", exe)
        assert not ok, f"{v.id}: ptxas accepted .version {below}"
