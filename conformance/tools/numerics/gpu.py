"""The arithmetic model of model.py as CUDA kernels (CuPy, compiled by NVRTC at run time), bit for bit.

Why: the NumPy model evaluates about 2e5 dot products/s on two cores, so fuzzing the tensor cores against it
is bounded by the host; one GPU thread per dot product removes that bound.  model.py stays the reference:
tests/tools/test_numerics_gpu.py checks the two bit for bit (CPU-drawn batches of every path, every parameter
value, the recorded H100 cases) and gpu_fuzz.py replays every GPU mismatch through model.py before reporting it.

The kernel is generated from the same ``PathParams`` and ``Types`` model.py takes: each parameter becomes a
``#define`` (``_defines``) that selects its branch of one CUDA source (``_MODEL_BODY``).  Float paths work on
integers: each input decodes to (sign, integer significand, raw exponent); a product's significand is the
integer product; aligned terms are 64-bit integers summed exactly; every rounding acts on (significand,
exponent).  Only the additions model.py itself does in float64 (``c_entry: late``, ``add_rne`` and ``block_add``)
are done in float64 here too, with the same IEEE rounding.  A parameter value this file does not implement is refused
(``check``), never approximated; a parameter model.py gains later is refused unless it keeps its default.
CuPy is imported only when a kernel is built or run.
"""

from __future__ import annotations

import functools

import numpy as np
from ptxconf.isa.ptxtypes import ptx_type

from .implemented import (
    FLOAT_ACC,
    FLOAT_IN,
    INT_IN,
    NAN_F64_ONLY,
    NAN_ORDERS,
    NOT_ARITHMETIC,
    ROUNDING,
    datapath_values,
    refusal,
    unsupported_types,
)
from .model import FORMATS, ROUNDING_MODIFIERS, PathParams, Types, acc_format

__all__ = ["GpuUnavailable", "NotOnGpu", "available", "check", "container", "ctype", "cupy", "dot_bits_gpu",
           "model_kernel", "model_source", "IMPLEMENTED"]


class GpuUnavailable(RuntimeError):
    """CuPy or a CUDA device is missing."""


class NotOnGpu(ValueError):
    """A path parameter value (or type) the GPU kernel does not implement."""


_ROUNDING, _NAN, _NAN_F64_ONLY = ROUNDING, NAN_ORDERS, NAN_F64_ONLY  # the kernel's codes: its MODE argument's order
_FLOAT_IN, _FLOAT_ACC, _INT_IN = FLOAT_IN, FLOAT_ACC, INT_IN
_F64_MODES = ("sequential_fma", "reverse_fma")
MAX_FRAC_BITS = 40  # aligned sums stay below 2^53: exact in model.py's float64 and in the kernel's int64
MAX_OUT_PRECISION = 50  # a rounded accumulator converts to float64 exactly

# The parameters the kernel implements, with the values it accepts (a callable: a predicate); anything else is refused.
IMPLEMENTED: dict[str, object] = datapath_values(MAX_FRAC_BITS, MAX_OUT_PRECISION)
# naming and selection, not arithmetic; the sparse parameters are moot for the dense dot products computed here
_NOT_ARITHMETIC = NOT_ARITHMETIC | {"sparse_zeros", "sparse_order"}


def check(p: PathParams, t: Types, k: int) -> None:
    """Raise ``NotOnGpu`` naming the first parameter value (or type) the kernel would not reproduce exactly."""
    if p.kind not in ("float", "f64", "int", "b1"):
        raise NotOnGpu(f"path {p.name}: kind {p.kind!r} is not implemented on the GPU")
    why = refusal(p, IMPLEMENTED, _NOT_ARITHMETIC)
    if why:
        raise NotOnGpu(f"path {p.name}: {why} on the GPU")
    if p.kind != "f64" and p.nan_propagation in _NAN_F64_ONLY:
        raise NotOnGpu(f"path {p.name}: nan_propagation={p.nan_propagation!r} is an f64 rule (model.py refuses it here too)")
    if p.kind == "float" and p.operand_cvt == "f16" and not {t.a, t.b} <= {"e4m3", "e5m2", "f16"}:
        raise NotOnGpu(f"path {p.name}: operand_cvt f16 takes .e4m3/.e5m2/.f16 operands (model.py refuses the others too)")
    bad = unsupported_types(p, t, _FLOAT_IN, _FLOAT_ACC, _INT_IN)
    if bad:
        raise NotOnGpu(f"path {p.name}: type(s) {', '.join(map(str, bad))} not implemented on the GPU")
    if not 1 <= k <= 4096:
        raise NotOnGpu(f"K={k} is out of the kernel's range 1..4096")


