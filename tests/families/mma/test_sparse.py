"""mma.sp / mma.sp::ordered_metadata: spec invariants, literal maps, oracle cases, replay of a broken metadata spec."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.families.mma.cases import make_checks
from ptxconf.isa.loader import load_specs
from ptxconf.isa.sparse import compress, densify, positions, sparsity
from ptxconf.isa.targets import PtxVersion
from ptxconf.oracle import mma
from ptxconf.run.replay import replay_dir
from ptxconf.run.runner import RunRequest, plan_variant, run_variants

REPO = Path(__file__).resolve().parents[3]
SPECS = load_specs(REPO / "specs")
SPARSE = [v for v in SPECS.variants.values() if v.family == "mma.sp"]
H100 = REPO / "results" / "h100-sparse"

F16K16 = "mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
BF16K32 = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32"
U8K32 = "mma.sp.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32"
TF32K16 = "mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32"
U4K128 = "mma.sp::ordered_metadata.sync.aligned.m16n8k128.row.col.satfinite.s32.s4.u4.s32"
FP8K64 = "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.kind::f8f6f4.f16.e2m1.e3m2.f16"


def test_variant_counts():
    assert len(SPARSE) == 193  # 138 unscaled + 55 block-scaled (tests/families/mma/test_sparse_block_scaled.py)
    count = {}
    for v in SPARSE:
        key = (v.shape[2], v.operands["A"].type.name[:2])
        count[key] = count.get(key, 0) + 1
    assert count[(16, "f1")] == 4 and count[(32, "f1")] == 4 and count[(16, "bf")] == 2
    assert count[(8, "tf")] == 2 and count[(16, "tf")] == 2
    assert sum(1 for v in SPARSE if v.instruction.kind == "f8f6f4") == 50
    assert sum(1 for v in SPARSE if v.instruction.block_scale) == 55
    assert all(v.instruction.sparse == "ordered" for v in SPARSE if v.instruction.kind)


@pytest.mark.parametrize("vid", [v.id for v in SPARSE])
def test_sparse_invariants(vid):
    v = SPECS.variants[vid]
    m, n, k = v.shape
    a, meta = v.operands["A"], v.operands["metadata"]
    assert (a.layout.rows, a.layout.cols) == (m, k // 2)
    assert meta.registers == 1 and meta.type.bits == 2
    sp = sparsity(v)
    assert sp.width == 2 * sp.nz and sp.chunks * sp.width == k
    # 4:8 in pairs for 4-bit elements packed eight to a register (.u4/.s4, .kind::mxf4* .e2m1)
    assert sp.nz == (1 if a.type.name == "tf32" else 4 if a.fragment.per_register == 8 else 2)
    selectors = [p["selector"] for p in meta.param_combinations()]
    lanes_per_quad = meta.layout.cols // 8
    assert len(selectors) == 4 // lanes_per_quad
    for sel in selectors:
        held = meta.layout.held({"selector": sel})
        lanes = np.nonzero(held.all(axis=1))[0]
        assert [int(x) % 4 for x in lanes[:lanes_per_quad]] == list(range(sel * lanes_per_quad, (sel + 1) * lanes_per_quad))
        assert not held[~held.all(axis=1)].any()  # a lane supplies all 16 fields or none
    legal = set(sp.patterns)
    if v.instruction.sparse == "ordered":
        assert all(p[0] < p[1] for p in legal)
    if sp.nz == 1:
        assert legal == {(0, 1), (2, 3)}  # 0b0100 and 0b1110 only
    else:
        assert len(legal) == (6 if v.instruction.sparse == "ordered" else 12)


def test_literal_metadata_maps():
    """Written from §9.7.14.6.1 (which lanes) and the layout taken for the figures (which bits)."""
    f16 = SPECS.get(F16K16).operands["metadata"].layout
    m = f16.map({"selector": 1})
    assert tuple(m[1, 0]) == (0, 0, 0)  # lane 1 bits [1:0]: row 0, chunk 0, slot 0
    assert tuple(m[1, 8]) == (0, 8, 0)  # bits [17:16]: row 8
    assert tuple(m[5, 3]) == (0, 1, 3)  # lane 5 bits [7:6]: row 1, chunk 1, slot 1
    assert m[0, 0, 0] == -1 and m[2, 0, 0] == -1  # only threadID_in_group 1 supplies
    u8 = SPECS.get(U8K32).operands["metadata"].layout.map({"selector": 1})
    assert tuple(u8[3, 9]) == (0, 8, 9)  # lane 3 = second lane of pair 1: chunk 4, slot 1, row 8
    assert tuple(u8[2, 7]) == (0, 0, 7)
    assert u8[1, 0, 0] == -1
    x4 = SPECS.get(U4K128).operands["metadata"].layout.map({"selector": 0})
    # 8- and 4-bit types, as the H100 shows (results/h100-sparse): even lanes row groupID, odd
    # lanes row groupID + 8; lanes 2 and 3 carry field cols 16..31.
    assert tuple(x4[6, 15]) == (0, 1, 31)  # lane 6: groupID 1, threadID_in_group 2; bits [31:30]
    assert tuple(x4[5, 0]) == (0, 9, 0)  # lane 5: groupID 1, threadID_in_group 1: row 9, bits [1:0]


def test_literal_compressed_a_maps():
    # m16n8k16 .f16: lane 5 (groupID 1, threadID_in_group 1) holds chunk 1 (dense cols 4..7), rows 1 and 9
    a = SPECS.get(F16K16).operands["A"].layout.map()
    assert [tuple(a[5, i, 1:]) for i in range(4)] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    # m16n8k16 .tf32: a0, a1 in chunk threadID_in_group (cols 2t..2t+1), a2, a3 in chunk t + 4
    t = SPECS.get(TF32K16).operands["A"].layout.map()
    assert [tuple(t[6, i, 1:]) for i in range(4)] == [(1, 2), (9, 2), (1, 6), (9, 6)]


def _tile(rows: list[list[int]], m: int, cols: int) -> np.ndarray:
    out = np.zeros((1, 1, m, cols), dtype=np.uint64)
    for r, row in enumerate(rows):
        out[0, 0, r, : len(row)] = row
    return out


def test_densify_literal():
    v = SPECS.get(F16K16)
    f16 = v.operands["A"].type
    comp = _tile([[0, 0, 0, 0, 0, 0, 0, 0]], 16, 8)
    comp[0, 0, 0, :4] = f16.encode(np.array([2.0, 3.0, 5.0, 7.0]))
    fields = _tile([[1, 3, 3, 0]], 16, 8)  # chunk 0: (1, 3); chunk 1: (3, 0), reversed: legal for mma.sp
    dense = f16.decode(densify(v, comp, fields))[0, 0, 0]
    assert list(dense) == [0, 2, 0, 3, 7, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0]
    tf = SPECS.get(TF32K16)
    comp = _tile([[11, 22]], 16, 8)
    fields = _tile([[2, 3, 0, 1]], 16, 16)  # 0b1110: position 1; 0b0100: position 0
    assert list(densify(tf, comp, fields)[0, 0, 0, :4]) == [0, 11, 22, 0]
    u4 = SPECS.get(U4K128)
    comp = _tile([[1, 2, 3, 4]], 16, 64)
    fields = _tile([[1, 3]], 16, 32)  # pairs 1 and 3 of the 8-wide chunk
    assert list(densify(u4, comp, fields)[0, 0, 0, :8]) == [0, 0, 1, 2, 0, 0, 3, 4]


def test_oracle_hand_computed_sparse_product():
    """m16n8k16 .f16 -> .f32, row 0 of A dense [0, 2, 0, 3 | 7, 0, 0, 5 | 0...], B[k, 0] = k + 1."""
    v = SPECS.get(F16K16)
    f16, f32 = v.operands["A"].type, v.operands["D"].type
    comp = np.zeros((1, 1, 16, 8), dtype=np.uint64)
    comp[0, 0, 0, :4] = f16.encode(np.array([2.0, 3.0, 5.0, 7.0]))
    fields = _tile([[1, 3, 3, 0]], 16, 8)
    b = np.zeros((1, 1, 16, 8), dtype=np.uint64)
    b[0, 0, :, 0] = f16.encode(np.arange(1.0, 17.0))
    c = np.zeros((1, 1, 16, 8), dtype=np.uint64)
    c[0, 0, 0, 0] = f32.encode(np.array([0.5]))[0]
    d = f32.decode(mma(v, {"A": comp, "B": b, "C": c, "metadata": fields}))
    # 2*2 + 3*4 + 7*5 + 5*8 + 0.5
    assert d[0, 0, 0, 0] == 2 * 2 + 3 * 4 + 7 * 5 + 5 * 8 + 0.5
    assert np.all(d[0, 0, 1:] == 0) and np.all(d[0, 0, 0, 1:] == 0)


@pytest.mark.parametrize("vid", [F16K16, BF16K32, U8K32, TF32K16, U4K128, FP8K64])
def test_compress_roundtrip_and_ordered_rule(vid):
    v = SPECS.get(vid)
    sp = sparsity(v)
    rng = np.random.default_rng(1)
    dense = np.zeros((3, 1, sp.m, sp.k), dtype=np.uint64)
    comp0, fields0 = compress(v, dense, rng)
    comp = rng.integers(1, 4, size=comp0.shape).astype(np.uint64)
    dense = densify(v, comp, fields0)
    comp2, fields2 = compress(v, dense, rng)
    assert np.array_equal(densify(v, comp2, fields2), dense)
    pairs = fields2.reshape(3, 1, sp.m, sp.chunks, 2)
    assert np.all(pairs[..., 0] != pairs[..., 1])
    if v.instruction.sparse == "ordered":
        assert np.all(pairs[..., 0] < pairs[..., 1])


@pytest.mark.parametrize("vid", [F16K16, BF16K32, TF32K16, U4K128])
def test_compress_picks_by_the_drawn_scores(vid):
    """compress's choice, chunk by chunk, as its rule says: of the patterns whose positions cover the chunk's
    non-zeros, the one with the highest drawn score (a pinned one first where it covers); one score per (case,
    chunk, pattern) from one draw, the generator left where that draw leaves it (seeds keep naming their cases)."""
    v = SPECS.get(vid)
    sp = sparsity(v)
    pats = [tuple(p) for p in sp.patterns]
    covers = [set(positions(sp, np.array([p]))[0].tolist()) for p in pats]
    draw = np.random.default_rng(5)
    fixed = draw.integers(-1, len(pats), size=(sp.m, sp.chunks))
    for cases, pin in ((0, None), (2, None), (3, fixed)):
        for zero in (True, False):
            dense = np.zeros((cases, 1, sp.m, sp.k), dtype=np.uint64)
            if not zero:  # at most one non-zero per chunk (any one position some pattern covers)
                at = draw.integers(0, sp.width, size=(cases, 1, sp.m, sp.chunks))
                cols = at + np.arange(sp.chunks) * sp.width
                np.put_along_axis(dense, cols, draw.integers(1, 4, size=cols.shape).astype(np.uint64), axis=-1)
            rng, ref = np.random.default_rng(cases), np.random.default_rng(cases)
            comp, fields = compress(v, dense, rng, pin)
            score = ref.random((cases, 1, sp.m, sp.chunks, len(pats)))
            for c, r, ch in np.ndindex(cases, sp.m, sp.chunks):
                held = {q for q in range(sp.width) if dense[c, 0, r, ch * sp.width + q]}
                ok = [held <= cov for cov in covers]
                want = [score[c, 0, r, ch, i] + 2.0 * ok[i] + (4.0 if pin is not None and pin[r, ch] == i and ok[i] else 0)
                        for i in range(len(pats))]
                got = tuple(fields[c, 0, r, 2 * ch : 2 * ch + 2].tolist())
                assert got == pats[int(np.argmax(want))]
            assert np.array_equal(densify(v, comp, fields), dense)
            assert rng.random() == ref.random()


def test_runner_covers_every_selector_value():
    for v in SPARSE:
        sels = {cs.params["metadata"]["selector"] for cs in make_checks(v, 0)}
        assert sels == {p["selector"] for p in v.operands["metadata"].param_combinations()}, v.id


def test_unselected_lanes_get_garbage_metadata():
    v = SPECS.get(F16K16)
    plan = plan_variant(v, 0, (12, 0), PtxVersion(9, 2))
    off = 0
    for name in v.inputs:
        if name == "metadata":
            break
        off += v.operands[name].words
    for cs in plan.case_sets:
        a, b = plan.slices[cs.check]
        sel = cs.params["metadata"]["selector"]
        words = plan.in_words[a:b, :, off]
        others = [lane for lane in range(32) if lane % 4 != sel]
        assert np.any(words[:, others] != 0)


def _swap_fields(specs_dir: Path) -> None:
    """sp.meta.x2: fields 0 and 2 (chunk 0 slot 0 <-> chunk 1 slot 0) swapped."""
    path = specs_dir / "mma_sp.yaml"
    text = path.read_text()
    old = 'col: "8 * (threadID_in_group & 0x1) + (i & 0x7)"'
    new = 'col: "8 * (threadID_in_group & 0x1) + (2 if (i & 0x7) == 0 else (0 if (i & 0x7) == 2 else (i & 0x7)))"'
    assert old in text
    path.write_text(text.replace(old, new))


def test_swapped_metadata_fields_fail_replay(tmp_path):
    """Observations recorded with the true spec (H100 run when committed, emulator until then) fail a swapped spec."""
    if (H100 / "observations").is_dir():
        run_dir = H100
    else:
        run_dir = tmp_path / "run"
        obs = run_dir / "observations"
        outcomes = []
        run_variants(EmulatorBackend(mma), [SPECS.get(U8K32), SPECS.get(BF16K32)], RunRequest(0, observations=obs),
                     on_outcome=outcomes.append)
        for o in outcomes:
            assert all(vd.status == "pass" for vd in o.verdicts)
    assert replay_dir(SPECS, run_dir, quiet=True) == 0
    bad = tmp_path / "specs"
    shutil.copytree(REPO / "specs", bad)
    _swap_fields(bad)
    out = tmp_path / "replay"
    assert replay_dir(load_specs(bad), run_dir, quiet=True, out=out) == 1
    text = (out / "results.jsonl").read_text() if (out / "results.jsonl").exists() else ""
    assert "map.metadata" in text and '"fail"' in text


def test_metadata_figure(tmp_path):
    from ptxconf.figures import metadata_figure

    path = metadata_figure(SPECS.get(U8K32), tmp_path / "e.svg", selector=1)
    svg = path.read_text()
    assert "T2: [1:0]" in svg and "T3: [31:30]" in svg


@pytest.mark.ptxas
@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")
def test_ptxas_assembles_every_sparse_probe():
    from ptxconf.backends import ptxas as px

    rows = px.assemble_report(SPARSE, ["sm_80", "sm_120a"], px.find_ptxas(), jobs=2)
    bad = [r.describe() for r in rows if r.disagrees]
    assert not bad, bad
    # A ptxas older than PTX 9.1 cannot test the .scale_vec::4X .ue8m0 form: untestable, not a disagreement.
    untestable = [r for r in rows if r.actual == "untestable"]
    assert all("needs .version" in r.actual_reason for r in untestable)
    # sm_120a all; sm_80 all but the 50 .kind::f8f6f4, 55 block-scaled and 8 sm_89 forms
    assert sum(r.actual == "assembles" for r in rows) == len(SPARSE) - len(untestable) + 80
