"""The arithmetic model of one mma path, evaluated bit-exactly and vectorised over dot products.

A dot product is ``d = sum_k a_k * b_k + c``: inputs and output as container bits.
Float paths follow the block-FMA model stated in specs/numerics.yaml:

1. inputs decode from their bits (``.tf32``: the low 13 bits dropped, or rounded when
   ``input_conversion`` says so); ``in_subnormals: flush`` zeroes subnormal inputs;
2. a NaN operand, Inf*0 or Inf-Inf give a NaN (``nan_propagation``: the D type's ``nan_bits``, or
   the first NaN operand's payload, quieted); otherwise an Inf gives Inf;
3. per block of ``block`` products: each product is exact in float64 (at most 22
   significand bits); its raw exponent is e(a)+e(b); C's is e(C).  The anchor E is
   the largest raw exponent of a non-zero term (at least ``exp_floor``); each term is
   scaled onto the grid ``2^(E - frac_bits)`` and truncated there (``align: rne`` rounds it;
   ``align: sticky`` keeps one more bit, the OR of everything below); the integers are summed
   exactly (float64 holds them: fewer than 2^53);
4. the exact sum is rounded once to ``out_precision`` bits with ``final_rounding``, within the
   accumulator's exponent range (``acc_type``: ``d``, the D type's, so a sum in D's subnormal range is cut at
   ``2^(emin_D - out_precision + 1)``; ``f32``: f32's), subnormals and overflow rule;
5. the next block starts from that result as its C; where ``out_precision`` exceeds D's precision (or
   ``acc_type`` is wider than D) the last block's result is converted to D with round-to-nearest-even (two
   roundings: the first one cuts everything below its grid before the second sees a tie).

``k_order: pairs`` splits the K products into two halves (k mod 4 in {0,1}, then {2,3}),
each done as its own run of blocks, the second starting from the first's D;
``c_entry: add_rne`` starts the blocks from 0 and adds C at the end with one
round-to-nearest-even addition in the D type (two f16 mma's and an FADD/HADD);
``c_entry: block_add`` starts the running value at C, sums each block's products alone (rounded as in 4.)
and adds that block sum to the running value with one more rounding of the same kind: a chain of
correctly rounded additions (m8n8k4's f32 pair sums).
``operand_cvt: f16`` takes .e4m3/.e5m2 elements as the f16 values they convert to exactly, so a subnormal
.e4m3 element has its own raw exponent (fp8 mma.sync lowered to the f16 datapath).
``underflow_sign: positive``: a non-zero sum that rounds to zero gives +0 (IEEE 754 keeps its sign).

Sparse (``mma.sp``) dot products pass the stored A elements with their dense positions
(``sparse_pos``): ``sparse_zeros: skip`` multiplies only the B rows the metadata selects,
``multiply`` multiplies the zeroed positions too (so an Inf or NaN there gives NaN);
``sparse_order`` is the index the blocks (and ``k_order`` halves) take a product by: its dense position, or its
stored slot in the compressed A (``slot``: halves by slot mod 4, as A's registers hold the slots).

``f64`` is IEEE: a chain of fused multiply-adds in ascending k from C (``reverse_fma``: descending;
``exact_dot``: one rounding), each rounded as the instruction's ``.rn/.rz/.rm/.rp`` says
(``f64_rnd: ignored``: always to nearest); a NaN operand of a step wins in the order ``nan_propagation`` names
(``payload_c_b_a``: the running value, then B's element, then A's); integer and ``.b1`` paths are exact.
A path may override parameters per shape (``PathParams.for_shape``).  Everything returns D container bits.

This NumPy arithmetic is the reference.  Where numba is installed (the extra ``fast``), ``dot_bits`` computes through
compiled.py's kernels, the same model bit for bit (tests/tools/test_numerics_compiled.py), and back here for any
parameter value they do not compile, a ``trace``, or ``PTXCONF_MODEL=numpy``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np
from ptxconf.isa.ptxtypes import ptx_type

from .formats import FORMATS, ROUNDING_MODIFIERS, Fmt, acc_format, f64_rounding, unpack_words

__all__ = ["PathParams", "Types", "Fmt", "FORMATS", "ROUNDING_MODIFIERS", "acc_format", "dot_bits", "explain", "round_to_format", "mma_semantics", "sparse_dots",
           "stored_positions", "f64_round", "nan_convert"]


@dataclass(frozen=True)
class PathParams:
    name: str
    kind: str  # float | f64 | int | b1
    a_types: tuple[str, ...] = ()
    d_types: tuple[str, ...] = ()
    block: int = 16
    frac_bits: int = 25
    out_precision: int = 24
    final_rounding: str = "rz"  # rz | rne | rna | ru | rd
    input_conversion: str = "truncate"  # tf32: truncate | rna | rne
    f64_mode: str = "sequential_fma"  # sequential_fma | reverse_fma | exact_dot
    align: str = "truncate"  # truncate | rne | sticky
    c_entry: str = "fused"  # fused | late | add_rne (products from 0, then one RNE add of C in the D type) | block_add
    acc_type: str = "d"  # d | f32: the exponent range the blocks' results are rounded within
    k_order: str = "natural"  # natural | pairs (k mod 4 in {0,1}, then {2,3}: two halves, each its own blocks)
    exp_floor: int | None = None
    in_subnormals: str = "keep"
    out_subnormals: str = "keep"
    overflow: str = "inf"  # inf | saturate | ieee
    neg_zero: str = "ieee"  # ieee | positive
    underflow_sign: str = "keep"  # keep | positive: the sign of a zero D rounded from a non-zero sum
    operand_cvt: str = "none"  # none | f16: A and B taken as (exactly converted) f16 values before the products
    nan_propagation: str = "canonical"  # canonical | payload_c_first | payload_a_first | (f64) payload_c_b_a | payload_b_c_a
    nan_bits: dict = field(default_factory=dict, hash=False, compare=False)
    families: tuple[str, ...] = ()  # instruction families the path is for (empty: every family)
    f64_rnd: str = "each_fma"  # each_fma | ignored: what an f64 .rz/.rm/.rp modifier rounds
    sparse_zeros: str = "skip"  # skip | multiply: mma.sp's zeroed A elements
    sparse_order: str = "position"  # position | slot: the order mma.sp's products enter the blocks
    integer: str = "exact"  # exact: the sum is exact, wrapped to s32 (clamped with .satfinite)
    shapes: tuple = field(default=(), hash=False, compare=False)  # ((shape, ((param, value), ...)), ...)

    def describe(self) -> dict:
        keys = ("kind", "block", "frac_bits", "out_precision", "final_rounding", "input_conversion", "f64_mode", "align",
                "c_entry", "acc_type", "k_order", "exp_floor", "in_subnormals", "out_subnormals", "overflow", "neg_zero", "underflow_sign",
                "operand_cvt", "nan_propagation", "f64_rnd", "sparse_zeros", "sparse_order", "integer")
        return {k: getattr(self, k) for k in keys}

    def for_shape(self, shape: str | None) -> PathParams:
        """The parameters of one instruction shape (``"m8n8k4"``): the path's, with that shape's overrides."""
        for s, over in self.shapes:
            if s == shape:
                return replace(self, **dict(over))
        return self

    def overridden(self, shape: str | None) -> set[str]:
        """Parameters ``shape`` overrides."""
        return {k for s, over in self.shapes if s == shape for k, _ in over}


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
    """The exponent field's value of ``x`` (subnormals at emin); meaningless for 0.

    Read from float64's own exponent field (every value of the narrower formats is normal there); only float64
    zeros and subnormals take ``frexp`` (4x slower over a whole array)."""
    x = np.asarray(x, dtype=np.float64)
    field = (x.view(np.int64) >> 52) & 0x7FF
    ex = field - 1023
    odd = field == 0
    if odd.any():
        _, fx = np.frexp(x)
        ex = np.where(odd, fx.astype(np.int64) - 1, ex)
    return np.maximum(ex, emin)


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


def underflow_zero(p: PathParams, rounded: np.ndarray) -> np.ndarray:
    """The sign of a zero that rounding made from a non-zero sum (``underflow_sign``).

    IEEE 754 keeps the exact sum's sign (``keep``: a negative sum below D's smallest subnormal gives -0);
    ``positive``: the zero is +0, as a datapath that attaches the sign only to a non-zero magnitude gives it."""
    if p.underflow_sign == "keep":
        return rounded
    if p.underflow_sign != "positive":
        raise ValueError(f"unknown underflow_sign {p.underflow_sign!r}")
    return np.where(rounded == 0, 0.0, rounded)


def _encode(d_type: str, vals: np.ndarray) -> np.ndarray:
    return ptx_type(d_type).encode(vals, exact=False)


def _to_d(p: PathParams, acc: np.ndarray, d_fmt: Fmt) -> np.ndarray:
    """The last block's result (held to out_precision bits in acc_type's range) converted to D with RNE where it can
    hold more than D: more bits, or a wider exponent range."""
    if p.out_precision <= d_fmt.p and acc_format(p, d_fmt) == d_fmt:
        return acc
    with np.errstate(invalid="ignore"):
        finite = np.where(np.isfinite(acc), acc, 0.0)
        return np.where(np.isfinite(acc), underflow_zero(p, round_to_format(finite, d_fmt, d_fmt.p, "rne", p.out_subnormals,
                                                                              p.overflow)), acc)


# ---------------------------------------------------------------------------
# NaN payloads
# ---------------------------------------------------------------------------


def _container(t: str) -> str:
    return "f32" if t == "tf32" else t


def nan_convert(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
    """A NaN of type ``src`` -> the quiet NaN of type ``dst`` with its sign and payload (shifted to fit)."""
    src, dst = _container(src), _container(dst)
    sb, db = ptx_type(src).bits, ptx_type(dst).bits
    sm, dm = FORMATS[src].p - 1, FORMATS[dst].p - 1
    bits = np.asarray(bits, dtype=np.uint64)
    sign = (bits >> np.uint64(sb - 1)) & np.uint64(1)
    mant = bits & np.uint64((1 << sm) - 1)
    mant = mant << np.uint64(dm - sm) if dm >= sm else mant >> np.uint64(sm - dm)
    exp = np.uint64(((1 << (db - 1 - dm)) - 1) << dm)
    return (sign << np.uint64(db - 1)) | exp | mant | np.uint64(1 << (dm - 1))


def _first_nan(p: PathParams, d_t: str, ops: list[tuple[str, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """(has a NaN operand, its D-type NaN bits) for operands in the order ``nan_propagation`` gives.

    ``ops``: (type, bits [N, n], is-NaN [N, n]) in the order C, then a0, b0, a1, b1, ..."""
    if p.nan_propagation == "payload_a_first":
        ops = ops[1:] + ops[:1]
    elif p.nan_propagation != "payload_c_first":  # payload_c_b_a / payload_b_c_a: orders of the f64 chain's steps only
        raise ValueError(f"nan_propagation {p.nan_propagation!r} is not a rule of the block model (f64 paths only)")
    n = ops[0][1].shape[0]
    found = np.zeros(n, dtype=bool)
    out = np.zeros(n, dtype=np.uint64)
    for t, bits, isnan in ops:
        for j in range(bits.shape[1]):
            take = isnan[:, j] & ~found
            if take.any():
                out = np.where(take, nan_convert(bits[:, j], t, d_t), out)
                found |= take
    return found, out


# ---------------------------------------------------------------------------
# float paths
# ---------------------------------------------------------------------------


@dataclass
class BlockTrace:
    anchor: np.ndarray
    grid: np.ndarray  # exponent of one grid unit
    terms: np.ndarray  # float64 exact terms [N, T]
    aligned: np.ndarray  # integers [N, T] (with sticky: on the grid one bit finer)
    total: np.ndarray  # exact sum (float64)
    rounded: np.ndarray
    exps: np.ndarray | None = None  # raw exponents of the terms [N, T] (products e(a)+e(b), C e(C))
    mask: np.ndarray | None = None  # [N, T]: the terms this block holds
    labels: np.ndarray | None = None  # [N, T]: the k of each product (-1 for C)


def _block(p: PathParams, prods: np.ndarray, pexp: np.ndarray, c: np.ndarray, c_fmt: Fmt, r_fmt: Fmt, trace=None,
           mask: np.ndarray | None = None, labels: np.ndarray | None = None):
    """One block: aligned sum of products (and C when fused), rounded within ``r_fmt`` (acc_type's range).  Returns float64.

    ``mask [N, T]`` picks the block's products out of ``prods`` (the other columns are not in this block)."""
    if mask is not None:
        neg_prods = np.where(mask, np.signbit(prods), True).all(axis=-1)
        prods = np.where(mask, prods, 0.0)
    else:
        neg_prods = np.signbit(prods).all(axis=-1)
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
    extra = 1 if p.align == "sticky" else 0
    shift = (p.frac_bits + extra - anchor)[:, None]
    terms = np.concatenate([prods, c[:, None]], axis=1) if fused else prods
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.ldexp(terms, shift)
    if p.align == "truncate":
        aligned = np.trunc(scaled)
    elif p.align == "rne":
        aligned = np.rint(scaled)
    elif p.align == "sticky":  # one more bit, set where anything below it was cut
        cut = np.trunc(np.ldexp(scaled, -1))
        lost = np.ldexp(cut, 1) != scaled
        aligned = np.ldexp(cut, 1) + np.copysign(lost.astype(np.float64), scaled)
    else:
        raise ValueError(f"unknown align {p.align!r}")
    total_int = aligned.sum(axis=-1)
    total = np.ldexp(total_int, anchor - p.frac_bits - extra)
    if not fused:
        total = total + c  # exact in float64 only when the exponents are close; late entry is a hypothesis to test
    rounded = underflow_zero(p, round_to_format(total, r_fmt, p.out_precision, p.final_rounding, p.out_subnormals, p.overflow))
    # signed zeros
    allzero = ~nz.any(axis=-1) & ~cnz
    all_neg = neg_prods & np.signbit(c)
    zero_sign = allzero & all_neg & (p.neg_zero == "ieee")
    rounded = np.where(total_int == 0, np.where(zero_sign, -0.0, 0.0), rounded) if fused else np.where(
        total == 0, np.where(zero_sign, -0.0, 0.0), rounded)
    if trace is not None:
        exps = np.concatenate([pexp, cexp[:, None]], axis=1) if fused else pexp
        trace.append(BlockTrace(anchor, anchor - p.frac_bits, terms, aligned, total, rounded, exps, mask, labels))
    return rounded


def _add(p: PathParams, x: np.ndarray, y: np.ndarray, fmt: Fmt) -> np.ndarray:
    """``x + y`` rounded once as a block's sum is (``c_entry: block_add``), correctly in every mode.

    float64's sum is made round-to-odd (TwoSum's error nudges an even result one ulp toward it): with
    out_precision <= 51 (53 >= out_precision + 2) the second rounding then equals one rounding of the exact sum."""
    if p.out_precision > 51:
        raise ValueError(f"c_entry block_add rounds float64 sums: out_precision {p.out_precision} > 51")
    s = x + y
    bb = s - x
    err = (x - (s - bb)) + (y - bb)
    odd = np.where((err != 0) & (s.view(np.int64) % 2 == 0), np.nextafter(s, np.copysign(np.inf, err)), s)
    r = underflow_zero(p, round_to_format(odd, fmt, p.out_precision, p.final_rounding, p.out_subnormals, p.overflow))
    return np.where(s == 0, np.where(np.signbit(x) & np.signbit(y) & (p.neg_zero == "ieee"), -0.0, 0.0), r)


def _carry_inf(pinf: np.ndarray, ninf: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A block's infinities after it: those of its terms, or, where it held none, its finite sum's overflow.

    The datapath sums an infinite term with the finite ones as that infinity: finite products that would overflow
    beside it never round to the opposite infinity (H100: an fp8 -> f16 half with a -Inf product and finite products
    summing past f16's range gives -Inf, not NaN).  Returns the infinities and the finite part of ``r``."""
    held = pinf | ninf
    return pinf | (~held & (r == np.inf)), ninf | (~held & (r == -np.inf)), np.where(np.isfinite(r), r, 0.0)


def _schedule(p: PathParams, labels: np.ndarray, width: int) -> list[np.ndarray]:
    """The blocks, in order, as masks over the term columns: halves by ``k_order``, then runs of ``block``."""
    if p.k_order == "pairs":
        halves = [labels % 4 < 2, labels % 4 >= 2]
    elif p.k_order == "natural":
        halves = [np.ones(labels.shape, dtype=bool)]
    else:
        raise ValueError(f"unknown k_order {p.k_order!r}")
    out = []
    for half in halves:
        rank = np.cumsum(half, axis=-1) - 1
        count = int(half.sum(axis=-1).max(initial=0)) if width else 0
        for j in range(max(-(-count // p.block), 1)):
            out.append(half & (rank // p.block == j))
    return out


def operand_format(p: PathParams, t: str) -> Fmt:
    """The format whose exponent field gives an A/B element its raw exponent (``operand_cvt``).

    ``f16``: the element is first converted to f16 (exact for .e4m3/.e5m2, as ``cvt.rn.f16x2.e4m3x2`` does), so an
    .e4m3 subnormal is a normal f16 with its own exponent, not one at .e4m3's emin."""
    if p.operand_cvt == "none":
        return FORMATS[t]
    if p.operand_cvt != "f16":
        raise ValueError(f"unknown operand_cvt {p.operand_cvt!r}")
    if t not in ("e4m3", "e5m2", "f16"):
        raise ValueError(f"operand_cvt f16 takes .e4m3/.e5m2/.f16 operands, not .{t}")
    return FORMATS["f16"]


def _float_dot(p: PathParams, a_t: str, b_t: str, c_t: str, d_t: str, a_bits, b_bits, c_bits, trace=None,
               labels: np.ndarray | None = None) -> np.ndarray:
    a = decode(a_t, a_bits, p)
    b = decode(b_t, b_bits, p)
    c = decode(c_t, c_bits, p if c_t != "tf32" else None)
    a_fmt, b_fmt = operand_format(p, a_t), operand_format(p, b_t)
    c_fmt, d_fmt = FORMATS[c_t], FORMATS[d_t]
    with np.errstate(invalid="ignore", over="ignore"):
        prods = a * b
    nan_in = np.isnan(prods).any(axis=-1) | np.isnan(c)
    pinf = (prods == np.inf).any(axis=-1) | (c == np.inf)
    ninf = (prods == -np.inf).any(axis=-1) | (c == -np.inf)
    nan = nan_in | (pinf & ninf)
    finite_p = np.where(np.isfinite(prods), prods, 0.0)
    finite_c = np.where(np.isfinite(c), c, 0.0)
    pexp = raw_exponent(np.where(a == 0, 1.0, a), a_fmt.emin) + raw_exponent(np.where(b == 0, 1.0, b), b_fmt.emin)
    n, k = prods.shape
    if labels is None:
        labels = np.broadcast_to(np.arange(k), (n, k))
    late, chain = p.c_entry == "add_rne", p.c_entry == "block_add"
    r_fmt = acc_format(p, d_fmt)
    acc, acc_fmt = (np.zeros_like(finite_c), r_fmt) if late else (finite_c, c_fmt)
    bp = replace(p, c_entry="fused") if late or chain else p
    if not chain:  # the infinities a block holds: C's enter with C (add_rne: at the final add)
        pinf, ninf = (np.zeros(n, dtype=bool),) * 2 if late else (c == np.inf, c == -np.inf)
    for m in _schedule(p, labels, k):
        if chain:  # the block alone (C = -0 adds nothing and keeps an all -0 block's sign), then one rounded add
            s = _block(bp, finite_p, pexp, np.full_like(finite_c, -0.0), r_fmt, r_fmt, trace, m, labels)
            acc = _add(p, acc, np.where(np.isfinite(s), s, 0.0), r_fmt)
            # an overflowed sum is an Inf each later add meets (Inf + -Inf gives NaN)
            pinf, ninf = pinf | (s == np.inf) | (acc == np.inf), ninf | (s == -np.inf) | (acc == -np.inf)
            acc = np.where(np.isfinite(acc), acc, 0.0)
        else:  # a block holding an infinite term (a product, or an Inf result of the block before) gives it
            pinf, ninf = pinf | ((prods == np.inf) & m).any(axis=-1), ninf | ((prods == -np.inf) & m).any(axis=-1)
            pinf, ninf, acc = _carry_inf(pinf, ninf, _block(bp, finite_p, pexp, acc, acc_fmt, r_fmt, trace, m, labels))
        acc_fmt = r_fmt
    nan |= pinf & ninf
    pinf, ninf, acc = _carry_inf(pinf, ninf, np.where(acc == 0, acc, _to_d(p, acc, d_fmt)))  # keeps the sign of a zero
    if late:  # C meets the halves' result in one add (Inf + -Inf C gives NaN)
        pinf, ninf = pinf | (c == np.inf), ninf | (c == -np.inf)
        nan |= pinf & ninf
        total = acc + finite_c  # both hold few bits: exact in float64 unless far apart, where RNE lands the same
        acc = underflow_zero(p, round_to_format(total, d_fmt, d_fmt.p, "rne", p.out_subnormals, p.overflow))
        neg0 = (total == 0) & np.signbit(acc) & np.signbit(finite_c) & (p.neg_zero == "ieee")
        acc = np.where(total == 0, np.where(neg0, -0.0, 0.0), acc)
    out = _encode(d_t, acc)
    out = np.where(pinf, _encode(d_t, np.array(np.inf)), out)
    out = np.where(ninf, _encode(d_t, np.array(-np.inf)), out)
    default = np.uint64(p.nan_bits.get(d_t, ptx_type(d_t).mask >> 1))
    if p.nan_propagation == "canonical" or not nan_in.any():
        return np.where(nan, default, out).astype(np.uint64)
    a_nan, b_nan = np.isnan(a), np.isnan(b)
    ops = [(c_t, np.asarray(c_bits, dtype=np.uint64)[:, None], np.isnan(c)[:, None])]
    for j in range(k):
        ops += [(a_t, np.asarray(a_bits, dtype=np.uint64)[:, j : j + 1], a_nan[:, j : j + 1]),
                (b_t, np.asarray(b_bits, dtype=np.uint64)[:, j : j + 1], b_nan[:, j : j + 1])]
    found, payload = _first_nan(p, d_t, ops)
    return np.where(nan, np.where(found, payload, default), out).astype(np.uint64)


# ---------------------------------------------------------------------------
# f64, integer, b1
# ---------------------------------------------------------------------------

_F64_MAX = float(np.finfo(np.float64).max)


def f64_round(x: Fraction, mode: str = "rne") -> float:
    """``x`` correctly rounded to binary64 under ``mode`` (rne | rz | ru | rd), subnormals and IEEE overflow included."""
    try:
        f = float(x)  # correctly rounded, ties to even
    except OverflowError:
        f = float("inf") if x > 0 else float("-inf")
    if mode == "rne":
        return f
    if np.isinf(f):
        up = (mode == "ru" and x > 0) or (mode == "rd" and x < 0)
        return f if up else float(np.copysign(_F64_MAX, f))
    fx = Fraction(f)
    if mode == "rz" and abs(fx) > abs(x):
        return float(np.nextafter(f, 0.0))
    if mode == "ru" and fx < x:
        return float(np.nextafter(f, np.inf))
    if mode == "rd" and fx > x:
        return float(np.nextafter(f, -np.inf))
    if mode not in ("rz", "ru", "rd"):
        raise ValueError(f"unknown rounding {mode!r}")
    return f


_f64_round = f64_round  # the name earlier callers used


def _f64_bits(x: float) -> int:
    return int(np.array([x], dtype=np.float64).view(np.uint64)[0])


def _f64_dot(p: PathParams, t: Types, a_bits, b_bits, c_bits) -> np.ndarray:
    a_bits = np.asarray(a_bits, dtype=np.uint64)
    b_bits = np.asarray(b_bits, dtype=np.uint64)
    c_bits = np.asarray(c_bits, dtype=np.uint64)
    a = ptx_type("f64").decode(a_bits)
    b = ptx_type("f64").decode(b_bits)
    c = ptx_type("f64").decode(c_bits)
    mode = f64_rounding(p, t.rnd)
    default_nan = int(p.nan_bits.get("f64", 0x7FFFFFFFFFFFFFFF))
    quiet = 1 << 51
    out = np.zeros(len(c), dtype=np.uint64)
    for i in range(len(c)):
        k = len(a[i])
        order = range(k - 1, -1, -1) if p.f64_mode == "reverse_fma" else range(k)
        if p.f64_mode not in ("sequential_fma", "reverse_fma", "exact_dot"):
            raise ValueError(f"unknown f64_mode {p.f64_mode!r}")
        if p.f64_mode == "exact_dot":
            out[i] = _f64_exact(p, a[i], b[i], c[i], a_bits[i], b_bits[i], int(c_bits[i]), mode, default_nan)
            continue
        v, v_nan = float(c[i]), (int(c_bits[i]) if np.isnan(c[i]) else None)
        for j in order:
            x, y = float(a[i][j]), float(b[i][j])
            if v_nan is not None or np.isnan(x) or np.isnan(y):
                if p.nan_propagation == "canonical":
                    v_nan = default_nan
                else:
                    acc_op, a_op, b_op = (v_nan, v_nan is not None), (int(a_bits[i][j]), np.isnan(x)), (int(b_bits[i][j]), np.isnan(y))
                    cands = {"payload_c_first": (acc_op, a_op, b_op), "payload_a_first": (a_op, b_op, acc_op),
                             "payload_c_b_a": (acc_op, b_op, a_op), "payload_b_c_a": (b_op, acc_op, a_op)}[p.nan_propagation]
                    v_nan = next(bits for bits, isnan in cands if isnan) | quiet
                continue
            prod_inf = np.isinf(x) or np.isinf(y)
            if (prod_inf and (x == 0 or y == 0)) or (prod_inf and np.isinf(v) and np.sign(x) * np.sign(y) != np.sign(v)):
                v_nan = default_nan
                continue
            if prod_inf or np.isinf(v):
                v = float(np.sign(x) * np.sign(y) * np.inf) if prod_inf else v
                continue
            exact = Fraction(x) * Fraction(y) + Fraction(v)
            if exact == 0:
                v = _zero_sum([bool(np.signbit(x) ^ np.signbit(y))] + [bool(np.signbit(v))], x * y == 0 and v == 0, mode)
            else:
                v = f64_round(exact, mode)
        out[i] = v_nan if v_nan is not None else _f64_bits(v)
    return out


def _f64_exact(p: PathParams, a, b, c, a_bits, b_bits, c_bits: int, mode: str, default_nan: int) -> int:
    """One exactly rounded dot (``f64_mode: exact_dot``)."""
    ops = [(c_bits, np.isnan(c))] + [x for j in range(len(a)) for x in ((int(a_bits[j]), np.isnan(a[j])),
                                                                         (int(b_bits[j]), np.isnan(b[j])))]
    if any(isnan for _, isnan in ops):
        if p.nan_propagation == "canonical":
            return default_nan
        if p.nan_propagation not in ("payload_c_first", "payload_a_first"):
            raise ValueError(f"nan_propagation {p.nan_propagation!r} is an order of one fused multiply-add's operands: "
                             "f64_mode exact_dot has no such step")
        if p.nan_propagation == "payload_a_first":
            ops = ops[1:] + ops[:1]
        return next(bits for bits, isnan in ops if isnan) | (1 << 51)
    if not (np.isfinite(a).all() and np.isfinite(b).all() and np.isfinite(c)):
        with np.errstate(invalid="ignore"):
            v = float(np.sum(a * b) + c)
        return default_nan if np.isnan(v) else _f64_bits(v)
    exact = sum((Fraction(x) * Fraction(y) for x, y in zip(a, b)), Fraction(c))
    if exact == 0:
        signs = [bool(np.signbit(x) ^ np.signbit(y)) for x, y in zip(a, b)] + [bool(np.signbit(c))]
        return _f64_bits(_zero_sum(signs, all(x * y == 0 for x, y in zip(a, b)) and c == 0, mode))
    return _f64_bits(f64_round(exact, mode))


def _zero_sum(signs: list[bool], zeros_only: bool, mode: str) -> float:
    """IEEE's sign of an exact zero sum: zeros of one sign keep it; otherwise -0 only when rounding toward -Inf."""
    if zeros_only and len(set(signs)) == 1:
        return -0.0 if signs[0] else 0.0
    return -0.0 if mode == "rd" else 0.0


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
    rnd: str | None = None  # the instruction's rounding modifier (f64: rn | rz | rm | rp), None when it has none

    @classmethod
    def of(cls, v) -> Types:
        if v.family in ("wgmma", "wgmma.sp"):  # C is D's registers
            return cls(v.atype, v.btype, v.dtype, v.dtype, bool(v.satfinite), v.bitop)
        ops = v.operands
        rnd = next((x for x in v.instruction.parts if x in ROUNDING_MODIFIERS), None)
        return cls(ops["A"].type.name, ops["B"].type.name, ops["C"].type.name, ops["D"].type.name,
                   bool(v.instruction.satfinite), v.instruction.bitop, rnd)


def sparse_dots(p: PathParams, a_bits, b_bits, positions) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Stored A ``[N, S]`` at dense ``positions`` ``[N, S]`` and B ``[N, K]`` -> the (a, b, k labels) the blocks take."""
    a_bits = np.asarray(a_bits, dtype=np.uint64)
    b_bits = np.asarray(b_bits, dtype=np.uint64)
    pos = np.asarray(positions, dtype=np.int64)
    n, k = b_bits.shape
    rows = np.arange(n)[:, None]
    if p.sparse_zeros == "multiply":
        dense = np.zeros((n, k), dtype=np.uint64)
        dense[rows, pos] = a_bits
        return dense, b_bits, None
    if p.sparse_zeros != "skip":
        raise ValueError(f"unknown sparse_zeros {p.sparse_zeros!r}")
    if p.sparse_order == "position":
        order = np.argsort(pos, axis=-1, kind="stable")
    elif p.sparse_order == "slot":
        order = np.broadcast_to(np.arange(pos.shape[1]), pos.shape)
    else:
        raise ValueError(f"unknown sparse_order {p.sparse_order!r}")
    pos = np.take_along_axis(pos, order, axis=-1)
    labels = pos if p.sparse_order == "position" else np.broadcast_to(np.arange(pos.shape[1]), pos.shape)
    return np.take_along_axis(a_bits, order, axis=-1), b_bits[rows, pos], labels


def dot_bits(p: PathParams, t: Types, a_bits, b_bits, c_bits, trace=None, *, sparse_pos=None,
             compiled: bool | None = None, packed_k: int | None = None) -> np.ndarray:
    """D bits ``uint64[N]`` of N dot products: ``a_bits, b_bits [N, K]``, ``c_bits [N]``.

    ``sparse_pos [N, S]`` (mma.sp): ``a_bits [N, S]`` are the stored A elements at those dense
    positions and ``b_bits [N, K]`` the whole B column.

    ``packed_k`` (dense dots): ``a_bits, b_bits`` are ``[N, W]`` words of formats.pack_words, each operand's
    elements packed at its type's width (``.b1``: 64 a word, fp8: 8), holding K = ``packed_k`` elements a row;
    the kernels read the words (``.b1``, and fp8 on the product table), this arithmetic their elements.

    ``compiled``: None (the default) computes through compiled.py's kernels where numba is installed and every
    parameter value is compiled (bit for bit this function's NumPy arithmetic), else here; False always here (the
    reference; so does ``PTXCONF_MODEL=numpy`` in the environment, or a ``trace``); True insists on the kernels."""
    a_bits = np.atleast_2d(np.asarray(a_bits, dtype=np.uint64))
    b_bits = np.atleast_2d(np.asarray(b_bits, dtype=np.uint64))
    c_bits = np.atleast_1d(np.asarray(c_bits, dtype=np.uint64))
    labels = None
    if packed_k is not None and sparse_pos is not None:
        raise ValueError(f"path {p.name}: packed_k takes the operands of dense dots (not with sparse_pos)")
    if sparse_pos is not None:
        a_bits, b_bits, labels = sparse_dots(p, a_bits, b_bits, np.atleast_2d(sparse_pos))
    if compiled or (compiled is None and trace is None and os.environ.get("PTXCONF_MODEL", "") != "numpy"):
        from . import compiled as fast

        try:
            return fast.dot_bits(p, t, a_bits, b_bits, c_bits, labels, packed_k=packed_k)
        except (fast.NotCompiled, fast.Unavailable):
            if compiled:
                raise
    if packed_k is not None:
        a_bits = unpack_words(a_bits, ptx_type(t.a).bits, packed_k)
        b_bits = unpack_words(b_bits, ptx_type(t.b).bits, packed_k)
    return _dot_bits(p, t, a_bits, b_bits, c_bits, trace, labels)


def _dot_bits(p: PathParams, t: Types, a_bits, b_bits, c_bits, trace, labels) -> np.ndarray:
    """The NumPy model (the reference) of dots already gathered (``labels``: the k of each column, mma.sp)."""
    if p.kind == "float":
        return _float_dot(p, t.a, t.b, t.c, t.d, a_bits, b_bits, c_bits, trace, labels)
    if p.kind == "f64":
        return _f64_dot(p, t, a_bits, b_bits, c_bits)
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
        extra = 1 if p.align == "sticky" else 0
        g = int(bt.grid[0]) - extra
        lines.append(f"block {j}: anchor exponent E={int(bt.anchor[0])}, grid 2^{g} ({p.frac_bits} bits below E, {p.align})")
        n_prod = bt.labels.shape[1] if bt.labels is not None else bt.terms.shape[1]
        for i, (term, al) in enumerate(zip(bt.terms[0], bt.aligned[0])):
            # (block_add: the block's C is a -0 placeholder; C starts the running value)
            held = p.c_entry != "block_add" if i >= n_prod else bt.mask is None or bool(bt.mask[0, i])
            if not held:
                continue
            name = f"p{int(bt.labels[0, i])}" if i < n_prod and bt.labels is not None else "C"
            lost = float(term) - float(al) * 2.0**g
            lines.append(f"  {name:>4}: {float(term)!r:>26}  aligned {int(al):+d} x 2^{g}  lost {lost!r}")
        lines.append(f"  sum {float(bt.total[0])!r} -> {p.final_rounding} to {p.out_precision} bits: {float(bt.rounded[0])!r}")
    if p.c_entry == "block_add":
        c = float(decode(t.c, np.asarray([c_bit], dtype=np.uint64), p if t.c != "tf32" else None)[0])
        lines.append(f"running value from C={c!r} + each block's sum, every add {p.final_rounding} to {p.out_precision} "
                     f"bits ({p.acc_type} range)")
    width = ptx_type(t.d).bits
    lines.append(f"D = {int(d[0]):#0{width // 4 + 2}x} ({float(ptx_type(t.d).decode(d)[0])!r})")
    return "\n".join(lines)


def stored_positions(v, meta_bits: np.ndarray) -> np.ndarray:
    """mma.sp metadata fields ``[case, 1, M, F]`` -> the dense column of each stored A element ``[case, 1, M, K/2]``."""
    from ptxconf.isa.sparse import positions, sparsity

    sp = sparsity(v)
    cases = meta_bits.shape[0]
    idx = np.asarray(meta_bits, dtype=np.int64).reshape(cases, 1, sp.m, sp.chunks, 2)
    pos = positions(sp, idx) + (np.arange(sp.chunks) * sp.width)[:, None]
    return pos.reshape(cases, 1, sp.m, sp.chunks * sp.nz)


def mma_semantics(p_for):
    """Emulator semantics computing each D element with the model: ``p_for(variant) -> PathParams``.

    mma.sp: A comes compressed with its ``metadata`` fields; each dot takes the stored elements at
    the dense positions the fields name."""

    def semantics(v, bits: dict[str, np.ndarray]) -> np.ndarray:
        t = Types.of(v)
        p = p_for(v)
        a, b, c = bits["A"], bits["B"], bits["C"]  # [case, mat, M, K], [case, mat, K, N], [case, mat, M, N]
        cs, mats, m, k = a.shape
        n = b.shape[-1]
        bd = np.broadcast_to(np.swapaxes(b, -1, -2)[:, :, None, :, :], (cs, mats, m, n, b.shape[-2])).reshape(-1, b.shape[-2])
        ad = np.broadcast_to(a[:, :, :, None, :], (cs, mats, m, n, k)).reshape(-1, k)
        pos = None
        if "metadata" in bits:
            pd = stored_positions(v, bits["metadata"])  # [case, 1, M, S]
            pos = np.broadcast_to(pd[:, :, :, None, :], (cs, mats, m, n, k)).reshape(-1, k)
        d = dot_bits(p, t, ad, bd, c.reshape(-1), sparse_pos=pos)
        return d.reshape(cs, mats, m, n)

    return semantics
