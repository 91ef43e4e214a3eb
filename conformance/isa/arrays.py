"""Element types on any array module: the same bits from NumPy on the host and CuPy on the GPU.

Why: the bulk fuzzer draws, packs and computes expected results on the device, and its cases
must be replayable on the host bit for bit.  Everything here takes the array module from its
arguments (``__array_namespace__``), so one function serves both; the formats themselves stay
defined once, by :mod:`ptxconf.isa.ptxtypes` (narrow formats decode through a table built
from it).  Randomness is counter-based (a hash of key and index), so case ``i`` of a draw is
the same wherever and in whatever batch it is made.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import numpy as np

from .ptxtypes import PtxType

__all__ = ["namespace", "uniform_bits", "below", "case_counters", "decode", "encode_exact", "key_of", "words32", "halves",
           "on_module", "u16_choices"]

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


def namespace(a: Any) -> Any:
    """The array module of ``a``: CuPy for a CuPy array (already imported by whoever made it), the namespace an
    ndarray subclass names for itself (an instrumented NumPy that counts the array operations), else NumPy."""
    if type(a).__module__.split(".", 1)[0] == "cupy":
        return sys.modules["cupy"]
    if isinstance(a, np.ndarray) and type(a) is not np.ndarray:
        return a.__array_namespace__()
    return np


def key_of(*parts: int | str) -> int:
    """A 64-bit stream key from ints and strings (stable across processes: no ``hash()``)."""
    acc = 0x243F6A8885A308D3
    for p in parts:
        data = p.encode() if isinstance(p, str) else int(p).to_bytes(16, "little", signed=True)
        for byte in data:
            acc = _splitmix_int(acc ^ byte)
    return acc


def _splitmix_int(x: int) -> int:
    m = (1 << 64) - 1
    x = (x + _GOLDEN) & m
    x = ((x ^ (x >> 30)) * _MIX1) & m
    x = ((x ^ (x >> 27)) * _MIX2) & m
    return x ^ (x >> 31)


# One pass each on a module that compiles elementwise kernels (CuPy), with the same unsigned arithmetic as the
# NumPy passes they stand for (the functions below name them; the bench counts each call as one operation).
DEVICE_FUSED = frozenset({"uniform_bits", "below", "case_counters", "_mix_columns"})
_SPLITMIX = ("unsigned long long x = ctr * 0x9E3779B97F4A7C15ull + key + 0x9E3779B97F4A7C15ull; "
             "x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull; x = (x ^ (x >> 27)) * 0x94D049BB133111EBull; x ^= x >> 31;")
_KERNELS: dict[tuple[int, str], Any] = {}


def _kernel(xp: Any, name: str, params: tuple[str, str], body: str) -> Any:
    """The elementwise kernel ``body`` compiled once per module where the module makes them (CuPy), else None."""
    if not hasattr(xp, "ElementwiseKernel"):
        return None
    key = (id(xp), name)
    if key not in _KERNELS:
        _KERNELS[key] = xp.ElementwiseKernel(params[0], params[1], body, f"ptxconf_{name}")
    return _KERNELS[key]


def uniform_bits(xp: Any, key: int, index: Any) -> Any:
    """``uint64`` random bits for each counter in ``index`` (splitmix64 of ``key + index * golden``)."""
    idx = xp.asarray(index, dtype=xp.uint64)
    fused = _kernel(xp, "splitmix64", ("uint64 ctr, uint64 key", "uint64 bits"), _SPLITMIX + " bits = x;")
    if fused is not None:
        return fused(idx, xp.uint64(key))
    x = idx * xp.uint64(_GOLDEN) + xp.uint64(key)
    x = x + xp.uint64(_GOLDEN)
    x = (x ^ (x >> xp.uint64(30))) * xp.uint64(_MIX1)
    x = (x ^ (x >> xp.uint64(27))) * xp.uint64(_MIX2)
    return x ^ (x >> xp.uint64(31))


def below(xp: Any, key: int, index: Any, n: int) -> Any:
    """``int64`` values uniform in ``[0, n)`` (the top 32 random bits, scaled: no modulo bias worth naming)."""
    fused = _kernel(xp, "below", ("uint64 ctr, uint64 key, uint64 choices", "int64 value"),
                    _SPLITMIX + " value = (long long)(((x >> 32) * choices) >> 32);")
    if fused is not None:
        return fused(xp.asarray(index, dtype=xp.uint64), xp.uint64(key), xp.uint64(n))
    hi = uniform_bits(xp, key, index) >> xp.uint64(32)
    return ((hi * xp.uint64(n)) >> xp.uint64(32)).astype(xp.int64)


def case_counters(xp: Any, stream: int, streams: int, first: int, n: int, per_case: int) -> Any:
    """``uint64[case, per_case]``: the counters of ``per_case`` draws (fewer than 2**20) of stream ``stream`` (of
    ``streams``) for cases ``first .. first + n - 1``: disjoint across cases and streams, whatever the batch."""
    case = xp.arange(first, first + n, dtype=xp.uint64)[:, None]
    column = xp.arange(per_case, dtype=xp.uint64)[None, :]
    fused = _kernel(xp, "counters", ("uint64 cs, uint64 col, uint64 streams, uint64 stream", "uint64 ctr"),
                    "ctr = ((cs * streams + stream) << 20) + col;")
    if fused is not None:
        return fused(case, column, xp.uint64(streams), xp.uint64(stream))
    return (case * xp.uint64(streams) + xp.uint64(stream)) * xp.uint64(1 << 20) + column


def _fmix32(xp: Any, x: Any) -> Any:
    """MurmurHash3's 32-bit finaliser, in place (a bijection of ``uint32``: distinct inputs stay distinct)."""
    x ^= x >> xp.uint32(16)
    x *= xp.uint32(0x85EBCA6B)
    x ^= x >> xp.uint32(13)
    x *= xp.uint32(0xC2B2AE35)
    x ^= x >> xp.uint32(16)
    return x


