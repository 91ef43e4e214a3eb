"""Lane maps against literal data written from the ISA's fragment tables.

Each expectation below is worked out by hand from PTX ISA 9.2 §9.7.14.5.x
(g = groupID = %laneid >> 2, t = threadID_in_group = %laneid % 4) and typed in
as numbers; nothing here reads the YAML formulas or uses the formula language.
``Layout.map`` gives int64[lane, element, 3] = (matrix, row, col), -1 if unheld.
"""

from __future__ import annotations

import pytest
from ptxconf.isa import load_specs

P = "mma.sync.aligned"
NONE = (-1, -1, -1)


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def lane_map(specs, vid: str, operand: str, params: dict | None = None):
    return specs.get(f"{P}.{vid}").operands[operand].layout.map(params)


def check(m, lane: int, cells: list[tuple[int, int]], matrix: int = 0) -> None:
    """Element i of ``lane`` holds cells[i] = (row, col) of computation ``matrix``."""
    got = [tuple(x) for x in m[lane].tolist()]
    assert got == [(matrix, r, c) for r, c in cells], f"lane {lane}"


def run(row: int, cols) -> list[tuple[int, int]]:
    return [(row, c) for c in cols]


def down(rows, col: int) -> list[tuple[int, int]]:
    return [(r, col) for r in rows]


# --- m8n8k4 .f16: four computations, one per quad pair (§9.7.14.5.1) ---------------------------

F16_ROWROW = "m8n8k4.row.row.f32.f16.f16.f32"
F16_COLCOL = "m8n8k4.col.col.f16.f16.f16.f16"

# The ISA's table: "MMA computation 1: %laneid 0-3 and 16-19", ... computation 4: 12-15 and 28-31.
QUAD_PAIRS = {0: {0, 1, 2, 3, 16, 17, 18, 19}, 1: {4, 5, 6, 7, 20, 21, 22, 23},
              2: {8, 9, 10, 11, 24, 25, 26, 27}, 3: {12, 13, 14, 15, 28, 29, 30, 31}}


@pytest.mark.parametrize("vid", [F16_ROWROW, F16_COLCOL, "m8n8k4.row.col.f32.f16.f16.f16"])
def test_m8n8k4_computation_index(specs, vid):
    for operand in "ABCD":
        m = lane_map(specs, vid, operand)
        for q, lanes in QUAD_PAIRS.items():
            assert {lane for lane in range(32) if (m[lane, :, 0] == q).all()} == lanes, (operand, q)


def test_m8n8k4_f16_A_row(specs):  # Figure 46: row = %laneid % 4 (+4 for lanes >= 16), col = i
    m = lane_map(specs, F16_ROWROW, "A")
    check(m, 5, run(1, range(4)), matrix=1)
    check(m, 22, run(6, range(4)), matrix=1)
    check(m, 31, run(7, range(4)), matrix=3)


def test_m8n8k4_f16_A_col(specs):  # Figure 47: row = i (+4 high half), col = %laneid % 4
    m = lane_map(specs, F16_COLCOL, "A")
    check(m, 6, down(range(4), 2), matrix=1)
    check(m, 19, down(range(4, 8), 3), matrix=0)


def test_m8n8k4_f16_B_row(specs):  # Figure 48: row = %laneid % 4, col = i (+4 high half)
    m = lane_map(specs, F16_ROWROW, "B")
    check(m, 9, run(1, range(4)), matrix=2)
    check(m, 26, run(2, range(4, 8)), matrix=2)


def test_m8n8k4_f16_B_col(specs):  # Figure 49: row = i, col = %laneid % 4 (+4 high half)
    m = lane_map(specs, F16_COLCOL, "B")
    check(m, 13, down(range(4), 1), matrix=3)
    check(m, 17, down(range(4), 5), matrix=0)


