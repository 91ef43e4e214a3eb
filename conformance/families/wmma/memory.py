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
from typing import Any

import numpy as np
from ptxconf.isa.arrays import namespace
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.oracle import mma as oracle_mma

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


def header(words: Any) -> Any:
    """``int64[case, 9]``: route, ldA, ldB, ldC, ldD, offA, offB, offC, offD (on the words' array module)."""
    xp = namespace(words)
    return xp.ascontiguousarray(words).astype(xp.uint32, copy=False).reshape(len(words), -1)[:, :HEADER_WORDS].astype(xp.int64)


def as_bytes(words: Any) -> Any:
    """``uint32[case, lane, w]`` -> ``uint8[case, 128 w]`` (the flat little-endian region)."""
    xp = namespace(words)
    w = xp.ascontiguousarray(words).astype(xp.uint32)
    return w.reshape(len(w), -1).view(xp.uint8).copy()


def as_words(img: Any, words: int) -> Any:
    xp = namespace(img)
    return xp.ascontiguousarray(img).view(xp.uint32).reshape(len(img), 32, words).astype(xp.uint32)


def _bit_offsets(xp: Any, rows: int, cols: int, colmajor: Any, ld: Any, bits: int) -> Any:
    """``int64[case, rows * cols]``: each element's bit offset from its matrix's base."""
    r = xp.arange(rows, dtype=xp.int64)[None, :, None]
    c = xp.arange(cols, dtype=xp.int64)[None, None, :]
    ld = ld.reshape(-1, 1, 1)
    return (xp.where(colmajor.reshape(-1, 1, 1), c * ld + r, r * ld + c) * bits).reshape(len(ld), -1)


def _column_major(xp: Any, layout: Any, n: int) -> Any:
    """``bool[case]`` from ``"row"``/``"col"`` (every case) or a per-case array."""
    if isinstance(layout, str):
        return xp.full(n, layout == "col", dtype=bool)
    return xp.asarray(layout, dtype=bool)