_MODULE_COPIES: dict[tuple[int, int], tuple[np.ndarray, Any]] = {}


def on_module(xp: Any, a: np.ndarray) -> Any:
    """A host table as an array of ``xp``, copied once per (table, module) while the table lives."""
    if xp is np:
        return a
    key = (id(a), id(xp))
    hit = _MODULE_COPIES.get(key)
    if hit is None or hit[0] is not a:
        if len(_MODULE_COPIES) > 1024:
            _MODULE_COPIES.clear()
        hit = _MODULE_COPIES[key] = (a, xp.asarray(a))
    return hit[1]


@cache
def _column_keys(count: int) -> np.ndarray:
    """``uint32[count]``: a fixed hash per column of a case's draw (the same for every case and key)."""
    return _fmix32(np, (np.arange(count, dtype=np.uint32) * np.uint32(0x9E3779B9)) ^ np.uint32(0x7F4A7C15))


def words32(xp: Any, key: int, first: int, n: int, count: int) -> Any:
    """``uint32[case, count]`` random words for cases ``first .. first + n - 1``: word ``j`` of case ``i`` is a
    function of (key, i, j) alone, whatever the batch.

    Why: the bulk draw's bound on a GPU is passes over its arrays.  Here the 64-bit hash runs once per case; each
    word costs one broadcast xor and the 32-bit finaliser in place (nine passes over 4 bytes, against about fifteen
    over 8 bytes for :func:`uniform_bits` of :func:`case_counters`).  Within a case the words are distinct (a
    bijection of distinct inputs)."""
    case = uniform_bits(xp, key, xp.arange(first, first + n, dtype=xp.uint64))
    case = (case ^ (case >> xp.uint64(32))).astype(xp.uint32)
    return _mix_columns(xp, case[:, None], on_module(xp, _column_keys(count))[None, :])