# ---------------------------------------------------------------------------
# CUDA source
# ---------------------------------------------------------------------------


def container(type_name: str) -> np.dtype:
    """The element storage of a type on the GPU: its container width (sub-byte types take a byte each)."""
    bits = ptx_type(type_name).bits
    return np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[max(8, 1 << (bits - 1).bit_length())])


def ctype(dtype: np.dtype) -> str:
    return {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}[np.dtype(dtype).itemsize]


def _fmt_defines(prefix: str, type_name: str) -> dict[str, object]:
    """Exponent/significand layout of a float type, from model.FORMATS (p, emin, emax) and its container width.

    ``.tf32`` is decoded from its top 19 bits (after ``input_conversion``), so its significand is model.py's 11 bits;
    a NaN's payload is read from the whole container (NSB sign bit + 1, NSM significand bits), as model.nan_convert."""
    f = FORMATS[type_name]
    width = 19 if type_name == "tf32" else ptx_type(type_name).bits
    mb = f.p - 1
    fn = bool((ptx_type(type_name).numpy or "").endswith("fn"))  # e4m3: no infinities, all-ones is the NaN
    box = "f32" if type_name == "tf32" else type_name
    return {f"{prefix}_EB": width - 1 - mb, f"{prefix}_MB": mb, f"{prefix}_BIAS": 1 - f.emin, f"{prefix}_FN": int(fn),
            f"{prefix}_P": f.p, f"{prefix}_EMIN": f.emin, f"{prefix}_EMAX": f.emax,
            f"{prefix}_NSB": ptx_type(box).bits, f"{prefix}_NSM": FORMATS[box].p - 1}


def _nan_bits(p: PathParams, d: str) -> int:
    return int(p.nan_bits.get(d, ptx_type(d).mask >> 1))  # as model.py


def _f64_rounding(p: PathParams, t: Types) -> str:
    """The rounding of each f64 fused multiply-add, as model._f64_dot chooses it."""
    return ROUNDING_MODIFIERS.get(t.rnd or "rn", "rne") if p.f64_rnd == "each_fma" else "rne"


def _defines(p: PathParams, t: Types, k: int) -> dict[str, object]:
    """Every parameter as a preprocessor constant of the kernel source (``check`` has accepted them)."""
    d: dict[str, object] = {"KDIM": k, "NANP": _NAN.index(p.nan_propagation)}
    if p.kind == "float":
        d.update({"KIND_FLOAT": 1, "BLOCK": p.block, "NHALF": 2 if p.k_order == "pairs" else 1,
                  "FRAC": p.frac_bits, "OUT_P": p.out_precision, "FMODE": _ROUNDING.index(p.final_rounding),
                  "ALIGN": ("truncate", "rne", "sticky").index(p.align),
                  "CONV": ("truncate", "rna", "rne").index(p.input_conversion),
                  "C_ENTRY": ("fused", "late", "add_rne", "block_add").index(p.c_entry),
                  "HAS_FLOOR": int(p.exp_floor is not None), "EXP_FLOOR": p.exp_floor or 0,
                  "IN_FLUSH": int(p.in_subnormals == "flush"), "OUT_FLUSH": int(p.out_subnormals == "flush"),
                  "OVF": ("inf", "saturate", "ieee").index(p.overflow), "NEGZ_IEEE": int(p.neg_zero == "ieee"),
                  "UF_POS": int(p.underflow_sign == "positive"),
                  "NAN_BITS": f"{_nan_bits(p, t.d):#x}ull"})
        for prefix, name in (("A", t.a), ("B", t.b), ("C", t.c), ("D", t.d)):
            d.update(_fmt_defines(prefix, name))
        acc = acc_format(p, FORMATS[t.d])  # the range the blocks round within; wider than D's: converted last (model._to_d)
        d.update({"ACC_EMIN": acc.emin, "ACC_EMAX": acc.emax, "TO_D": int(p.out_precision > FORMATS[t.d].p or acc != FORMATS[t.d])})
        for prefix, name in (("A", t.a), ("B", t.b)):  # operand_cvt f16: the exponent field an element reads as
            d[f"{prefix}_XEMIN"] = FORMATS["f16"].emin if p.operand_cvt == "f16" else FORMATS[name].emin
        d["DEC_A"] = "dec_tf32" if t.a == "tf32" else "dec_a"
        d["DEC_B"] = "dec_tf32" if t.b == "tf32" else "dec_b"
    elif p.kind == "f64":
        d.update({"KIND_F64": 1, "NAN_BITS": f"{_nan_bits(p, 'f64'):#x}ull", "REVERSE": int(p.f64_mode == "reverse_fma"),
                  "FMA": {"rne": "__fma_rn", "rz": "__fma_rz", "ru": "__fma_ru", "rd": "__fma_rd"}[_f64_rounding(p, t)]})
    else:
        d.update({"KIND_INT": 1, "SATFINITE": int(t.satfinite), "BITOP": {None: 0, "xor": 1, "and": 2}[t.bitop]})
        for prefix, name in (("A", t.a), ("B", t.b)):
            pt = ptx_type(name)
            d.update({f"{prefix}_BITS": pt.bits, f"{prefix}_SIGNED": int(pt.kind == "sint")})
    for prefix, name in (("AT", t.a), ("BT", t.b), ("CT", t.c), ("DT", t.d)):
        d[prefix] = ctype(container(name))
    return d


