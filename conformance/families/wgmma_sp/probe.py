"""Probes for wgmma.mma_async.sp: one warpgroup (128 threads) per case, as the dense family.

Buffer contract (``[case][lane][word]``, 128 lanes per case):

* words 0-1 / 2-3: the A / B matrix descriptor (start address relative to the case's shared
  image; the kernel adds the image's shared address >> 4); word 4: scale-d;
* word 5: this lane's sp-meta register (every lane gets one: lanes the selector leaves out
  carry other legal metadata, so reading the wrong lanes shows);
* words ``c_off ..``: C in D's fragment; ``a_off ..`` (A from registers): the compressed A
  fragment; ``img_off ..``: the shared image (compressed A, then B), lane by lane.

Out: D's registers.  The immediates (imm-scale-a/b, imm-trans-a/b) and the sparsity selector
are part of the kernel: a plan has one kernel per (immediate set, selector).

:func:`apply` executes a case as the spec says: it reads the compressed A (registers or
descriptor) and B, rebuilds the dense A from the metadata the spec's lanes supply, and runs the
dense family's numerics.  The :class:`SpModel` may be perturbed (fault hypotheses).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from ptxconf.families.wgmma import probe as wg

# The dense family's buffer, word for word: the sp-meta register takes word 5 of its head (unused there), the
# compressed A takes the dense A's place; only B's region is larger (below).
from ptxconf.families.wgmma.probe import (
    A_REGION,
    HEAD_WORDS,
    LANES,
    a_off,
    b_base,
    c_off,
    d_words,
    image_of,
    img_off,
    out_words,
    put_image,
)
from ptxconf.generators.ptx import KeyedProbe
from ptxconf.generators.ptx import module_source as probe_module_source
from ptxconf.isa.packing import pack, unpack
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.sparse import Sparsity, positions
from ptxconf.isa.targets import PtxVersion, Target

from .spec import WgmmaSpVariant

META_WORD = 5


def b_region(v: WgmmaSpVariant) -> int:
    """Room for B (K x N, 64 bytes along K) in any canonical layout: K-major swizzled takes a row of
    up to 128 bytes per n; MN-major 128B at small N spans K / 8 groups of 8 rows of 128 bytes."""
    return max(v.N * 128, v.K // 8 * 1024) + 1024


def image_bytes(v: WgmmaSpVariant) -> int:
    return wg.image_bytes(v, b_region)


def in_words(v: WgmmaSpVariant) -> int:
    return wg.in_words(v, b_region)


def sparsity(v: WgmmaSpVariant) -> Sparsity:
    """The chunk geometry of ``ptxconf.isa.sparse`` for a form (increasing index pairs)."""
    return Sparsity(64, v.K, v.chunks, v.width, v.nz, ordered=True)


# --- the model the emulator and comparator execute --------------------------------------------


@dataclass(frozen=True)
class SpModel:
    """The dense model plus what a sparse form adds; perturb a field to state a fault hypothesis."""

    dense: wg.Model
    meta_layout: object | None = None  # another metadata layout (a TableLayout)
    selector_map: tuple[tuple[int, int], ...] = ()  # selector in the kernel -> lanes the hardware reads
    slots_swapped: bool = False  # the two index fields of a nibble read the other way round


def model_of(v: WgmmaSpVariant) -> SpModel:
    return SpModel(wg.model_of(v))


def _meta_layout(v: WgmmaSpVariant, model: SpModel):
    return model.meta_layout if model.meta_layout is not None else v.operands["metadata"].layout


def fields_of(v: WgmmaSpVariant, meta_words: np.ndarray, selector: int, model: SpModel | None = None) -> np.ndarray:
    """``int64[case, 64, 2 * chunks]``: the index fields the metadata lanes supply, per (row, field col).

    ``meta_words`` is ``uint32[case, lane]``; -1 where no lane supplies a field."""
    model = model or model_of(v)
    sel = dict(model.selector_map).get(selector, selector)
    lay = _meta_layout(v, model)
    m, held = lay.map({"selector": sel}), lay.held({"selector": sel})
    out = np.full((len(meta_words), lay.rows, lay.cols), -1, dtype=np.int64)
    lanes, elems = np.nonzero(held)
    rows, cols = m[lanes, elems, 1], m[lanes, elems, 2]
    vals = (meta_words[:, lanes].astype(np.int64) >> (2 * elems)) & 3
    if model.slots_swapped:
        cols = cols ^ 1
    out[:, rows, cols] = vals
    return out


def densify(v: WgmmaSpVariant, comp: np.ndarray, fields: np.ndarray) -> np.ndarray:
    """Compressed A bits ``[case, 64, K/2]`` + fields ``[case, 64, 2 * chunks]`` -> dense A ``[case, 64, K]``.

    A chunk whose fields no lane supplies reads as zeros (the comparator then names the lanes).  Float values
    (float32) densify alike, into float32."""
    sp = sparsity(v)
    kind = np.float32 if np.asarray(comp).dtype == np.float32 else np.uint64
    cases = len(comp)
    idx = fields.reshape(cases, 64, sp.chunks, 2)
    if sp.nz <= 2 and cases and idx.min() >= 0:
        pos = positions(sp, idx)
        if sp.nz == 1 or (pos[..., 0] != pos[..., 1]).all():
            # every chunk's slots at distinct positions: one scatter of every slot (a zero onto a zero changes
            # nothing)
            at = (np.arange(cases * 64 * sp.chunks) * sp.width).reshape(cases, 64, sp.chunks, 1) + pos
            dense = np.zeros(cases * 64 * v.K, dtype=kind)
            dense[at.ravel()] = np.asarray(comp, dtype=kind).ravel()
            return dense.reshape(cases, 64, v.K)
    missing = (idx < 0).any(-1)
    pos = positions(sp, np.where(idx < 0, 0, idx)) + (np.arange(sp.chunks) * sp.width)[:, None]
    dense = np.zeros(cases * 64 * v.K, dtype=kind)
    at = (np.arange(cases * 64).reshape(cases, 64, 1, 1) * v.K + pos).astype(np.int64)  # flat index of each slot
    vals = np.where(missing[..., None], kind(0), comp.reshape(cases, 64, sp.chunks, sp.nz).astype(kind))
    for s in range(sp.nz):  # slot by slot: where two slots of a chunk name one position, the later one's value stays
        hit = vals[..., s] != 0
        dense[at[..., s][hit]] = vals[..., s][hit]
    return dense.reshape(cases, 64, v.K)


def compressed_a(v: WgmmaSpVariant, words: np.ndarray, imm: dict, model: SpModel) -> np.ndarray:
    """Compressed A bits ``[case, 64, K/2]`` from the registers or through the A descriptor."""
    if v.a_src == "registers":
        aop = v.operands["A"]
        if model.dense.a_layout is not None:
            aop = replace(aop, layout=model.dense.a_layout)
        return unpack(aop, words[:, :, a_off(v) : a_off(v) + aop.words])[:, 0]
    img = image_of(v, words)
    return wg.read_matrices(model.dense, v.a_view, img, words[:, 0, 0], words[:, 0, 1], "A", imm.get("trans_a", 0))


def matrix_b(v: WgmmaSpVariant, words: np.ndarray, imm: dict, model: SpModel) -> np.ndarray:
    img = image_of(v, words)
    return wg.read_matrices(model.dense, v, img, words[:, 0, 2], words[:, 0, 3], "B", imm.get("trans_b", 0))


def numerics(v: WgmmaSpVariant, a_bits, b_bits, c_bits, scale_d: bool, imm: dict) -> np.ndarray:
    """D bits of one case, or a stack of them: the dense family's semantics (:func:`ptxconf.families.wgmma.probe.numerics`) with the
    product taken in float64: exact for every input a probe builds (integers and small-grid floats,
    |sum| < 2**53).  A stacked matmul, as the dense family's: with BLAS on one thread (the run's comparisons) it
    is about five times faster than einsum's loops at these shapes."""
    at, bt, dt = TYPES[v.atype], TYPES[v.btype], TYPES[v.dtype]
    with np.errstate(invalid="ignore", over="ignore"):
        a = _scaled(wg.decoded_float(at, a_bits), imm.get("scale_a", 1))
        b = _scaled(wg.decoded_float(bt, b_bits), imm.get("scale_b", 1))
        acc = np.matmul(a, b)
        if dt.is_float:
            if scale_d:
                acc += wg.c_values(dt, c_bits)
            return dt.encode(acc, exact=False)
    # integer products: every sum an integer, exact in float64 with C added (|sum| < 2**53)
    if scale_d:
        acc += wg.c_values(dt, c_bits)
    acc = acc.astype(np.int64)
    if v.satfinite:
        acc = np.clip(acc, -(2**31), 2**31 - 1)
    return (acc & 0xFFFFFFFF).astype(np.uint64)


