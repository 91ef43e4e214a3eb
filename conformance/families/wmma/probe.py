"""wmma.load / wmma.store probes: observe fragment layouts the ISA leaves unspecified.

PTX ISA 9.2 §9.7.14.4.1: "the distribution of fragments loaded by the threads
in a warp is unspecified and is target architecture dependent".  These probes
make it a measured fact about a GPU and driver: ``wmma.load`` reads a tagged
matrix (each element's bits name its row and column) and the registers are
stored verbatim; ``wmma.store`` writes registers whose bits name their
(lane, element) slot and the matrix is read back.  Data only moves, so raw bit
patterns serve as tags (digits over several cases where a type has too few).

Probe contract as elsewhere: ``(in, out, order, ncases)``, one warp per case;
for a load the case's ``in`` region holds the matrix image, for a store its
``out`` region receives it.  The stride is the leading dimension plus a
seeded padding, so stride handling is exercised too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

__all__ = ["WmmaForm", "forms", "kernel_source", "SHAPES"]

SHAPES = {"m16n16k16": (16, 16, 16), "m8n32k16": (8, 32, 16), "m32n8k16": (32, 8, 16)}
_BYTES = {"f16": 2, "bf16": 2, "s8": 1, "u8": 1, "f32": 4, "s32": 4}

# Registers per thread (§9.7.14.4.1 fragment tables): (operand, type, shape) -> (count, elements per register)
_MULT = {
    "f16": {"m16n16k16": (8, 8), "m8n32k16": (8, 8), "m32n8k16": (8, 8)},
    "bf16": {"m16n16k16": (4, 4), "m8n32k16": (2, 8), "m32n8k16": (8, 2)},
    "s8": {"m16n16k16": (2, 2), "m8n32k16": (1, 4), "m32n8k16": (4, 1)},
}
_ACC = {"f16": (4, 2), "f32": (8, 1), "s32": (8, 1)}


@dataclass(frozen=True)
class WmmaForm:
    """One wmma.load or wmma.store form."""

    op: str  # "load" or "store"
    frag: str  # a, b, c, d
    layout: str  # row, col
    shape: str
    type: str
    state_space: str = ".global"  # or "" (generic)

    @property
    def id(self) -> str:
        return f"wmma.{self.op}.{self.frag}.sync.aligned.{self.layout}.{self.shape}{self.state_space}.{self.type}"

    @property
    def dims(self) -> tuple[int, int]:
        """(rows, cols) of this fragment's matrix."""
        m, n, k = SHAPES[self.shape]
        return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[self.frag]

    @property
    def registers(self) -> int:
        if self.frag in ("a", "b"):
            count, _ = _MULT["s8" if self.type in ("s8", "u8") else self.type][self.shape]
            return count if self.frag == "a" else _b_count(self.type, self.shape)
        return _ACC[self.type][0]

    @property
    def per_register(self) -> int:
        return 4 // _BYTES[self.type] if _BYTES[self.type] < 4 else 1

    @property
    def elements(self) -> int:
        return self.registers * self.per_register

    @property
    def reg_type(self) -> str:
        return {"f32": ".f32", "s32": ".s32"}.get(self.type, ".b32")

    def stride(self, pad: int) -> int:
        """Leading dimension in elements: cols (row-major) or rows (col-major), plus padding."""
        rows, cols = self.dims
        return (cols if self.layout == "row" else rows) + pad

    def image_elements(self, pad: int) -> int:
        rows, cols = self.dims
        return (rows if self.layout == "row" else cols) * self.stride(pad)

    def offset(self, row: np.ndarray, col: np.ndarray, pad: int) -> np.ndarray:
        return row * self.stride(pad) + col if self.layout == "row" else col * self.stride(pad) + row

    def kernel_name(self, pad: int) -> str:
        return "wmma_" + hashlib.sha256(f"{self.id}|{pad}".encode()).hexdigest()[:16]


def _b_count(t: str, shape: str) -> int:
    key = "s8" if t in ("s8", "u8") else t
    if key == "f16":
        return 8
    # B of m8n32k16 is A of m32n8k16 transposed in size, and vice versa.
    swap = {"m16n16k16": "m16n16k16", "m8n32k16": "m32n8k16", "m32n8k16": "m8n32k16"}[shape]
    return _MULT[key][swap][0]


def forms() -> list[WmmaForm]:
    """Every load/store form of the three f16/bf16/s8/u8 shapes, both layouts."""
    out = []
    for shape in SHAPES:
        for layout in ("row", "col"):
            for t in ("f16", "bf16", "s8", "u8"):
                for frag in ("a", "b"):
                    out.append(WmmaForm("load", frag, layout, shape, t))
            for t in ("f16", "f32", "s32"):
                out.append(WmmaForm("load", "c", layout, shape, t))
                out.append(WmmaForm("store", "d", layout, shape, t))
    return out


def words_per_lane(form: WmmaForm, pad: int) -> int:
    """Buffer words per lane: the registers, or the case's share of the matrix image (32-byte aligned)."""
    image_bytes = form.image_elements(pad) * _BYTES[form.type]
    image_words = -(-image_bytes // 4)
    per_lane = -(-image_words // 32)
    return max(form.registers, per_lane + (per_lane % 2))


def kernel_source(form: WmmaForm, pad: int) -> str:
    n = form.registers
    words = words_per_lane(form, pad)
    regs = ", ".join(f"%r{i}" for i in range(n))
    ldst = "f32" if form.reg_type == ".f32" else "b32"
    lines = [
        f".visible .entry {form.kernel_name(pad)}(.param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases)",
        "{",
        f"    .reg {form.reg_type} %r<{n}>;",
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
        for i in range(n):
            lines.append(f"    st.global.{ldst} [%q6+{4 * i}], %r{i};")
    else:
        lines.append("    add.s64 %q5, %q5, %q7;")
        for i in range(n):
            lines.append(f"    ld.global.{ldst} %r{i}, [%q5+{4 * i}];")
        lines.append(f"    {form.id} [%q6], {{{regs}}}, {stride};")
    lines += ["$L_done:", "    ret;", "}"]
    return "\n".join(lines)


def module_source(pairs: list[tuple[WmmaForm, int]], version: str = "7.0", target: str = "sm_80") -> str:
    head = [f".version {version}", f".target {target}", ".address_size 64", ""]
    return "\n".join(head + [kernel_source(f, pad) + "\n" for f, pad in pairs])
