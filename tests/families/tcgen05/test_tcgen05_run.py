"""tcgen05.mma run variants: emulator end to end, H100 skip, wrong-descriptor spec caught on replay, ptxas."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.cli import main
from ptxconf.families.tcgen05 import cases as tc
from ptxconf.families.tcgen05.compare import compare_tcgen05
from ptxconf.isa import load_specs
from ptxconf.isa.loader import default_specs_dir
from ptxconf.isa.targets import PtxVersion, parse_target
from ptxconf.oracle import mma
from ptxconf.run.observations import records, write_observation
from ptxconf.run.replay import replay_dir
from ptxconf.run.runner import RunRequest, plan_variant, run_variants

SPECS = load_specs()
VARIANTS = tc.register(SPECS)
CASES = 2
N_ALL = 25  # 12 dense + 6 sparse (f16, f8f6f4, i8) + 7 block-scaled (mxf8f6f4 2, mxf4 2, mxf4nvf4 3)


def _run(cc, variants=VARIANTS, cases=CASES):
    outcomes, skips = [], []
    run_variants(EmulatorBackend(mma, cc=cc), variants, RunRequest(0, value_cases=cases),
                 on_outcome=outcomes.append, on_skip=lambda v, why: skips.append((v.id, why)))
    return outcomes, skips


def test_run_set_is_seeded_per_kind_and_valid():
    ids = [v.id for v in VARIANTS]
    assert len(ids) == N_ALL and len(set(ids)) == N_ALL
    for kind in tc.RUN_KINDS:
        assert sum(f"tcgen05.mma.cta_group::1.kind::{kind}." in i for i in ids) == tc.PER_KIND
    assert sum(v.sparse for v in VARIANTS) == 6 and sum(v.vec is not None for v in VARIANTS) == 7
    doc = SPECS.documents["tcgen05.mma"]
    assert all(doc.valid_on(v.t, "sm_100a", str(v.min_ptx)) is None for v in VARIANTS)
    assert ids == [v.id for v in tc.run_variants(doc)]  # reproducible
    assert SPECS.select("tcgen05*") == VARIANTS


def test_emulator_run_passes_and_a_wrong_d_fails():
    outcomes, skips = _run((10, 0))
    assert not skips and len(outcomes) == N_ALL
    assert all(vd.status == "pass" for o in outcomes for vd in o.verdicts), [vd.details(None) for o in outcomes for vd in o.verdicts]
    o = outcomes[0]
    out = o.out_words.copy()
    out[1, 3, 5] ^= 1 << 20  # case 0, warp 1, lane 3, column 5: D row 35
    vd = compare_tcgen05(o.plan.variant, records(o.plan, out)[0])
    assert vd.status == "fail" and "1 of" in vd.message
    assert any("case 0 Tensor Memory lane 35 column 5" in line for line in vd.map_diff), vd.map_diff


def test_plan_keeps_ctas_whole():
    v = VARIANTS[4]
    plan = plan_variant(v, 3, (10, 0), PtxVersion(9, 0), value_cases=5)
    assert plan.warps_per_block == 4 and plan.target.name.startswith("sm_10")
    rows = np.concatenate(plan.launches)
    assert sorted(rows) == list(range(20))
    for launch in plan.launches:
        assert np.all(launch.reshape(-1, 4) % 4 == np.arange(4)) and np.all(np.diff(launch.reshape(-1, 4), axis=1) == 1)


def test_h100_skips_with_the_reason():
    outcomes, skips = _run((9, 0), VARIANTS[:3])
    assert not outcomes and len(skips) == 3
    assert all("sm_100a" in why and "compute capability 9.0" in why for _, why in skips)


def test_cli_run_select_skips_on_the_default_emulator(tmp_path, capsys):
    # Everything skipped: nothing ran, which is not a pass (exit 5, as pytest's "no tests ran").
    assert main(["run", "--backend", "emulator", "--select", "tcgen05*", "--out", str(tmp_path), "--quiet"]) == 5
    out = capsys.readouterr().out
    assert "0 passed" in out and f"{N_ALL} skipped" in out
    rec = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {r["family"] for r in rec} == {"tcgen05.mma"} and all("compute capability 12.0" in r["message"] for r in rec)


def _record(tmp_path: Path) -> Path:
    outcomes, _ = _run((10, 0))
    run = tmp_path / "run"
    for o in outcomes:
        write_observation(run / "observations", o.plan, o.out_words, pending=False)
    return run


def _wrong_specs(tmp_path: Path, old: str, new: str) -> Path:
    d = tmp_path / "wrong"
    shutil.copytree(default_specs_dir(), d)
    src = (d / "tcgen05.yaml").read_text()
    assert old in src
    (d / "tcgen05.yaml").write_text(src.replace(old, new, 1))
    return d


def test_replay_under_a_spec_with_the_n_field_moved_names_the_field(tmp_path, capsys):
    run = _record(tmp_path)
    assert replay_dir(load_specs(), run, quiet=True) == 0
    # The dense-family N field moved up one bit (bits 18-23), the reserved bit 23 down to 17.
    wrong = _wrong_specs(tmp_path, "- {name: n, bits: [17, 22], dim: N, shift: 3}\n        - {name: reserved23, bits: [23, 23], reserved: true}",
                         "- {name: n, bits: [18, 23], dim: N, shift: 3}\n        - {name: reserved23, bits: [17, 17], reserved: true}")
    out = tmp_path / "replayed"
    assert replay_dir(load_specs(wrong), run, quiet=True, out=out) == 1
    recs = {json.loads(line)["variant"]: json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()}
    dense = [v.id for v in VARIANTS if v.t.kind in ("f16", "tf32", "f8f6f4", "i8")]
    for vid in dense:
        r = recs[vid]
        assert r["status"] == "fail", vid
        assert "field n (bits 18-23)" in r["details"] and "the case was built for N = " in r["details"], r["details"]
    # f16, bf16 m128n224k16: n = 28 at bit 17 reads 14 at bit 18: N = 112; columns 112.. keep C.
    r = recs["tcgen05.mma.cta_group::1.kind::f16.f32.bf16.bf16.m128n224k16"]
    assert "gives N = 112" in r["details"] and "n (bits 18-23): recorded 14, this spec encodes 28" in r["details"]


def test_replay_under_a_wrong_swizzle_code_fails(tmp_path):
    run = _record(tmp_path)
    wrong = _wrong_specs(tmp_path, "codes: {none: 0, 128B_base32B: 1, 128B: 2, 64B: 4, 32B: 6}",
                         "codes: {none: 0, 128B_base32B: 1, 128B: 2, 64B: 6, 32B: 4}")
    assert replay_dir(load_specs(wrong), run, quiet=True, out=tmp_path / "r2") == 1


@pytest.mark.ptxas
def test_run_probes_assemble_for_sm_100a():
    from ptxconf.backends.ptxas import assemble

    exe = shutil.which("ptxas")
    if exe is None:
        pytest.skip("no ptxas on PATH")
    probes = [tc.TcProbe(v) for v in VARIANTS]
    ok, err = assemble(tc.module_source(probes, max(v.min_ptx for v in VARIANTS), parse_target("sm_100a")), "sm_100a", exe)
    assert ok, err
    ok, err = assemble(tc.module_source(probes[:1], PtxVersion(8, 6), parse_target("sm_90a")), "sm_90a", exe)
    assert not ok and "tcgen05" in err


def _replay_wrong(tmp_path: Path, old: str, new: str, which) -> dict:
    run = _record(tmp_path)
    wrong = _wrong_specs(tmp_path, old, new)
    out = tmp_path / "replayed"
    assert replay_dir(load_specs(wrong), run, quiet=True, out=out) == 1
    recs = {json.loads(line)["variant"]: json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()}
    for v in VARIANTS:
        r = recs[v.id]
        assert (r["status"] == "fail") == which(v), (v.id, r["status"], r["details"][:400])
    return recs


def test_replay_under_a_wrong_scale_factor_layout_names_it(tmp_path):
    # Scale factors of all 128 rows in one column (lanes 0-127) instead of 32 lanes x 4 columns.
    recs = _replay_wrong(tmp_path, "lanes_per_column: 32 ", "lanes_per_column: 128 ", lambda v: v.vec is not None)
    for v in VARIANTS:
        if v.vec:
            d = recs[v.id]["details"]
            assert "D elements differ" in recs[v.id]["message"] and not recs[v.id]["message"].startswith("0 of"), recs[v.id]["message"]
            assert "tmem_operands.scale_factor.lanes_per_column = 128" in d and "lanes_per_column = 32" in d, d[:600]


def test_replay_under_a_wrong_metadata_layout_names_it(tmp_path):
    # The two 2-bit indices of a chunk swapped.
    recs = _replay_wrong(tmp_path, "index_bits: [0, 2]", "index_bits: [2, 0]", lambda v: v.sparse)
    for v in VARIANTS:
        if v.sparse:
            d = recs[v.id]["details"]
            assert not recs[v.id]["message"].startswith("0 of"), recs[v.id]["message"]
            assert "tmem_operands.sparse_metadata.index_bits = [2, 0]" in d, d[:600]


def test_sparse_and_scaled_semantics_by_hand():
    """One sparse and one block-scaled case recomputed here from the recorded metas, not through decode_case."""
    outcomes, _ = _run((10, 0), [v for v in VARIANTS if v.aux][:1] + [v for v in VARIANTS if v.vec][:1])
    from ptxconf.isa.ptxtypes import ptx_type
    for o in outcomes:
        v, m = o.plan.variant, o.plan.case_sets[0].meta["cases"][0]
        view = tc.decode_case(v, o.plan.in_words[:4])
        a = ptx_type(v.t.atype).decode(view.bits["A"])
        b = ptx_type(v.t.btype).decode(view.bits["B"])
        if v.sparse:
            idx = np.array(m["metadata"])
            dense = np.zeros((128, v.t.K))
            for r in range(128):
                for c in range(v.t.K // 4):
                    dense[r, 4 * c + idx[r, c]] = a[r, 2 * c : 2 * c + 2]
            a = dense
        else:
            st = ptx_type(v.t.scale)
            a = a * np.repeat(st.decode(np.array(m["scale_A"], dtype=np.uint64)), v.t.K // v.vec, axis=1)
            b = b * np.repeat(st.decode(np.array(m["scale_B"], dtype=np.uint64)), v.t.K // v.vec, axis=1)
        c = ptx_type(v.t.dtype).decode(view.bits["C"])
        want = a @ b.T + c
        got = ptx_type(v.t.dtype).decode(tc.d_rows(v, o.out_words[:4]))
        assert np.array_equal(want.astype(np.float32) if v.t.dtype == "f32" else want, got), v.id
