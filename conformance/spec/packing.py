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

from .model import Operand

__all__ = ["pack", "unpack", "element_bits", "lane_words_to_registers"]


def _gather_index(op: Operand, params: Mapping[str, int] | None):
    m = op.layout.map(params)
    held = op.layout.held(params)
    return m, held


def pack(
    op: Operand,
    bits: np.ndarray,
    params: Mapping[str, int] | None = None,
    filler: np.ndarray | None = None,
) -> np.ndarray:
    """``bits[case, matrix, row, col]`` -> ``uint32 words[case, lane, op.words]``.

    ``filler[case, lane, element]`` gives the container bits of slots the layout
    leaves unheld (garbage there proves the hardware ignores them); default 0.
    """
    bits = np.asarray(bits, dtype=np.uint64)
    lay, frag = op.layout, op.fragment
    m, held = _gather_index(op, params)
    mm, rr, cc = (np.where(held, m[..., k], 0) for k in range(3))
    values = (bits[:, mm, rr, cc] & np.uint64(op.type.mask)) << np.uint64(frag.value_shift)
    cmask = np.uint64((1 << frag.container_bits) - 1) if frag.container_bits < 64 else np.uint64(2**64 - 1)
    garbage = np.uint64(0) if filler is None else np.asarray(filler, dtype=np.uint64) & cmask
    slots = np.where(held[None], values, garbage)  # [case, lane, element] container bits
    shift = ((np.arange(lay.elements) % frag.per_register) * frag.container_bits).astype(np.uint64)
    slots = (slots << shift).reshape(slots.shape[0], lay.lanes, op.registers, frag.per_register)
    regs = np.bitwise_or.reduce(slots, axis=-1)
    return registers_to_words(op, regs)


def registers_to_words(op: Operand, regs: np.ndarray) -> np.ndarray:
    """``uint64 regs[case, lane, register]`` -> ``uint32 words`` (64-bit registers as low, high)."""
    if op.fragment.words_per_register == 1:
        return regs.astype(np.uint32)
    lo = (regs & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (regs >> np.uint64(32)).astype(np.uint32)
    return np.stack([lo, hi], axis=-1).reshape(regs.shape[0], regs.shape[1], -1)


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
    e = np.arange(op.layout.elements)
    shift = ((e % frag.per_register) * frag.container_bits + frag.value_shift).astype(np.uint64)
    return (regs[:, :, e // frag.per_register] >> shift) & np.uint64(op.type.mask)


def unpack(op: Operand, words: np.ndarray, params: Mapping[str, int] | None = None) -> np.ndarray:
    """``words[case, lane, op.words]`` -> ``bits[case, matrix, row, col]`` through the layout."""
    lay = op.layout
    elems = element_bits(op, words)
    m, held = _gather_index(op, params)
    out = np.zeros((elems.shape[0], lay.matrices, lay.rows, lay.cols), dtype=np.uint64)
    lanes, es = np.nonzero(held)
    out[:, m[lanes, es, 0], m[lanes, es, 1], m[lanes, es, 2]] = elems[:, lanes, es]
    return out


def slots_to_words(op: Operand, slot_bits: np.ndarray) -> np.ndarray:
    """``bits[case, lane, element]`` -> words, with no layout (discovery writes registers directly)."""
    frag = op.fragment
    values = (np.asarray(slot_bits, dtype=np.uint64) & np.uint64(op.type.mask)) << np.uint64(frag.value_shift)
    shift = ((np.arange(op.layout.elements) % frag.per_register) * frag.container_bits).astype(np.uint64)
    slots = (values << shift).reshape(values.shape[0], values.shape[1], op.registers, frag.per_register)
    return registers_to_words(op, np.bitwise_or.reduce(slots, axis=-1))
