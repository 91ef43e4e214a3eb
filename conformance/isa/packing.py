"""Fragments <-> matrices: put matrix elements into per-lane registers and back.

The probe kernels assume no layout: they load and store 32-bit words laid out
``[case][lane][word]``.  This module is the only place that applies a layout:
``pack`` scatters matrix element bits into register words through the spec's
lane map; ``unpack`` gathers them back.  Elements are container bits (uint64);
element ``i`` sits in register ``i // per_register`` at bit
``(i % per_register) * container_bits + value_shift`` (the ISA's "low to high").
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .arrays import namespace
from .model import Operand

__all__ = ["pack", "unpack", "element_bits", "lane_words_to_registers"]


def _gather_index(op: Operand, params: Mapping[str, int] | None):
    m = op.layout.map(params)
    held = op.layout.held(params)
    return m, held


_INDEX: dict[tuple, tuple] = {}  # (what, id(layout), selector values, ...) -> (layout, arrays)


def _key(what: str, op: Operand, params: Mapping[str, int] | None, *rest) -> tuple:
    """A cache key of what is derived from ``op``'s layout at ``params`` and the parts of its fragment and type in
    ``rest``: every operand of one layout shares it (the variants of a process hold several thousand operands and a
    few hundred layouts).  Layouts hold dicts, so they key by identity; the entry keeps its layout alive."""
    return (what, id(op.layout), tuple(sorted((params or {}).items())), *rest)


def _hit(key: tuple, op: Operand):
    hit = _INDEX.get(key)
    return hit[1] if hit is not None and hit[0] is op.layout else None


def _index_on(xp, op: Operand, params: Mapping[str, int] | None) -> tuple:
    """The layout evaluated once per (layout, selector values, register slots, array module): gather indices, held
    mask, slot shifts."""
    frag = op.fragment
    key = _key("index", op, params, frag.per_register, frag.container_bits, id(xp))
    hit = _hit(key, op)
    if hit is not None:
        return hit
    if xp is np:
        m, held = _gather_index(op, params)
        mm, rr, cc = (np.where(held, m[..., k], 0) for k in range(3))
        frag = op.fragment
        shift = ((np.arange(op.layout.elements) % frag.per_register) * frag.container_bits).astype(np.uint64)
        arrays = (mm, rr, cc, held, shift)
    else:
        arrays = tuple(xp.asarray(a) for a in _index_on(np, op, params))
    if len(_INDEX) > 8192:
        _INDEX.clear()
    _INDEX[key] = (op.layout, arrays)
    return arrays


def pack(
    op: Operand,
    bits: np.ndarray,
    params: Mapping[str, int] | None = None,
    filler: np.ndarray | None = None,
) -> np.ndarray:
    """``bits[case, matrix, row, col]`` -> ``uint32 words[case, lane, op.words]``.

    ``filler[case, lane, element]`` gives the container bits of slots the layout
    leaves unheld (garbage there proves the hardware ignores them); default 0.
    NumPy or CuPy arrays alike (the bulk fuzzer packs on the GPU).
    """
    xp = namespace(bits)
    lay, frag = op.layout, op.fragment
    flat, keep, to_slot, shift, held, plain = _flat_on(xp, op, params, bits.shape[1:])
    if xp is np and filler is None and bits.dtype.kind == "u" and frag.words_per_register == 1:
        # a 32-bit register keeps the low 32 bits of every field: gathered, masked, shifted and ORed in uint32
        got = np.take(bits.reshape(bits.shape[0], -1), flat, axis=1)
        if got.dtype != np.uint32:
            got = got.astype(np.uint32)
        if plain:  # a whole register per element, every slot held: the gather is the word
            return got
        got &= keep.astype(np.uint32)
        got <<= to_slot.astype(np.uint32)
        if frag.per_register == 1:
            return got
        fields = got.reshape(got.shape[0], lay.lanes, op.registers, frag.per_register)
        regs = fields[..., 0] | fields[..., 1]
        for j in range(2, frag.per_register):
            regs |= fields[..., j]
        return regs
    bits = bits.astype(xp.uint64) if xp is not np else np.asarray(bits, dtype=np.uint64)
    # one gather through the flat index (faster than three index arrays), the type's mask and the value's
    # place in its container fused into one per-slot mask and shift
    values = xp.take(bits.reshape(bits.shape[0], -1), flat, axis=1) & keep
    if filler is None:
        slots = values << to_slot
    else:
        cmask = xp.uint64((1 << frag.container_bits) - 1) if frag.container_bits < 64 else xp.uint64(2**64 - 1)
        garbage = filler.astype(xp.uint64) & cmask
        slots = xp.where(held[None], values << xp.uint64(frag.value_shift), garbage) << shift
    if frag.per_register == 1:
        regs = slots
    else:  # disjoint bit fields ORed together (elementwise over the few per register: faster than a reduction)
        fields = slots.reshape(slots.shape[0], lay.lanes, op.registers, frag.per_register)
        regs = fields[..., 0] | fields[..., 1]
        for j in range(2, frag.per_register):
            regs |= fields[..., j]
    return registers_to_words(op, regs)


def _flat_on(xp, op: Operand, params: Mapping[str, int] | None, shape: tuple) -> tuple:
    """What :func:`pack` reads of the layout for matrices of ``shape`` (matrix, row, col): each slot's flat index,
    its value mask (0 where unheld), its shift into the register with and without the value shift, the held mask,
    and whether each 32-bit register holds one whole element of every slot (then the mask and the shifts change
    nothing the word keeps)."""
    frag = op.fragment
    key = _key("flat", op, params, frag.per_register, frag.container_bits, frag.value_shift, frag.words_per_register,
               op.type.mask, tuple(shape), id(xp))
    hit = _hit(key, op)
    if hit is not None:
        return hit
    mm, rr, cc, held, shift = _index_on(np, op, params)
    flat = (mm * shape[1] + rr) * shape[2] + cc
    keep = np.where(held, np.uint64(op.type.mask), np.uint64(0))
    to_slot = shift + np.uint64(frag.value_shift)
    plain = bool(frag.per_register == 1 and frag.words_per_register == 1 and op.type.mask == 0xFFFFFFFF
                 and held.all() and not to_slot.any())
    arrays = (*(a if xp is np else xp.asarray(a) for a in (flat, keep, to_slot, shift, held)), plain)
    _INDEX[key] = (op.layout, arrays)
    return arrays


def registers_to_words(op: Operand, regs: np.ndarray) -> np.ndarray:
    """``uint64 regs[case, lane, register]`` -> ``uint32 words`` (64-bit registers as low, high)."""
    xp = namespace(regs)
    if op.fragment.words_per_register == 1:
        return regs.astype(xp.uint32)
    lo = (regs & xp.uint64(0xFFFFFFFF)).astype(xp.uint32)
    hi = (regs >> xp.uint64(32)).astype(xp.uint32)
    return xp.stack([lo, hi], axis=-1).reshape(regs.shape[0], regs.shape[1], -1)


def lane_words_to_registers(op: Operand, words: np.ndarray) -> np.ndarray:
    """Inverse of :func:`registers_to_words`."""
    words = np.asarray(words, dtype=np.uint64)
    if op.fragment.words_per_register == 1:
        return words
    w = words.reshape(words.shape[0], words.shape[1], -1, 2)
    return w[..., 0] | (w[..., 1] << np.uint64(32))


def element_bits(op: Operand, words: np.ndarray) -> np.ndarray:
    """``words[case, lane, op.words]`` -> value bits ``uint64[case, lane, element]``."""
    regs = lane_words_to_registers(op, words)
    frag = op.fragment
    if frag.per_register == 1 and frag.value_shift == 0:
        return regs & np.uint64(op.type.mask)
    e = np.arange(op.layout.elements)
    shift = ((e % frag.per_register) * frag.container_bits + frag.value_shift).astype(np.uint64)
    return (regs[:, :, e // frag.per_register] >> shift) & np.uint64(op.type.mask)


def unpack(op: Operand, words: np.ndarray, params: Mapping[str, int] | None = None) -> np.ndarray:
    """``words[case, lane, op.words]`` -> ``bits[case, matrix, row, col]`` through the layout."""
    lay = op.layout
    elems = element_bits(op, words)
    n = elems.shape[0]
    flat = elems.reshape(n, -1)
    if elems.shape[1] != lay.lanes:  # words of another lane count: the slots the layout names, scattered
        lanes, es, mm, rr, cc = _scatter_on(op, params)
        out = np.zeros((n, lay.matrices * lay.rows * lay.cols), dtype=np.uint64)
        out[:, (mm * lay.rows + rr) * lay.cols + cc] = flat[:, lanes * elems.shape[2] + es]
        return out.reshape(n, lay.matrices, lay.rows, lay.cols)
    source, whole = _source_on(op, params)
    if not whole:  # elements no slot holds read from an appended zero
        flat = np.concatenate([flat, np.zeros((n, 1), dtype=flat.dtype)], axis=1)
    return flat.take(source, axis=1).reshape(n, lay.matrices, lay.rows, lay.cols)


def _source_on(op: Operand, params: Mapping[str, int] | None) -> tuple[np.ndarray, bool]:
    """For :func:`unpack`: the (lane, element) slot each matrix element is read from, flat, and whether every
    element has one (else they point one past the slots).  Where two slots hold one element the later slot's
    value is the one read, as a scatter in slot order leaves it."""
    key = _key("source", op, params)
    hit = _hit(key, op)
    if hit is not None:
        return hit
    lay = op.layout
    lanes, es, mm, rr, cc = _scatter_on(op, params)
    slots = lay.lanes * lay.elements
    source = np.full(lay.matrices * lay.rows * lay.cols, slots, dtype=np.int64)
    source[(mm * lay.rows + rr) * lay.cols + cc] = lanes * lay.elements + es
    whole = bool((source < slots).all())
    _INDEX[key] = (lay, (source, whole))
    return source, whole


def _scatter_on(op: Operand, params: Mapping[str, int] | None) -> tuple:
    """(lane, element, matrix, row, col) of every held slot, from the layout evaluated once (:func:`_index_on`)."""
    key = _key("scatter", op, params)
    hit = _hit(key, op)
    if hit is not None:
        return hit
    mm, rr, cc, held, _ = _index_on(np, op, params)
    lanes, es = np.nonzero(held)
    arrays = (lanes, es, mm[lanes, es], rr[lanes, es], cc[lanes, es])
    _INDEX[key] = (op.layout, arrays)
    return arrays


def slots_to_words(op: Operand, slot_bits: np.ndarray) -> np.ndarray:
    """``bits[case, lane, element]`` -> words, with no layout (discovery writes registers directly)."""
    frag = op.fragment
    values = (np.asarray(slot_bits, dtype=np.uint64) & np.uint64(op.type.mask)) << np.uint64(frag.value_shift)
    shift = ((np.arange(op.layout.elements) % frag.per_register) * frag.container_bits).astype(np.uint64)
    slots = (values << shift).reshape(values.shape[0], values.shape[1], op.registers, frag.per_register)
    return registers_to_words(op, np.bitwise_or.reduce(slots, axis=-1))