def test_m8n8k4_f16_CD_f16(specs):  # Figure 50: c0..c7 along the row
    m = lane_map(specs, F16_COLCOL, "D")
    check(m, 18, run(6, range(8)), matrix=0)
    check(m, 11, run(3, range(8)), matrix=2)


def test_m8n8k4_f16_CD_f32(specs):  # Figures 51/52, expanded by hand for each q = %laneid % 4
    rows_q0, rows_q1 = [0, 0, 2, 2, 0, 0, 2, 2], [1, 1, 3, 3, 1, 1, 3, 3]
    cols_q01, cols_q23 = [0, 1, 0, 1, 4, 5, 4, 5], [2, 3, 2, 3, 6, 7, 6, 7]
    for operand in "CD":
        m = lane_map(specs, F16_ROWROW, operand)
        check(m, 0, list(zip(rows_q0, cols_q01)), matrix=0)
        check(m, 3, list(zip(rows_q1, cols_q23)), matrix=0)
        check(m, 6, list(zip(rows_q0, cols_q23)), matrix=1)
        check(m, 29, list(zip([r + 4 for r in rows_q1], cols_q01)), matrix=3)
        check(m, 16, list(zip([r + 4 for r in rows_q0], cols_q01)), matrix=0)


def test_m8n8k4_f64(specs):  # Figures 53-55
    vid = "m8n8k4.row.col.f64.f64.f64.f64"
    a, b, c = (lane_map(specs, vid, x) for x in "ABC")
    for lane, (r, col) in {0: (0, 0), 5: (1, 1), 30: (7, 2)}.items():
        check(a, lane, [(r, col)])
        check(b, lane, [(col, r)])
    check(c, 13, [(3, 2), (3, 3)])
    check(c, 30, [(7, 4), (7, 5)])


def test_m8n8k16(specs):  # Figures 56-58
    vid = "m8n8k16.row.col.s32.s8.u8.s32"
    check(lane_map(specs, vid, "A"), 7, run(1, range(12, 16)))
    check(lane_map(specs, vid, "B"), 7, down(range(12, 16), 1))
    check(lane_map(specs, vid, "C"), 7, [(1, 6), (1, 7)])


# --- m16n8k8 (§9.7.14.5.7) -------------------------------------------------------------------


def test_m16n8k8_f16(specs):  # Figures 71, 74, 77
    vid = "m16n8k8.row.col.f32.f16.f16.f32"
    check(lane_map(specs, vid, "A"), 5, [(1, 2), (1, 3), (9, 2), (9, 3)])
    check(lane_map(specs, vid, "B"), 5, [(2, 1), (3, 1)])
    check(lane_map(specs, vid, "D"), 5, [(1, 2), (1, 3), (9, 2), (9, 3)])
    check(lane_map(specs, vid, "A"), 31, [(7, 6), (7, 7), (15, 6), (15, 7)])


def test_m16n8k8_tf32(specs):  # Figures 72, 75: a0 (g,t) a1 (g+8,t) a2 (g,t+4) a3 (g+8,t+4)
    vid = "m16n8k8.row.col.f32.tf32.tf32.f32"
    check(lane_map(specs, vid, "A"), 5, [(1, 1), (9, 1), (1, 5), (9, 5)])
    check(lane_map(specs, vid, "B"), 5, [(1, 1), (5, 1)])
    check(lane_map(specs, vid, "A"), 26, [(6, 2), (14, 2), (6, 6), (14, 6)])


# --- m16n8k16 (§9.7.14.5.8-9) ----------------------------------------------------------------


def test_m16n8k16_f16(specs):  # Figures 79, 81, 83
    vid = "m16n8k16.row.col.f16.f16.f16.f16"
    a, b, cd = (lane_map(specs, vid, x) for x in "ABD")
    check(a, 5, [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)])
    check(a, 30, [(7, 4), (7, 5), (15, 4), (15, 5), (7, 12), (7, 13), (15, 12), (15, 13)])
    check(b, 5, [(2, 1), (3, 1), (10, 1), (11, 1)])
    check(b, 30, [(4, 7), (5, 7), (12, 7), (13, 7)])
    check(cd, 30, [(7, 4), (7, 5), (15, 4), (15, 5)])


