"""Structured sparsity of ``mma.sp``: the geometry of a variant's chunks, and dense <-> compressed A.

A sparse variant's A operand holds the compressed ``M x K/2`` tile; its
``metadata`` operand holds 2-bit index fields in an ``M x F`` tile (field col
``2 * chunk + slot``).  Everything here derives from the shapes in the spec:

* ``chunks = F / 2`` chunks per row, each ``width = K / chunks`` dense elements
  wide holding ``nz = (K/2) / chunks`` stored elements;
* ``nz == 2`` (2:4): stored slot ``s`` sits at dense position ``idx[s]``;
* ``nz == 1`` (``.tf32`` 1:2): the two fields ``(idx0, idx1)`` are ``(0, 1)``
  (position 0) or ``(2, 3)`` (position 1), i.e. position ``idx0 // 2``;
* ``nz == 4`` (``.u4``/``.s4`` 4:8 in pairs): slot ``s`` sits at
  ``2 * idx[s // 2] + s % 2``.

``mma.sp`` takes any two distinct indices, in either order;
``mma.sp::ordered_metadata`` only increasing ones (slot 0 the lower).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

import numpy as np

from .arrays import namespace
from .model import Variant

__all__ = ["Sparsity", "sparsity", "is_sparse", "densify", "compress", "positions", "dense_ranges"]


@dataclass(frozen=True)
class Sparsity:
    m: int
    k: int
    chunks: int  # per row
    width: int  # dense elements per chunk
    nz: int  # stored elements per chunk
    ordered: bool

    @property
    def patterns(self) -> tuple[tuple[int, int], ...]:
        """Legal (field 0, field 1) index pairs of one chunk."""
        if self.nz == 1:
            return ((0, 1), (2, 3))
        pairs = itertools.permutations(range(4), 2)
        return tuple(p for p in pairs if not self.ordered or p[0] < p[1])


def is_sparse(v: Variant) -> bool:
    return "metadata" in v.operands


def sparsity(v: Variant) -> Sparsity:
    m, _, k = v.shape
    fields = v.operands["metadata"].layout.cols
    chunks = fields // 2
    return Sparsity(m, k, chunks, k // chunks, (k // 2) // chunks, v.instruction.sparse == "ordered")


def dense_ranges(v: Variant) -> np.ndarray:
    """``int64[lane, element, 2]``: the dense columns ``[first, last]`` where each stored A element may lie.

    Stored (compressed) column ``c`` belongs to chunk ``c // nz``, dense columns
    ``[chunk * width, chunk * width + width - 1]``; the metadata picks the exact
    one.  The ISA states the range per register ("four non-zero .u8 elements out
    of 8 consecutive elements": ``col = [firstcol ... lastcol]``), so each
    element's range is the span of the chunks its register holds in its row.
    -1 where the A layout holds nothing.
    """
    sp = sparsity(v)
    a = v.operands["A"]
    amap = a.layout.default_map  # (matrix, row, compressed col)
    held = amap[..., 2] >= 0
    first = np.where(held, (amap[..., 2] // sp.nz) * sp.width, -1)
    last = np.where(held, first + sp.width - 1, -1)
    out = np.stack([first, last], axis=-1)
    per = a.fragment.per_register
    for r0 in range(0, amap.shape[1], per):
        reg = slice(r0, r0 + per)
        rows = amap[:, reg, 1]
        for lane in range(amap.shape[0]):
            for row in set(rows[lane].tolist()) - {-1}:
                same = np.nonzero(rows[lane] == row)[0] + r0
                out[lane, same, 0] = first[lane, same].min()
                out[lane, same, 1] = last[lane, same].max()
    return out


def positions(sp: Sparsity, idx: np.ndarray) -> np.ndarray:
    """``idx[..., chunk, 2]`` index fields -> ``int64[..., chunk, nz]`` dense positions within the chunk."""
    xp = namespace(idx)
    idx = idx.astype(xp.int64) if xp is not np else np.asarray(idx, dtype=np.int64)
    if sp.nz == 1:
        return idx[..., :1] // 2
    if sp.nz == 2:
        return idx
    slot = np.arange(4)
    return 2 * idx[..., xp.asarray(slot // 2)] + xp.asarray(slot % 2)


def densify(v: Variant, a_bits: np.ndarray, meta_bits: np.ndarray) -> np.ndarray:
    """Compressed A ``[case, 1, M, K/2]`` + fields ``[case, 1, M, F]`` -> dense A ``[case, 1, M, K]`` (container bits)."""
    sp = sparsity(v)
    cases = a_bits.shape[0]
    xp = namespace(a_bits)
    idx = meta_bits.astype(xp.int64).reshape(cases, 1, sp.m, sp.chunks, 2)
    pos = positions(sp, idx)  # [case, 1, M, chunk, nz]
    cols = pos + (xp.arange(sp.chunks) * sp.width)[:, None]
    dense = xp.zeros((cases, 1, sp.m, sp.k), dtype=xp.uint64)
    vals = a_bits.astype(xp.uint64).reshape(cases, 1, sp.m, sp.chunks, sp.nz)
    c, q, r = xp.meshgrid(xp.arange(cases), xp.arange(1), xp.arange(sp.m), indexing="ij")
    for ch in range(sp.chunks):
        for s in range(sp.nz):
            # later slots win where two slots name one position (illegal metadata only)
            dense[c, q, r, cols[..., ch, s]] = vals[..., ch, s]
    return dense


def compress(
    v: Variant, dense_bits: np.ndarray, rng: np.random.Generator, fixed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Dense A ``[case, 1, M, K]`` -> (compressed A, metadata fields), with random legal patterns.

    Each chunk gets a random legal pattern whose positions cover the chunk's
    non-zero elements (raises if a chunk has too many).  ``fixed`` (int
    ``[M, chunks]`` indices into :attr:`Sparsity.patterns`, or -1) pins patterns.
    """
    sp = sparsity(v)
    dense = np.asarray(dense_bits, dtype=np.uint64)
    cases = dense.shape[0]
    pats, cover = _covers(sp)
    shape = (cases, 1, sp.m, sp.chunks, len(pats))
    if dense.any():
        # each chunk's non-zero positions as a bit mask, against each pattern's positions
        held = np.packbits((dense != 0).reshape(*shape[:-1], sp.width), axis=-1, bitorder="little")[..., 0]
        ok = (held[..., None] & ~cover) == 0  # [case, 1, M, chunk, P]
        if not np.all(ok.any(-1)):
            raise ValueError(f"{v.id}: a chunk of A has more non-zeros than the sparsity allows")
        score = rng.random(shape) + ok * 2.0
    else:  # every pattern covers an all-zero chunk: the same scores, no pass over the masks
        score = rng.random(shape)
        score += 2.0
        ok = None
    if fixed is not None:
        ok = np.ones(shape, dtype=bool) if ok is None else ok
        pin = (fixed[None, None, :, :, None] == np.arange(len(pats))) & (fixed[None, None, :, :, None] >= 0)
        score = score + pin * ok * 4.0
    choice = np.argmax(score, axis=-1)  # [case, 1, M, chunk]
    idx = pats[choice]  # [case, 1, M, chunk, 2]
    if ok is None:
        comp = np.zeros((cases, 1, sp.m, sp.chunks * sp.nz), dtype=np.uint64)
    else:
        pos = positions(sp, idx) + (np.arange(sp.chunks) * sp.width)[:, None]
        comp = np.take_along_axis(dense, pos.reshape(cases, 1, sp.m, sp.chunks * sp.nz), axis=-1)
    return comp, idx.reshape(cases, 1, sp.m, sp.chunks * 2).astype(np.uint64)


@cache
def _covers(sp: Sparsity) -> tuple[np.ndarray, np.ndarray]:
    """(the legal patterns ``int64[P, 2]``, the dense positions each covers as a bit mask ``uint8[P]``), once per
    chunk geometry."""
    pats = np.array(sp.patterns, dtype=np.int64)
    cover = np.zeros(len(pats), dtype=np.uint8)
    for p, pat in enumerate(pats):
        for q in positions(sp, pat[None, :])[0].tolist():
            cover[p] |= 1 << q
    return pats, cover