_COMMON = r"""
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int bitlen(u64 x) { return 64 - __clzll((i64)x); }
"""

_MODEL_BODY = r"""
#define LOWEXP (-1000000)
#if KIND_FLOAT
struct Elem { u32 neg; u32 cls; u32 mag; int raw; };  /* cls: 0 zero, 1 finite non-zero, 2 inf, 3 NaN */
struct Acc { u32 neg; u32 inf; u64 mag; int exp; };   /* (-1)^neg * mag * 2^exp, or an infinity */

/* sign | exponent field (EB bits) | MB significand bits; FN: no infinities, all ones is NaN (e4m3) */
__device__ __forceinline__ Elem dec_ieee(u32 bits, int EB, int MB, int BIAS, int FN) {
  Elem r;
  u32 emask = (1u << EB) - 1u, mmask = (1u << MB) - 1u;
  u32 ef = (bits >> MB) & emask, m = bits & mmask;
  r.neg = (bits >> (EB + MB)) & 1u;
  r.mag = 0; r.raw = 0;
  if (ef == emask && (!FN || m == mmask)) { r.cls = (!FN && m == 0) ? 2u : 3u; return r; }
  if (ef == 0) { r.mag = m; r.raw = 1 - BIAS; r.cls = m ? 1u : 0u; }
  else { r.mag = m | (1u << MB); r.raw = (int)ef - BIAS; r.cls = 1u; }
#if IN_FLUSH
  if (r.cls == 1u && r.mag < (1u << MB)) { r.cls = 0u; r.mag = 0; }  /* a subnormal input reads as a signed zero */
#endif
  return r;
}
/* operand_cvt f16 (model.operand_format): a subnormal of a narrower exponent range is a normal f16, its raw exponent
   its own (down to XEMIN); the significand is shifted so that mag * 2^(raw - MB) stays the element's value */
__device__ __forceinline__ Elem widen(Elem r, int MB, int EMIN, int XEMIN) {
  if (r.cls == 1u && r.mag < (1u << MB)) {
    int s = imin(MB - (bitlen((u64)r.mag) - 1), EMIN - XEMIN);
    r.mag <<= s; r.raw -= s;
  }
  return r;
}
__device__ __forceinline__ Elem dec_a(u32 x) { return widen(dec_ieee(x, A_EB, A_MB, A_BIAS, A_FN), A_MB, A_EMIN, A_XEMIN); }
__device__ __forceinline__ Elem dec_b(u32 x) { return widen(dec_ieee(x, B_EB, B_MB, B_BIAS, B_FN), B_MB, B_EMIN, B_XEMIN); }
__device__ __forceinline__ Elem dec_c(u32 x) { return dec_ieee(x, C_EB, C_MB, C_BIAS, C_FN); }
/* .tf32: the 32-bit container converted (input_conversion), then its top 19 bits */
__device__ __forceinline__ Elem dec_tf32(u32 bits) {
#if CONV == 1
  if ((bits & 0x7F800000u) != 0x7F800000u) bits = bits + 0x1000u;
#elif CONV == 2
  if ((bits & 0x7F800000u) != 0x7F800000u) bits = bits + 0xFFFu + ((bits >> 13) & 1u);
#endif
  return dec_ieee(bits >> 13, 8, 10, 127, 0);
}
/* a NaN operand as D's quiet NaN with its sign and payload (model.nan_convert) */
__device__ __forceinline__ u64 nan_conv(u64 bits, int SB, int SM) {
  u64 mant = bits & ((1ull << SM) - 1ull);
  mant = D_MB >= SM ? mant << (D_MB - SM) : mant >> (SM - D_MB);
  return (((bits >> (SB - 1)) & 1ull) << (D_EB + D_MB)) | ((u64)((1u << D_EB) - 1u) << D_MB) | mant | (1ull << (D_MB - 1));
}

/* the exact value (-1)^neg * mag * 2^exp rounded to P significand bits within [EMIN, EMAX] (model.round_to_format) */
__device__ Acc round_p(u32 neg, u64 mag, int exp, int P, int EMIN, int EMAX, int MODE, int FLUSH, int OVFM) {
  Acc r; r.neg = neg; r.inf = 0u; r.mag = 0; r.exp = 0;
  if (mag == 0) return r;
  int e = exp + bitlen(mag) - 1;
  int q = imax(e - (P - 1), EMIN - (P - 1));
  u64 v;
  if (q <= exp) {
    v = mag << (exp - q);
  } else {
    int s = q - exp;
    u64 half, sticky;
    if (s > 64) { v = 0; half = 0; sticky = 1; }
    else if (s == 64) { v = 0; half = mag >> 63; sticky = (mag << 1) != 0; }
    else { v = mag >> s; half = (mag >> (s - 1)) & 1ull; sticky = (mag & ((1ull << (s - 1)) - 1ull)) != 0; }
    u64 up = 0;
    if (MODE == 1) up = half && (sticky || (v & 1ull));
    else if (MODE == 2) up = half;
    else if (MODE == 3) up = !neg && (half || sticky);
    else if (MODE == 4) up = neg && (half || sticky);
    v += up;
  }
  if (v == 0) return r;
  int top = q + bitlen(v) - 1;
  if (FLUSH && top < EMIN) return r;
  if (top >= EMAX + 1) {
    int to_max = (MODE == 0) || (MODE == 3 && neg) || (MODE == 4 && !neg);
    if (OVFM == 1 || (OVFM == 2 && to_max)) { r.mag = (1ull << P) - 1ull; r.exp = EMAX - P + 1; }
    else r.inf = 1u;
    return r;
  }
  r.mag = v; r.exp = q;
  return r;
}
/* underflow_sign positive (model.underflow_zero): a zero rounded from a non-zero sum is +0 */
__device__ __forceinline__ Acc uf_zero(Acc r) {
  if (UF_POS && !r.inf && r.mag == 0) r.neg = 0u;
  return r;
}
/* a block's exact sum: OUT_P bits by final_rounding within acc_type's range (model._block) */
__device__ __forceinline__ Acc block_round(u32 neg, u64 mag, int exp) {
  return uf_zero(round_p(neg, mag, exp, OUT_P, ACC_EMIN, ACC_EMAX, FMODE, OUT_FLUSH, OVF));
}
/* model._to_d: the last block's result, when wider than D (bits or range), to D by round-to-nearest-even */
__device__ __forceinline__ Acc to_d(Acc a) {
#if TO_D
  if (!a.inf && a.mag != 0) return uf_zero(round_p(a.neg, a.mag, a.exp, D_P, D_EMIN, D_EMAX, 1, OUT_FLUSH, OVF));
#endif
  return a;
}

/* exact: mag < 2^53 and the exponent inside the normal float64 range (check() keeps both) */
__device__ __forceinline__ double to_double(u32 neg, u64 mag, int exp) {
  u64 sign = (u64)neg << 63;
  if (mag == 0) return __longlong_as_double((i64)sign);
  int L = bitlen(mag);
  u64 m = mag << (53 - L);
  return __longlong_as_double((i64)(sign | ((u64)(exp + L - 1 + 1023) << 52) | (m & ((1ull << 52) - 1ull))));
}
/* a finite float64 as (neg, mag, exp) */
__device__ __forceinline__ void from_double(double x, u32* neg, u64* mag, int* exp) {
  u64 bits = (u64)__double_as_longlong(x);
  int ef = (int)((bits >> 52) & 0x7FFull);
  u64 m = bits & ((1ull << 52) - 1ull);
  *neg = (u32)(bits >> 63);
  *mag = ef ? (m | (1ull << 52)) : m;
  *exp = ef ? ef - 1075 : -1074;
}
__device__ __forceinline__ Acc zero_acc(u32 neg) { Acc r; r.neg = neg; r.inf = 0u; r.mag = 0; r.exp = 0; return r; }
/* model._add (block_add): x + y rounded once as a block's sum; float64's sum made round-to-odd by TwoSum's error */
__device__ Acc add_round(Acc x, Acc y) {
  double a = to_double(x.neg, x.mag, x.exp), b = to_double(y.neg, y.mag, y.exp);
  double s = __dadd_rn(a, b);
  if (s == 0.0) return zero_acc(NEGZ_IEEE && x.neg && y.neg);
  double bb = __dadd_rn(s, -a);
  double err = __dadd_rn(__dadd_rn(a, -__dadd_rn(s, -bb)), __dadd_rn(b, -bb));
  i64 bits = __double_as_longlong(s);
  if (err != 0.0 && !(bits & 1)) bits += ((bits < 0) == (err < 0.0)) ? 1 : -1;  /* one ulp toward the exact sum */
  u32 sn; u64 sm; int se;
  from_double(__longlong_as_double(bits), &sn, &sm, &se);
  return block_round(sn, sm, se);
}

/* D's container bits of an accumulator: round to nearest even into D (NumPy's cast) */
__device__ __forceinline__ u64 encode_d(Acc a) {
  u64 sign = (u64)a.neg << (D_EB + D_MB);
  u64 inf = sign | ((u64)((1u << D_EB) - 1u) << D_MB);
  if (a.inf) return inf;
  Acc r = round_p(a.neg, a.mag, a.exp, D_MB + 1, D_EMIN, D_EMAX, 1, 0, 0);
  if (r.inf) return inf;
  if (r.mag == 0) return sign;
  int L = bitlen(r.mag), e = r.exp + L - 1;
  if (e >= D_EMIN) {
    u64 m = (L - 1 <= D_MB) ? (r.mag << (D_MB - (L - 1))) : (r.mag >> ((L - 1) - D_MB));
    return sign | ((u64)(e + D_BIAS) << D_MB) | (m & ((1ull << D_MB) - 1ull));
  }
  return sign | (r.mag << (r.exp - (D_EMIN - D_MB)));
}

#define EXTRA (ALIGN == 2 ? 1 : 0)  /* align: sticky works one bit below the grid */
/* a term mag * 2^lsb on the grid 2^(anchor - FRAC - EXTRA), s = lsb + FRAC + EXTRA - anchor */
__device__ __forceinline__ i64 align_mag(u64 mag, int s) {
  if (s >= 0) return (i64)(mag << s);
  int r = -s;
#if ALIGN == 2
  r += 1;  /* cut at the grid, then one more bit: set when anything below the grid was cut */
  if (r >= 64) return mag != 0;
  return (i64)(((mag >> r) << 1) | ((mag & ((1ull << r) - 1ull)) != 0));
#else
  if (r >= 64) return 0;
  u64 q = mag >> r;
#if ALIGN == 1
  u64 rem = mag & ((1ull << r) - 1ull), half = 1ull << (r - 1);
  q += (rem > half || (rem == half && (q & 1ull))) ? 1ull : 0ull;
#endif
  return (i64)q;
#endif
}

/* position j of half h -> k (k_order pairs: k mod 4 in {0,1}, then {2,3}) */
__device__ __forceinline__ int kidx(int h, int j) { return NHALF == 2 ? 4 * (j >> 1) + 2 * h + (j & 1) : j; }
__device__ __forceinline__ int half_len(int h) {
  if (NHALF == 1) return KDIM;
  return h == 0 ? 2 * (KDIM / 4) + imin(KDIM % 4, 2) : 2 * (KDIM / 4) + imax(KDIM % 4 - 2, 0);
}
__device__ __forceinline__ Elem prod_of(Elem x, Elem y) {
  Elem r;
  r.neg = x.neg ^ y.neg;
  if (x.cls == 3u || y.cls == 3u) r.cls = 3u;
  else if (x.cls == 2u || y.cls == 2u) r.cls = (x.cls == 0u || y.cls == 0u) ? 3u : 2u;
  else if (x.cls == 0u || y.cls == 0u) r.cls = 0u;
  else r.cls = 1u;
  r.mag = x.mag * y.mag;
  r.raw = x.raw + y.raw;
  return r;
}
__device__ __forceinline__ Elem product(const AT* a, const BT* b, int k) {
  return prod_of(DEC_A((u32)a[k]), DEC_B((u32)b[k]));
}
#define PLSB ((A_P - 1) + (B_P - 1))  /* a product's raw exponent minus that of its last significand bit */

/* one block: products [j0, j1) of half h (and the accumulator c when it enters), rounded to OUT_P bits */
__device__ Acc run_block(const AT* a, const BT* b, int h, int j0, int j1, Acc c, int c_emin, u32* pinf, u32* ninf) {
  int anchor = LOWEXP;
  u32 any = 0u, allneg = 1u;
  for (int j = j0; j < j1; j++) {
    Elem p = product(a, b, kidx(h, j));
    if (p.cls == 1u) { anchor = imax(anchor, p.raw); any = 1u; }
    *pinf |= p.cls == 2u && !p.neg; *ninf |= p.cls == 2u && p.neg;  /* the block's infinite products */
    allneg &= (p.cls <= 1u) ? p.neg : 0u;  /* a non-finite product counts as +0 */
  }
  u32 cnz = c.mag != 0;
#if C_ENTRY != 1
  if (cnz) anchor = imax(anchor, imax(c.exp + bitlen(c.mag) - 1, c_emin));
#endif
#if HAS_FLOOR
  anchor = imax(anchor, EXP_FLOOR);
#endif
  if (anchor == LOWEXP) anchor = 0;
  i64 total = 0;
  for (int j = j0; j < j1; j++) {
    Elem p = product(a, b, kidx(h, j));
    if (p.cls == 1u) { i64 v = align_mag(p.mag, p.raw - PLSB + FRAC + EXTRA - anchor); total += p.neg ? -v : v; }
  }
  u32 zneg = NEGZ_IEEE && !any && !cnz && allneg && c.neg;
  u64 mag = (u64)(total < 0 ? -total : total);
#if C_ENTRY == 1
  double s = __dadd_rn(to_double(total < 0, mag, anchor - FRAC - EXTRA), to_double(c.neg, c.mag, c.exp));
  if (s == 0.0) return zero_acc(zneg);
  u32 sn; int se;
  from_double(s, &sn, &mag, &se);
  return block_round(sn, mag, se);
#else
  if (cnz) { i64 v = align_mag(c.mag, c.exp + FRAC + EXTRA - anchor); total += c.neg ? -v : v; }
  if (total == 0) return zero_acc(zneg);
  return block_round(total < 0, (u64)(total < 0 ? -total : total), anchor - FRAC - EXTRA);
#endif
}

/* model._carry_inf: a block holding an infinite term gives it; a block without one may overflow to one */
__device__ __forceinline__ Acc carry_inf(u32* pinf, u32* ninf, Acc r) {
  if (r.inf && !(*pinf | *ninf)) { *pinf = !r.neg; *ninf = r.neg; }
  return r.inf ? zero_acc(0u) : r;
}

__device__ u64 dot(const AT* a, const BT* b, CT cbits) {
  u32 nan = 0u, pinf = 0u, ninf = 0u, found = 0u;
  u64 payload = 0;  /* the first NaN operand among a0, b0, a1, b1, ... as D's NaN */
  for (int k = 0; k < KDIM; k++) {
    Elem x = DEC_A((u32)a[k]), y = DEC_B((u32)b[k]);
#if NANP != 0
    if (!found && x.cls == 3u) { found = 1u; payload = nan_conv((u64)a[k], A_NSB, A_NSM); }
    if (!found && y.cls == 3u) { found = 1u; payload = nan_conv((u64)b[k], B_NSB, B_NSM); }
#endif
    Elem p = prod_of(x, y);
    nan |= p.cls == 3u; pinf |= p.cls == 2u && !p.neg; ninf |= p.cls == 2u && p.neg;
  }
  Elem c = dec_c((u32)cbits);
  nan |= c.cls == 3u; pinf |= c.cls == 2u && !c.neg; ninf |= c.cls == 2u && c.neg;
  nan |= pinf & ninf;
  Acc c0 = zero_acc(c.cls <= 1u ? c.neg : 0u);  /* a non-finite C enters as +0 */
  if (c.cls == 1u) { c0.mag = c.mag; c0.exp = c.raw - (C_P - 1); }
#if C_ENTRY == 2
  Acc acc = zero_acc(0u);
  int emin = ACC_EMIN;
#else
  Acc acc = c0;
  int emin = C_EMIN;
#endif
#if C_ENTRY != 3
  /* the infinities the blocks carry: C's enter with C (add_rne: at the final add) */
  pinf = C_ENTRY != 2 && c.cls == 2u && !c.neg; ninf = C_ENTRY != 2 && c.cls == 2u && c.neg;
#endif
  for (int h = 0; h < NHALF; h++) {
    int hl = half_len(h);
    int nb = hl > 0 ? (hl + BLOCK - 1) / BLOCK : 1;
    for (int bi = 0; bi < nb; bi++) {
#if C_ENTRY == 3
      /* block_add: the block alone (C = -0 adds nothing, keeps an all -0 block's sign), then one rounded add;
         an overflowed sum is an Inf each later add meets (Inf + -Inf gives NaN) */
      u32 ip = 0u, in = 0u;  /* the flags above hold the inputs' infinities already */
      Acc s = run_block(a, b, h, bi * BLOCK, imin(bi * BLOCK + BLOCK, hl), zero_acc(1u), ACC_EMIN, &ip, &in);
      if (s.inf) { pinf |= !s.neg; ninf |= s.neg; s = zero_acc(0u); }
      acc = add_round(acc, s);
      if (acc.inf) { pinf |= !acc.neg; ninf |= acc.neg; acc = zero_acc(0u); }
#else
      acc = carry_inf(&pinf, &ninf, run_block(a, b, h, bi * BLOCK, imin(bi * BLOCK + BLOCK, hl), acc, emin, &pinf, &ninf));
#endif
      emin = ACC_EMIN;
    }
  }
  nan |= pinf & ninf;
  acc = carry_inf(&pinf, &ninf, to_d(acc));
#if C_ENTRY == 2
  /* add_rne: the halves' D meets C in one float64 addition, rounded to nearest even in D */
  pinf |= c.cls == 2u && !c.neg; ninf |= c.cls == 2u && c.neg;
  nan |= pinf & ninf;
  double s = __dadd_rn(to_double(acc.neg, acc.mag, acc.exp), to_double(c0.neg, c0.mag, c0.exp));
  if (s == 0.0) {
    acc = zero_acc(NEGZ_IEEE && (__double_as_longlong(s) < 0));
  } else {
    u32 sn; u64 sm; int se;
    from_double(s, &sn, &sm, &se);
    acc = uf_zero(round_p(sn, sm, se, D_P, D_EMIN, D_EMAX, 1, OUT_FLUSH, OVF));
  }
#endif
  u64 out = encode_d(acc);
  u64 dsign = 1ull << (D_EB + D_MB), dinf = (u64)((1u << D_EB) - 1u) << D_MB;
  if (pinf) out = dinf;
  if (ninf) out = dsign | dinf;
  if (nan) {
#if NANP == 0
    out = NAN_BITS;
#elif NANP == 1
    out = c.cls == 3u ? nan_conv((u64)cbits, C_NSB, C_NSM) : (found ? payload : NAN_BITS);
#else
    out = found ? payload : (c.cls == 3u ? nan_conv((u64)cbits, C_NSB, C_NSM) : NAN_BITS);
#endif
  }
  return out;
}
#endif

#if KIND_INT
__device__ __forceinline__ i64 sext(u64 x, int bits, int is_signed) {
  u64 m = x & ((1ull << bits) - 1ull);
  return (is_signed && (m >> (bits - 1))) ? (i64)m - (i64)(1ull << bits) : (i64)m;
}
__device__ u64 dot(const AT* a, const BT* b, CT cbits) {
  i64 acc = 0;
  for (int k = 0; k < KDIM; k++) {
    i64 x = sext((u64)a[k], A_BITS, A_SIGNED), y = sext((u64)b[k], B_BITS, B_SIGNED);
#if BITOP == 1
    acc += x ^ y;
#elif BITOP == 2
    acc += x & y;
#else
    acc += x * y;
#endif
  }
  acc += (i64)(int)(u32)cbits;
#if SATFINITE
  if (acc > 2147483647ll) acc = 2147483647ll;
  if (acc < -2147483648ll) acc = -2147483648ll;
#endif
  return (u64)acc & 0xFFFFFFFFull;
}
#endif

#if KIND_F64
#define QUIET (1ull << 51)
__device__ __forceinline__ int f64_nan(u64 x) { return (x & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; }
__device__ __forceinline__ int f64_inf(u64 x) { return (x & 0x7FFFFFFFFFFFFFFFull) == 0x7FF0000000000000ull; }
__device__ __forceinline__ int f64_zero(u64 x) { return (x & 0x7FFFFFFFFFFFFFFFull) == 0; }
/* model._f64_dot: fused multiply-adds from C (ascending k, or descending), NaNs and infinities as the model takes them */
__device__ u64 dot(const AT* a, const BT* b, CT cbits) {
  double v = __longlong_as_double((i64)cbits);
  u32 has_nan = f64_nan(cbits);
  u64 vnan = cbits;
  for (int jj = 0; jj < KDIM; jj++) {
    int j = REVERSE ? KDIM - 1 - jj : jj;
    u64 xb = (u64)a[j], yb = (u64)b[j];
    int xn = f64_nan(xb), yn = f64_nan(yb);
    if (has_nan || xn || yn) {
#if NANP == 0
      vnan = NAN_BITS;
#elif NANP == 1
      vnan = (has_nan ? vnan : (xn ? xb : yb)) | QUIET;
#elif NANP == 2
      vnan = (xn ? xb : (yn ? yb : vnan)) | QUIET;
#elif NANP == 3
      vnan = (has_nan ? vnan : (yn ? yb : xb)) | QUIET;
#else
      vnan = (yn ? yb : (has_nan ? vnan : xb)) | QUIET;
#endif
      has_nan = 1u;
      continue;
    }
    u64 vb = (u64)__double_as_longlong(v);
    int prod_inf = f64_inf(xb) || f64_inf(yb), vinf = f64_inf(vb);
    u64 psign = (xb ^ yb) >> 63;
    if ((prod_inf && (f64_zero(xb) || f64_zero(yb))) || (prod_inf && vinf && psign != (vb >> 63))) {
      vnan = NAN_BITS; has_nan = 1u;
      continue;
    }
    if (prod_inf || vinf) {
      if (prod_inf) v = __longlong_as_double((i64)((psign << 63) | 0x7FF0000000000000ull));
      continue;
    }
    v = FMA(__longlong_as_double((i64)xb), __longlong_as_double((i64)yb), v);
  }
  return has_nan ? vnan : (u64)__double_as_longlong(v);
}
#endif

/* dot t of groups of M x N dots: A [g, M, K], B [g, N, K] (K contiguous), C and D [g, M, N] */
extern "C" __global__ void numerics_model(const AT* __restrict__ A, const BT* __restrict__ B,
                                          const CT* __restrict__ C, DT* __restrict__ D, i64 n, int M, int N) {
  i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  i64 g = t / (i64)(M * N);
  int r = (int)(t - g * (i64)(M * N));
  int m = r / N, nn = r - m * N;
  D[t] = (DT)dot(A + (g * M + m) * KDIM, B + (g * N + nn) * KDIM, C[t]);
}
"""