def test_m16n8k16_f64(specs):  # Figure 80 (stray "(" dropped), Figure 82
    vid = "m16n8k16.row.col.f64.f64.f64.f64"
    check(lane_map(specs, vid, "A"), 5, [(1, 1), (9, 1), (1, 5), (9, 5), (1, 9), (9, 9), (1, 13), (9, 13)])
    check(lane_map(specs, vid, "A"), 0, [(0, 0), (8, 0), (0, 4), (8, 4), (0, 8), (8, 8), (0, 12), (8, 12)])
    check(lane_map(specs, vid, "B"), 5, [(1, 1), (5, 1), (9, 1), (13, 1)])


def test_m16n8k16_int8_and_e4m3(specs):  # Figures 84-86, shared by .u8/.s8 and .e4m3/.e5m2
    for vid in ("m16n8k16.row.col.s32.s8.s8.s32", "m16n8k16.row.col.f16.e4m3.e5m2.f16"):
        check(lane_map(specs, vid, "A"), 6, run(1, range(8, 12)) + run(9, range(8, 12)))
        check(lane_map(specs, vid, "B"), 6, down(range(8, 12), 1))
        check(lane_map(specs, vid, "C"), 6, [(1, 4), (1, 5), (9, 4), (9, 5)])


# --- m16n8k32, m16n8k64 (§9.7.14.5.10-11) ----------------------------------------------------


def test_m16n8k32_s8(specs):  # Figures 88, 90-91
    vid = "m16n8k32.row.col.s32.s8.u8.s32"
    check(lane_map(specs, vid, "A"), 5,
          run(1, range(4, 8)) + run(9, range(4, 8)) + run(1, range(20, 24)) + run(9, range(20, 24)))
    check(lane_map(specs, vid, "B"), 5, down(range(4, 8), 1) + down(range(20, 24), 1))
    check(lane_map(specs, vid, "B"), 31, down(range(12, 16), 7) + down(range(28, 32), 7))


def test_m16n8k32_f8f6f4_same_as_s8(specs):  # "four .e4m3 / ... / .e2m1 elements" per .b32: one per byte
    vid = "m16n8k32.row.col.kind::f8f6f4.f32.e2m1.e3m2.f32"
    check(lane_map(specs, vid, "A"), 5,
          run(1, range(4, 8)) + run(9, range(4, 8)) + run(1, range(20, 24)) + run(9, range(20, 24)))


def test_m16n8k32_s4(specs):  # Figures 87, 89
    vid = "m16n8k32.row.col.s32.s4.s4.s32"
    check(lane_map(specs, vid, "A"), 5, run(1, range(8, 16)) + run(9, range(8, 16)))
    check(lane_map(specs, vid, "B"), 5, down(range(8, 16), 1))


def test_m16n8k64_s4(specs):  # Figures 93-95
    vid = "m16n8k64.row.col.s32.s4.u4.s32"
    check(lane_map(specs, vid, "A"), 5,
          run(1, range(8, 16)) + run(9, range(8, 16)) + run(1, range(40, 48)) + run(9, range(40, 48)))
    check(lane_map(specs, vid, "B"), 5, down(range(8, 16), 1) + down(range(40, 48), 1))


# --- .b1 (§9.7.14.5.12-13) -------------------------------------------------------------------


def test_m16n8k128_b1(specs):  # Figures 97-98
    vid = "m16n8k128.row.col.s32.b1.b1.s32.xor.popc"
    check(lane_map(specs, vid, "A"), 5, run(1, range(32, 64)) + run(9, range(32, 64)))
    check(lane_map(specs, vid, "B"), 5, down(range(32, 64), 1))


