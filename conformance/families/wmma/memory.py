"""wmma probes' memory: the case's matrix images, and the probe executed as the ISA says, memory to memory.

Buffer contract (the probe contract of every family: ``in, out, order, ncases``, one warp per
case, ``[case][lane][word]``): a case's ``in`` region is one flat little-endian byte image
(lane-major words), its ``out`` region another.

* ``in`` bytes 0..35: nine u32 header words: route, ldA, ldB, ldC, ldD (strides in elements),
  offA, offB, offC (byte offsets of each matrix in the ``in`` region), offD (in the ``out`` region);
* A, B and C at their offsets, row- or column-major with their stride; every other byte is
  random, so a load that reads outside its matrix shows;
* strides and offsets are random per case within what the hardware takes: every row/column start
  a multiple of ``WmmaSpec.row_alignment`` (>= 16) bytes, every base of ``base_alignment`` (32);
  the regions themselves start at multiples of 256 bytes;
* ``out``: D stored at offD with ldD; every other byte must stay zero.

A *route* is one load -> mma -> store path of the kernel: the companion wmma.mma form fixes the
A and B layouts, the route the C and D layouts.  :func:`apply` is the whole semantics, without
any fragment distribution: the emulator and the comparator both use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ptxconf.oracle import mma as oracle_mma
from ptxconf.spec.ptxtypes import TYPES

from .spec import WmmaSpec, WmmaVariant

__all__ = ["HEADER_WORDS", "Sizes", "sizes", "apply", "read_matrix", "write_matrix", "header", "matrix_spans"]

HEADER_WORDS = 9
HEADER_BYTES = 128
SLACK = 3  # up to this many stride units of padding per row, and base-alignment units of offset


@dataclass(frozen=True)
class Sizes:
    """Words per lane of a case's in/out regions, and where each matrix's slot starts."""

    in_words: int
    out_words: int
    slots: tuple[int, int, int]  # byte start of the A, B, C slots (128-aligned)


def _layouts(mv: WmmaVariant, route: tuple[str, str]) -> dict[str, str]:
    return {"a": mv.layout_of("a"), "b": mv.layout_of("b"), "c": route[0], "d": route[1]}


def max_stride(spec: WmmaSpec, mv: WmmaVariant, matrix: str, layout: str) -> int:
    t = mv.type_of(matrix)
    return spec.min_stride(matrix, t, mv.shape_name, layout) + SLACK * spec.stride_unit(matrix, t, mv.shape_name, layout)


def matrix_span(spec: WmmaSpec, mv: WmmaVariant, matrix: str, layout: str, ld: int) -> int:
    """Bytes from a matrix's base to the end of its last element."""
    rows, cols = spec.dims(matrix, mv.shape_name)
    outer, inner = (rows, cols) if layout == "row" else (cols, rows)
    return -(-((outer - 1) * ld + inner) * TYPES[mv.type_of(matrix)].bits // 8)


def matrix_spans(spec: WmmaSpec, mv: WmmaVariant, matrix: str) -> int:
    """Bytes a matrix slot needs for any layout, stride and base offset a case may draw."""
    align = spec.base_alignment(matrix, mv.type_of(matrix), mv.shape_name)
    span = max(matrix_span(spec, mv, matrix, lay, max_stride(spec, mv, matrix, lay)) for lay in ("row", "col"))
    return span + SLACK * align


def _round(x: int, to: int) -> int:
    return -(-x // to) * to


def sizes(spec: WmmaSpec, mv: WmmaVariant) -> Sizes:
    pos, slots = HEADER_BYTES, []
    for m in "abc":
        slots.append(pos)
        pos = _round(pos + matrix_spans(spec, mv, m), 128)
    out = _round(matrix_spans(spec, mv, "d"), 128)
    return Sizes(_round(pos, 256) // 128, _round(out, 256) // 128, tuple(slots))


def header(words: np.ndarray) -> np.ndarray:
    """``uint32[case, 9]``: route, ldA, ldB, ldC, ldD, offA, offB, offC, offD."""
    return np.ascontiguousarray(words, dtype="<u4").reshape(len(words), -1)[:, :HEADER_WORDS].astype(np.int64)


def as_bytes(words: np.ndarray) -> np.ndarray:
    """``uint32[case, lane, w]`` -> ``uint8[case, 128 w]`` (the flat little-endian region)."""
    w = np.ascontiguousarray(words, dtype="<u4")
    return w.reshape(len(w), -1).view(np.uint8).copy()


def as_words(img: np.ndarray, words: int) -> np.ndarray:
    return np.ascontiguousarray(img).view("<u4").reshape(len(img), 32, words).astype(np.uint32)


def _bit_offsets(rows: int, cols: int, layout: str, ld: int, bits: int) -> np.ndarray:
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return ((r * ld + c) if layout == "row" else (c * ld + r)) * bits


def read_matrix(img: np.ndarray, base: int, rows: int, cols: int, layout: str, ld: int, bits: int) -> np.ndarray:
    """``uint64[rows, cols]`` element bits from one byte image."""
    off = _bit_offsets(rows, cols, layout, ld, bits)
    byte = base + off // 8
    if bits < 8:
        return ((img[byte].astype(np.uint64) >> (off % 8).astype(np.uint64)) & np.uint64((1 << bits) - 1))
    out = np.zeros((rows, cols), dtype=np.uint64)
    for i in range(bits // 8):
        out |= img[byte + i].astype(np.uint64) << np.uint64(8 * i)
    return out


def write_matrix(img: np.ndarray, base: int, vals: np.ndarray, layout: str, ld: int, bits: int) -> None:
    """Write ``vals`` (element bits, ``[rows, cols]``) into one byte image, leaving other bits alone."""
    rows, cols = vals.shape
    off = _bit_offsets(rows, cols, layout, ld, bits)
    byte = base + off // 8
    vals = vals.astype(np.uint64)
    if bits < 8:
        shift = (off % 8).astype(np.uint64)
        mask = (np.uint64((1 << bits) - 1) << shift).astype(np.uint8)
        np.bitwise_and.at(img, byte, ~mask)
        np.bitwise_or.at(img, byte, ((vals << shift) & np.uint64(0xFF)).astype(np.uint8))
        return
    for i in range(bits // 8):
        img[byte + i] = ((vals >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)


def read_operands(spec: WmmaSpec, mv: WmmaVariant, routes: tuple, in_words: np.ndarray) -> dict[str, np.ndarray]:
    """A, B, C element bits ``uint64[case, 1, rows, cols]`` as the case's loads read them."""
    hdr, img = header(in_words), as_bytes(in_words)
    out = {}
    for k, m in enumerate("abc"):
        rows, cols = spec.dims(m, mv.shape_name)
        bits = TYPES[mv.type_of(m)].bits
        mats = []
        for case in range(len(img)):
            lay = _layouts(mv, routes[int(hdr[case, 0])])[m]
            mats.append(read_matrix(img[case], int(hdr[case, 5 + k]), rows, cols, lay, int(hdr[case, 1 + k]), bits))
        out[m.upper()] = np.stack(mats)[:, None]
    return out


def apply(spec: WmmaSpec, mv: WmmaVariant, routes: tuple, in_words: np.ndarray, out_words: int,
          arithmetic=None) -> np.ndarray:
    """Expected ``out`` words: D = A*B + C through the oracle (or an injected arithmetic), stored as the case says."""
    hdr = header(in_words)
    bad = (hdr[:, 0] < 0) | (hdr[:, 0] >= len(routes))
    if bad.any():
        raise ValueError(f"case {int(np.argmax(bad))}: route {int(hdr[bad][0, 0])} is not one of the kernel's {len(routes)}")
    ops = read_operands(spec, mv, routes, in_words)
    d = (arithmetic or oracle_mma)(mv, ops)
    img = np.zeros((len(in_words), 128 * out_words), dtype=np.uint8)
    bits = TYPES[mv.type_of("d")].bits
    for case in range(len(img)):
        lay = _layouts(mv, routes[int(hdr[case, 0])])["d"]
        write_matrix(img[case], int(hdr[case, 8]), d[case, 0], lay, int(hdr[case, 4]), bits)
    return as_words(img, out_words)


def d_cells(spec: WmmaSpec, mv: WmmaVariant, routes: tuple, in_words: np.ndarray, out_words: np.ndarray):
    """Per case: D's element bits as stored in ``out``, and a mask of the bytes D occupies."""
    hdr, img = header(in_words), as_bytes(out_words)
    rows, cols = spec.dims("d", mv.shape_name)
    bits = TYPES[mv.type_of("d")].bits
    vals, inside = [], np.zeros(img.shape, dtype=bool)
    for case in range(len(img)):
        lay = _layouts(mv, routes[int(hdr[case, 0])])["d"]
        base, ld = int(hdr[case, 8]), int(hdr[case, 4])
        vals.append(read_matrix(img[case], base, rows, cols, lay, ld, bits))
        byte = base + _bit_offsets(rows, cols, lay, ld, bits) // 8
        for i in range(bits // 8):
            inside[case, byte + i] = True
    return np.stack(vals), img, inside
