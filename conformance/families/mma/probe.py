"""PTX probe kernels: load per-lane registers, run the instruction, store per-lane registers.

A probe assumes no layout.  Warp ``w`` of the grid takes case ``order[w]``,
loads that case's words for every input operand from ``in[case][lane][word]``,
executes the variant's instruction, and stores D's registers to
``out[case][lane][word]``.  Layouts are applied on the host
(:mod:`ptxconf.isa.packing`).

Randomised from the seed, so the probes also exercise the JIT:

* the ``.version`` (spec minimum .. toolkit maximum) and ``.target``;
* a chained second instruction with zero multiplicands (A = -0, B = +0 for
  floats, so every product is -0 and ``D + (-0) = D`` for every D but -0: the
  H100 returns +0 when every term is -0, see results/h100-numerics; value
  inputs never make D = -0) where C and D have the same type;
* extra live registers carried across the instruction and folded into a
  checksum word stored after D, which the host verifies.

Many variants share one module (one ``.version``/``.target`` per module),
which keeps the assembler and JIT cost per variant low.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ptxconf.generators.ptx import Surroundings, checksum
from ptxconf.generators.ptx import module_source as ptx_module
from ptxconf.isa.model import Operand, Variant
from ptxconf.isa.targets import PtxVersion, Target

__all__ = ["Probe", "Surroundings", "BufferLayout", "buffer_layout", "kernel_source", "module_source", "checksum"]

REG_DECL = {"b32": ".b32", "f32": ".f32", "s32": ".b32", "u32": ".b32", "f64": ".f64", "b64": ".b64"}
LD_FOR_TYPE = {"b32": "b32", "f32": "f32", "s32": "b32", "u32": "b32", "f64": "f64", "b64": "b64"}
_PREFIX = {"A": "a", "B": "b", "C": "c", "D": "d", "scale_A": "sa", "scale_B": "sb", "metadata": "e"}


@dataclass(frozen=True)
class BufferLayout:
    """Word offsets of each operand inside one lane's slice of the buffers."""

    inputs: dict[str, int]
    in_words: int
    d_offset: int
    checksum_offset: int
    out_words: int


def buffer_layout(v: Variant) -> BufferLayout:
    """Inputs in operand order; 64-bit registers at even word offsets."""
    offs: dict[str, int] = {}
    pos = 0
    for name in v.inputs:
        op = v.operands[name]
        if op.fragment.words_per_register == 2 and pos % 2:
            pos += 1
        offs[name] = pos
        pos += op.words
    in_words = pos + (pos % 2)
    d = v.operands["D"]
    out_words = d.words + 1
    out_words += out_words % 2
    return BufferLayout(offs, in_words, 0, d.words, out_words)


@dataclass(frozen=True)
class Probe:
    """One kernel: a variant, the selector immediates and the surroundings."""

    variant: Variant
    params: dict[str, dict[str, int]] = field(default_factory=dict)
    surroundings: Surroundings = Surroundings()
    # Runs inputs the ISA leaves undefined: a kernel of its own (the same code), so a launch that faults on
    # them holds no case of another check.
    undefined: bool = False

    @property
    def name(self) -> str:
        key = f"{self.variant.id}|{sorted((k, sorted(p.items())) for k, p in self.params.items())}|{self.surroundings}"
        return "probe_" + hashlib.sha256((key + ("|undefined" if self.undefined else "")).encode()).hexdigest()[:16]


def _regs(prefix: str, op: Operand) -> list[str]:
    return [f"%{prefix}{r}" for r in range(op.registers)]


def _vec(regs: list[str]) -> str:
    return "{" + ", ".join(regs) + "}"


def operand_list(v: Variant, regs: dict[str, list[str]], params: dict[str, dict[str, int]]) -> str:
    parts = [_vec(regs["D"]), _vec(regs["A"]), _vec(regs["B"]), _vec(regs["C"])]
    if "metadata" in v.operands:  # mma.sp: e (one .b32), f (the sparsity selector immediate)
        parts.append(regs["metadata"][0])
        parts.append(str(params.get("metadata", {}).get("selector", 0)))
    for name in ("scale_A", "scale_B"):
        if name in v.operands:
            p = params.get(name, {})
            parts.append(regs[name][0])
            parts.append("{" + f"{p.get('byte_id', 0)}, {p.get('thread_id', 0)}" + "}")
    return ", ".join(parts)


def _neg_zero_bits(op: Operand) -> int:
    """A register of -0 elements (floats) or 0 (integers and bits)."""
    if op.type.kind != "float":
        return 0
    frag = op.fragment
    word = 0
    for e in range(frag.per_register):
        word |= (1 << (op.type.bits - 1)) << (e * frag.container_bits + frag.value_shift)
    return word