def defines_text(defs: dict[str, object]) -> str:
    return "".join(f"#define {k} {v}\n" for k, v in defs.items())


def model_source(p: PathParams, t: Types, k: int) -> str:
    """The CUDA source of one path's model kernel ``numerics_model`` (refused by ``check`` where not exact)."""
    check(p, t, k)
    return f"/* numerics model: path {p.name}, {t}, K={k} */\n" + defines_text(_defines(p, t, k)) + _COMMON + _MODEL_BODY


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def cupy():
    """The cupy module, once a device answers; ``GpuUnavailable`` with the reason otherwise."""
    try:
        import cupy as cp
    except Exception as exc:  # noqa: BLE001 - any import failure means no GPU path here
        raise GpuUnavailable(f"CuPy is not importable ({type(exc).__name__}: {exc}); the GPU model needs CuPy") from None
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - the CUDA runtime's own error, reported as such
        raise GpuUnavailable(f"no CUDA device ({type(exc).__name__}: {exc})") from None
    if n < 1:
        raise GpuUnavailable("no CUDA device")
    return cp


def available() -> tuple[bool, str]:
    """(True, device name) where CuPy and a device answer, else (False, why)."""
    try:
        cp = cupy()
    except GpuUnavailable as exc:
        return False, str(exc)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return True, name.decode() if isinstance(name, bytes) else str(name)


