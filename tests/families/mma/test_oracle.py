"""The oracle (conformance/oracle.py) against literal, hand-computed cases.

Every expected value below was worked out by hand from the PTX ISA (and written
as raw bits), not computed with the oracle's own code paths: a sparse 16x8x16
f16 product, s32 wrap vs ``.satfinite`` clamp, u4/s4 signs, ``.b1`` popc,
tf32's ignored low bits, the f8f6f4 e2m1 container (bits [5:2]), block scaling
with ``scale_vec::2X`` K-chunks, and round-to-nearest-even into an f16 D.
Register-level checks (which lane and register holds what) use the ISA's
fragment figures through the packer and the emulator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ptxconf.backends.base import Launch
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.families.mma.probe import Probe, buffer_layout
from ptxconf.generators.ptx import Surroundings
from ptxconf.isa import load_specs
from ptxconf.isa.packing import pack, unpack
from ptxconf.oracle import mma

REPO = Path(__file__).resolve().parents[3]
SPECS = load_specs(REPO / "specs")

MMA = "mma.sync.aligned."
F16_F32 = MMA + "m16n8k16.row.col.f32.f16.f16.f32"
F16_F16 = MMA + "m16n8k16.row.col.f16.f16.f16.f16"
S8 = MMA + "m16n8k16.row.col.s32.s8.s8.s32"
S8_SAT = MMA + "m16n8k16.row.col.satfinite.s32.s8.s8.s32"
TF32 = MMA + "m16n8k8.row.col.f32.tf32.tf32.f32"
E2M1_F8F6F4 = MMA + "m16n8k32.row.col.kind::f8f6f4.f32.e2m1.e2m1.f32"
E2M1_MXF4 = MMA + "m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0"


def inputs(vid: str, **cells) -> tuple:
    """Zero tiles for every input of ``vid`` (one case), then ``cells[name] = {(row, col): bits}``."""
    v = SPECS.variants[vid]
    bits = {}
    for name in v.inputs:
        lay = v.operands[name].layout
        bits[name] = np.zeros((1, lay.matrices, lay.rows, lay.cols), dtype=np.uint64)
        for (r, c), value in cells.get(name, {}).items():
            bits[name][0, 0, r, c] = value
    return v, bits


def expect(v) -> np.ndarray:
    """An all-zero D tile (one case) to fill in."""
    d = v.operands["D"].layout
    return np.zeros((1, d.matrices, d.rows, d.cols), dtype=np.uint64)


def assert_d(got: np.ndarray, want: np.ndarray) -> None:
    bad = np.argwhere(got != want)
    assert len(bad) == 0, ", ".join(
        f"D{tuple(int(x) for x in b[2:])}: got 0x{int(got[tuple(b)]):x} want 0x{int(want[tuple(b)]):x}" for b in bad[:6]
    )


def emulate(v, bits, params=None) -> np.ndarray:
    """Pack the tiles into per-lane registers, run the emulator, return ``uint32[lane, word]`` of D."""
    params = params or {}
    layout = buffer_layout(v)
    words = np.zeros((1, 32, layout.in_words), dtype=np.uint32)
    for name, off in layout.inputs.items():
        op = v.operands[name]
        words[:, :, off : off + op.words] = pack(op, bits[name], params.get(name))
    (res,) = EmulatorBackend(mma).run("", [Launch(Probe(v, params, Surroundings()), words, layout.out_words, np.zeros(1, np.uint32), 1)])
    assert res.error is None
    return res.out[0, :, : v.operands["D"].words]


# ---------------------------------------------------------------------------
# Floating point
# ---------------------------------------------------------------------------


def _sparse_f16_case(vid):
    return inputs(
        vid,
        # A (16x16 f16): 1.5, 2, -0.25, 3
        A={(0, 0): 0x3E00, (0, 3): 0x4000, (5, 15): 0xB400, (9, 8): 0x4200},
        # B (16x8 f16): 2, 0.5, 4, -1
        B={(0, 0): 0x4000, (3, 0): 0x3800, (15, 7): 0x4400, (8, 2): 0xBC00},
    )


def test_sparse_16x8x16_f16_product_f32_accumulator():
    v, bits = _sparse_f16_case(F16_F32)
    bits["C"][0, 0, 5, 7] = 0x40000000  # C = 2.0f
    d = mma(v, bits)
    # D[0,0] = 1.5*2 + 2*0.5 = 4; D[5,7] = -0.25*4 + 2 = 1; D[9,2] = 3*-1 = -3; all else 0
    want = expect(v)
    want[0, 0, 0, 0] = 0x40800000
    want[0, 0, 5, 7] = 0x3F800000
    want[0, 0, 9, 2] = 0xC0400000
    assert_d(d, want)


def test_sparse_16x8x16_f16_product_in_registers():
    # Figure 79/81 fragments in, the m16n8 C/D fragment out: the ISA's lane/register positions.
    v, bits = _sparse_f16_case(F16_F32)
    bits["C"][0, 0, 5, 7] = 0x40000000
    d = emulate(v, bits)
    assert d[0, 0] == 0x40800000  # D[0,0]: lane 0 (groupID 0, thread 0), d0
    assert d[23, 1] == 0x3F800000  # D[5,7]: lane 23 (groupID 5, thread 3), d1
    assert d[5, 2] == 0xC0400000  # D[9,2]: lane 5 (groupID 1, thread 1), d2 (row groupID + 8)
    assert np.count_nonzero(d) == 3
    # And the same with an f16 D: two halves per register, low to high.
    v, bits = _sparse_f16_case(F16_F16)
    bits["C"][0, 0, 5, 7] = 0x4000  # 2.0
    d = emulate(v, bits)
    assert d[0, 0] == 0x00004400  # D[0,0] = 4 in the low half
    assert d[23, 0] == 0x3C000000  # D[5,7] = 1 in the high half of d0
    assert d[5, 1] == 0x0000C200  # D[9,2] = -3 in the low half of d1
    assert np.count_nonzero(d) == 3


def test_f16_d_rounds_the_exact_sum_to_nearest_even():
    v, bits = inputs(
        F16_F16,
        A={
            (0, 0): 0x3C00, (0, 1): 0x1000,  # 1 + 2**-11: halfway, rounds to even 1.0
            (1, 0): 0x3C00, (1, 1): 0x1000, (1, 2): 0x0C00,  # 1 + 2**-11 + 2**-12: rounds up
            (2, 0): 0x3C01, (2, 1): 0x1000,  # (1 + 2**-10) + 2**-11: halfway, rounds to even 1 + 2**-9
            (3, 0): 0xBC00, (3, 1): 0x9000,  # -(1 + 2**-11): halfway, rounds to even -1.0
        },
        B={(0, 0): 0x3C00, (1, 0): 0x3C00, (2, 0): 0x3C00},
        C={(4, 0): 0x3555},  # C alone passes through unchanged
    )
    want = expect(v)
    want[0, 0, :5, 0] = [0x3C00, 0x3C01, 0x3C02, 0xBC00, 0x3555]
    assert_d(mma(v, bits), want)


def test_tf32_ignores_the_low_13_bits_of_its_container():
    v, bits = inputs(
        TF32,
        A={(0, 0): 0x3F801FFF, (1, 0): 0x3F802000},  # 1.0 + garbage below bit 13; 1 + 2**-10 (bit 13 counts)
        B={(0, 0): 0x40001FFF},  # 2.0 + garbage
        C={(2, 0): 0x3F800001},  # C is .f32: all its bits count
    )
    want = expect(v)
    want[0, 0, 0, 0] = 0x40000000  # 1 * 2
    want[0, 0, 1, 0] = 0x40002000  # (1 + 2**-10) * 2
    want[0, 0, 2, 0] = 0x3F800001
    assert_d(mma(v, bits), want)


def test_f8f6f4_e2m1_sits_in_bits_5_to_2_of_its_byte():
    v, bits = inputs(
        E2M1_F8F6F4,
        A={(0, 0): 0b0011, (0, 1): 0b0100},  # 1.5, 2.0
        B={(0, 0): 0b0111, (1, 0): 0b1010},  # 6.0, -1.0
    )
    a, b = v.operands["A"], v.operands["B"]
    assert a.fragment.value_shift == 2 and a.fragment.container_bits == 8
    words = pack(a, bits["A"])
    assert words[0, 0, 0] == 0x0000100C  # lane 0 a0: byte 0 = 0b0011 << 2, byte 1 = 0b0100 << 2
    assert np.count_nonzero(words) == 1
    bwords = pack(b, bits["B"])
    assert bwords[0, 0, 0] == 0x0000281C  # lane 0 b0: rows 0 and 1 of column 0
    # Padding bits [7:6] and [1:0] are ignored on the way back.
    garbage = np.uint32(0xC3C3C3C3)
    assert np.array_equal(unpack(a, words | garbage), bits["A"])
    assert np.array_equal(unpack(b, bwords | garbage), bits["B"])
    # D[0,0] = 1.5*6 + 2*(-1) = 7, through the oracle and through the registers with garbage padding.
    want = expect(v)
    want[0, 0, 0, 0] = 0x40E00000
    assert_d(mma(v, bits), want)
    layout = buffer_layout(v)
    in_words = np.zeros((1, 32, layout.in_words), dtype=np.uint32)
    in_words[:, :, layout.inputs["A"] : layout.inputs["A"] + a.words] = words | garbage
    in_words[:, :, layout.inputs["B"] : layout.inputs["B"] + b.words] = bwords | garbage
    (res,) = EmulatorBackend(mma).run("", [Launch(Probe(v), in_words, layout.out_words, np.zeros(1, np.uint32), 1)])
    assert res.out[0, 0, 0] == 0x40E00000
    assert np.count_nonzero(res.out[0, :, : v.operands["D"].words]) == 1


def test_mxf4_e2m1_packs_eight_per_register_without_padding():
    v, bits = inputs(E2M1_MXF4, A={(0, 0): 0b0011, (0, 1): 0b0100, (0, 7): 0b1111})
    a = v.operands["A"]
    assert a.fragment.value_shift == 0 and a.fragment.per_register == 8
    words = pack(a, bits["A"])
    assert words[0, 0, 0] == 0xF0000043


def test_block_scale_2x_scales_each_k_chunk_per_row_of_a_and_column_of_b():
    one, two, four, half, eight, quarter = 0x7F, 0x80, 0x81, 0x7E, 0x82, 0x7D  # ue8m0: 2**(e - 127)
    v, bits = inputs(
        E2M1_MXF4,
        # e2m1: 0b0010 = 1, 0b0001 = 0.5, 0b0011 = 1.5. K = 64: chunk 0 is k < 32, chunk 1 is k >= 32.
        A={(0, 0): 0b0010, (0, 31): 0b0001, (0, 32): 0b0011, (0, 40): 0b0010, (1, 0): 0b0010},
        B={(0, 0): 0b0010, (31, 0): 0b0010, (32, 0): 0b0010, (40, 0): 0b0010, (0, 1): 0b0010},
    )
    assert bits["scale_A"].shape == (1, 1, 16, 2) and bits["scale_B"].shape == (1, 1, 2, 8)
    bits["scale_A"][:] = one
    bits["scale_B"][:] = one
    bits["scale_A"][0, 0, 0, :] = [two, four]  # row 0: chunk 0 x2, chunk 1 x4
    bits["scale_A"][0, 0, 1, 0] = quarter  # row 1, chunk 0
    bits["scale_B"][0, 0, :, 0] = [half, eight]  # column 0: chunk 0 x0.5, chunk 1 x8
    want = expect(v)
    # D[0,0] = (1*2)(1*0.5) + (0.5*2)(1*0.5) + (1.5*4)(1*8) + (1*4)(1*8) = 1 + 0.5 + 48 + 32 = 81.5
    want[0, 0, 0, 0] = 0x42A30000
    want[0, 0, 0, 1] = 0x40000000  # (1*2)(1*1) = 2
    want[0, 0, 1, 0] = 0x3E000000  # (1*0.25)(1*0.5) = 0.125
    want[0, 0, 1, 1] = 0x3E800000  # (1*0.25)(1*1) = 0.25
    assert_d(mma(v, bits), want)


# ---------------------------------------------------------------------------
# Integers
# ---------------------------------------------------------------------------


def _s8_limit_case(vid):
    return inputs(
        vid,
        A={(0, 0): 0x7F, (1, 0): 0x80},  # 127, -128
        B={(0, 0): 0x7F, (0, 1): 0x7F},  # 127, 127
        C={(0, 0): 0x7FFFFF9B, (1, 1): 0x80000005},  # 2**31 - 101, -2**31 + 5
    )


@pytest.mark.parametrize(
    "vid, high, low",
    [
        (S8, 0x80003E9C, 0x7FFFC085),  # 2**31 - 101 + 16129 wraps; -2**31 + 5 - 16256 wraps
        (S8_SAT, 0x7FFFFFFF, 0x80000000),  # .satfinite clamps to the s32 limits
    ],
)
def test_int8_wraps_or_saturates_at_the_s32_limits(vid, high, low):
    v, bits = _s8_limit_case(vid)
    want = expect(v)
    want[0, 0, 0, 0] = high
    want[0, 0, 1, 1] = low
    want[0, 0, 0, 1] = 0x00003F01  # 127 * 127 = 16129, in range either way
    want[0, 0, 1, 0] = 0xFFFFC080  # -128 * 127 = -16256
    assert_d(mma(v, bits), want)


@pytest.mark.parametrize(
    "types, d00",
    [
        ("u4.u4", 0x00000119),  # 15*15 + 8*7 = 281
        ("u4.s4", 0x00000029),  # 15*(-1) + 8*7 = 41
        ("s4.u4", 0xFFFFFFB9),  # (-1)*15 + (-8)*7 = -71
        ("s4.s4", 0xFFFFFFC9),  # (-1)*(-1) + (-8)*7 = -55
    ],
)
def test_u4_s4_sign_handling(types, d00):
    vid = MMA + f"m8n8k32.row.col.s32.{types}.s32"
    v, bits = inputs(vid, A={(0, 0): 0xF, (0, 1): 0x8}, B={(0, 0): 0xF, (1, 0): 0x7})
    want = expect(v)
    want[0, 0, 0, 0] = d00
    assert_d(mma(v, bits), want)
    # Figure 59: lane 0 holds row 0, columns 0..7 in a0, nibbles low to high.
    assert pack(v.operands["A"], bits["A"])[0, 0, 0] == 0x0000008F


@pytest.mark.parametrize(
    "op, d",
    [
        # A row 0 = 1,0,1,1,0,0,0,1 and B column 0 = 1,1,0,1,0,1,0,0 over k = 0..7; C[0,0] = 10, C[3,3] = -1.
        ("and", {(0, 0): 12, (3, 3): 0xFFFFFFFF}),  # popc(A & B) = 2
        # popc(A ^ B): 4 where exactly one side is row 0 / column 0 (4 ones each), 4 at (0,0) too.
        ("xor", {(0, 0): 14, (3, 3): 0xFFFFFFFF, **{(0, c): 4 for c in range(1, 8)}, **{(r, 0): 4 for r in range(1, 8)}}),
    ],
)
def test_b1_popc_on_literal_bit_patterns(op, d):
    vid = MMA + f"m8n8k128.row.col.s32.b1.b1.s32.{op}.popc"
    a_row = [1, 0, 1, 1, 0, 0, 0, 1]
    b_col = [1, 1, 0, 1, 0, 1, 0, 0]
    v, bits = inputs(
        vid,
        A={(0, k): x for k, x in enumerate(a_row)},
        B={(k, 0): x for k, x in enumerate(b_col)},
        C={(0, 0): 10, (3, 3): 0xFFFFFFFF},
    )
    want = expect(v)
    for (r, c), x in d.items():
        want[0, 0, r, c] = x
    assert_d(mma(v, bits), want)
    # Figure 62: lane 0 holds row 0, columns 0..31 in a0, bit i = column i.
    assert pack(v.operands["A"], bits["A"])[0, 0, 0] == 0b10001101


def test_integer_accumulator_alone_is_passed_through():
    v, bits = inputs(S8_SAT, C={(15, 7): 0x80000000, (8, 0): 0x7FFFFFFF})
    want = expect(v)
    want[0, 0, 15, 7] = 0x80000000
    want[0, 0, 8, 0] = 0x7FFFFFFF
    assert_d(mma(v, bits), want)


def test_tag_digits_are_read_back_as_by_a_lookup_per_value():
    """The map comparator reads D's tag digits with one sorted search: each value's index in the alphabet (the last
    where one repeats, -0.0 as 0.0), -1 for anything else (NaN, a value off the alphabet)."""
    from ptxconf.families.mma.compare import _digit_lookup

    alphabet = [0.0, 1.0, -2.0, 0.5, 1.0, 3.0]
    lookup = {float(x): i for i, x in enumerate(alphabet)}
    values = np.array([[0.0, -0.0, 1.0, -2.0], [0.5, 3.0, 7.0, np.nan], [np.inf, -np.inf, 2.0, 0.25]])
    want = np.array([[lookup.get(float(x), -1) for x in row] for row in values])
    got = _digit_lookup(alphabet)(values)
    assert got.dtype == np.int64 and np.array_equal(got, want) and got[0, 2] == 4 and got[1, 3] == -1
    assert np.array_equal(_digit_lookup([])(values), np.full(values.shape, -1))