def _mix_columns(xp: Any, case: Any, columns: Any) -> Any:
    """:func:`_fmix32` of ``case ^ columns`` (broadcast): one kernel on CuPy."""
    fused = _kernel(xp, "fmix32", ("uint32 lhs, uint32 rhs", "uint32 word"),
                    "unsigned int h = lhs ^ rhs; h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; "
                    "h ^= h >> 16; word = h;")
    if fused is not None:
        return fused(case, columns)
    return _fmix32(xp, case ^ columns)


def halves(xp: Any, key: int, first: int, n: int, count: int) -> Any:
    """``uint16[case, count]`` uniform draws, two per :func:`words32` word (a view: no pass of their own)."""
    return words32(xp, key, first, n, -(-count // 2)).view(xp.uint16)[:, :count]


@cache
def u16_choices(n: int) -> np.ndarray:
    """``int64[65536]``: a uniform 16-bit draw -> a choice in ``[0, n)`` (multiply and shift: bias below n / 65536).

    Composed with a table of the choices' bits or values, one gather turns random draws into operand elements."""
    if not 0 < n <= 1 << 16:
        raise ValueError(f"{n} choices do not fit a 16-bit draw")
    out = (np.arange(1 << 16, dtype=np.int64) * n) >> 16
    out.flags.writeable = False  # shared by every caller
    return out


@cache
def _table(t: PtxType) -> np.ndarray:
    """Every container value of a narrow type, decoded once by the host's definition."""
    return t.decode(np.arange(1 << t.bits, dtype=np.uint64))


_DEVICE_TABLES: dict[tuple[str, int], Any] = {}


def decode(t: PtxType, bits: Any) -> Any:
    """Container bits -> float64 / int64 values, as :meth:`PtxType.decode` gives them, on ``bits``'s module."""
    xp = namespace(bits)
    if xp is np:
        return t.decode(bits)
    bits = bits.astype(xp.uint64) & xp.uint64(t.mask)
    if t.kind == "float" and t.bits <= 16:
        key = (t.name, id(xp))
        if key not in _DEVICE_TABLES:
            _DEVICE_TABLES[key] = xp.asarray(_table(t))
        return _DEVICE_TABLES[key][bits.astype(xp.int64)]
    if t.kind == "float":
        if t.ignored_low_bits:
            bits = bits & xp.uint64(t.mask ^ ((1 << t.ignored_low_bits) - 1))
        if t.bits == 32:
            return bits.astype(xp.uint32).view(xp.float32).astype(xp.float64)
        return bits.view(xp.float64)
    v = bits.astype(xp.int64)
    if t.kind == "sint":
        return xp.where(v >= (1 << (t.bits - 1)), v - (1 << t.bits), v)
    return v


def encode_exact(t: PtxType, values: Any) -> Any:
    """float64 / int64 values that ``t`` holds exactly -> container bits (uint64), on ``values``'s module.

    Only the result types of matrix instructions (f16, bf16, f32, f64 and the integers): the bulk
    fuzzer draws inputs whose results are exact, so no rounding is modelled here."""
    xp = namespace(values)
    if t.kind != "float":
        return values.astype(xp.int64).astype(xp.uint64) & xp.uint64(t.mask)
    if t.name == "f64":
        return values.astype(xp.float64).view(xp.uint64)
    if t.name in ("f32", "tf32"):
        return values.astype(xp.float32).view(xp.uint32).astype(xp.uint64)
    if t.name == "f16":
        return values.astype(xp.float16).view(xp.uint16).astype(xp.uint64)
    if t.name == "bf16":  # exact values: the float32 bits' high half
        return (values.astype(xp.float32).view(xp.uint32) >> xp.uint32(16)).astype(xp.uint64)
    raise ValueError(f".{t.name} is not a result type of the bulk path")
