"""A lowered program as PTX: one op, a few lines; the module framing and case prologue are the probes'.

The kernel keeps the probe signature (``in``, ``out``, ``order``, ``ncases``; one group of lanes per
case, one case per CTA), so the GPU backend launches it like any probe.  The instruction text of each
matrix op comes from its family's probe code (mma.sync operand lists, wgmma immediates, ldmatrix and
stmatrix state spaces), so a program says exactly what the probes say.
"""

from __future__ import annotations

from ptxconf.families.mma import LD_FOR_TYPE, REG_DECL, operand_list
from ptxconf.families.movement import MoveProbe
from ptxconf.families.wgmma import WgProbe
from ptxconf.generators.ptx import case_prologue
from ptxconf.generators.ptx import module_source as ptx_module
from ptxconf.isa.targets import parse_target

from . import ops as o
from .model import variant

__all__ = ["kernel_source", "module_source"]


class _Emitter:
    def __init__(self, k: o.Kernel):
        self.k = k
        self.lines: list[str] = []
        self.scratch = 0
        self.wide_scratch = 0
        self.scratch_preds = 0

    def s(self) -> str:
        """A fresh .b32 scratch register."""
        self.scratch += 1
        return f"%s{self.scratch - 1}"

    def r(self) -> str:
        """A fresh .b64 scratch register."""
        self.wide_scratch += 1
        return f"%r{self.wide_scratch - 1}"

    def h(self) -> str:
        self.scratch_preds += 1
        return f"%h{self.scratch_preds - 1}"

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def lane_slice(self, array: str, per_lane: int) -> str:
        base, at = self.s(), self.s()
        self.emit(f"mov.u32 {base}, {array};")
        self.emit(f"mad.lo.u32 {at}, %t1, {per_lane * 4}, {base};")
        return at

    def warp_row(self, array: str, word: int) -> str:
        """This lane's row address: its warp's image in ``array`` plus the offset at input ``word``."""
        base, warp, off = self.s(), self.s(), self.s()
        self.emit(f"mov.u32 {base}, {array};")
        self.emit(f"shr.u32 {warp}, %t1, 5;")
        self.emit(f"mad.lo.u32 {base}, {warp}, {32 * 4 * 16}, {base};")
        self.emit(f"ld.global.u32 {off}, [%q2+{word * 4}];")
        self.emit(f"add.u32 {base}, {base}, {off};")
        return base

    def op(self, op) -> None:
        getattr(self, "op_" + type(op).__name__)(op)

    def op_Load(self, op: o.Load) -> None:
        base = "%q6" if op.iterated else "%q2"
        step = 2 if op.dst.wide else 1
        for i, reg in enumerate(op.dst.regs()):
            self.emit(f"ld.global.{LD_FOR_TYPE[op.dst.reg]} {reg}, [{base}+{(op.word + i * step) * 4}];")

    def op_Mix(self, op: o.Mix) -> None:
        for reg in op.frag.regs():
            self.emit(f"mad.lo.u32 {reg}, {reg}, {o.GOLDEN:#x}, %t1;")

    def op_LanePred(self, op: o.LanePred) -> None:
        a, b = self.s(), self.s()
        self.emit(f"shr.u32 {a}, %t1, 1;")
        self.emit(f"shr.u32 {b}, %t1, 3;")
        self.emit(f"xor.b32 {a}, {a}, {b};")
        self.emit(f"and.b32 {a}, {a}, 1;")
        self.emit(f"setp.ne.u32 {op.pred}, {a}, 0;")

    def op_WarpPred(self, op: o.WarpPred) -> None:
        m, w = self.s(), self.s()
        self.emit(f"ld.global.u32 {m}, [%q2+{op.word * 4}];")
        self.emit(f"shr.u32 {w}, %t1, 5;")
        self.emit(f"shr.b32 {m}, {m}, {w};")
        self.emit(f"and.b32 {m}, {m}, 1;")
        self.emit(f"setp.ne.u32 {op.pred}, {m}, 0;")

    def op_ScalePred(self, op: o.ScalePred) -> None:
        if op.word is None:
            self.emit(f"setp.eq.u32 {op.pred}, %t1, %t1;")
            return
        x = self.s()
        self.emit(f"ld.global.u32 {x}, [%q2+{op.word * 4}];")
        self.emit(f"setp.ne.u32 {op.pred}, {x}, 0;")

    def op_XorIf(self, op: o.XorIf) -> None:
        bits = 64 if op.frag.wide else 32
        for reg in op.frag.regs():
            self.emit(f"@{op.pred} xor.b{bits} {reg}, {reg}, {op.pattern:#x};")

    def op_Mma(self, op: o.Mma) -> None:
        v = variant(op.form)
        regs = {"D": op.d.regs(), **{name: f.regs() for name, f in op.operands}}
        guard = f"@{op.guard} " if op.guard else ""
        self.emit(f"{guard}{v.id} {operand_list(v, regs, o.params_of(v))};")

    def op_Loop(self, op: o.Loop) -> None:
        count, it, again = self.s(), self.s(), self.h()
        self.emit(f"ld.global.u32 {count}, [%q2+{op.word * 4}];")
        self.emit(f"mov.u32 {it}, 0;")
        self.emit("mov.b64 %q6, %q2;")
        self.lines.append(f"{op.label}:")
        for inner in op.body:
            self.op(inner)
        self.emit(f"add.u32 {it}, {it}, 1;")
        self.emit(f"add.s64 %q6, %q6, {op.stride * 4};")
        self.emit(f"setp.lt.u32 {again}, {it}, {count};")
        self.emit(f"@{again} bra {op.label};")

    def op_Stage(self, op: o.Stage) -> None:
        at = self.lane_slice(op.array, op.per_lane)
        for k in range(0, op.per_lane, 4):
            v = "{" + ", ".join(self.s() for _ in range(4)) + "}"
            self.emit(f"ld.global.v4.b32 {v}, [%q2+{(op.word + k) * 4}];")
            self.emit(f"st.shared.v4.b32 [{at}+{4 * k}], {v};")
        if op.async_proxy:
            self.emit("fence.proxy.async.shared::cta;")
        self.emit("bar.sync 0;")

    def op_WgFence(self, op: o.WgFence) -> None:
        self.emit("wgmma.fence.sync.aligned;")

    def op_WgCommit(self, op: o.WgCommit) -> None:
        self.emit("wgmma.commit_group.sync.aligned;")

    def op_WgWait(self, op: o.WgWait) -> None:
        self.emit(f"wgmma.wait_group.sync.aligned {op.n};")

    def op_Wgmma(self, op: o.Wgmma) -> None:
        v = variant(op.form)
        base, shifted = self.s(), self.s()
        self.emit(f"mov.u32 {base}, {op.array};")
        self.emit(f"shr.u32 {shifted}, {base}, 4;")
        self.emit(f"and.b32 {shifted}, {shifted}, 16383;")

        def desc(template: int) -> str:
            lo, hi, q = self.s(), self.s(), self.r()
            self.emit(f"add.u32 {lo}, {shifted}, {template & 0xFFFFFFFF:#x};")
            self.emit(f"mov.u32 {hi}, {template >> 32:#x};")
            self.emit(f"mov.b64 {q}, {{{lo}, {hi}}};")
            return q

        a = "{" + ", ".join(op.a.regs()) + "}" if op.a is not None else desc(op.a_desc)
        b = desc(op.b_desc)
        d = "{" + ", ".join(op.d.regs()) + "}"
        self.emit(WgProbe(v, op.imm).instruction_text(d, a, b, op.scale))

    def op_Ldmatrix(self, op: o.Ldmatrix) -> None:
        at = self.warp_row(op.array, op.word)
        self.emit(f"{MoveProbe(variant(op.form), '.shared').instruction} {{{', '.join(op.dst.regs())}}}, [{at}];")

    def op_Stmatrix(self, op: o.Stmatrix) -> None:
        at = self.warp_row(op.array, op.word)
        self.emit(f"{MoveProbe(variant(op.form), '.shared').instruction} [{at}], {{{', '.join(op.src.regs())}}};")

    def op_WarpSync(self, op: o.WarpSync) -> None:
        self.emit("bar.warp.sync 0xffffffff;")

    def op_Store(self, op: o.Store) -> None:
        step = 2 if op.src.wide else 1
        for i, reg in enumerate(op.src.regs()):
            self.emit(f"st.global.{LD_FOR_TYPE[op.src.reg]} [%q4+{(op.word + i * step) * 4}], {reg};")

    def op_StoreShared(self, op: o.StoreShared) -> None:
        at = self.lane_slice(op.array, op.per_lane)
        for k in range(0, op.per_lane, 4):
            v = "{" + ", ".join(self.s() for _ in range(4)) + "}"
            self.emit(f"ld.shared.v4.b32 {v}, [{at}+{4 * k}];")
            self.emit(f"st.global.v4.b32 [%q4+{(op.word + k) * 4}], {v};")


