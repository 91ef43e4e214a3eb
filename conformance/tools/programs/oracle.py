"""What a whole program must write, from the matrices behind its inputs: no registers, no ops.

Each step is computed on matrices with the project's oracle (:func:`ptxconf.oracle.mma`; wgmma's
:func:`ptxconf.families.wgmma.probe.numerics`), step after step as the program chains them, and the
results are packed into output words through the spec's lane maps.  Only what is per lane by nature
goes through the lane maps on the way in (which lanes the predicated xor touches).  Every output word
is defined: padding words stay zero, as the backends leave them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import ptxconf.families.wgmma as wg
from ptxconf.isa.model import Variant
from ptxconf.isa.packing import pack, unpack
from ptxconf.oracle import mma as oracle_mma

from . import ops as o
from .inputs import Inputs, put_tile
from .model import LoopStep, MmaStep, PipelineStep, WgmmaStep, variant

__all__ = ["expected", "mma_chain"]


def mma_chain(vs: list[Variant], c: np.ndarray, operands: list[dict[str, np.ndarray]],
              semantics: Callable = oracle_mma) -> list[np.ndarray]:
    """D of every mma in a chain: ``D_j = A_j B_j + D_{j-1}``, ``D_{-1} = C`` (bits ``[n, matrix, row, col]``)."""
    out, acc = [], c
    for v, ins in zip(vs, operands):
        acc = semantics(v, {**ins, "C": acc})
        out.append(acc)
    return out


class _Expect:
    def __init__(self, k: o.Kernel, inputs: Inputs, semantics: Callable, arithmetic: Callable | None):
        self.k = k
        self.v = inputs.values
        self.cases = inputs.cases
        self.out = np.zeros((self.cases, k.lanes, k.out_words), dtype=np.uint32)
        self.semantics = semantics
        self.arithmetic = arithmetic or wg.numerics

    def put(self, lay: o.StepLayout, name: str, words: np.ndarray) -> None:
        w = words.reshape(self.cases, self.k.lanes, -1)
        at = lay.outputs[name]
        self.out[:, :, at : at + w.shape[-1]] = w

    def put_d(self, lay: o.StepLayout, name: str, v: Variant, bits: np.ndarray) -> None:
        self.put(lay, name, pack(v.operands["D"], bits, o.params_of(v).get("D")))

    def ins(self, i: int, v: Variant, suffix: str) -> dict[str, np.ndarray]:
        return {name: self.v[(i, name + suffix)] for name in v.inputs if name != "C"}

    def warp_of(self) -> np.ndarray:
        """The warp of each warp-level matrix ``[case * warps]``."""
        return np.tile(np.arange(self.k.warps), self.cases)

    def step_mma(self, lay: o.StepLayout, s: MmaStep) -> None:
        i = lay.index
        vs = [variant(f) for f in s.chain]
        c = self.v[(i, "C")]
        if s.predicated:  # the lanes the xor touches hold the elements whose top bit flips
            cop = vs[0].operands["C"]
            params = o.params_of(vs[0]).get("C")
            words = pack(cop, c, params).reshape(self.cases, self.k.lanes, -1)
            flip = o.lane_predicate(np.arange(self.k.lanes))[None, :, None]
            mask = np.uint32(o.top_bits(cop) & 0xFFFFFFFF)
            if cop.fragment.words_per_register == 2:  # 64-bit registers: the top bits sit in the high word
                mask = np.array([0, o.top_bits(cop) >> 32] * (words.shape[-1] // 2), dtype=np.uint32)
            words = np.where(flip, words ^ mask, words)
            c = unpack(cop, words.reshape(-1, 32, words.shape[-1]), params)
        ds = mma_chain(vs, c, [self.ins(i, v, str(j)) for j, v in enumerate(vs)], self.semantics)
        if s.predicated:
            mask = self.v[(i, "mask")]
            taken = ((np.repeat(mask, self.k.warps) >> self.warp_of()) & 1) != 0
            ds[-1] = np.where(taken[:, None, None, None], ds[-1], c)
        elif s.keep:
            for j, (v, d) in enumerate(zip(vs[:-1], ds[:-1])):
                self.put_d(lay, f"D{j}", v, d)
        self.put_d(lay, "D", vs[-1], ds[-1])

    def step_loop(self, lay: o.StepLayout, s: LoopStep) -> None:
        i, v = lay.index, variant(s.variant)
        trips = np.repeat(np.maximum(self.v[(i, "count")], 1), self.k.warps)
        acc = self.v[(i, "C")]
        for it in range(s.trips):
            new = self.semantics(v, {**self.ins(i, v, f"@{it}"), "C": acc})
            acc = np.where((trips > it)[:, None, None, None], new, acc)
        self.put_d(lay, "D", v, acc)

    def step_wgmma(self, lay: o.StepLayout, s: WgmmaStep) -> None:
        i, v = lay.index, variant(s.form)
        imm = dict(s.imm)
        acc = self.v[(i, "C")]
        scale = self.v[(i, "scale")]
        for j in range(s.chain):
            a, b = self.v[(i, f"A{j}")], self.v[(i, f"B{j}")]
            acc = np.stack([self.arithmetic(v, a[c], b[c], acc[c], bool(scale[c]) or j > 0, imm) for c in range(self.cases)])
        self.put(lay, "D", pack(v.operands["D"], acc[:, None]))
        if s.after_issue:
            self.put(lay, "late", self.v[(i, "late")])

    def step_pipeline(self, lay: o.StepLayout, s: PipelineStep) -> None:
        i, v = lay.index, variant(s.variant)
        d = self.semantics(v, {"A": self.v[(i, "A")], "B": self.v[(i, "B")], "C": self.v[(i, "C")]})
        if not s.stmatrix:
            self.put_d(lay, "D", v, d)
            return
        img = self.v[(i, "image")].copy()
        put_tile(img, lay.tiles["D"], d[:, 0], v.operands["D"].fragment.container_bits // 8)
        self.put(lay, "image", img.view("<u4"))

    def filler(self, lay: o.StepLayout) -> None:
        if "filler" in lay.outputs:
            x = self.v[(-1, "filler")].astype(np.uint64)
            lane = np.arange(self.k.lanes, dtype=np.uint64)[None, :, None]
            self.put(lay, "filler", ((x * np.uint64(o.GOLDEN) + lane) & np.uint64(0xFFFFFFFF)).astype(np.uint32))


_STEPS = {MmaStep: _Expect.step_mma, LoopStep: _Expect.step_loop, WgmmaStep: _Expect.step_wgmma,
          PipelineStep: _Expect.step_pipeline}


def expected(k: o.Kernel, inputs: Inputs, semantics: Callable = oracle_mma, arithmetic: Callable | None = None) -> np.ndarray:
    """The out words ``uint32[case, lane, out_words]`` the program must write for ``inputs``."""
    e = _Expect(k, inputs, semantics, arithmetic)
    for lay in k.layouts:
        if lay.step is None:
            e.filler(lay)
        else:
            _STEPS[type(lay.step)](e, lay, lay.step)
    return e.out
