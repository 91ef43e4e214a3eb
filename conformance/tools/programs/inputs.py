"""A program's inputs: seeded matrices for every operand, packed into the input rows through the specs.

Floating-point values are small integers, bounded so that every partial sum of a whole chain (or
loop, or wgmma chain) is an integer the accumulator and D's type hold exactly: the hardware's order
of summation then cannot change a result, and the check is bit-exact.  C is never zero (a -0 from the
predicated xor would make the sign of an all-zero sum the hardware's choice).  Integer operands take
their whole range; s32 accumulators wrap or saturate as the form says.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import ptxconf.families.movement as mv
import ptxconf.families.wgmma as wg
from ptxconf.isa.model import Operand, Variant
from ptxconf.isa.packing import pack
from ptxconf.isa.ptxtypes import TYPES, PtxType
from ptxconf.isa.sparse import compress

from . import ops as o
from .model import LoopStep, MmaStep, PipelineStep, WgmmaStep, variant

__all__ = ["Inputs", "make_inputs", "put_tile"]

# Largest |value| an accumulation (C and D types) may reach and stay exact: integers of 11 significant bits
# in f16, 12 in f32 (the accumulator keeps at least that many below the largest term), more in f64.
_BOUND = {"f16": 1024, "f32": 4096, "f64": 1 << 20}


@dataclass
class Inputs:
    """The input rows and the values behind them (what the oracle reads)."""

    words: np.ndarray  # uint32[case, lane, in_words]
    values: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)  # (step, name) -> bits or per-case words

    @property
    def cases(self) -> int:
        return len(self.words)


def _magnitudes(terms: int, c_type: PtxType, d_type: PtxType) -> tuple[int, int]:
    """(largest |A|, |B| element, largest |C| element) keeping ``terms`` products plus C exact."""
    bound = min(_BOUND.get(c_type.name, 1 << 30), _BOUND.get(d_type.name, 1 << 30))
    vmax = 2 if 4 * terms <= bound // 2 else 1
    return vmax, max(1, min(bound - terms * vmax * vmax, bound // 2))


def _draw(rng: np.random.Generator, t: PtxType, shape, vmax: int) -> np.ndarray:
    if t.kind == "float":
        return t.encode(rng.integers(-vmax, vmax + 1, size=shape).astype(np.float64))
    if t.kind == "bits":
        return rng.integers(0, 2, size=shape).astype(np.uint64)
    lo, hi = t.int_range()
    return t.encode(rng.integers(lo, hi + 1, size=shape))


def _draw_c(rng: np.random.Generator, t: PtxType, shape, cmax: int) -> np.ndarray:
    if t.kind == "float":
        mag = rng.integers(1, cmax + 1, size=shape)
        return t.encode((mag * rng.choice([-1, 1], size=shape)).astype(np.float64))
    if t.bits == 32:  # s32 accumulators: anywhere, so sums wrap or saturate
        return t.encode(rng.integers(-(2**31), 2**31, size=shape))
    lo, hi = t.int_range()
    return t.encode(rng.integers(lo, hi + 1, size=shape))


def _tile(op: Operand, n: int) -> tuple[int, int, int, int]:
    return (n, op.layout.matrices, op.layout.rows, op.layout.cols)


class _Builder:
    def __init__(self, k: o.Kernel, seed: int, cases: int):
        self.k = k
        digest = hashlib.sha256(k.program.to_json().encode()).digest()
        self.rng = np.random.default_rng([seed, *digest[:8]])
        self.cases = cases
        self.n = cases * k.warps  # warp-level operands: one matrix per warp of each case
        self.words = np.zeros((cases, k.lanes, k.in_words), dtype=np.uint32)
        self.values: dict[tuple[int, str], np.ndarray] = {}

    def put(self, word: int, w: np.ndarray) -> None:
        """Words ``[case or case * warps, lanes of the op, count]`` at ``word`` of every lane's row."""
        w = w.reshape(self.cases, self.k.lanes, -1)
        self.words[:, :, word : word + w.shape[-1]] = w

    def per_case(self, key: tuple[int, str], word: int, vals: np.ndarray) -> None:
        self.values[key] = vals
        self.words[:, :, word] = vals[:, None].astype(np.uint32)

    def operands(self, i: int, v: Variant, lay: o.StepLayout, suffix: str, vmax: int, slot: str | None = None,
                 shift: int = 0) -> None:
        """Every input of ``v`` but C, kept as ``(i, name + suffix)``, at the layout's word of ``name + slot`` plus ``shift``."""
        slot = suffix if slot is None else slot
        params = o.params_of(v)
        if "metadata" in v.operands:  # random legal index patterns (compress of an all-zero A draws them)
            sp_a = np.zeros((self.n, 1, v.shape[0], v.shape[2]), dtype=np.uint64)
            _, meta = compress(v, sp_a, self.rng)
            self.values[(i, "metadata" + suffix)] = meta
        for name in v.inputs:
            if name == "C":
                continue
            op = v.operands[name]
            if name != "metadata":
                self.values[(i, name + suffix)] = _draw(self.rng, op.type, _tile(op, self.n), vmax)
            self.put(lay.inputs[name + slot] + shift,
                     pack(op, self.values[(i, name + suffix)], params.get(name)))

    def c(self, i: int, v: Variant, lay: o.StepLayout, cmax: int) -> None:
        op = v.operands["C"]
        self.values[(i, "C")] = _draw_c(self.rng, op.type, _tile(op, self.n), cmax)
        self.put(lay.inputs["C"], pack(op, self.values[(i, "C")], o.params_of(v).get("C")))

    def step_mma(self, lay: o.StepLayout, s: MmaStep) -> None:
        vs = [variant(f) for f in s.chain]
        vmax, cmax = _magnitudes(sum(v.shape[2] for v in vs), vs[0].operands["C"].type, vs[-1].operands["D"].type)
        self.c(lay.index, vs[0], lay, cmax)
        for j, v in enumerate(vs):
            self.operands(lay.index, v, lay, str(j), vmax)
        if s.predicated:
            self.per_case((lay.index, "mask"), lay.inputs["mask"], self.rng.integers(0, 1 << self.k.warps, size=self.cases))

    def step_loop(self, lay: o.StepLayout, s: LoopStep) -> None:
        v = variant(s.variant)
        vmax, cmax = _magnitudes(s.trips * v.shape[2], v.operands["C"].type, v.operands["D"].type)
        self.c(lay.index, v, lay, cmax)
        for it in range(s.trips):
            self.operands(lay.index, v, lay, f"@{it}", vmax, "", it * lay.stride)
        self.per_case((lay.index, "count"), lay.inputs["count"], self.rng.integers(1, s.trips + 1, size=self.cases))

    def step_wgmma(self, lay: o.StepLayout, s: WgmmaStep) -> None:
        v = variant(s.form)
        model = wg.model_of(v)
        imm = dict(s.imm)
        at, bt, dt = TYPES[v.atype], TYPES[v.btype], TYPES[v.dtype]
        vmax, cmax = _magnitudes(s.chain * v.K, dt, dt)
        img = self.rng.integers(0, 256, size=(self.cases, lay.image_bytes), dtype=np.uint8)
        for j in range(s.chain):
            a = _draw(self.rng, at, (self.cases, 64, v.K), vmax)
            b = _draw(self.rng, bt, (self.cases, v.K, v.N), vmax)
            self.values[(lay.index, f"A{j}")], self.values[(lay.index, f"B{j}")] = a, b
            if v.a_src == "registers":
                self.put(lay.inputs[f"A{j}"], pack(v.operands["A"], a[:, None]))
            for case in range(self.cases):
                if v.a_src == "shared":
                    wg.fill(v, img[case], lay.descs[f"A{j}"], "A", imm.get("trans_a", 0), a[case], model.smem)
                wg.fill(v, img[case], lay.descs[f"B{j}"], "B", imm.get("trans_b", 0), b[case], model.smem)
        self.put(lay.inputs["image"], img.view("<u4"))
        dop = v.operands["D"]
        self.values[(lay.index, "C")] = _draw_c(self.rng, dt, (self.cases, 64, v.N), cmax)
        self.put(lay.inputs["C"], pack(dop, self.values[(lay.index, "C")][:, None]))
        self.per_case((lay.index, "scale"), lay.inputs["scale"], self.rng.integers(0, 2, size=self.cases))
        if s.after_issue:
            late = self.rng.integers(0, 2**32, size=(self.cases, self.k.lanes, s.after_issue), dtype=np.uint64)
            self.values[(lay.index, "late")] = late.astype(np.uint32)
            self.put(lay.inputs["late"], late.astype(np.uint32))

    def step_pipeline(self, lay: o.StepLayout, s: PipelineStep) -> None:
        v = variant(s.variant)
        vmax, cmax = _magnitudes(v.shape[2], v.operands["C"].type, v.operands["D"].type)
        self.c(lay.index, v, lay, cmax)
        img = self.rng.integers(0, 256, size=(self.n, mv.IMAGE_BYTES), dtype=np.uint8)
        for name in ("A", "B"):
            op = v.operands[name]
            bits = _draw(self.rng, op.type, _tile(op, self.n), vmax)
            self.values[(lay.index, name)] = bits
            put_tile(img, lay.tiles[name], bits[:, 0], op.fragment.container_bits // 8)
        self.values[(lay.index, "image")] = img.copy()
        self.put(lay.inputs["image"], img.view("<u4"))
        for name, comp in lay.compositions.items():
            off, ld, tile = lay.tiles[name]
            eb = v.operands[name].fragment.container_bits // 8
            addr = np.full(32, off, dtype=np.uint32)
            for lane, (row, col) in comp.lanes.items():
                addr[lane] = off + (row * ld + col if tile == "row-major" else col * ld + row) * eb
            self.words[:, :, lay.inputs[f"addr.{name}"]] = np.tile(addr, self.k.warps)[None, :]

    def filler(self, lay: o.StepLayout) -> None:
        if "filler" in lay.inputs:
            x = self.rng.integers(0, 2**32, size=(self.cases, self.k.lanes, self.k.program.pressure), dtype=np.uint64)
            self.values[(-1, "filler")] = x.astype(np.uint32)
            self.put(lay.inputs["filler"], x.astype(np.uint32))


def put_tile(img: np.ndarray, where: tuple[int, int, str], bits: np.ndarray, eb: int) -> None:
    """Matrices ``bits[n, rows, cols]`` into images ``uint8[n, bytes]`` as a tile at ``(offset, ld, tile)``."""
    off, ld, tile = where
    rows, cols = bits.shape[1:]
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    at = off + (r * ld + c if tile == "row-major" else c * ld + r) * eb
    for byte in range(eb):
        img[:, (at + byte).ravel()] = ((bits.reshape(len(bits), -1) >> np.uint64(8 * byte)) & np.uint64(0xFF)).astype(np.uint8)


_STEPS = {MmaStep: _Builder.step_mma, LoopStep: _Builder.step_loop, WgmmaStep: _Builder.step_wgmma,
          PipelineStep: _Builder.step_pipeline}


def make_inputs(k: o.Kernel, seed: int, cases: int = 4) -> Inputs:
    """The input rows of ``cases`` cases of the lowered program ``k``: a function of (program, seed) alone."""
    b = _Builder(k, seed, cases)
    for lay in k.layouts:
        if lay.step is None:
            b.filler(lay)
        else:
            _STEPS[type(lay.step)](b, lay, lay.step)
    return Inputs(b.words, b.values)
