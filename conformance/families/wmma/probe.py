"""wmma.load / wmma.store probes: observe fragment layouts the ISA leaves unspecified.

PTX ISA 9.2 §9.7.14.4.1: "the distribution of fragments loaded by the threads
in a warp is unspecified and is target architecture dependent".  These probes
make it a measured fact about a GPU and driver: ``wmma.load`` reads a tagged
matrix (each element's bits name its row and column) and the registers are
stored verbatim; ``wmma.store`` writes registers whose bits name their
(lane, element) slot and the matrix is read back.  Data only moves, so raw bit
patterns serve as tags (digits over several cases where a type has too few).

Every load/store form of specs/wmma.yaml is probed (register counts, types and
strides come from the spec).  Probe contract as elsewhere: ``(in, out, order,
ncases)``, one warp per case; for a load the case's ``in`` region holds the
matrix image, for a store its ``out`` region receives it.  The stride is the
least legal stride (the leading dimension, rounded up to the hardware's 16-byte row
alignment) plus a seeded padding, so stride handling is exercised too; each case's matrix
starts at a multiple of 256 bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from ptxconf.isa.model import REGISTER_BITS
from ptxconf.isa.ptxtypes import TYPES

from .spec import WmmaSpec, WmmaVariant, load_wmma

__all__ = ["WmmaForm", "forms", "kernel_source", "module_source", "words_per_lane"]


@dataclass(frozen=True)
class WmmaForm:
    """One wmma.load or wmma.store form in one state space."""

    variant: WmmaVariant
    state_space: str = ".global"

    @property
    def spec(self) -> WmmaSpec:
        return self.variant.doc  # type: ignore[return-value]

    @property
    def op(self) -> str:
        return self.variant.op

    @property
    def frag(self) -> str:
        return self.variant.matrix

    @property
    def layout(self) -> str:
        return self.variant.layout_of(self.frag)

    @property
    def shape(self) -> str:
        return self.variant.shape_name

    @property
    def type(self) -> str:
        return self.variant.type_of(self.frag)

    @property
    def bits(self) -> int:
        return TYPES[self.type].bits

    @property
    def id(self) -> str:
        return self.variant.id.replace(f".{self.shape}.", f".{self.shape}{self.state_space}.")

    @property
    def dims(self) -> tuple[int, int]:
        return self.spec.dims(self.frag, self.shape)

    @property
    def register(self) -> str:
        return self.spec.frag(self.frag, self.type, self.shape).register

    @property
    def registers(self) -> int:
        return self.spec.frag(self.frag, self.type, self.shape).registers

    @property
    def per_register(self) -> int:
        return self.spec.frag(self.frag, self.type, self.shape).per_register

    @property
    def elements(self) -> int:
        return self.registers * self.per_register

    @property
    def register_words(self) -> int:
        return self.registers * REGISTER_BITS[self.register] // 32

    def pad_unit(self) -> int:
        """Padding step in elements: keeps every row/column start aligned as the spec requires."""
        return self.spec.stride_unit(self.frag, self.type, self.shape, self.layout)

    def stride(self, pad: int) -> int:
        """The least legal stride in elements (the leading dimension, rounded up to a 16-byte multiple) plus padding."""
        return self.spec.min_stride(self.frag, self.type, self.shape, self.layout) + pad

    def image_elements(self, pad: int) -> int:
        rows, cols = self.dims
        return (rows if self.layout == "row" else cols) * self.stride(pad)

    def offset(self, row: np.ndarray, col: np.ndarray, pad: int) -> np.ndarray:
        return row * self.stride(pad) + col if self.layout == "row" else col * self.stride(pad) + row

    def kernel_name(self, pad: int) -> str:
        return "wmma_" + hashlib.sha256(f"{self.id}|{pad}".encode()).hexdigest()[:16]


def forms(spec: WmmaSpec | None = None) -> list[WmmaForm]:
    """Every wmma.load / wmma.store form of the spec (114), from global memory."""
    spec = spec or load_wmma()
    return [WmmaForm(v) for v in spec.variants if v.op in ("load", "store")]


def words_per_lane(form: WmmaForm, pad: int) -> int:
    """Buffer words per lane: the registers, or the case's share of the matrix image (32-byte aligned)."""
    image_bytes = -(-form.image_elements(pad) * form.bits // 8)
    image_words = -(-image_bytes // 4)
    per_lane = -(-image_words // 32)
    return max(form.register_words, per_lane + (per_lane % 2))


def kernel_source(form: WmmaForm, pad: int) -> str:
    n = form.registers
    words = words_per_lane(form, pad)
    regs = ", ".join(f"%r{i}" for i in range(n))
    step = REGISTER_BITS[form.register] // 8
    lines = [
        f".visible .entry {form.kernel_name(pad)}(.param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases)",
        "{",
        f"    .reg .{form.register} %r<{n}>;",
        "    .reg .b32 %t<8>; .reg .b64 %q<8>; .reg .pred %p0;",
        "    mov.u32 %t0, %tid.x; and.b32 %t1, %t0, 31; shr.u32 %t2, %t0, 5;",
        "    mov.u32 %t3, %ntid.x; shr.u32 %t3, %t3, 5; mov.u32 %t4, %ctaid.x; mad.lo.u32 %t2, %t4, %t3, %t2;",
        "    ld.param.u32 %t5, [p_ncases]; setp.ge.u32 %p0, %t2, %t5; @%p0 bra $L_done;",
        "    ld.param.u64 %q0, [p_order]; cvta.to.global.u64 %q0, %q0; mul.wide.u32 %q1, %t2, 4; add.s64 %q0, %q0, %q1;",
        "    ld.global.u32 %t6, [%q0];",
        "    ld.param.u64 %q2, [p_in]; cvta.to.global.u64 %q2, %q2;",
        "    ld.param.u64 %q4, [p_out]; cvta.to.global.u64 %q4, %q4;",
        f"    mul.wide.u32 %q3, %t6, {32 * words * 4};",  # the case's region
        "    add.s64 %q5, %q2, %q3; add.s64 %q6, %q4, %q3;",
        f"    mul.wide.u32 %q7, %t1, {words * 4};",  # this lane's slice
    ]
    stride = form.stride(pad)
    if form.op == "load":
        lines.append(f"    {form.id} {{{regs}}}, [%q5], {stride};")
        lines.append("    add.s64 %q6, %q6, %q7;")
        lines += [f"    st.global.{form.register} [%q6+{step * i}], %r{i};" for i in range(n)]
    else:
        lines.append("    add.s64 %q5, %q5, %q7;")
        lines += [f"    ld.global.{form.register} %r{i}, [%q5+{step * i}];" for i in range(n)]
        lines.append(f"    {form.id} [%q6], {{{regs}}}, {stride};")
    lines += ["$L_done:", "    ret;", "}"]
    return "\n".join(lines)


def module_source(pairs: list[tuple[WmmaForm, int]], version: str = "7.0", target: str = "sm_80") -> str:
    head = [f".version {version}", f".target {target}", ".address_size 64", ""]
    return "\n".join(head + [kernel_source(f, pad) + "\n" for f, pad in pairs])
