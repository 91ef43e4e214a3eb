"""The number formats the arithmetic model rounds into, and the rounding each path's parameters pick.

Its own module so that the NumPy model (model.py) and its compiled twin (compiled.py) read one table; and the packed
layout of narrow operands (``.b1``, fp8) both take (``pack_words``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["WORD", "Fmt", "FORMATS", "ROUNDING_MODIFIERS", "acc_format", "f64_rounding", "n_words", "pack_words", "unpack_words"]


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


WORD = 64  # bits of a packed word


def pack_words(bits, width: int) -> np.ndarray:
    """Elements of ``width`` bits ``[..., K]`` (one per container, its low ``width`` bits) -> ``uint64[..., W]``
    words, ``64 / width`` elements a word: element k at bit ``(k % (64 / width)) * width`` of word ``k // (64 /
    width)``, the bits past K zero.  Why: a K = 256 ``.b1`` dot is 4 KB of containers and 64 bytes of words (an fp8
    dot of K = 32: 512 and 64 bytes); a kernel reading containers is bound by memory."""
    per = _per_word(width)
    x = np.asarray(bits, dtype=np.uint64) & np.uint64((1 << width) - 1)
    k = x.shape[-1]
    words = n_words(k, width)
    if width in (1, 8):  # through bytes (NumPy's bit packing, or a byte's container): 10x quicker
        padded = np.zeros(x.shape[:-1] + (words * per,), dtype=np.uint8)
        padded[..., :k] = x
        packed = np.packbits(padded, axis=-1, bitorder="little") if width == 1 else padded
        return np.ascontiguousarray(packed).view("<u8").astype(np.uint64, copy=False)
    padded = np.zeros(x.shape[:-1] + (words * per,), dtype=np.uint64)
    padded[..., :k] = x
    lanes = padded.reshape(x.shape[:-1] + (words, per)) << (np.arange(per, dtype=np.uint64) * np.uint64(width))
    return np.bitwise_or.reduce(lanes, axis=-1) if per > 1 else lanes[..., 0]


def unpack_words(words, width: int, k: int) -> np.ndarray:
    """``pack_words``' inverse: ``uint64[..., K]`` containers of the first ``k`` elements of the words."""
    per = _per_word(width)
    w = np.asarray(words, dtype=np.uint64)
    if not 0 <= k <= w.shape[-1] * per:
        raise ValueError(f"k={k}: {w.shape[-1]} words hold at most {w.shape[-1] * per} elements of {width} bits")
    lanes = (w[..., None] >> (np.arange(per, dtype=np.uint64) * np.uint64(width))) & np.uint64((1 << width) - 1)
    return lanes.reshape(w.shape[:-1] + (w.shape[-1] * per,))[..., :k]


def n_words(k: int, width: int) -> int:
    """Words of ``pack_words`` a row of ``k`` elements of ``width`` bits takes."""
    return -(-k // _per_word(width))


def _per_word(width: int) -> int:
    if width < 1 or WORD % width:
        raise ValueError(f"elements of {width} bits do not pack into {WORD}-bit words (1, 2, 4, 8, 16 or 32 do)")
    return WORD // width