def test_m16n8k256_b1(specs):  # Figure 100, with a32..a63 at (i & 0x1F) as in m16n8k128
    vid = "m16n8k256.row.col.s32.b1.b1.s32.and.popc"
    a = lane_map(specs, vid, "A")
    check(a, 5, run(1, range(32, 64)) + run(9, range(32, 64)) + run(1, range(160, 192)) + run(9, range(160, 192)))
    check(a, 31, run(7, range(96, 128)) + run(15, range(96, 128)) + run(7, range(224, 256)) + run(15, range(224, 256)))
    check(lane_map(specs, vid, "B"), 31, down(range(96, 128), 7) + down(range(224, 256), 7))


# --- Block-scale factors (§9.7.14.3; Figures 43-45) ------------------------------------------
# Text: thread-id-a = s -> lanes with %laneid % 4 in {2s, 2s+1}; thread-id-b = s -> %laneid % 4 == s;
# byte-id picks the first byte used (1X one byte, 2X a pair, 4X all four).  Figure-only and taken
# here as the spec does: the even lane of the pair holds row g, the odd lane row g + 8, and byte
# byte-id + j holds chunk j.

MXF4 = "m16n8k64.row.col.kind::mxf4.block_scale.f32.e2m1.e2m1.f32.ue8m0"


def test_scale_A_2x(specs):  # the ISA example "scaleAData, {2, 1}": byte-id-a 2, thread-id-a 1
    m = lane_map(specs, MXF4, "scale_A", {"thread_id": 1, "byte_id": 2})
    assert [tuple(x) for x in m[6].tolist()] == [NONE, NONE, (0, 1, 0), (0, 1, 1)]
    assert [tuple(x) for x in m[7].tolist()] == [NONE, NONE, (0, 9, 0), (0, 9, 1)]
    assert [tuple(x) for x in m[31].tolist()] == [NONE, NONE, (0, 15, 0), (0, 15, 1)]
    for lane in (4, 5, 28, 29):
        assert (m[lane] == -1).all()


def test_scale_B_2x(specs):  # "scaleBData, {2, 3}": byte-id-b 2, thread-id-b 3
    m = lane_map(specs, MXF4, "scale_B", {"thread_id": 3, "byte_id": 2})
    assert [tuple(x) for x in m[7].tolist()] == [NONE, NONE, (0, 0, 1), (0, 1, 1)]
    assert [tuple(x) for x in m[31].tolist()] == [NONE, NONE, (0, 0, 7), (0, 1, 7)]
    for lane in (4, 5, 6, 28):
        assert (m[lane] == -1).all()


def test_scale_1x_and_4x(specs):
    vid = "m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e3m2.e2m1.f32.ue8m0"
    m = lane_map(specs, vid, "scale_A", {"thread_id": 1, "byte_id": 0})  # example "{0, 1}"
    assert [tuple(x) for x in m[2].tolist()] == [(0, 0, 0), NONE, NONE, NONE]
    assert [tuple(x) for x in m[3].tolist()] == [(0, 8, 0), NONE, NONE, NONE]
    assert (m[0] == -1).all() and (m[1] == -1).all()
    m = lane_map(specs, vid, "scale_B", {"thread_id": 0, "byte_id": 3})
    assert [tuple(x) for x in m[8].tolist()] == [NONE, NONE, NONE, (0, 0, 2)]
    vid = "m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"
    m = lane_map(specs, vid, "scale_A", {"thread_id": 0, "byte_id": 0})
    assert [tuple(x) for x in m[1].tolist()] == [(0, 8, 0), (0, 8, 1), (0, 8, 2), (0, 8, 3)]
    m = lane_map(specs, vid, "scale_B", {"thread_id": 2, "byte_id": 0})
    assert [tuple(x) for x in m[10].tolist()] == [(0, 0, 2), (0, 1, 2), (0, 2, 2), (0, 3, 2)]
