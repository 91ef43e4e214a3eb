"""Invariants of the loaded specs/, checked against tables written here from the ISA.

The expected variant list, counts, register counts and version/target table are
written from PTX ISA 9.2 §9.7.14.5.14 (Syntax, Description, PTX ISA notes,
Target ISA notes), independently of specs/mma_sync.yaml.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np
import pytest
from ptxconf.isa import load_specs, parse_target
from ptxconf.isa.loader import Specs

SPECS = load_specs()  # collection needs the ids; loaded once for the module
# ldmatrix/stmatrix/movmatrix have their own tests (tests/families/movement/test_movement.py)
SPECS = Specs({k: v for k, v in SPECS.variants.items() if v.family == "mma.sync"}, SPECS.layouts, SPECS.files)
IDS = list(SPECS.variants)
DENSE_IDS = [v.id for v in SPECS.variants.values() if v.family == "mma.sync"]  # mma.sp: tests/families/mma/test_sparse.py
P = "mma.sync.aligned"
F8 = ("e4m3", "e5m2")
F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")


@pytest.fixture(scope="module")
def specs():
    return SPECS


def shape_of(v) -> str:
    return "m{}n{}k{}".format(*v.shape)


# ---------------------------------------------------------------------------
# Which variants exist: from the Syntax block and its type restrictions
# ---------------------------------------------------------------------------


def isa_variant_ids() -> set[str]:
    ids = set()
    # Half precision. m8n8k4: "When .ctype is .f32, .dtype must also be .f32".
    for al, bl in itertools.product(("row", "col"), repeat=2):
        for d, c in (("f16", "f16"), ("f32", "f16"), ("f32", "f32")):
            ids.add(f"{P}.m8n8k4.{al}.{bl}.{d}.f16.f16.{c}")
    for shape, t in itertools.product(("m16n8k8", "m16n8k16"), ("f16", "f32")):  # .dtype == .ctype
        ids.add(f"{P}.{shape}.row.col.{t}.f16.f16.{t}")
    # Alternate floating point (m16n8k8: .atype == .btype)
    ids.add(f"{P}.m16n8k4.row.col.f32.tf32.tf32.f32")
    ids |= {f"{P}.m16n8k8.row.col.f32.{t}.{t}.f32" for t in ("bf16", "tf32")}
    ids.add(f"{P}.m16n8k16.row.col.f32.bf16.bf16.f32")
    for shape, a, b, c in itertools.product(("m16n8k16", "m16n8k32"), F8, F8, ("f16", "f32")):
        ids.add(f"{P}.{shape}.row.col.{c}.{a}.{b}.{c}")
    for a, b, c in itertools.product(F8F6F4, F8F6F4, ("f16", "f32")):
        ids.add(f"{P}.m16n8k32.row.col.kind::f8f6f4.{c}.{a}.{b}.{c}")
    # Block scaling (Table 36: .ue4m3 only with ::4X)
    for vec in ("", ".scale_vec::2X"):
        ids.add(f"{P}.m16n8k64.row.col.kind::mxf4.block_scale{vec}.f32.e2m1.e2m1.f32.ue8m0")
    for vec, stype in (("2X", "ue8m0"), ("4X", "ue8m0"), ("4X", "ue4m3")):
        ids.add(f"{P}.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::{vec}.f32.e2m1.e2m1.f32.{stype}")
    for vec, a, b in itertools.product(("", ".scale_vec::1X"), F8F6F4, F8F6F4):
        ids.add(f"{P}.m16n8k32.row.col.kind::mxf8f6f4.block_scale{vec}.f32.{a}.{b}.f32.ue8m0")
    # Double precision (".m8n84" in the Syntax is a typo for .m8n8k4)
    ids |= {f"{P}.{s}.row.col.f64.f64.f64.f64" for s in ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16")}
    # Integer
    for shapes, types in ((("m8n8k16", "m16n8k16", "m16n8k32"), ("u8", "s8")),
                          (("m8n8k32", "m16n8k32", "m16n8k64"), ("u4", "s4"))):
        for shape, sat, a, b in itertools.product(shapes, ("", ".satfinite"), types, types):
            ids.add(f"{P}.{shape}.row.col{sat}.s32.{a}.{b}.s32")
    # Single bit
    for shape, op in itertools.product(("m8n8k128", "m16n8k128", "m16n8k256"), ("xor", "and")):
        ids.add(f"{P}.{shape}.row.col.s32.b1.b1.s32.{op}.popc")
    return ids


EXPECTED_COUNTS = {
    ("m8n8k4", "f16"): 12, ("m16n8k8", "f16"): 2, ("m16n8k16", "f16"): 2,
    ("m16n8k8", "bf16"): 1, ("m16n8k16", "bf16"): 1, ("m16n8k4", "tf32"): 1, ("m16n8k8", "tf32"): 1,
    ("m8n8k4", "f64"): 1, ("m16n8k4", "f64"): 1, ("m16n8k8", "f64"): 1, ("m16n8k16", "f64"): 1,
    ("m8n8k16", "int8"): 8, ("m16n8k16", "int8"): 8, ("m16n8k32", "int8"): 8,
    ("m8n8k32", "int4"): 8, ("m16n8k32", "int4"): 8, ("m16n8k64", "int4"): 8,
    ("m8n8k128", "b1"): 2, ("m16n8k128", "b1"): 2, ("m16n8k256", "b1"): 2,
    ("m16n8k16", "f8"): 8, ("m16n8k32", "f8"): 8,
    ("m16n8k32", "kind::f8f6f4"): 50, ("m16n8k32", "kind::mxf8f6f4"): 50,
    ("m16n8k64", "kind::mxf4"): 2, ("m16n8k64", "kind::mxf4nvf4"): 3,
}


def group_of(v) -> tuple[str, str]:
    if v.instruction.kind:
        return shape_of(v), f"kind::{v.instruction.kind}"
    a = v.operands["A"].type.name
    return shape_of(v), {"u8": "int8", "s8": "int8", "u4": "int4", "s4": "int4", "e4m3": "f8", "e5m2": "f8"}.get(a, a)


def test_expected_table_adds_up():
    assert sum(EXPECTED_COUNTS.values()) == 199 == len(isa_variant_ids())


def test_variant_ids_match_isa_syntax(specs):
    have, want = {v.id for v in specs.variants.values() if v.family == "mma.sync"}, isa_variant_ids()
    assert sorted(have - want) == [] and sorted(want - have) == []
    assert len(have) == 199


def test_counts_by_group(specs):
    counts = collections.Counter(group_of(v) for v in specs.variants.values() if v.family == "mma.sync")
    assert dict(counts) == EXPECTED_COUNTS


# ---------------------------------------------------------------------------
# Per variant: lane maps, registers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("vid", IDS)
def test_lane_maps_are_bijections(specs, vid):
    v = specs.get(vid)
    for name, op in v.operands.items():
        lay = op.layout
        assert lay.copies == 1
        for combo in op.param_combinations():
            m, held = lay.map(combo), lay.held(combo)
            assert m.shape == (lay.lanes, lay.elements, 3) and m.dtype == np.int64
            assert (m[~held] == -1).all(), (name, combo)
            cells = m[held]
            bounds = np.array([lay.matrices, lay.rows, lay.cols])
            assert ((cells >= 0) & (cells < bounds)).all(), (name, combo)
            tile = lay.matrices * lay.rows * lay.cols
            assert len(cells) == tile and len({tuple(c) for c in cells.tolist()}) == tile, (name, combo)


AB_REGS: dict[tuple[str, str], tuple[int, int]] = {}
for _shape, _types, _a, _b in [
    ("m8n8k4", ["f16"], 2, 2), ("m8n8k4", ["f64"], 1, 1), ("m8n8k16", ["u8", "s8"], 1, 1),
    ("m8n8k32", ["u4", "s4"], 1, 1), ("m8n8k128", ["b1"], 1, 1), ("m16n8k4", ["tf32", "f64"], 2, 1),
    ("m16n8k8", ["f16", "bf16"], 2, 1), ("m16n8k8", ["tf32", "f64"], 4, 2),
    ("m16n8k16", ["f16", "bf16"], 4, 2), ("m16n8k16", ["f64"], 8, 4), ("m16n8k16", ["u8", "s8", *F8], 2, 1),
    ("m16n8k32", ["u4", "s4"], 2, 1), ("m16n8k32", ["u8", "s8", *F8F6F4], 4, 2),
    ("m16n8k64", ["u4", "s4", "e2m1"], 4, 2), ("m16n8k128", ["b1"], 2, 1), ("m16n8k256", ["b1"], 4, 2),
]:
    AB_REGS.update({(_shape, t): (_a, _b) for t in _types})


def cd_regs(shape: str, t: str) -> int:
    if shape == "m8n8k4" and t in ("f16", "f32"):
        return {"f16": 4, "f32": 8}[t]
    if shape.startswith("m8n8"):
        return 2
    return 2 if t == "f16" else 4


@pytest.mark.parametrize("vid", DENSE_IDS)
def test_registers(specs, vid):
    v = specs.get(vid)
    shape = shape_of(v)
    for op in v.operands.values():
        assert op.registers * op.fragment.per_register == op.layout.elements
    want_a, want_b = AB_REGS[(shape, v.operands["A"].type.name)]
    got = {n: op.registers for n, op in v.operands.items()}
    assert (got["A"], got["B"]) == (want_a, want_b)
    assert got["C"] == cd_regs(shape, v.operands["C"].type.name)
    assert got["D"] == cd_regs(shape, v.operands["D"].type.name)
    assert got.get("scale_A", 1) == got.get("scale_B", 1) == 1  # one .b32 each
    # Containers: one element per byte under .kind::f8f6f4/.kind::mxf8f6f4, e2m1 in bits [5:2]
    for name in ("A", "B"):
        op = v.operands[name]
        if v.instruction.kind in ("f8f6f4", "mxf8f6f4"):
            assert op.fragment.container_bits == 8
            assert op.fragment.value_shift == (2 if op.type.name == "e2m1" else 0)
        else:
            assert op.fragment.container_bits == (32 if op.type.name == "tf32" else op.type.bits)
            assert op.fragment.value_shift == 0


# ---------------------------------------------------------------------------
# Versions and targets (PTX ISA notes / Target ISA notes)
# ---------------------------------------------------------------------------

A120 = ["sm_120a", "sm_120f"]
VERSIONS = [
    ("m8n8k4.col.row.f32.f16.f16.f16", "6.4", ["sm_70"]),
    ("m16n8k8.row.col.f32.f16.f16.f32", "6.5", ["sm_75"]),
    ("m16n8k16.row.col.f16.f16.f16.f16", "7.0", ["sm_80"]),
    ("m16n8k8.row.col.f32.bf16.bf16.f32", "7.0", ["sm_80"]),
    ("m16n8k16.row.col.f32.bf16.bf16.f32", "7.0", ["sm_80"]),
    ("m16n8k4.row.col.f32.tf32.tf32.f32", "7.0", ["sm_80"]),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "7.0", ["sm_80"]),
    ("m8n8k4.row.col.f64.f64.f64.f64", "7.0", ["sm_80"]),
    ("m16n8k4.row.col.f64.f64.f64.f64", "7.8", ["sm_90"]),
    ("m16n8k8.row.col.f64.f64.f64.f64", "7.8", ["sm_90"]),
    ("m16n8k16.row.col.f64.f64.f64.f64", "7.8", ["sm_90"]),
    ("m8n8k16.row.col.s32.s8.u8.s32", "6.5", ["sm_75"]),
    ("m16n8k16.row.col.satfinite.s32.u8.u8.s32", "7.0", ["sm_80"]),
    ("m16n8k32.row.col.s32.s8.s8.s32", "7.0", ["sm_80"]),
    ("m8n8k32.row.col.satfinite.s32.u4.s4.s32", "6.5", ["sm_75"]),
    ("m16n8k32.row.col.s32.s4.s4.s32", "7.0", ["sm_80"]),
    ("m16n8k64.row.col.satfinite.s32.u4.u4.s32", "7.0", ["sm_80"]),
    ("m8n8k128.row.col.s32.b1.b1.s32.xor.popc", "7.0", ["sm_75"]),
    ("m8n8k128.row.col.s32.b1.b1.s32.and.popc", "7.1", ["sm_80"]),
    ("m16n8k128.row.col.s32.b1.b1.s32.xor.popc", "7.0", ["sm_80"]),
    ("m16n8k256.row.col.s32.b1.b1.s32.and.popc", "7.1", ["sm_80"]),
    ("m16n8k32.row.col.f32.e4m3.e5m2.f32", "8.4", ["sm_89"]),
    ("m16n8k32.row.col.f16.e5m2.e4m3.f16", "8.7", ["sm_89"]),
    ("m16n8k16.row.col.f32.e5m2.e4m3.f32", "8.7", ["sm_89"]),
    ("m16n8k16.row.col.f16.e4m3.e4m3.f16", "8.7", ["sm_89"]),
    ("m16n8k32.row.col.kind::f8f6f4.f16.e2m3.e2m1.f16", "8.7", A120),
    ("m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e5m2.f32", "8.7", A120),
    ("m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e3m2.e2m1.f32.ue8m0", "8.7", A120),
    ("m16n8k32.row.col.kind::mxf8f6f4.block_scale.f32.e4m3.e5m2.f32.ue8m0", "8.7", A120),
    ("m16n8k64.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0", "8.7", A120),
    ("m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0", "8.7", A120),
    ("m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3", "8.7", A120),
    ("m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0", "9.1", A120),
]


@pytest.mark.parametrize(("suffix", "ptx", "targets"), VERSIONS, ids=[s for s, _, _ in VERSIONS])
def test_min_ptx_and_targets(specs, suffix, ptx, targets):
    v = specs.get(f"{P}.{suffix}")
    assert str(v.min_ptx) == ptx
    assert sorted(t.name for t in v.requires) == sorted(targets)
    assert v.min_target.name == targets[0]


F64_K16 = f"{P}.m16n8k16.row.col.f64.f64.f64.f64"
F8F6F4_ID = f"{P}.m16n8k32.row.col.kind::f8f6f4.f32.e3m2.e2m3.f32"
NVF4_4X_UE8M0 = f"{P}.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue8m0"

VALID_FOR = [
    (F64_K16, "sm_80", None, "needs target sm_90"),
    (F64_K16, "sm_89", "8.0", "needs target sm_90"),
    (F64_K16, "sm_90", "7.8", None),
    (F64_K16, "sm_90a", "8.0", None),
    (F64_K16, "sm_120", "8.7", None),
    (F64_K16, "sm_90", "7.7", "needs .version 7.8"),
    (F8F6F4_ID, "sm_120a", "8.7", None),
    (F8F6F4_ID, "sm_90a", "8.7", "sm_90a lacks it"),
    (F8F6F4_ID, "sm_100a", "8.7", "lacks it"),
    (F8F6F4_ID, "sm_120", "8.7", "lacks it"),  # plain sm_120 has no arch-specific features
    (F8F6F4_ID, "sm_120a", "8.6", "needs .version 8.7"),
    (F8F6F4_ID, "sm_120f", "8.8", None),
    (F8F6F4_ID, "sm_120f", "8.7", ".target sm_120f needs .version 8.8"),  # sm_120f from PTX 8.8
    (F8F6F4_ID, "sm_121a", "8.8", None),  # same family, higher minor
    (F8F6F4_ID, "sm_121f", "8.8", None),
    (f"{P}.m8n8k4.row.col.f16.f16.f16.f16", "sm_70", "6.4", None),
    (f"{P}.m8n8k4.row.col.f16.f16.f16.f16", "sm_70", "6.3", "needs .version 6.4"),
    (f"{P}.m16n8k16.row.col.f16.f16.f16.f16", "sm_90", "7.0", ".target sm_90 needs .version 7.8"),
    (f"{P}.m8n8k128.row.col.s32.b1.b1.s32.xor.popc", "sm_75", "7.0", None),
    (f"{P}.m8n8k128.row.col.s32.b1.b1.s32.and.popc", "sm_75", "7.1", "needs target sm_80"),
    (f"{P}.m8n8k128.row.col.s32.b1.b1.s32.and.popc", "sm_80", "7.0", "needs .version 7.1"),
    (f"{P}.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_86", "8.4", "needs target sm_89"),
    (f"{P}.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_89", "8.4", None),
    (NVF4_4X_UE8M0, "sm_120a", "9.0", "needs .version 9.1"),
    (NVF4_4X_UE8M0, "sm_120a", "9.1", None),
]


@pytest.mark.parametrize(("vid", "target", "ptx", "why"), VALID_FOR)
def test_valid_for(specs, vid, target, ptx, why):
    v = specs.get(vid)
    for tgt in (target, parse_target(target)):
        got = v.valid_for(tgt, ptx)
        if why is None:
            assert got is None
        else:
            assert got is not None and why in got, got
