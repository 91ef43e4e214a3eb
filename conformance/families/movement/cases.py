"""The data-movement families' cases: seeded shared-memory images, row addresses and tagged registers.

``value``: every input word random, each lane's row address a random distinct 16-byte slot (poison for the lanes the
instruction ignores).  ``map.*``: each element tagged with its own index, in digits over several cases where the type
has too few bits, so one observed word names where it came from.  The buffer contract is :mod:`.probe`'s.
"""

from __future__ import annotations

import numpy as np
from ptxconf.core.plan import CaseSet, variant_rng
from ptxconf.isa.model import Variant

from .probe import (
    ADDR_WORD,
    IMAGE_WORDS,
    POISON,
    ROW_BYTES,
    SLOTS,
    image_bytes,
    image_words,
    in_words,
    mem_bits,
    row_lanes,
)

CASE_STREAM = 0x1D3A  # variant_rng purpose of the case draws


def _addresses(v: Variant, rng: np.random.Generator) -> np.ndarray:
    """Per lane: a random distinct 16-byte slot per (matrix, row); poison for ignored lanes."""
    rl = row_lanes(v)
    slots = rng.permutation(SLOTS)[: rl.size].reshape(rl.shape)
    addr = np.full(32, POISON, dtype=np.uint32)
    for (m, r), ln in np.ndenumerate(rl):
        addr[ln] = slots[m, r] * ROW_BYTES
    return addr


def tag_digits(v: Variant) -> tuple[int, int, int]:
    """(tag space, digit bits, digits) of the map check."""
    if v.family == "ldmatrix":
        bits = mem_bits(v)
        space = SLOTS * (8 if bits == 16 else 16)  # every element of the image
    elif v.family == "stmatrix":
        bits = v.operands["fragment"].type.bits
        space = 32 * v.operands["fragment"].layout.elements
    else:
        bits, space = 16, 32 * 2
    digits = max(1, -(-int(np.ceil(np.log2(space))) // bits))
    return space, bits, digits


def make_cases(v: Variant, seed: int, checks: tuple[str, ...], value_cases: int = 8) -> list[CaseSet]:
    rng = variant_rng(v, seed, CASE_STREAM)
    out = []
    want_map = any(c.startswith("map") for c in checks)
    if "value" in checks:
        w = rng.integers(0, 2**32, size=(value_cases, 32, in_words(v)), dtype=np.uint64).astype(np.uint32)
        if v.family != "movmatrix":
            for k in range(value_cases):
                w[k, :, ADDR_WORD] = _addresses(v, rng)
        out.append(CaseSet("value", w))
    if want_map:
        space, bits, digits = tag_digits(v)
        target = "d" if v.family == "movmatrix" else "fragment"
        w = rng.integers(0, 2**32, size=(digits, 32, in_words(v)), dtype=np.uint64).astype(np.uint32)
        tags = np.arange(space, dtype=np.int64)
        mask = (1 << bits) - 1
        if v.family == "ldmatrix":
            addr = _addresses(v, rng)
            nper = space // SLOTS
            for k in range(digits):
                img = image_bytes(w[k : k + 1])
                digit = (tags >> (bits * k)) & mask
                _put_tags(img, nper, bits, digit)
                w[k, :, :IMAGE_WORDS] = image_words(img)[0]
                w[k, :, ADDR_WORD] = addr
        elif v.family == "stmatrix":
            addr = _addresses(v, rng)
            op = v.operands["fragment"]
            per, cb = op.fragment.per_register, op.fragment.container_bits
            for k in range(digits):
                w[k, :, ADDR_WORD] = addr
                w[k, :, ADDR_WORD + 1 :] = 0
                for ln in range(32):
                    for e in range(op.layout.elements):
                        dg = ((ln * op.layout.elements + e) >> (bits * k)) & mask
                        w[k, ln, ADDR_WORD + 1 + e // per] |= np.uint32(dg << (cb * (e % per)))
        else:
            w[:] = 0
            for ln in range(32):
                for e in range(2):
                    w[0, ln, 0] |= np.uint32(((ln * 2 + e) & 0xFFFF) << (16 * e))
        out.append(CaseSet(f"map.{target}", w, meta={"digits": digits, "digit_bits": bits}))
    return out


def _put_tags(img: np.ndarray, nper: int, bits: int, digit: np.ndarray) -> None:
    """Slot s's tag c (``digit[s * nper + c]``, ``bits`` wide) at bit ``c * bits`` of row s (low bit first), the
    other bits of the image kept: every bit in one scatter."""
    b = np.arange(bits)
    at = ((np.arange(SLOTS)[:, None] * ROW_BYTES * 8 + np.arange(nper)[None, :] * bits)[..., None] + b).ravel()
    vals = ((digit[: SLOTS * nper].reshape(SLOTS, nper)[..., None] >> b) & 1).ravel()
    flat = np.unpackbits(img[0], bitorder="little")
    flat[at] = vals
    img[0] = np.packbits(flat, bitorder="little")