def _scaled(x: np.ndarray, scale: int) -> np.ndarray:
    """``x * scale`` (imm-scale-a/b: 1 or -1), without a copy for 1 (``x * 1`` is ``x``, bit for bit)."""
    return x if scale == 1 else x * scale


def apply(v: WgmmaSpVariant, words: np.ndarray, imm: dict, model: SpModel | None = None, arithmetic=None) -> np.ndarray:
    """Expected out words ``uint32[case, 128, out_words]`` by the spec (or a perturbed model)."""
    model = model or model_of(v)
    fields = fields_of(v, words[:, :, META_WORD], int(imm.get("sel", 0)), model)
    A = densify(v, compressed_a(v, words, imm, model), fields)
    B = matrix_b(v, words, imm, model)
    dop = wg.operand_d(v, model.dense)
    C = unpack(dop, words[:, :, c_off(v) : c_off(v) + dop.words])[:, 0]
    scale = {k: val for k, val in imm.items() if k != "sel"}
    D = wg.d_of_cases(v, A, B, C, words[:, 0, 4] != 0, scale, numerics, arithmetic)
    out = np.zeros((len(words), LANES, out_words(v)), dtype=np.uint32)
    out[:, :, : dop.words] = pack(dop, D[:, None])
    return out


# --- kernels ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpProbe(KeyedProbe):
    variant: WgmmaSpVariant
    imm: tuple[tuple[str, int], ...]  # the immediates and ("sel", sparsity selector)
    # Runs inputs the ISA leaves undefined: a kernel of its own (the same code), so a launch that faults on
    # them holds no case of another check.
    undefined: bool = False

    def key(self) -> str:
        return f"{self.variant.id}|{self.imm}" + ("|undefined" if self.undefined else "")

    @property
    def params(self) -> dict:
        return {"imm": dict(self.imm)}

    def instruction_text(self, d: str, a: str, b: str, e: str, p: str) -> str:
        imm = dict(self.imm)
        return wg.instruction_with_immediates(self.variant, imm, [d, a, b, e, str(imm.get("sel", 0)), p])

    def source(self) -> str:
        return kernel_source(self)


def kernel_source(p: SpProbe) -> str:
    """The dense kernel, with the sp-meta register (word ``META_WORD`` of the case's lane) and the selector."""
    v = p.variant
    return wg.kernel_text(p, in_words(v), image_bytes(v), lambda d, a: p.instruction_text(d, a, "%q7", "%e", "%p1"),
                          extra_regs=["    .reg .b32 %e;"], extra_loads=[f"    ld.global.b32 %e, [%q2+{META_WORD * 4}];"])


def module_source(probes: list[SpProbe], version: PtxVersion, target: Target) -> str:
    return probe_module_source(probes, version, target, kernel_source)


__all__ = ["SpModel", "SpProbe", "apply", "numerics", "model_of", "fields_of", "densify", "module_source",
           "in_words", "out_words", "image_bytes", "b_region", "LANES", "HEAD_WORDS", "META_WORD", "A_REGION", "d_words",
           "c_off", "a_off", "b_base", "img_off", "image_of", "put_image", "sparsity"]
