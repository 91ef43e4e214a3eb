"""The arithmetic model of one mma path, evaluated bit-exactly and vectorised over dot products.

A dot product is ``d = sum_k a_k * b_k + c``: inputs and output as container bits.
Float paths follow the block-FMA model stated in specs/numerics.yaml:

1. inputs decode from their bits (``.tf32``: the low 13 bits dropped, or rounded when
   ``input_conversion`` says so); ``in_subnormals: flush`` zeroes subnormal inputs;
2. NaN, Inf*0 and Inf-Inf give the canonical NaN; otherwise an Inf gives Inf;
3. per block of ``block`` products: each product is exact in float64 (at most 22
   significand bits); its raw exponent is e(a)+e(b); C's is e(C).  The anchor E is
   the largest raw exponent of a non-zero term (at least ``exp_floor``); each term is
   scaled onto the grid ``2^(E - frac_bits)`` and truncated (or rounded) there; the
   integers are summed exactly (float64 holds them: fewer than 2^53);
4. the exact sum is rounded once to ``out_precision`` bits with ``final_rounding``,
   with the D type's exponent range, subnormals and overflow rule;
5. the next block starts from that D as its C.

``k_order: pairs`` splits the K products into two halves (k mod 4 in {0,1}, then {2,3}),
each done as its own run of blocks, the second starting from the first's D;
``c_entry: add_rne`` starts the blocks from 0 and adds C at the end with one
round-to-nearest-even addition in the D type (two f16 mma's and an FADD/HADD).

``f64`` is IEEE: a chain of fused multiply-adds (or one exactly rounded dot);
integer and ``.b1`` paths are exact.  Everything returns D container bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from conformance.spec.ptxtypes import ptx_type

__all__ = ["PathParams", "Types", "FORMATS", "dot_bits", "explain", "round_to_format", "mma_semantics"]


@dataclass(frozen=True)
class Fmt:
    p: int  # significand bits, implicit bit included
    emin: int
    emax: int


FORMATS = {
    "f16": Fmt(11, -14, 15),
    "bf16": Fmt(8, -126, 127),
    "tf32": Fmt(11, -126, 127),
    "f32": Fmt(24, -126, 127),
    "f64": Fmt(53, -1022, 1023),
    "e4m3": Fmt(4, -6, 8),
    "e5m2": Fmt(3, -14, 15),
}


@dataclass(frozen=True)
class PathParams:
    name: str
    kind: str  # float | f64 | int | b1
    a_types: tuple[str, ...] = ()
    d_types: tuple[str, ...] = ()
    block: int = 16
    frac_bits: int = 25
    out_precision: int = 24
    final_rounding: str = "rz"  # rz | rne | ru | rd
    input_conversion: str = "truncate"  # tf32: truncate | rna | rne
    f64_mode: str = "sequential_fma"  # or exact_dot
    align: str = "truncate"  # truncate | rne
    c_entry: str = "fused"  # fused | late | add_rne (products from 0, then one RNE add of C in the D type)
    k_order: str = "natural"  # natural | pairs (k mod 4 in {0,1}, then {2,3}: two halves, each its own blocks)
    exp_floor: int | None = None
    in_subnormals: str = "keep"
    out_subnormals: str = "keep"
    overflow: str = "inf"  # inf | saturate
    neg_zero: str = "ieee"  # ieee | positive
    nan_propagation: str = "canonical"  # canonical | first
    nan_bits: dict = field(default_factory=dict, hash=False, compare=False)
    families: tuple[str, ...] = ()  # instruction families the path is for (empty: every family)

    def describe(self) -> dict:
        keys = ("kind", "block", "frac_bits", "out_precision", "final_rounding", "input_conversion", "f64_mode", "align",
                "c_entry", "k_order", "exp_floor", "in_subnormals", "out_subnormals", "overflow", "neg_zero", "nan_propagation")
        return {k: getattr(self, k) for k in keys}


# ---------------------------------------------------------------------------
# decoding and rounding
# ---------------------------------------------------------------------------


def convert_tf32(bits: np.ndarray, mode: str) -> np.ndarray:
    """The 32-bit container of a .tf32 operand -> the 19-bit value it stands for (as f32 bits)."""
    bits = np.asarray(bits, dtype=np.uint64) & np.uint64(0xFFFFFFFF)
    mask = np.uint64(0xFFFFE000)
    if mode == "truncate":
        return bits & mask
    finite = (bits & np.uint64(0x7F800000)) != np.uint64(0x7F800000)
    if mode == "rna":
        up = (bits + np.uint64(0x1000)) & mask
    elif mode == "rne":
        lsb = (bits >> np.uint64(13)) & np.uint64(1)
        up = (bits + np.uint64(0xFFF) + lsb) & mask
    else:
        raise ValueError(f"unknown tf32 input conversion {mode!r}")
    return np.where(finite, up & np.uint64(0xFFFFFFFF), bits & mask)


def decode(type_name: str, bits: np.ndarray, p: PathParams | None = None) -> np.ndarray:
    if type_name == "tf32" and p is not None:
        bits = convert_tf32(bits, p.input_conversion)
    vals = ptx_type(type_name).decode(bits)
    if p is not None and p.in_subnormals == "flush" and type_name in FORMATS:
        tiny = np.abs(vals) < 2.0 ** FORMATS[type_name].emin
        vals = np.where(tiny & (vals != 0), np.copysign(0.0, vals), vals)
    return vals


def raw_exponent(x: np.ndarray, emin: int) -> np.ndarray:
    """The exponent field's value of ``x`` (subnormals at emin); meaningless for 0."""
    _, ex = np.frexp(x)
    return np.maximum(ex.astype(np.int64) - 1, emin)


