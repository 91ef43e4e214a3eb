"""The NumPy oracle: D = A*B + C (with block scales), exactly, then rounded to D's type.

Inputs arrive as container bits per operand, ``[case, matrix, row, col]``, and
are decoded through :mod:`ptxconf.isa.ptxtypes` (``ml_dtypes`` for bf16,
fp8, fp6, fp4 and the scale types; tf32 drops its low 13 bits).  Arithmetic is
float64 / int64:

* floats: the generators draw inputs on grids where every product and partial
  sum is exact in float64 and the final result is exact in D's type, so the
  only rounding is the final conversion and the expected tolerance is 0 ULP;
* integers: exact in int64, then wrapped to s32, or clamped with ``.satfinite``;
* ``.b1``: ``popc`` of ``A & B`` or ``A ^ B`` along K, plus C, wrapped;
* ``mma.sp``: A is expanded from its stored half and the metadata index
  fields (:func:`ptxconf.isa.sparse.densify`), then multiplied densely;
* block scale: ``(A * scale_A) * (B * scale_B) + C`` with one scale per row of
  A (column of B) and K-chunk of ``K / scale_vec`` elements (§9.7.14.3).

The numerics of inexact sums (alignment, truncation, accumulator width) are
not modelled here; that is a separate, measured model.
"""

from __future__ import annotations

import numpy as np
from ptxconf.isa.arrays import decode, encode_exact, namespace
from ptxconf.isa.model import Variant
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.isa.sparse import densify

__all__ = ["mma", "tcgen05_mma"]


def _decode(v: Variant, name: str, bits: np.ndarray) -> np.ndarray:
    return decode(v.operands[name].type, bits)


def _int_matmul(a, b):
    """Exact integer products summed along K: int64 on the host; on the GPU through float64, exact for every
    integer form (|sum| < 2**53) and on its fast path."""
    xp = namespace(a)
    if xp is np:
        return a.astype(np.int64) @ b.astype(np.int64)
    return xp.rint(a.astype(xp.float64) @ b.astype(xp.float64)).astype(xp.int64)


def mma(v: Variant, bits: dict[str, np.ndarray]) -> np.ndarray:
    """Expected D container bits ``uint64[case, matrix, row, col]``, on the array module of ``bits``
    (NumPy, or CuPy for the bulk fuzzer, which feeds only inputs whose D is exact)."""
    if v.family == "tcgen05.mma":
        return tcgen05_mma(v, bits)
    if "metadata" in bits:  # mma.sp: multiply the dense A that the stored half and the metadata describe
        bits = {**bits, "A": densify(v, bits["A"], bits["metadata"])}
    a = _decode(v, "A", bits["A"])
    b = _decode(v, "B", bits["B"])
    c = _decode(v, "C", bits["C"])
    d_type = v.operands["D"].type
    ins = v.instruction
    xp = namespace(a)
    if ins.bitop is not None:
        a_i, b_i = a.astype(xp.int64), b.astype(xp.int64)
        if ins.bitop == "and":
            acc = _int_matmul(a_i, b_i)
        else:
            acc = a_i.sum(-1, keepdims=True) + b_i.sum(-2, keepdims=True) - 2 * _int_matmul(a_i, b_i)
        return _integer_result(acc + c.astype(xp.int64), saturate=False, d_type=d_type)
    if v.operands["A"].type.kind in ("sint", "uint"):
        acc = _int_matmul(a, b) + c.astype(xp.int64)
        return _integer_result(acc, saturate=ins.satfinite, d_type=d_type)
    if "scale_A" in bits:
        a, b = _apply_scales(v, a, b, bits)
    if xp is not np:
        return encode_exact(d_type, _zero_sign(v, a, b, c, a @ b + c))
    with np.errstate(all="ignore"):
        exact = _zero_sign(v, a, b, c, a @ b + c)
    return d_type.encode(exact, exact=False)


def _zero_sign(v: Variant, a, b, c, exact):
    """The sign of an exact zero f64 D (IEEE 754 §6.3), whatever order the terms are added in: rounding toward -inf
    (``.rm``) gives -0 unless every term (each product and C) is +0; the other modes give -0 only when every term
    is -0. float64 matrix products start from +0 and so miss both. Only f64 forms (DMMA, the forms with rounding
    modifiers) are signed so: the H100 gave -0 for ``.rm`` cancellations (results/h100-bulk-wmma)."""
    if v.operands["D"].type.name != "f64":
        return exact
    xp = namespace(exact)
    plus, minus = _signed_zero_products(xp, a, b)
    k = a.shape[-1]
    c_plus, c_minus = (c == 0) & ~xp.signbit(c), (c == 0) & xp.signbit(c)
    if v.instruction.rounding == "rm":
        negative = ~((plus == k) & c_plus)
    else:
        negative = (minus == k) & c_minus
    return xp.where(exact == 0, xp.where(negative, -0.0, 0.0), exact)