def kernel_source(k: o.Kernel) -> str:
    """The PTX ``.entry`` of a lowered program."""
    e = _Emitter(k)
    for line in case_prologue(k.lanes):
        e.lines.append(line)
    e.emit(f"mul.wide.u32 %q3, %t6, {k.in_words * 4};")
    e.emit("add.s64 %q2, %q2, %q3;")
    e.emit("ld.param.u64 %q4, [p_out];")
    e.emit("cvta.to.global.u64 %q4, %q4;")
    e.emit(f"mul.wide.u32 %q5, %t6, {k.out_words * 4};")
    e.emit("add.s64 %q4, %q4, %q5;")
    for op in k.ops:
        e.op(op)
    head = [f".visible .entry {k.name}(",
            "    .param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases",
            ")", "{",
            "    .reg .b32 %t<9>;", "    .reg .b64 %q<7>;", "    .reg .pred %p0;"]
    for f in k.frags:
        head.append(f"    .reg {REG_DECL[f.reg]} {f.name}<{f.count}>;")
    for name in k.preds:
        head.append(f"    .reg .pred {name};")
    if e.scratch:
        head.append(f"    .reg .b32 %s<{e.scratch}>;")
    if e.wide_scratch:
        head.append(f"    .reg .b64 %r<{e.wide_scratch}>;")
    if e.scratch_preds:
        head.append(f"    .reg .pred %h<{e.scratch_preds}>;")
    for array, size in k.arrays.items():
        head.append(f"    .shared .align 1024 .b8 {array}[{size}];")
    return "\n".join(head + e.lines + ["$L_done:", "    ret;", "}"])


def module_source(kernels: list[o.Kernel]) -> str:
    """One module holding ``kernels`` (of one target), at the lowest ``.version`` all of them need."""
    target = parse_target(kernels[0].program.arch)
    version = max(k.program.version(k.movement) for k in kernels)
    return ptx_module(kernels, version, target, kernel_source)
