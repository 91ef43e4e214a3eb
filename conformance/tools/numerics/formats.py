"""The number formats the arithmetic model rounds into, and the rounding each path's parameters pick.

Its own module so that the NumPy model (model.py) and its compiled twin (compiled.py) read one table; and the packed
layout of ``.b1`` operands both take (``pack_b1``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["B1_WORD", "Fmt", "FORMATS", "ROUNDING_MODIFIERS", "acc_format", "f64_rounding", "pack_b1", "unpack_b1"]


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

ROUNDING_MODIFIERS = {"rn": "rne", "rz": "rz", "rm": "rd", "rp": "ru"}  # PTX .rnd -> the model's rounding names


def acc_format(p, d_fmt: Fmt) -> Fmt:
    """The format whose exponent range the blocks' results are rounded within (``acc_type`` of path ``p``)."""
    if p.acc_type not in ("d", "f32"):
        raise ValueError(f"unknown acc_type {p.acc_type!r}")
    return FORMATS["f32"] if p.acc_type == "f32" else d_fmt


def f64_rounding(p, rnd: str | None) -> str:
    """The rounding of each f64 fused multiply-add: the instruction's ``.rnd`` (``f64_rnd: each_fma``) or RNE."""
    if p.f64_rnd not in ("each_fma", "ignored"):
        raise ValueError(f"unknown f64_rnd {p.f64_rnd!r}")
    return ROUNDING_MODIFIERS.get(rnd or "rn", "rne") if p.f64_rnd == "each_fma" else "rne"


B1_WORD = 64  # .b1 elements per packed word


def pack_b1(bits) -> np.ndarray:
    """``.b1`` elements ``[..., K]`` (one per container, its low bit) -> ``uint64[..., ceil(K / 64)]`` words, element k
    at bit ``k % 64`` of word ``k // 64``, the bits past K zero.  Why: a dot of K = 256 elements is 4 KB of containers
    and 64 bytes of words; a kernel reading containers is bound by memory, one reading words by popcounts."""
    x = np.asarray(bits, dtype=np.uint64)
    k = x.shape[-1]
    width = -(-k // B1_WORD) * B1_WORD
    low = np.zeros(x.shape[:-1] + (width,), dtype=np.uint8)
    low[..., :k] = x & np.uint64(1)
    return np.packbits(low, axis=-1, bitorder="little").view("<u8").astype(np.uint64, copy=False)


def unpack_b1(words, k: int) -> np.ndarray:
    """``pack_b1``'s inverse: ``uint64[..., K]`` containers (0 or 1) of the first ``k`` elements of the words."""
    w = np.ascontiguousarray(np.asarray(words, dtype=np.uint64)).astype("<u8", copy=False)
    if not 0 <= k <= w.shape[-1] * B1_WORD:
        raise ValueError(f"k={k}: the words hold at most {w.shape[-1] * B1_WORD} .b1 elements")
    return np.unpackbits(w.view(np.uint8), axis=-1, count=k, bitorder="little").astype(np.uint64)
