"""The arithmetic model of model.py compiled for the CPU (numba), bit for bit: the optional extra ``fast``.

Why: the NumPy model evaluates about 1e5 to 1e6 dot products/s on two cores (f64, in Python, about 1e4), which bounds
CI's replays and every user without a GPU.  This is the integer datapath of gpu.py's CUDA kernel, written for numba:
each input decodes to (sign, class, integer significand, raw exponent); a product's significand is the integer
product; aligned terms are 64-bit integers summed exactly; every rounding acts on (significand, exponent).  Only the
additions model.py itself does in float64 (``c_entry: late``, ``add_rne`` and ``block_add``) are float64 additions
here too, with the same IEEE rounding; f64 paths are IEEE fused multiply-adds (LLVM's ``fma``), a directed rounding
decided by the exact sign of the FMA's error, in a scaled copy where the operands sit near the ends of the range
(every row is computed here; none comes back to model.py), two rows' chains interleaved (each step waits on the
last).  Where both operands are 8-bit (fp8), every product of two elements is one entry of a 256 KB table
(``_product_table``): a row is read from it once into block order, then each half's anchor and aligned sum
from its contiguous entries.  Operands may come packed into 64-bit words (formats.pack_words,
``packed_k``): a ``.b1`` row is the popcounts of its words' xor or and (a dot of K = 256 reads 64 bytes instead of
4 KB of containers); other packed operands are unpacked first (fp8 read from words, 8 a word, was no quicker than
from containers: the product table's rows are bound by their arithmetic, not by memory).

One compiled kernel per path kind (float, f64, integer, packed .b1): a path's parameters are a small integer vector
(``plan``), so no parameter set waits for a compile of its own and the machine code is cached on disk
(``cache=True``).  A parameter value the kernels do not implement is refused (``check`` raises ``NotCompiled``),
never approximated; model.dot_bits then computes the dots itself.  Batches of more than ``CHUNK`` rows run in
chunks over a pool of ``threads()`` threads (the CPUs of this process's affinity, at most ``NUMBA_NUM_THREADS``);
smaller ones on the calling thread (a one-dot replay waits for no other).  tests/tools/test_numerics_compiled.py
checks the two bit for bit on every path of specs/numerics.yaml.  numba is imported only here, and only when a
kernel runs.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from ptxconf.isa.ptxtypes import ptx_type

from .formats import FORMATS, acc_format, f64_rounding, n_words, unpack_words
from .implemented import (
    FLOAT_ACC,
    FLOAT_IN,
    INT_IN,
    NAN_F64_ONLY,
    NAN_ORDERS,
    ROUNDING,
    datapath_values,
    refusal,
    unsupported_types,
)

__all__ = ["NotCompiled", "Unavailable", "available", "check", "dot_bits", "IMPLEMENTED"]


class Unavailable(RuntimeError):
    """numba is not importable (the optional extra ``fast`` is not installed)."""


class NotCompiled(ValueError):
    """A parameter value (or type) the compiled kernels do not implement."""


_ROUNDING, _NAN, _NAN_F64_ONLY = ROUNDING, NAN_ORDERS, NAN_F64_ONLY  # the MODE codes of _round_p: their order
_C_ENTRY = ("fused", "late", "add_rne", "block_add")
_ALIGN = ("truncate", "rne", "sticky")
_CONV = ("truncate", "rna", "rne")
_BITOP = {None: 0, "xor": 1, "and": 2}  # int_rows' and b1_rows' codes
_FLOAT_IN, _FLOAT_ACC, _INT_IN = FLOAT_IN, FLOAT_ACC, INT_IN
MAX_SUM_BITS = 62  # an aligned block sum (and C) stays below 2^62 in int64; model.py's float64 needs < 2^53 (checked too)
MAX_OUT_PRECISION = 50  # a rounded accumulator converts to float64 exactly (the float64 additions above)

IMPLEMENTED: dict[str, object] = {
    **datapath_values(48, MAX_OUT_PRECISION),
    "sparse_zeros": ("skip", "multiply"),  # model.sparse_dots gathers the dots before the kernel sees them
    "sparse_order": ("position", "slot"),
}
def check(p, t, k: int) -> None:
    """Raise ``NotCompiled`` naming the first parameter value (or type) the kernels would not reproduce exactly."""
    if p.kind not in ("float", "f64", "int", "b1"):
        raise NotCompiled(f"path {p.name}: kind {p.kind!r} is not compiled")
    why = refusal(p, IMPLEMENTED)
    if why:
        raise NotCompiled(f"path {p.name}: {why} in the compiled model")
    if p.kind != "f64" and p.nan_propagation in _NAN_F64_ONLY:
        raise NotCompiled(f"path {p.name}: nan_propagation={p.nan_propagation!r} is an f64 rule (model.py refuses it here too)")
    if p.kind == "float":
        if p.operand_cvt == "f16" and not {t.a, t.b} <= {"e4m3", "e5m2", "f16"}:
            raise NotCompiled(f"path {p.name}: operand_cvt f16 takes .e4m3/.e5m2/.f16 operands")
        # model.py sums the aligned integers of a block in float64: exact only below 2^53
        extra = 1 if p.align == "sticky" else 0
        if p.frac_bits + extra + 2 + max(1, int(p.block + 1).bit_length()) > 53:
            raise NotCompiled(f"path {p.name}: a block of {p.block} terms on {p.frac_bits} bits may sum past 2^53")
    if p.kind == "f64":
        f64_rounding(p, t.rnd)
    bad = unsupported_types(p, t, _FLOAT_IN, _FLOAT_ACC, _INT_IN)
    if bad:
        raise NotCompiled(f"path {p.name}: type(s) {', '.join(map(str, bad))} not compiled")
    if not 1 <= k <= 4096:
        raise NotCompiled(f"K={k} is out of the kernels' range 1..4096")


# ---------------------------------------------------------------------------
# the plan: a path's parameters as integers
# ---------------------------------------------------------------------------

# float plan slots
(_BLOCK, _FRAC, _EXTRA, _OUT_P, _FMODE, _ALIGNC, _C_ENTRYC, _HAS_FLOOR, _EXP_FLOOR, _OUT_FLUSH, _OVF, _NEGZ,
 _UF_POS, _NANP, _ACC_EMIN, _ACC_EMAX, _TO_D, _PAIRS, _IN_FLUSH, _PLSB) = range(20)
_OPS = 24  # A at 24, B at 36, C at 48, D at 60: one format each
(_EB, _MB, _BIAS, _FN, _P, _EMIN, _EMAX, _NSB, _NSM, _XEMIN, _TF32, _CONVC) = range(12)
_A, _B, _C, _D = _OPS, _OPS + 12, _OPS + 24, _OPS + 36
_PLAN = _OPS + 48


def _operand(plan: np.ndarray, at: int, type_name: str, p, xemin: int | None = None) -> None:
    """Exponent/significand layout of a float type: its FORMATS entry and container (``.tf32``: its top 19 bits)."""
    f = FORMATS[type_name]
    width = 19 if type_name == "tf32" else ptx_type(type_name).bits
    mb = f.p - 1
    box = "f32" if type_name == "tf32" else type_name
    fn = bool((ptx_type(type_name).numpy or "").endswith("fn"))  # e4m3: no infinities, all ones is the NaN
    plan[at:at + 12] = (width - 1 - mb, mb, 1 - f.emin, int(fn), f.p, f.emin, f.emax, ptx_type(box).bits,
                        FORMATS[box].p - 1, f.emin if xemin is None else xemin, int(type_name == "tf32"),
                        _CONV.index(p.input_conversion))


def _float_plan(p, t) -> np.ndarray:
    plan = np.zeros(_PLAN, dtype=np.int64)
    d_fmt = FORMATS[t.d]
    acc = acc_format(p, d_fmt)
    plan[:_PLSB + 1] = (p.block, p.frac_bits, 1 if p.align == "sticky" else 0, p.out_precision,
                        _ROUNDING.index(p.final_rounding), _ALIGN.index(p.align), _C_ENTRY.index(p.c_entry),
                        int(p.exp_floor is not None), p.exp_floor or 0, int(p.out_subnormals == "flush"),
                        ("inf", "saturate", "ieee").index(p.overflow), int(p.neg_zero == "ieee"),
                        int(p.underflow_sign == "positive"), _NAN.index(p.nan_propagation), acc.emin, acc.emax,
                        int(p.out_precision > d_fmt.p or acc != d_fmt), int(p.k_order == "pairs"),
                        int(p.in_subnormals == "flush"), (FORMATS[t.a].p - 1) + (FORMATS[t.b].p - 1))
    for at, name in ((_A, t.a), (_B, t.b)):
        _operand(plan, at, name, p, FORMATS["f16"].emin if p.operand_cvt == "f16" else None)
    _operand(plan, _C, t.c, p)
    _operand(plan, _D, t.d, p)
    return plan


@functools.lru_cache(maxsize=64)
def _table_of(layout: bytes, at: int) -> np.ndarray:
    plan = np.frombuffer(layout, dtype=np.int64)
    return _kernels().decode_table(plan, at, plan[_IN_FLUSH])


def _table(plan: np.ndarray, at: int) -> np.ndarray:
    """The decode table of operand ``at`` (built once per format, flush rule and exponent floor: cached); only 8-bit
    and widened (``operand_cvt``) formats are read by table, the others get an empty one."""
    if plan[at + _EB] + plan[at + _MB] >= 8 and plan[at + _XEMIN] == plan[at + _EMIN]:
        return np.zeros(1, dtype=np.int64)
    layout = np.zeros(_PLAN, dtype=np.int64)
    layout[at:at + 12] = plan[at:at + 12]
    layout[_IN_FLUSH] = plan[_IN_FLUSH]
    return _table_of(layout.tobytes(), at)


_NO_TABLE = np.zeros(1, dtype=np.uint32)


@functools.lru_cache(maxsize=16)
def _product_table_of(ta: bytes, tb: bytes) -> np.ndarray:
    x = np.frombuffer(ta, dtype=np.int64)[:, None]
    y = np.frombuffer(tb, dtype=np.int64)[None, :]
    cx, cy = x & 3, y & 3  # decode_table's packing: class (0 zero, 1 finite, 2 Inf, 3 NaN), sign, raw exponent, mag
    mag = (x >> 16) * (y >> 16)  # 0 where either is a zero, Inf or NaN
    key = np.where(mag != 0, ((x >> 3) & 0x1FFF) + ((y >> 3) & 0x1FFF) - 8192 + 64, 0)
    if mag.max() >= 1 << 21 or (key[mag != 0] < 1).any() or key.max() > 127:
        return _NO_TABLE  # the fields would not hold it: the kernel decodes each operand instead
    nan = (cx == 3) | (cy == 3) | ((cx == 2) & (cy == 0)) | ((cx == 0) & (cy == 2))  # as float_rows' classes
    inf = ~nan & ((cx == 2) | (cy == 2))
    neg = ((x ^ y) >> 2) & 1
    fields = (mag | key << 22 | np.where(nan | inf, 0, neg) << 29 | nan << 30 | (inf & (neg == 0)) << 31
              | (inf & (neg == 1)) << 21)
    return fields.astype(np.uint32).reshape(-1)


def _product_table(plan: np.ndarray, table_a: np.ndarray, table_b: np.ndarray) -> np.ndarray:
    """Every product of two 8-bit elements (``table_a``, ``table_b``: their decode tables), indexed by A's bits << 8
    | B's (uint32, 256 KB): significand | -Inf << 21 | (raw exponent + 64; 0 for a zero or non-finite product) << 22
    | sign of a finite product << 29 | NaN << 30 | +Inf << 31.  The kernel reads a product with one load where a
    block's products would otherwise be decoded and stored one by one; paths whose operands are not both 8-bit get
    an empty one."""
    if len(table_a) != 256 or len(table_b) != 256:
        return _NO_TABLE
    return _product_table_of(table_a.tobytes(), table_b.tobytes())


def _nan_bits(p, d: str) -> int:
    return int(p.nan_bits.get(d, ptx_type(d).mask >> 1))  # as model.py


def available() -> tuple[bool, str]:
    """(True, numba's version) where numba imports, else (False, why)."""
    try:
        return True, _kernels().version
    except Unavailable as exc:
        return False, str(exc)


def dot_bits(p, t, a_bits, b_bits, c_bits, labels=None, n_threads: int | None = None, *,
             packed_k: int | None = None) -> np.ndarray:
    """model.dot_bits compiled: D bits ``uint64[N]`` of ``a_bits, b_bits [N, K]``, ``c_bits [N]`` (``labels [N, K]``:
    the k of each column, as model.sparse_dots gives them; ``packed_k``: operands as words of formats.pack_words
    holding that many elements a row) on ``n_threads`` threads (default ``threads()``).  ``NotCompiled`` where a
    parameter value is not compiled."""
    # uint64 containers as they come (one compiled signature); the kernels mask them as model.py's decoding does
    a = np.ascontiguousarray(np.atleast_2d(np.asarray(a_bits, dtype=np.uint64)))
    b = np.ascontiguousarray(np.atleast_2d(np.asarray(b_bits, dtype=np.uint64)))
    c = np.ascontiguousarray(np.atleast_1d(np.asarray(c_bits, dtype=np.uint64)))
    n, k = a.shape
    if packed_k is not None:
        if labels is not None:
            raise ValueError(f"path {p.name}: packed_k takes the operands of dense dots (no labels)")
        width = (ptx_type(t.a).bits, ptx_type(t.b).bits)
        need = (n_words(packed_k, width[0]), n_words(packed_k, width[1]))
        if (k, b.shape[1]) != need:
            raise ValueError(f"packed_k={packed_k}: A and B need {need[0]} and {need[1]} words a row, not {k} and "
                             f"{b.shape[1]}")
        k = packed_k
        if p.kind != "b1":  # only the .b1 kernel reads words; the others read the elements' containers
            a, b, packed_k = unpack_words(a, width[0], k), unpack_words(b, width[1], k), None
    prepared = _prepared(p, t, k)  # checks p: NotCompiled before numba is asked for
    kern = _kernels()
    out = np.zeros(n, dtype=np.uint64)
    if n == 0:
        return out
    if p.kind == "float":
        plan, table_a, table_b, table_ab = prepared
        # the k of each column: only k_order pairs reads it (one row stands for every row of a dense batch)
        lab = np.ascontiguousarray(np.arange(k)[None, :] if labels is None else labels, dtype=np.int64)
        blocks = np.asarray(_schedule_counts(p, lab), dtype=np.int64)
        args = (plan, blocks, np.uint64(_nan_bits(p, t.d)), table_a, table_b, table_ab,
                a, b, c, lab, out, *(np.uint64(ptx_type(x).mask) for x in (t.a, t.b, t.c)))
        _over_rows(kern.float_rows, n, args, n_threads)
    elif p.kind == "f64":
        nanp = _NAN.index(p.nan_propagation)
        mode = _ROUNDING.index(f64_rounding(p, t.rnd))
        args = (nanp, mode, int(p.f64_mode == "reverse_fma"), np.uint64(_nan_bits(p, "f64")), a.view(np.int64),
                b.view(np.int64), c.view(np.int64), out)
        _over_rows(kern.f64_rows, n, args, n_threads)
    elif packed_k is not None:  # .b1 words: popcounts of the words' xor or and
        args = (packed_k, _BITOP[t.bitop], int(t.satfinite), a, b, c, out)
        _over_rows(kern.b1_rows, n, args, n_threads)
    else:
        sa, sb = ptx_type(t.a), ptx_type(t.b)
        args = (sa.bits, int(sa.kind == "sint"), sb.bits, int(sb.kind == "sint"), _BITOP[t.bitop],
                int(t.satfinite), a, b, c, out)
        _over_rows(kern.int_rows, n, args, n_threads)
    return out


@functools.lru_cache(maxsize=512)
def _prepared(p, t, k: int):
    """``check`` once per (path, types, K), and a float path's plan and decode tables (PathParams and Types are
    frozen; the plan holds no NaN bits, which ``nan_bits`` (not part of a path's hash) would give)."""
    check(p, t, k)
    if p.kind != "float":
        return None
    plan = _float_plan(p, t)
    plan.setflags(write=False)
    table_a, table_b = _table(plan, _A), _table(plan, _B)
    return plan, table_a, table_b, _product_table(plan, table_a, table_b)


def _schedule_counts(p, labels: np.ndarray) -> tuple[int, int]:
    """Blocks of each ``k_order`` half, as model._schedule counts them over the whole batch (its longest row)."""
    if p.k_order != "pairs":
        return max(-(-labels.shape[1] // p.block), 1), 0
    first = labels % 4 < 2
    counts = (int(first.sum(axis=-1).max(initial=0)), int((~first).sum(axis=-1).max(initial=0)))
    return max(-(-counts[0] // p.block), 1), max(-(-counts[1] // p.block), 1)


# ---------------------------------------------------------------------------
# the kernels

CHUNK = 4096  # rows: a batch up to this size runs on the calling thread (a one-dot replay waits for no other)
_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}


def threads() -> int:
    """Threads the kernels run on: the CPUs this process may use (its affinity), at most ``NUMBA_NUM_THREADS``."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    env = os.environ.get("NUMBA_NUM_THREADS", "")
    return max(1, min(n, int(env)) if env.isdigit() and int(env) > 0 else n)


def _over_rows(rows_fn, n: int, args: tuple, n_threads: int | None = None) -> None:
    """``rows_fn(lo, hi, *args)`` over rows ``0..n``: in chunks over a pool of threads (the kernels release the
    GIL).  A thread takes the next chunk when it is done with one, so a core that other work slows takes fewer;
    a small batch runs on the calling thread."""
    t = n_threads or threads()
    if t == 1 or n <= CHUNK:
        rows_fn(0, n, *args)
        return
    key = (os.getpid(), t)  # a forked child has none of its parent's threads: its own pool
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ThreadPoolExecutor(max_workers=t, thread_name_prefix="ptxconf-model")
    step = max(CHUNK // 4, -(-n // (4 * t)))
    for f in [pool.submit(rows_fn, lo, min(n, lo + step), *args) for lo in range(0, n, step)]:
        f.result()

# ---------------------------------------------------------------------------


_MISSING: list[str] = []  # why numba did not import, once known (a failed import is not retried on every call)


def _kernels():
    """The compiled kernels (numba imported and the kernels compiled, or loaded from numba's cache, on first use)."""
    if _MISSING:
        raise Unavailable(_MISSING[0])
    try:
        from . import _compiled_kernels
    except ImportError as exc:
        _MISSING.append(f"numba is not importable ({type(exc).__name__}: {exc}); pip install 'ptx-conformance[fast]'")
        raise Unavailable(_MISSING[0]) from None
    return _compiled_kernels
