"""The NumPy emulator: executes a probe as its spec describes, for machines without a GPU.

It unpacks each case's input registers through the spec's lane maps, applies
the instruction's semantics (injected by the caller: the oracle, so that this
layer does not import a higher one), packs D back and writes the checksum the
surroundings would produce.  It checks the pipeline end to end; it proves
nothing about hardware.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from conformance.spec.model import Variant
from conformance.spec.packing import pack, unpack
from conformance.spec.targets import PtxVersion
from generators.movement import apply, is_movement
from generators.probe import buffer_layout, checksum
from generators.tcgen05_run import ROWS, decode_case, is_tcgen05, pack_d

from .base import Backend, Launch, LaunchResult

Semantics = Callable[[Variant, dict[str, np.ndarray]], np.ndarray]


class EmulatorBackend(Backend):
    name = "emulator"

    def __init__(self, semantics: Semantics, cc: tuple[int, int] = (12, 0), auto_reason: str | None = None):
        self.semantics = semantics
        self.cc = cc
        self.auto_reason = auto_reason
        self.wgmma_arithmetic = None  # generators.wgmma.apply's numerics hook (the numerics model sets it)

    def info(self) -> dict:
        out = {"backend": self.name, "gpu": "NumPy emulator", "compute_capability": f"{self.cc[0]}.{self.cc[1]}"}
        if self.auto_reason:
            out["auto"] = self.auto_reason
        return out

    def compute_capability(self) -> tuple[int, int]:
        return self.cc

    # Families whose every form is arch-specific to one GPU: the emulator stands in for that GPU.
    FAMILY_CC = {"wgmma": (9, 0)}

    def cc_for(self, v: Variant) -> tuple[int, int]:
        return self.FAMILY_CC.get(v.family, self.cc)

    def max_ptx(self) -> PtxVersion:
        return PtxVersion(9, 9)

    def run(self, module: str, launches: list[Launch]) -> list[LaunchResult]:
        return [self._run_one(launch) for launch in launches]

    def _run_one(self, launch: Launch) -> LaunchResult:
        t0 = time.perf_counter()
        p = launch.probe
        v = p.variant
        cases = launch.in_words[np.asarray(launch.order)]
        if v.family == "wgmma":
            from generators.wgmma import apply as wg_apply

            out = wg_apply(v, cases, p.params["imm"], arithmetic=self.wgmma_arithmetic)
            result = np.zeros_like(out)
            result[np.asarray(launch.order)] = out
            return LaunchResult(result, seconds=time.perf_counter() - t0)
        if is_tcgen05(v):
            out = emulate_tcgen05(v, cases, self.semantics, launch.out_words)
            result = np.zeros_like(out)
            result[np.asarray(launch.order)] = out
            return LaunchResult(result, seconds=time.perf_counter() - t0)
        if is_movement(v):
            out = apply(v, cases)
            result = np.zeros_like(out)
            result[np.asarray(launch.order)] = out
            return LaunchResult(result, seconds=time.perf_counter() - t0)
        layout = buffer_layout(v)
        bits = {}
        for name, off in layout.inputs.items():
            op = v.operands[name]
            bits[name] = unpack(op, cases[:, :, off : off + op.words], p.params.get(name))
        d_bits = self.semantics(v, bits)
        out = np.zeros((len(cases), 32, launch.out_words), dtype=np.uint32)
        d = v.operands["D"]
        out[:, :, : d.words] = pack(d, d_bits)
        out[:, :, layout.checksum_offset] = checksum(np.arange(32), p.surroundings)[None, :]
        result = np.zeros_like(out)
        result[np.asarray(launch.order)] = out
        return LaunchResult(result, seconds=time.perf_counter() - t0)


def emulate_tcgen05(v, rows: np.ndarray, semantics: Semantics, out_words: int) -> np.ndarray:
    """Rows in warp order, 4 per CTA (case): read each case through the spec, run the semantics.

    A case whose descriptors the spec cannot read (or that the model does not cover) leaves
    Tensor Memory as C: what a kernel that issued nothing would read back.
    """
    out = np.zeros((len(rows), 32, out_words), dtype=np.uint32)
    for c in range(0, len(rows), ROWS):
        view = decode_case(v, rows[c : c + ROWS])
        d = view.bits["C"]
        if view.fields is not None and "A" in view.bits and "B" in view.bits:
            d = semantics(v, {**view.bits, "fields": view.fields})
        out[c : c + ROWS] = pack_d(v, d)
    return out
