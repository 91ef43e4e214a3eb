"""Block-scaled sparse mma.sp (§9.7.14.6.3 with §9.7.14.3): the form list, operands, oracle, emulator, ptxas.

The expected forms are written here from the ISA's Syntax block and Table 36
(independently of specs/mma_sp.yaml): ``.kind::mxf8f6f4`` m16n8k64 with every
f8f6f4 type pair and ``.kind::mxf4``/``.kind::mxf4nvf4`` m16n8k128 .e2m1, all
``mma.sp::ordered_metadata`` with .f32 accumulators.  There is no GPU of
compute capability 12.x to run them on; ptxas and the emulator are the checks.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.isa.loader import load_specs
from ptxconf.isa.packing import pack
from ptxconf.isa.sparse import sparsity
from ptxconf.isa.targets import PtxVersion, parse_target
from ptxconf.oracle import mma
from ptxconf.run.replay import replay_dir
from ptxconf.run.runner import RunRequest, run_variants

REPO = Path(__file__).resolve().parents[3]
SPECS = load_specs(REPO / "specs")
SCALED = [v for v in SPECS.variants.values() if v.family == "mma.sp" and v.instruction.block_scale]
P = "mma.sp::ordered_metadata.sync.aligned"
F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
MXF8 = f"{P}.m16n8k64.row.col.kind::mxf8f6f4.block_scale.f32.e2m1.e4m3.f32.ue8m0"
MXF4 = f"{P}.m16n8k128.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0"
NVF4_4X = f"{P}.m16n8k128.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"


def isa_ids() -> set[str]:
    ids = {
        f"{P}.m16n8k64.row.col.kind::mxf8f6f4.block_scale{vec}.f32.{a}.{b}.f32.ue8m0"
        for vec, a, b in itertools.product(("", ".scale_vec::1X"), F8F6F4, F8F6F4)
    }
    ids |= {f"{P}.m16n8k128.row.col.kind::mxf4.block_scale{vec}.f32.e2m1.e2m1.f32.ue8m0" for vec in ("", ".scale_vec::2X")}
    # Table 36: .kind::mxf4nvf4 takes .ue8m0 with ::2X or ::4X (4X from PTX 9.1), .ue4m3 with ::4X only.
    ids |= {
        f"{P}.m16n8k128.row.col.kind::mxf4nvf4.block_scale.scale_vec::{vec}.f32.e2m1.e2m1.f32.{stype}"
        for vec, stype in (("2X", "ue8m0"), ("4X", "ue4m3"), ("4X", "ue8m0"))
    }
    return ids


def test_form_list_is_the_isa_syntax():
    assert {v.id for v in SCALED} == isa_ids()
    kinds = {k: sum(v.instruction.kind == k for v in SCALED) for k in ("mxf8f6f4", "mxf4", "mxf4nvf4")}
    assert kinds == {"mxf8f6f4": 50, "mxf4": 2, "mxf4nvf4": 3}


def test_versions_and_targets():
    """PTX ISA notes: 8.7, .ue8m0 with ::4X 9.1.  Target ISA notes: sm_120a (sm_120f from 8.8) except mxf4*."""
    for v in SCALED:
        want = "9.1" if v.id.endswith("scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0") else "8.7"
        assert v.min_ptx == PtxVersion.parse(want), v.id
        assert v.valid_for("sm_120a", v.min_ptx) is None
        assert v.valid_for("sm_100a", v.min_ptx) is not None and v.valid_for("sm_90a", v.min_ptx) is not None
        family_ok = v.valid_for("sm_120f", PtxVersion(9, 1)) is None
        assert family_ok == (v.instruction.kind == "mxf8f6f4"), v.id
        assert v.valid_for("sm_121a", PtxVersion(9, 1)) is None  # named (mxf4*) or in the sm_120f family


@pytest.mark.parametrize("vid", sorted(isa_ids()))
def test_operands(vid):
    """Sparse A and metadata as the unscaled forms of the shape; scales and selectors as the dense block-scaled forms."""
    v = SPECS.get(vid)
    m, n, k = v.shape
    ops = v.operands
    sv = v.instruction.scale_vec
    assert sv == (int(vid.split("scale_vec::")[1][0]) if "scale_vec::" in vid else {"mxf8f6f4": 1, "mxf4": 2}[v.instruction.kind])
    assert ops["D"].type.name == ops["C"].type.name == "f32"
    assert (ops["A"].layout.rows, ops["A"].layout.cols) == (m, k // 2)
    assert ops["A"].registers == ops["B"].registers == 4 and ops["metadata"].registers == 1
    assert [p["selector"] for p in ops["metadata"].param_combinations()] == [0]  # all four lanes of the quad
    sp = sparsity(v)
    if v.instruction.kind == "mxf8f6f4":  # 8-bit containers, 2:4 (same as .kind::f8f6f4)
        assert k == 64 and sp.nz == 2 and ops["A"].fragment.per_register == 4
        unscaled = SPECS.get(f"{P}.m16n8k64.row.col.kind::f8f6f4.f32.{ops['A'].type.name}.{ops['B'].type.name}.f32")
    else:  # .e2m1 packed eight to a register, 4:8 in pairs (same as .u4/.s4)
        assert k == 128 and sp.nz == 4 and ops["A"].fragment.per_register == 8 and ops["A"].fragment.value_shift == 0
        unscaled = SPECS.get(f"{P}.m16n8k128.row.col.s32.u4.u4.s32")
    for name in ("A", "B", "metadata"):
        assert ops[name].layout.name == unscaled.operands[name].layout.name
    # Tables 35 and 37
    byte_ids = {1: [0, 1, 2, 3], 2: [0, 2], 4: [0]}[sv]
    for name, threads, shape in (("scale_A", [0, 1], (m, sv)), ("scale_B", [0, 1, 2, 3], (sv, n))):
        op = ops[name]
        assert op.type.name == vid.rsplit(".", 1)[1] and op.registers == 1
        assert (op.layout.rows, op.layout.cols) == shape
        combos = op.param_combinations()
        assert sorted({c["thread_id"] for c in combos}) == threads and sorted({c["byte_id"] for c in combos}) == byte_ids


def _zeros(rows: int, cols: int) -> np.ndarray:
    return np.zeros((1, 1, rows, cols), dtype=np.uint64)


def test_oracle_mxf4_hand_computed():
    """m16n8k128 .kind::mxf4: dense A row 0 = [1, 2, 0, 0, 3, 1.5, 0, 0] at cols 0-7 and [0, 0, 4, 0.5, ...] at 64-71.

    e2m1 bits: 0x2 = 1, 0x3 = 1.5, 0x4 = 2, 0x5 = 3, 0x6 = 4, 0x1 = 0.5; ue8m0 bits: 127 + e = 2**e.
    Stored cols 0-3 (chunk 0) with index pairs (0, 2) -> dense 0, 1, 4, 5; stored 32-35 (chunk 8,
    dense 64-71) with pairs (1, 3) -> dense 66, 67, 70, 71.  scale_A row 0 = [2, 4]; scale_B col 0 =
    [1, 0.5], col 1 = [1, 0.25]; B col 0 all 1, B col 1 = 2 on rows 64-127.
    D[0, 0] = 2*1*(1 + 2 + 3 + 1.5) + 4*0.5*(4 + 0.5) + 0.5 = 24.5; D[0, 1] = 4*0.25*2*(4 + 0.5) = 9.
    Registers (Figures 140-141): lane 0's a0 holds stored cols 0-7 of row 0, a2 stored cols 32-39.
    """
    v = SPECS.get(MXF4)
    a = _zeros(16, 64)
    a[0, 0, 0, 0:4] = [0x2, 0x4, 0x5, 0x3]
    a[0, 0, 0, 32:36] = [0x6, 0x1, 0x0, 0x0]
    words = pack(v.operands["A"], a)
    assert list(words[0, 0]) == [0x00003542, 0, 0x00000016, 0] and np.count_nonzero(words) == 2
    meta = _zeros(16, 32)
    meta[0, 0, :, 1::2] = 1  # every chunk (0, 1): legal, increasing
    meta[0, 0, 0, 0:2] = [0, 2]
    meta[0, 0, 0, 16:18] = [1, 3]
    b = _zeros(128, 8)
    b[0, 0, :, 0] = 0x2
    b[0, 0, 64:, 1] = 0x4
    c = _zeros(16, 8)
    c[0, 0, 0, 0] = 0x3F000000  # 0.5f
    sfa = np.full((1, 1, 16, 2), 127, dtype=np.uint64)
    sfa[0, 0, 0] = [128, 129]
    sfb = np.full((1, 1, 2, 8), 127, dtype=np.uint64)
    sfb[0, 0, :, 0] = [127, 126]
    sfb[0, 0, :, 1] = [127, 125]
    d = mma(v, {"A": a, "B": b, "C": c, "metadata": meta, "scale_A": sfa, "scale_B": sfb})
    assert d[0, 0, 0, 0] == 0x41C40000  # 24.5f
    assert d[0, 0, 0, 1] == 0x41100000  # 9.0f
    assert not d[0, 0, 1:].any() and not d[0, 0, 0, 2:].any()


def test_oracle_mxf8f6f4_hand_computed():
    """m16n8k64 .kind::mxf8f6f4, A .e2m1 in 8-bit containers (bits [5:2]), B .e4m3.

    Stored A row 0: 0x2 (1.0) and 0x5 (3.0), pair (1, 3) -> dense cols 1 and 3; in lane 0's a0
    they sit at bits [5:2] and [13:10].  B[1, 0] = 0x38 (e4m3 1.0), B[3, 0] = 0x40 (2.0).
    scale_A row 0 = 126 (0.5), scale_B col 0 = 130 (8).  D[0, 0] = 0.5*8*(1*1 + 3*2) = 28.
    """
    v = SPECS.get(MXF8)
    a = _zeros(16, 32)
    a[0, 0, 0, 0:2] = [0x2, 0x5]
    words = pack(v.operands["A"], a)
    assert words[0, 0, 0] == 0x00001408 and np.count_nonzero(words) == 1
    meta = _zeros(16, 32)
    meta[0, 0, :, 1::2] = 1
    meta[0, 0, 0, 0:2] = [1, 3]
    b = _zeros(64, 8)
    b[0, 0, 1, 0], b[0, 0, 3, 0] = 0x38, 0x40
    sfa = np.full((1, 1, 16, 1), 127, dtype=np.uint64)
    sfa[0, 0, 0, 0] = 126
    sfb = np.full((1, 1, 1, 8), 127, dtype=np.uint64)
    sfb[0, 0, 0, 0] = 130
    d = mma(v, {"A": a, "B": b, "C": _zeros(16, 8), "metadata": meta, "scale_A": sfa, "scale_B": sfb})
    assert d[0, 0, 0, 0] == 0x41E00000  # 28.0f
    assert np.count_nonzero(d) == 1


def test_oracle_mxf4nvf4_4x_hand_computed():
    """m16n8k128 ::4X .ue4m3: one scale per 32 dense columns (4 sparse chunks of 8).

    Stored 16 (chunk 4, dense 32-39) = 0x2 (1.0) with pair (0, 1) -> dense 32; stored 48 (chunk 12,
    dense 96-103) = 0x4 (2.0) with pair (2, 3) -> dense 100.  B[32, 0] = B[100, 0] = 1.0.  ue4m3
    bits: 0x38 = 1, 0x3C = 1.5, 0x40 = 2, 0x30 = 0.5.  scale_A row 0 = [1, 1.5, 1, 2]; scale_B
    col 0 = [1, 2, 1, 0.5].  D[0, 0] = 1.5*2*1 + 2*0.5*2 = 5.
    """
    v = SPECS.get(NVF4_4X)
    a = _zeros(16, 64)
    a[0, 0, 0, 16], a[0, 0, 0, 48] = 0x2, 0x4
    meta = _zeros(16, 32)
    meta[0, 0, :, 1::2] = 1
    meta[0, 0, 0, 24:26] = [2, 3]
    b = _zeros(128, 8)
    b[0, 0, 32, 0], b[0, 0, 100, 0] = 0x2, 0x2
    sfa = np.full((1, 1, 16, 4), 0x38, dtype=np.uint64)
    sfa[0, 0, 0] = [0x38, 0x3C, 0x38, 0x40]
    sfb = np.full((1, 1, 4, 8), 0x38, dtype=np.uint64)
    sfb[0, 0, :, 0] = [0x38, 0x40, 0x38, 0x30]
    d = mma(v, {"A": a, "B": b, "C": _zeros(16, 8), "metadata": meta, "scale_A": sfa, "scale_B": sfb})
    assert d[0, 0, 0, 0] == 0x40A00000  # 5.0f
    assert np.count_nonzero(d) == 1


def _record(run_dir: Path, variants) -> None:
    outcomes = []
    run_variants(EmulatorBackend(mma), variants, RunRequest(0, observations=run_dir / "observations"),
                 on_outcome=outcomes.append)
    assert len(outcomes) == len(variants)
    for o in outcomes:
        assert [vd.status for vd in o.verdicts] == ["pass"] * 5, o.plan.variant.id  # value, map.A/B/C, map.metadata


def test_emulator_passes_every_form(tmp_path):
    _record(tmp_path / "run", SCALED)


def test_swapped_scale_chunks_fail_replay(tmp_path):
    """Observations made with the true spec fail a spec whose scale_A.x2 chunks are swapped: the value check sees it."""
    run_dir = tmp_path / "run"
    _record(run_dir, [SPECS.get(MXF4)])
    assert replay_dir(SPECS, run_dir, quiet=True) == 0
    bad = tmp_path / "specs"
    shutil.copytree(REPO / "specs", bad)
    path = bad / "mma_sync.yaml"
    text = path.read_text()
    old = 'where: "(%laneid % 4) >> 1 == thread_id and byte_id <= i < byte_id + 2"\n    row: "groupID + 8 * (%laneid % 2)"\n    col: "i - byte_id"'
    assert text.count(old) == 1
    path.write_text(text.replace(old, old[: -len('"i - byte_id"')] + '"1 - (i - byte_id)"'))
    out = tmp_path / "replay"
    assert replay_dir(load_specs(bad), run_dir, quiet=True, out=out) == 1
    text = (out / "results.jsonl").read_text()
    assert '"value"' in text and '"fail"' in text


# --- ptxas ----------------------------------------------------------------------------------


def _pinned() -> str:
    from ptxconf.backends.ptxas import PINNED_NVCC, find_pinned_ptxas

    exe = find_pinned_ptxas()
    if exe is None:
        pytest.skip(f"no pinned ptxas (pip install --no-deps {PINNED_NVCC}): the forms need sm_120a and PTX 8.7-9.1")
    return exe


@pytest.mark.ptxas
def test_pinned_ptxas_accepts_every_form():
    from ptxconf.backends import ptxas as px

    rows = px.assemble_report(SCALED, ["sm_120a", "sm_121a", "sm_120f", "sm_100a", "sm_90a"], _pinned(), jobs=2)
    bad = [f"{r.arch} {r.variant}: {r.describe()}" for r in rows if r.status != "agree"]
    assert not bad, bad
    ok = {arch: sum(r.actual == "assembles" for r in rows if r.arch == arch) for arch in ("sm_120a", "sm_121a", "sm_120f", "sm_100a", "sm_90a")}
    # sm_120f: .kind::mxf8f6f4 only (mxf4/mxf4nvf4 are sm_120a/sm_121a only, Target ISA notes)
    assert ok == {"sm_120a": 55, "sm_121a": 55, "sm_120f": 50, "sm_100a": 0, "sm_90a": 0}


# Neighbours of the ISA's forms that the Syntax block and Table 36 leave out: ptxas must reject them.
LEFT_OUT = [
    (MXF4, "kind::mxf4.block_scale.scale_vec::2X", "kind::mxf4.block_scale.scale_vec::4X"),
    (MXF4, "f32.ue8m0", "f32.ue4m3"),
    (MXF4, "mma.sp::ordered_metadata.", "mma.sp."),
    (MXF4, ".m16n8k128.", ".m16n8k64."),
    (NVF4_4X, "scale_vec::4X", "scale_vec::2X"),
    (NVF4_4X, ".block_scale.scale_vec::4X.", ".block_scale."),
    (MXF8, "block_scale.f32", "block_scale.scale_vec::2X.f32"),
    (MXF8, "f32.ue8m0", "f32.ue4m3"),
    (MXF8, ".f32.e2m1.e4m3.f32.", ".f16.e2m1.e4m3.f16."),
]


@pytest.mark.ptxas
@pytest.mark.parametrize("vid,old,new", LEFT_OUT)
def test_pinned_ptxas_rejects_forms_left_out(vid, old, new):
    from ptxconf.backends import ptxas as px

    exe = _pinned()
    text = px.module_for([SPECS.get(vid)], PtxVersion(9, 1), parse_target("sm_120a"))
    assert px.assemble(text, "sm_120a", exe)[0]
    mutated = text.replace(vid, vid.replace(old, new))
    assert mutated != text
    ok, err = px.assemble(mutated, "sm_120a", exe)
    assert not ok and "error" in err