def _signed_zero_products(xp, a, b):
    """Per (row, col): how many of the K products a[m,k]*b[k,n] are +0 and how many -0, as sums of matrix products
    of 0/1 indicators (zero: either factor zero; its sign: the factors' signs differ), never the [M, K, N] tensor."""
    za, zb = (a == 0).astype(a.dtype), (b == 0).astype(b.dtype)
    sa, sb = xp.signbit(a).astype(a.dtype), xp.signbit(b).astype(b.dtype)
    one_a, one_b = xp.ones_like(a), xp.ones_like(b)
    zsa, zsb = za * sa, zb * sb
    zero = za @ one_b + one_a @ zb - za @ zb  # (za or zb), summed over k
    # (za or zb) * (sa xor sb) = (za + zb - za zb)(sa + sb - 2 sa sb), expanded into separable terms
    minus = (zsa @ one_b + za @ sb - 2 * (zsa @ sb) + sa @ zb + one_a @ zsb - 2 * (sa @ zsb)
             - zsa @ zb - za @ zsb + 2 * (zsa @ zsb))
    return zero - minus, minus


def _apply_scales(v: Variant, a: np.ndarray, b: np.ndarray, bits: dict[str, np.ndarray]):
    sfa = _decode(v, "scale_A", bits["scale_A"])  # [case, 1, M, SF]
    sfb = _decode(v, "scale_B", bits["scale_B"])  # [case, 1, SF, N]
    k = a.shape[-1]
    chunk = k // sfa.shape[-1]
    xp = namespace(a)
    return a * xp.repeat(sfa, chunk, axis=-1), b * xp.repeat(sfb, chunk, axis=-2)


def _integer_result(acc: np.ndarray, saturate: bool, d_type) -> np.ndarray:
    xp = namespace(acc)
    if saturate:
        acc = xp.clip(acc, -(2**31), 2**31 - 1)
    return (acc & 0xFFFFFFFF).astype(xp.uint64)


def tcgen05_mma(v, bits: dict) -> np.ndarray:
    """tcgen05.mma as the decoded descriptor says: Tensor Memory ``D[:M', :N'] = A·B + D``.

    ``bits`` comes from :func:`ptxconf.families.tcgen05.cases.decode_case`: ``fields`` (the decoded
    instruction descriptor), ``A`` ``[M', K]`` and ``B`` ``[N', K]`` (K-major, as read from
    shared memory) and ``C`` ``[128, N]`` (Tensor Memory before the mma).  Columns and lanes the
    mma does not write keep C.  Negation and ``.satfinite`` (i8) follow the descriptor.
    """
    f = bits["fields"]
    c_bits = np.asarray(bits["C"], dtype=np.uint64)
    d_type = ptx_type(f.dtype)
    out = c_bits.copy()
    a = ptx_type(f.atype).decode(bits["A"])
    b = ptx_type(f.btype).decode(bits["B"])
    if "meta" in bits:  # tcgen05.mma.sp: stored slot s of chunk c sits at dense column 4c + meta[m, c, s]
        idx = np.asarray(bits["meta"], dtype=np.int64)
        dense = np.zeros((a.shape[0], 2 * a.shape[1]), dtype=a.dtype)
        rows = np.arange(a.shape[0])[:, None, None]
        cols = 4 * np.arange(idx.shape[1])[None, :, None] + idx
        dense[rows, cols] = a.reshape(a.shape[0], -1, 2)
        a = dense
    if "SFA" in bits:  # block scale: (A * SFA) (B * SFB) + D, one factor per row and K-block
        sty = ptx_type(f.scale)
        sfa, sfb = sty.decode(np.asarray(bits["SFA"])), sty.decode(np.asarray(bits["SFB"]))
        a = a * np.repeat(sfa, a.shape[1] // sfa.shape[1], axis=1)
        b = b * np.repeat(sfb, b.shape[1] // sfb.shape[1], axis=1)
    if f.negate_a:
        a = -a
    if f.negate_b:
        b = -b
    m = min(a.shape[0], c_bits.shape[0])
    n = min(b.shape[0], c_bits.shape[1])
    c = d_type.decode(c_bits[:m, :n])
    if d_type.kind == "sint":
        acc = a[:m].astype(np.int64) @ b[:n].astype(np.int64).T + c.astype(np.int64)
        out[:m, :n] = _integer_result(acc, saturate=f.saturate, d_type=d_type)
    else:
        with np.errstate(all="ignore"):
            out[:m, :n] = d_type.encode(a[:m] @ b[:n].T + c, exact=False)
    return out