def round_to_format(x: np.ndarray, fmt: Fmt, p: int, mode: str, subnormals: str = "keep", overflow: str = "inf") -> np.ndarray:
    """Exact float64 values -> the nearest (per ``mode``) value of ``p`` significand bits within ``fmt``'s range."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    neg = np.signbit(x)
    e = raw_exponent(np.where(ax == 0, 1.0, ax), -10**6)
    q = np.maximum(e - (p - 1), fmt.emin - (p - 1))
    y = np.ldexp(ax, -q)
    if mode == "rz":
        r = np.trunc(y)
    elif mode == "rne":
        r = np.rint(y)
    elif mode == "rna":
        r = np.floor(y + 0.5)
    elif mode == "ru":
        r = np.where(neg, np.trunc(y), np.ceil(y))
    elif mode == "rd":
        r = np.where(neg, np.ceil(y), np.trunc(y))
    else:
        raise ValueError(f"unknown rounding {mode!r}")
    out = np.ldexp(r, q)
    if subnormals == "flush":
        out = np.where(out < 2.0 ** fmt.emin, 0.0, out)
    big = 2.0 ** (fmt.emax + 1)
    maxf = (2.0**p - 1) * 2.0 ** (fmt.emax - p + 1)
    if overflow == "saturate":
        out = np.where(out >= big, maxf, out)
    else:
        to_max = (mode == "rz") | ((mode == "ru") & neg) | ((mode == "rd") & ~neg)
        # IEEE under directed rounding stops at the largest finite; the model's "inf" rule does not
        out = np.where(out >= big, np.where(to_max & (overflow == "ieee"), maxf, np.inf), out)
    return np.where(neg, -out, out)


def _encode(d_type: str, vals: np.ndarray) -> np.ndarray:
    return ptx_type(d_type).encode(vals, exact=False)


# ---------------------------------------------------------------------------
# float paths
# ---------------------------------------------------------------------------


@dataclass
class BlockTrace:
    anchor: np.ndarray
    grid: np.ndarray  # exponent of one grid unit
    terms: np.ndarray  # float64 exact terms [N, T]
    aligned: np.ndarray  # integers [N, T]
    total: np.ndarray  # exact sum (float64)
    rounded: np.ndarray


def _block(p: PathParams, prods: np.ndarray, pexp: np.ndarray, c: np.ndarray, c_fmt: Fmt, d_fmt: Fmt, trace=None):
    """One block: aligned sum of products (and C when fused), rounded to D.  Returns float64 D values."""
    nz = prods != 0
    cnz = c != 0
    cexp = raw_exponent(np.where(cnz, c, 1.0), c_fmt.emin)
    lo = np.int64(-(10**6))
    e_prod = np.where(nz, pexp, lo).max(axis=-1, initial=lo)
    fused = p.c_entry == "fused"
    anchor = np.maximum(e_prod, np.where(cnz, cexp, lo)) if fused else e_prod
    if p.exp_floor is not None:
        anchor = np.maximum(anchor, p.exp_floor)
    anchor = np.where(anchor == lo, 0, anchor)
    shift = (p.frac_bits - anchor)[:, None]
    terms = np.concatenate([prods, c[:, None]], axis=1) if fused else prods
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.ldexp(terms, shift)
    aligned = np.trunc(scaled) if p.align == "truncate" else np.rint(scaled)
    total_int = aligned.sum(axis=-1)
    total = np.ldexp(total_int, anchor - p.frac_bits)
    if not fused:
        total = total + c  # exact in float64 only when the exponents are close; late entry is a hypothesis to test
    rounded = round_to_format(total, d_fmt, p.out_precision, p.final_rounding, p.out_subnormals, p.overflow)
    # signed zeros
    allzero = ~nz.any(axis=-1) & ~cnz
    all_neg = np.signbit(prods).all(axis=-1) & np.signbit(c)
    zero_sign = allzero & all_neg & (p.neg_zero == "ieee")
    rounded = np.where(total_int == 0, np.where(zero_sign, -0.0, 0.0), rounded) if fused else np.where(
        total == 0, np.where(zero_sign, -0.0, 0.0), rounded)
    if trace is not None:
        trace.append(BlockTrace(anchor, anchor - p.frac_bits, terms, aligned, total, rounded))
    return rounded


def _float_dot(p: PathParams, a_t: str, b_t: str, c_t: str, d_t: str, a_bits, b_bits, c_bits, trace=None) -> np.ndarray:
    a = decode(a_t, a_bits, p)
    b = decode(b_t, b_bits, p)
    c = decode(c_t, c_bits, p if c_t != "tf32" else None)
    a_fmt, b_fmt, c_fmt, d_fmt = FORMATS[a_t], FORMATS[b_t], FORMATS[c_t], FORMATS[d_t]
    with np.errstate(invalid="ignore", over="ignore"):
        prods = a * b
    nan = np.isnan(prods).any(axis=-1) | np.isnan(c)
    pinf = (prods == np.inf).any(axis=-1) | (c == np.inf)
    ninf = (prods == -np.inf).any(axis=-1) | (c == -np.inf)
    nan |= pinf & ninf
    finite_p = np.where(np.isfinite(prods), prods, 0.0)
    finite_c = np.where(np.isfinite(c), c, 0.0)
    pexp = raw_exponent(np.where(a == 0, 1.0, a), a_fmt.emin) + raw_exponent(np.where(b == 0, 1.0, b), b_fmt.emin)
    k = prods.shape[-1]
    order = list(range(k))
    halves = [order]
    if p.k_order == "pairs":
        halves = [[j for j in order if j % 4 < 2], [j for j in order if j % 4 >= 2]]
    elif p.k_order != "natural":
        raise ValueError(f"unknown k_order {p.k_order!r}")
    late = p.c_entry == "add_rne"
    acc, acc_fmt = (np.zeros_like(finite_c), d_fmt) if late else (finite_c, c_fmt)
    bp = replace(p, c_entry="fused") if late else p
    for half in halves:
        for j in range(0, max(len(half), 1), p.block):
            idx = half[j : j + p.block]
            acc = _block(bp, finite_p[:, idx], pexp[:, idx], acc, acc_fmt, d_fmt, trace)
            acc_fmt = d_fmt
    if late:  # a half that overflowed is an Inf the final add meets (Inf + -Inf C gives NaN)
        pinf, ninf = pinf | (acc == np.inf), ninf | (acc == -np.inf)
        nan |= pinf & ninf
        acc = np.where(np.isfinite(acc), acc, 0.0)
        total = acc + finite_c  # both hold few bits: exact in float64 unless far apart, where RNE lands the same
        acc = round_to_format(total, d_fmt, d_fmt.p, "rne", p.out_subnormals, p.overflow)
        neg0 = (total == 0) & np.signbit(acc) & np.signbit(finite_c) & (p.neg_zero == "ieee")
        acc = np.where(total == 0, np.where(neg0, -0.0, 0.0), acc)
    out = _encode(d_t, acc)
    out = np.where(pinf, _encode(d_t, np.array(np.inf)), out)
    out = np.where(ninf, _encode(d_t, np.array(-np.inf)), out)
    return np.where(nan, np.uint64(p.nan_bits.get(d_t, ptx_type(d_t).mask >> 1)), out).astype(np.uint64)


# ---------------------------------------------------------------------------
# f64, integer, b1
# ---------------------------------------------------------------------------


def _f64_round(x: Fraction) -> float:
    try:
        return float(x)  # correctly rounded (ties to even), subnormals included
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def _f64_dot(p: PathParams, a_bits, b_bits, c_bits) -> np.ndarray:
    a = ptx_type("f64").decode(a_bits)
    b = ptx_type("f64").decode(b_bits)
    c = ptx_type("f64").decode(c_bits)
    out = np.zeros(len(c), dtype=np.float64)
    nan = np.zeros(len(c), dtype=bool)
    for i in range(len(c)):
        if not (np.isfinite(a[i]).all() and np.isfinite(b[i]).all() and np.isfinite(c[i])):
            with np.errstate(invalid="ignore"):
                v = float(np.sum(a[i] * b[i]) + c[i])
            nan[i] = np.isnan(v)
            out[i] = v
            continue
        if p.f64_mode == "exact_dot":
            exact = sum((Fraction(x) * Fraction(y) for x, y in zip(a[i], b[i])), Fraction(c[i]))
            zeros = [np.signbit(x) ^ np.signbit(y) for x, y in zip(a[i], b[i]) if x * y == 0]
            v = _f64_round(exact)
            if exact == 0:
                v = -0.0 if (all(zeros) and len(zeros) == len(a[i]) and np.signbit(c[i])) else 0.0
        else:
            v = float(c[i])
            for x, y in zip(a[i], b[i]):
                if not np.isfinite(v):
                    v = float(v + x * y)
                    continue
                exact = Fraction(x) * Fraction(y) + Fraction(v)
                if exact == 0:
                    prod_neg = bool(np.signbit(x) ^ np.signbit(y))
                    v = -0.0 if (x * y == 0 and prod_neg and np.signbit(v) and v == 0) else 0.0
                else:
                    v = _f64_round(exact)
        out[i] = v
    bits = out.view(np.uint64).astype(np.uint64)
    return np.where(nan, np.uint64(p.nan_bits.get("f64", 0x7FFFFFFFFFFFFFFF)), bits)


def _int_dot(a_t, b_t, a_bits, b_bits, c_bits, satfinite: bool, bitop: str | None) -> np.ndarray:
    a = ptx_type(a_t).decode(a_bits).astype(np.int64)
    b = ptx_type(b_t).decode(b_bits).astype(np.int64)
    c = ptx_type("s32").decode(c_bits).astype(np.int64)
    if bitop == "xor":
        acc = (a ^ b).sum(-1)
    elif bitop == "and":
        acc = (a & b).sum(-1)
    else:
        acc = (a * b).sum(-1)
    acc = acc + c
    if satfinite:
        acc = np.clip(acc, -(2**31), 2**31 - 1)
    return (acc & 0xFFFFFFFF).astype(np.uint64)


# ---------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Types:
    a: str
    b: str
    c: str
    d: str
    satfinite: bool = False
    bitop: str | None = None

    @classmethod
    def of(cls, v) -> Types:
        if v.family == "wgmma":  # C is D's registers
            return cls(v.atype, v.btype, v.dtype, v.dtype, bool(v.satfinite), v.bitop)
        ops = v.operands
        return cls(ops["A"].type.name, ops["B"].type.name, ops["C"].type.name, ops["D"].type.name,
                   bool(v.instruction.satfinite), v.instruction.bitop)


def dot_bits(p: PathParams, t: Types, a_bits, b_bits, c_bits, trace=None) -> np.ndarray:
    """D bits ``uint64[N]`` of N dot products: ``a_bits, b_bits [N, K]``, ``c_bits [N]``."""
    a_bits = np.atleast_2d(np.asarray(a_bits, dtype=np.uint64))
    b_bits = np.atleast_2d(np.asarray(b_bits, dtype=np.uint64))
    c_bits = np.atleast_1d(np.asarray(c_bits, dtype=np.uint64))
    if p.kind == "float":
        return _float_dot(p, t.a, t.b, t.c, t.d, a_bits, b_bits, c_bits, trace)
    if p.kind == "f64":
        return _f64_dot(p, a_bits, b_bits, c_bits)
    return _int_dot(t.a, t.b, a_bits, b_bits, c_bits, t.satfinite, t.bitop)


def explain(p: PathParams, t: Types, a_bits, b_bits, c_bit) -> str:
    """The aligned terms of one dot product, block by block."""
    trace: list[BlockTrace] = []
    d = dot_bits(p, t, np.asarray([a_bits]), np.asarray([b_bits]), np.asarray([c_bit]), trace)
    lines = [f"path {p.name}: {p.describe()}"]
    a = decode(t.a, np.asarray(a_bits, dtype=np.uint64), p)
    b = decode(t.b, np.asarray(b_bits, dtype=np.uint64), p)
    lines.append("inputs: " + ", ".join(f"a{k}={x!r} b{k}={y!r}" for k, (x, y) in enumerate(zip(a, b))))
    for j, bt in enumerate(trace):
        g = int(bt.grid[0])
        lines.append(f"block {j}: anchor exponent E={int(bt.anchor[0])}, grid 2^{g} ({p.frac_bits} bits below E, {p.align})")
        for i, (term, al) in enumerate(zip(bt.terms[0], bt.aligned[0])):
            name = f"p{j * p.block + i}" if i < bt.terms.shape[1] - (p.c_entry != "late") else "C"
            lost = float(term) - float(al) * 2.0**g
            lines.append(f"  {name:>4}: {float(term)!r:>26}  aligned {int(al):+d} x 2^{g}  lost {lost!r}")
        lines.append(f"  sum {float(bt.total[0])!r} -> {p.final_rounding} to {p.out_precision} bits: {float(bt.rounded[0])!r}")
    width = ptx_type(t.d).bits
    lines.append(f"D = {int(d[0]):#0{width // 4 + 2}x} ({float(ptx_type(t.d).decode(d)[0])!r})")
    return "\n".join(lines)


def mma_semantics(p_for):
    """Emulator semantics computing each D element with the model: ``p_for(variant) -> PathParams``."""

    def semantics(v, bits: dict[str, np.ndarray]) -> np.ndarray:
        t = Types.of(v)
        p = p_for(v)
        a, b, c = bits["A"], bits["B"], bits["C"]  # [case, mat, M, K], [case, mat, K, N], [case, mat, M, N]
        cs, mats, m, k = a.shape
        n = b.shape[-1]
        ad = np.broadcast_to(a[:, :, :, None, :], (cs, mats, m, n, k)).reshape(-1, k)
        bd = np.broadcast_to(np.swapaxes(b, -1, -2)[:, :, None, :, :], (cs, mats, m, n, k)).reshape(-1, k)
        d = dot_bits(p, t, ad, bd, c.reshape(-1))
        return d.reshape(cs, mats, m, n)

    return semantics