def kernel_source(p: Probe) -> str:
    v = p.variant
    lay = buffer_layout(v)
    s = p.surroundings
    ops = v.operands
    regs = {name: _regs(_PREFIX[name], op) for name, op in ops.items()}
    lines = [f".visible .entry {p.name}(", "    .param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases", ")", "{"]
    for name, op in ops.items():
        lines.append(f"    .reg {REG_DECL[op.fragment.register]} %{_PREFIX[name]}<{op.registers}>;")
    if s.chain:
        lines.append(f"    .reg {REG_DECL[ops['A'].fragment.register]} %za<{ops['A'].registers}>;")
        lines.append(f"    .reg {REG_DECL[ops['B'].fragment.register]} %zb<{ops['B'].registers}>;")
    if s.extra_regs:
        lines.append(f"    .reg .b32 %x<{s.extra_regs}>;")
    lines += [
        "    .reg .b32 %t<8>;",
        "    .reg .b64 %q<8>;",
        "    .reg .pred %p0;",
        "    mov.u32 %t0, %tid.x;",
        "    and.b32 %t1, %t0, 31;",  # lane
        "    shr.u32 %t2, %t0, 5;",  # warp in block
        "    mov.u32 %t3, %ntid.x;",
        "    shr.u32 %t3, %t3, 5;",
        "    mov.u32 %t4, %ctaid.x;",
        "    mad.lo.u32 %t2, %t4, %t3, %t2;",  # slot
        "    ld.param.u32 %t5, [p_ncases];",
        "    setp.ge.u32 %p0, %t2, %t5;",
        "    @%p0 bra $L_done;",
        "    ld.param.u64 %q0, [p_order];",
        "    cvta.to.global.u64 %q0, %q0;",
        "    mul.wide.u32 %q1, %t2, 4;",
        "    add.s64 %q0, %q0, %q1;",
        "    ld.global.u32 %t6, [%q0];",  # case
        "    mad.lo.u32 %t6, %t6, 32, %t1;",  # case * 32 + lane
        "    ld.param.u64 %q2, [p_in];",
        "    cvta.to.global.u64 %q2, %q2;",
        f"    mul.wide.u32 %q3, %t6, {lay.in_words * 4};",
        "    add.s64 %q2, %q2, %q3;",
        "    ld.param.u64 %q4, [p_out];",
        "    cvta.to.global.u64 %q4, %q4;",
        f"    mul.wide.u32 %q5, %t6, {lay.out_words * 4};",
        "    add.s64 %q4, %q4, %q5;",
    ]
    for k in range(s.extra_regs):
        lines.append(f"    mad.lo.u32 %x{k}, %t1, 0x9E3779B1, {(s.salt + k) & 0xFFFFFFFF};")
    for name in v.inputs:
        op = ops[name]
        step = op.fragment.words_per_register * 4
        for r, reg in enumerate(regs[name]):
            lines.append(f"    ld.global.{LD_FOR_TYPE[op.fragment.register]} {reg}, [%q2+{(lay.inputs[name]) * 4 + r * step}];")
    lines.append(f"    {v.id} {operand_list(v, regs, p.params)};")
    if s.chain:
        for name, zreg in (("A", "za"), ("B", "zb")):
            op = ops[name]
            zero = _neg_zero_bits(op) if name == "A" else 0
            for r in range(op.registers):
                lit = _literal(op, zero)
                lines.append(f"    mov.{LD_FOR_TYPE[op.fragment.register]} %{zreg}{r}, {lit};")
        zregs = dict(regs)
        zregs["A"] = [f"%za{r}" for r in range(ops["A"].registers)]
        zregs["B"] = [f"%zb{r}" for r in range(ops["B"].registers)]
        zregs["C"] = regs["D"]
        lines.append(f"    {v.id} {operand_list(v, zregs, p.params)};")
    d = ops["D"]
    step = d.fragment.words_per_register * 4
    for r, reg in enumerate(regs["D"]):
        lines.append(f"    st.global.{LD_FOR_TYPE[d.fragment.register]} [%q4+{r * step}], {reg};")
    lines.append("    mov.u32 %t7, 0;")
    for k in range(s.extra_regs):
        lines.append(f"    xor.b32 %t7, %t7, %x{k};")
    lines.append(f"    st.global.u32 [%q4+{lay.checksum_offset * 4}], %t7;")
    lines += ["$L_done:", "    ret;", "}"]
    return "\n".join(lines)


def _literal(op: Operand, bits: int) -> str:
    reg = op.fragment.register
    if reg == "f32":
        return f"0f{bits & 0xFFFFFFFF:08X}"
    if reg == "f64":
        return f"0d{bits & 0xFFFFFFFFFFFFFFFF:016X}"
    return f"0x{bits & 0xFFFFFFFF:08X}"


def chainable(v: Variant) -> bool:
    """C can take D's registers: same type and layout."""
    c, d = v.operands["C"], v.operands["D"]
    return c.type == d.type and c.layout == d.layout and c.fragment == d.fragment


def module_source(probes: list, version: PtxVersion, target: Target) -> str:
    """One PTX module holding every mma probe."""
    return ptx_module(probes, version, target, kernel_source)