def gather_matrices(img: Any, base: Any, rows: int, cols: int, layout: Any, ld: Any, bits: int) -> Any:
    """``uint64[case, rows, cols]`` element bits from byte images ``uint8[case, bytes]``, each case's matrix at its
    ``base`` (bytes) with its stride ``ld`` (elements) and layout (``"row"``/``"col"``, or ``bool[case]``: column-major)."""
    xp = namespace(img)
    n = len(img)
    off = _bit_offsets(xp, rows, cols, _column_major(xp, layout, n), xp.asarray(ld, dtype=xp.int64), bits)
    byte = xp.asarray(base, dtype=xp.int64).reshape(-1, 1) + off // 8
    if bits < 8:
        vals = (xp.take_along_axis(img, byte, axis=1).astype(xp.uint64) >> (off % 8).astype(xp.uint64)) & xp.uint64((1 << bits) - 1)
    else:
        vals = xp.zeros(byte.shape, dtype=xp.uint64)
        for i in range(bits // 8):
            vals |= xp.take_along_axis(img, byte + i, axis=1).astype(xp.uint64) << xp.uint64(8 * i)
    return vals.reshape(n, rows, cols)


def scatter_matrices(img: Any, base: Any, vals: Any, layout: Any, ld: Any, bits: int) -> None:
    """Write ``vals`` (element bits ``[case, rows, cols]``) into byte images ``uint8[case, bytes]`` (contiguous) as
    :func:`gather_matrices` reads them, leaving other bytes alone.  Sub-byte elements go in whole bytes: one layout
    for every case, rows (columns) that fill whole bytes and start on one."""
    xp = namespace(img)
    n, rows, cols = vals.shape
    width = img.shape[1]
    base, ld = xp.asarray(base, dtype=xp.int64).reshape(-1, 1), xp.asarray(ld, dtype=xp.int64).reshape(-1, 1)
    vals = vals.astype(xp.uint64)
    if bits >= 8:
        byte = base + _bit_offsets(xp, rows, cols, _column_major(xp, layout, n), ld, bits) // 8
        parts = [((vals.reshape(n, -1) >> xp.uint64(8 * i)) & xp.uint64(0xFF)).astype(xp.uint8) for i in range(bits // 8)]
        byte = xp.stack([byte + i for i in range(bits // 8)], axis=-1).reshape(n, -1)
        vals_bytes = xp.stack(parts, axis=-1).reshape(n, -1)
    else:
        if not isinstance(layout, str):
            raise ValueError(f"{bits}-bit elements are written with one layout for every case")
        per = 8 // bits
        inner_major = vals if layout == "row" else vals.transpose(0, 2, 1)
        outer, inner = inner_major.shape[1:]
        if inner % per or bool(((ld * bits) % 8 != 0).any()):
            raise ValueError(f"{bits}-bit rows of {inner} elements at stride {ld.ravel().tolist()[:1]} do not fill whole bytes")
        shifts = xp.arange(per, dtype=xp.uint64) * xp.uint64(bits)
        vals_bytes = (inner_major.reshape(n, outer, inner // per, per) << shifts).sum(axis=-1).astype(xp.uint8).reshape(n, -1)
        o = xp.arange(outer, dtype=xp.int64)[None, :, None]
        j = xp.arange(inner // per, dtype=xp.int64)[None, None, :]
        byte = (base.reshape(-1, 1, 1) + o * (ld.reshape(-1, 1, 1) * bits // 8) + j).reshape(n, -1)
    if bool(((byte < 0) | (byte >= width)).any()):
        raise IndexError(f"a matrix element lies outside the {width}-byte image")
    flat = img.reshape(-1)
    flat[(byte + xp.arange(n, dtype=xp.int64)[:, None] * width).ravel()] = vals_bytes.ravel()


def read_matrix(img: np.ndarray, base: int, rows: int, cols: int, layout: str, ld: int, bits: int) -> np.ndarray:
    """``uint64[rows, cols]`` element bits from one byte image."""
    return gather_matrices(img[None], [base], rows, cols, layout, [ld], bits)[0]


def write_matrix(img: np.ndarray, base: int, vals: np.ndarray, layout: str, ld: int, bits: int) -> None:
    """Write ``vals`` (element bits, ``[rows, cols]``) into one byte image, leaving other bytes alone."""
    scatter_matrices(img[None], [base], vals[None], layout, [ld], bits)


def _route_layouts(xp: Any, mv: WmmaVariant, routes: tuple, route: Any) -> dict[str, Any]:
    """Per matrix: its layout, ``"row"``/``"col"`` (A, B: the mma form's) or ``bool[case]`` (C, D: the case's route)."""
    col = xp.asarray(np.array([[r[0] == "col", r[1] == "col"] for r in routes], dtype=bool))
    return {"a": mv.layout_of("a"), "b": mv.layout_of("b"), "c": col[route, 0], "d": col[route, 1]}


def _routes_of(xp: Any, hdr: Any, routes: tuple) -> Any:
    bad = (hdr[:, 0] < 0) | (hdr[:, 0] >= len(routes))
    if bool(bad.any()):
        case = int(xp.argmax(bad))
        raise ValueError(f"case {case}: route {int(hdr[case, 0])} is not one of the kernel's {len(routes)}")
    return hdr[:, 0]


def read_operands(spec: WmmaSpec, mv: WmmaVariant, routes: tuple, in_words: Any) -> dict[str, Any]:
    """A, B, C element bits ``uint64[case, 1, rows, cols]`` as the case's loads read them."""
    xp = namespace(in_words)
    hdr, img = header(in_words), as_bytes(in_words)
    lay = _route_layouts(xp, mv, routes, _routes_of(xp, hdr, routes))
    out = {}
    for k, m in enumerate("abc"):
        rows, cols = spec.dims(m, mv.shape_name)
        out[m.upper()] = gather_matrices(img, hdr[:, 5 + k], rows, cols, lay[m], hdr[:, 1 + k],
                                         TYPES[mv.type_of(m)].bits)[:, None]
    return out


def apply(spec: WmmaSpec, mv: WmmaVariant, routes: tuple, in_words: Any, out_words: int, arithmetic=None) -> Any:
    """Expected ``out`` words: D = A*B + C through the oracle (or an injected arithmetic), stored as the case says;
    on the words' array module (NumPy, or CuPy for the bulk fuzzer)."""
    xp = namespace(in_words)
    hdr = header(in_words)
    route = _routes_of(xp, hdr, routes)
    ops = read_operands(spec, mv, routes, in_words)
    d = (arithmetic or oracle_mma)(mv, ops)
    img = xp.zeros((len(in_words), 128 * out_words), dtype=xp.uint8)
    lay = _route_layouts(xp, mv, routes, route)["d"]
    scatter_matrices(img, hdr[:, 8], d[:, 0], lay, hdr[:, 4], TYPES[mv.type_of("d")].bits)
    return as_words(img, out_words)


def d_cells(spec: WmmaSpec, mv: WmmaVariant, routes: tuple, in_words: np.ndarray, out_words: np.ndarray):
    """Per case: D's element bits as stored in ``out``, and a mask of the bytes D occupies."""
    hdr, img = header(in_words), as_bytes(out_words)
    rows, cols = spec.dims("d", mv.shape_name)
    bits = TYPES[mv.type_of("d")].bits
    lay = _route_layouts(np, mv, routes, _routes_of(np, hdr, routes))["d"]
    vals = gather_matrices(img, hdr[:, 8], rows, cols, lay, hdr[:, 4], bits)
    inside = np.zeros(img.shape, dtype=np.uint8)
    scatter_matrices(inside, hdr[:, 8], np.full(vals.shape, (1 << bits) - 1, dtype=np.uint64), lay, hdr[:, 4], bits)
    return vals, img, inside != 0