OPTIONS = ("--fmad=false",)


@functools.lru_cache(maxsize=256)
def raw_kernel(source: str, name: str):
    """One compiled kernel per source (CuPy also caches the binary on disk)."""
    return cupy().RawKernel(source, name, options=OPTIONS)


THREADS = 256


class ModelKernel:
    """The model of one path, types and K on the device: ``(A, B, C, D, M, N)`` device arrays in, D written."""

    def __init__(self, p: PathParams, t: Types, k: int):
        self.p, self.t, self.k = p, t, k
        self.source = model_source(p, t, k)
        self.dtypes = tuple(container(x) for x in (t.a, t.b, t.c, t.d))
        self.kernel = raw_kernel(self.source, "numerics_model")

    def __call__(self, a, b, c, d, m: int = 1, n: int = 1) -> None:
        count = int(d.size)
        if count:
            grid = ((count + THREADS - 1) // THREADS,)
            self.kernel(grid, (THREADS,), (a, b, c, d, np.int64(count), np.int32(m), np.int32(n)))


def model_kernel(p: PathParams, t: Types, k: int) -> ModelKernel:
    """The compiled model (compiled once per source: ``raw_kernel`` caches by source text)."""
    return ModelKernel(p, t, k)


def to_container(type_name: str, bits) -> np.ndarray:
    """Container bits (any unsigned array) -> the type's GPU storage, masked as model.py masks them."""
    return (np.asarray(bits, dtype=np.uint64) & np.uint64(ptx_type(type_name).mask)).astype(container(type_name))


def dot_bits_gpu(p: PathParams, t: Types, a_bits, b_bits, c_bits) -> np.ndarray:
    """model.dot_bits on the GPU: D bits ``uint64[N]`` of ``a_bits, b_bits [N, K]``, ``c_bits [N]``."""
    cp = cupy()
    a = np.atleast_2d(np.asarray(a_bits, dtype=np.uint64))
    b = np.atleast_2d(np.asarray(b_bits, dtype=np.uint64))
    c = np.atleast_1d(np.asarray(c_bits, dtype=np.uint64))
    kern = model_kernel(p, t, a.shape[-1])
    d = cp.zeros(len(c), dtype=container(t.d))
    kern(cp.asarray(to_container(t.a, a)), cp.asarray(to_container(t.b, b)), cp.asarray(to_container(t.c, c)), d)
    return cp.asnumpy(d).astype(np.uint64)
