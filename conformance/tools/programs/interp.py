"""The emulated path: run a lowered program's ops in NumPy, register by register, as the specs say.

Each op acts on per-lane registers (``uint64[case, lane, register]``) exactly as its PTX does: matrix
ops go through the spec's lane maps (:mod:`ptxconf.isa.packing`), ldmatrix/stmatrix through the
movement family's semantics, wgmma through the wgmma family's descriptor decoding and shared-memory
reads, and the arithmetic through the injected semantics (the oracle's, unless a caller injects
another).  So the interpreter checks the emitted program's dataflow against the oracle, which never
looks at registers.

It also checks that a program is legal where the ISA makes it the program's duty: nothing writes or
reads a wgmma's A or D registers between its issue and the ``wgmma.wait_group`` that covers it, and a
loop count and a warp predicate are uniform where ``.aligned`` needs them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import ptxconf.families.movement as mv
import ptxconf.families.wgmma as wg
from ptxconf.backends.base import Launch, LaunchResult
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.isa.packing import lane_words_to_registers, pack, registers_to_words, unpack
from ptxconf.oracle import mma as oracle_mma

from . import ops as o
from .model import variant

__all__ = ["IllegalProgram", "interpret", "ProgramEmulator"]


class IllegalProgram(RuntimeError):
    """The program breaks a rule the ISA leaves to the program (its result is undefined)."""


class _Machine:
    def __init__(self, k: o.Kernel, inw: np.ndarray, semantics: Callable, arithmetic: Callable | None):
        self.k = k
        self.inw = np.asarray(inw, dtype=np.uint32)
        self.cases = len(self.inw)
        self.out = np.zeros((self.cases, k.lanes, k.out_words), dtype=np.uint32)
        self.lane = np.arange(k.lanes, dtype=np.uint64)
        self.regs: dict[str, np.ndarray] = {}
        self.preds: dict[str, np.ndarray] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.semantics = semantics
        self.arithmetic = arithmetic or wg.numerics
        self.offset = 0  # iterated loads: the loop iteration's word offset
        self.open: list[o.Wgmma] = []  # issued, not committed
        self.groups: list[list[o.Wgmma]] = []  # committed, not waited for
        self.busy: dict[str, o.Wgmma] = {}  # registers an issued wgmma may still read or write

    # --- registers ---------------------------------------------------------------------------

    def touch(self, f: o.Frag, by: str) -> None:
        w = self.busy.get(f.name)
        if w is not None:
            raise IllegalProgram(f"{by} touches {f.name}* while the wgmma that uses them ({w.form}) is in flight")

    def get(self, f: o.Frag, by: str) -> np.ndarray:
        self.touch(f, by)
        return self.regs[f.name]

    def put(self, f: o.Frag, regs: np.ndarray, by: str) -> None:
        self.touch(f, by)
        self.regs[f.name] = regs

    def warp_words(self, op, f: o.Frag, regs: np.ndarray) -> np.ndarray:
        """Registers ``[case, lane, r]`` as the words of ``op`` per warp: ``[case * warps, 32, words]``."""
        return registers_to_words(op, regs.reshape(-1, 32, f.count))

    def from_warp_words(self, op, words: np.ndarray) -> np.ndarray:
        return lane_words_to_registers(op, words).reshape(self.cases, self.k.lanes, -1)

    # --- ops ---------------------------------------------------------------------------------

    def run(self, ops) -> None:
        for op in ops:
            getattr(self, "op_" + type(op).__name__)(op)

    def op_Load(self, op: o.Load) -> None:
        at = op.word + (self.offset if op.iterated else 0)
        w = self.inw[:, :, at : at + op.dst.words].astype(np.uint64)
        if op.dst.wide:
            w = w[..., 0::2] | (w[..., 1::2] << np.uint64(32))
        self.put(op.dst, w, "a load")

    def op_Mix(self, op: o.Mix) -> None:
        x = self.get(op.frag, "the filler")
        self.put(op.frag, (x * np.uint64(o.GOLDEN) + self.lane[None, :, None]) & np.uint64(0xFFFFFFFF), "the filler")

    def op_LanePred(self, op: o.LanePred) -> None:
        self.preds[op.pred] = np.broadcast_to(o.lane_predicate(self.lane.astype(np.int64)), (self.cases, self.k.lanes))

    def op_WarpPred(self, op: o.WarpPred) -> None:
        mask = self.inw[:, :, op.word].astype(np.int64)
        p = ((mask >> (np.arange(self.k.lanes) >> 5)) & 1) != 0
        per_warp = p.reshape(self.cases, -1, 32)
        if not (per_warp == per_warp[:, :, :1]).all():
            raise IllegalProgram("an mma's predicate differs within a warp (.aligned needs it uniform)")
        self.preds[op.pred] = p

    def op_ScalePred(self, op: o.ScalePred) -> None:
        if op.word is None:
            self.preds[op.pred] = np.ones((self.cases, self.k.lanes), dtype=bool)
        else:
            self.preds[op.pred] = self.inw[:, :, op.word] != 0

    def op_XorIf(self, op: o.XorIf) -> None:
        x = self.get(op.frag, "a predicated xor")
        self.put(op.frag, np.where(self.preds[op.pred][..., None], x ^ np.uint64(op.pattern), x), "a predicated xor")

    def op_Mma(self, op: o.Mma) -> None:
        v = variant(op.form)
        params = o.params_of(v)
        bits = {}
        for name, f in op.operands:
            spec_op = v.operands[name]
            bits[name] = unpack(spec_op, self.warp_words(spec_op, f, self.get(f, op.form)), params.get(name))
        dop = v.operands["D"]
        new = self.from_warp_words(dop, pack(dop, self.semantics(v, bits), params.get("D")))
        if op.guard is not None:
            old = self.regs.get(op.d.name, np.zeros_like(new))
            new = np.where(self.preds[op.guard][..., None], new, old)
        self.put(op.d, new, op.form)

    def op_Loop(self, op: o.Loop) -> None:
        counts = self.inw[:, :, op.word].astype(np.int64)
        if not (counts == counts[:, :1]).all():
            raise IllegalProgram("a loop's trip count differs within a case (its branch must be uniform)")
        trips = np.maximum(counts[:, 0], 1)  # the body runs before the first test
        for i in range(int(trips.max())):
            before = {name: r.copy() for name, r in self.regs.items()}
            self.offset = i * op.stride
            self.run(op.body)
            live = trips > i
            for name, r in self.regs.items():
                if name in before:
                    self.regs[name] = np.where(live[:, None, None], r, before[name])
        self.offset = 0

    def op_Stage(self, op: o.Stage) -> None:
        w = np.ascontiguousarray(self.inw[:, :, op.word : op.word + op.per_lane], dtype="<u4")
        self.arrays[op.array] = w.reshape(self.cases, -1).view(np.uint8).copy()

    def op_WgFence(self, op: o.WgFence) -> None:
        pass

    def op_WgCommit(self, op: o.WgCommit) -> None:
        if self.open:
            self.groups.append(self.open)
        self.open = []

    def op_WgWait(self, op: o.WgWait) -> None:
        while len(self.groups) > op.n:
            for w in self.groups.pop(0):
                self.complete(w)

    def op_Wgmma(self, op: o.Wgmma) -> None:
        for f in (op.d, op.a):
            if f is None:
                continue
            other = self.busy.get(f.name)
            if other is not None and not (f is op.d and other.d == op.d and other.form == op.form):
                raise IllegalProgram(f"{op.form} reuses {f.name}* of a wgmma still in flight ({other.form})")
        self.open.append(op)
        for f in (op.d, op.a):
            if f is not None:
                self.busy[f.name] = op

    def complete(self, op: o.Wgmma) -> None:
        """The wgmma's result, computed when a wait_group covers it (what it read must not have changed)."""
        v = variant(op.form)
        model = wg.model_of(v)
        imm = dict(op.imm)
        img = self.arrays[op.array]
        dop = v.operands["D"]
        c = unpack(dop, registers_to_words(dop, self.regs[op.d.name]))[:, 0]
        a = np.zeros((self.cases, 64, v.K), dtype=np.uint64)
        b = np.zeros((self.cases, v.K, v.N), dtype=np.uint64)
        if op.a is not None:
            aop = v.operands["A"]
            a[:] = unpack(aop, registers_to_words(aop, self.regs[op.a.name]))[:, 0]
        for case in range(self.cases):
            if op.a is None:
                desc = wg.decode_words(model, op.a_desc & 0xFFFFFFFF, op.a_desc >> 32)
                a[case] = wg.read_matrix(model, v, img[case], desc, "A", imm.get("trans_a", 0))
            desc = wg.decode_words(model, op.b_desc & 0xFFFFFFFF, op.b_desc >> 32)
            b[case] = wg.read_matrix(model, v, img[case], desc, "B", imm.get("trans_b", 0))
        scale = self.preds[op.scale][:, 0]
        d = np.stack([self.arithmetic(v, a[i], b[i], c[i], bool(scale[i]), imm) for i in range(self.cases)])
        self.regs[op.d.name] = lane_words_to_registers(dop, pack(dop, d[:, None]))
        for f in (op.d, op.a):
            if f is not None and self.busy.get(f.name) is op:
                del self.busy[f.name]

    def warp_images(self, array: str) -> np.ndarray:
        return self.arrays[array].reshape(-1, mv.IMAGE_BYTES)

    def op_Ldmatrix(self, op: o.Ldmatrix) -> None:
        form = variant(op.form)
        words = np.zeros((self.cases * self.k.warps, 32, mv.in_words(form)), dtype=np.uint32)
        words[:, :, : mv.IMAGE_WORDS] = mv.image_words(self.warp_images(op.array))
        words[:, :, mv.ADDR_WORD] = self.inw[:, :, op.word].reshape(-1, 32)
        regs = mv.apply(form, words)[:, :, : op.dst.count].astype(np.uint64)
        self.put(op.dst, regs.reshape(self.cases, self.k.lanes, -1), op.form)

    def op_Stmatrix(self, op: o.Stmatrix) -> None:
        form = variant(op.form)
        words = np.zeros((self.cases * self.k.warps, 32, mv.in_words(form)), dtype=np.uint32)
        words[:, :, : mv.IMAGE_WORDS] = mv.image_words(self.warp_images(op.array))
        words[:, :, mv.ADDR_WORD] = self.inw[:, :, op.word].reshape(-1, 32)
        src = self.get(op.src, op.form).reshape(-1, 32, op.src.count)
        words[:, :, mv.ADDR_WORD + 1 : mv.ADDR_WORD + 1 + op.src.count] = src.astype(np.uint32)
        self.arrays[op.array] = mv.image_bytes(mv.apply(form, words)).reshape(self.cases, -1)

    def op_WarpSync(self, op: o.WarpSync) -> None:
        pass

    def op_Store(self, op: o.Store) -> None:
        r = self.get(op.src, "a store")
        if op.src.wide:
            r = np.stack([r & np.uint64(0xFFFFFFFF), r >> np.uint64(32)], axis=-1).reshape(self.cases, self.k.lanes, -1)
        self.out[:, :, op.word : op.word + op.src.words] = r.astype(np.uint32)

    def op_StoreShared(self, op: o.StoreShared) -> None:
        w = self.arrays[op.array].view("<u4").reshape(self.cases, self.k.lanes, -1)
        self.out[:, :, op.word : op.word + op.per_lane] = w[:, :, : op.per_lane]


def interpret(k: o.Kernel, in_words: np.ndarray, semantics: Callable = oracle_mma,
              arithmetic: Callable | None = None) -> np.ndarray:
    """The out words ``uint32[case, lane, out_words]`` the program writes for ``in_words`` (rows in case order)."""
    m = _Machine(k, in_words, semantics, arithmetic)
    m.run(k.ops)
    if m.open or m.groups:
        raise IllegalProgram("the kernel ends with wgmma not waited for")
    return m.out


class ProgramEmulator(EmulatorBackend):
    """The emulator backend, running a lowered program (a launch's probe) through :func:`interpret`."""

    def _run_one(self, launch: Launch) -> LaunchResult:
        if not isinstance(launch.probe, o.Kernel):
            return super()._run_one(launch)
        t0 = time.perf_counter()
        order = np.asarray(launch.order)
        try:
            out = interpret(launch.probe, launch.in_words[order], self.semantics, self.arithmetic)
        except IllegalProgram as exc:
            return LaunchResult(None, error=f"illegal program: {exc}", seconds=time.perf_counter() - t0)
        result = np.zeros_like(out)
        result[order] = out
        return LaunchResult(result, seconds=time.perf_counter() - t0)
