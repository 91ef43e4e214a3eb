"""Observe wmma.load/wmma.store fragment layouts on a GPU and record them as facts.

The ISA leaves wmma fragments unspecified (§9.7.14.4.1), so what this module
produces are observations about one GPU and driver, not spec: for every form,
the map ``[lane, element] -> (row, col)``, how many slots hold each cell
(fragments may duplicate), and a bit-linear formula where one fits.

    ptxconf wmma-observe [--backend pycuda] [-o DIR] [--seed S] [--figures]

The probes it runs.  PTX ISA 9.2 §9.7.14.4.1: "the distribution of fragments loaded by the threads
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
import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from ptxconf.backends.base import Backend, Launch
from ptxconf.families.wmma.memory import read_matrix, write_matrix
from ptxconf.isa.fit import fit_formula
from ptxconf.isa.model import REGISTER_BITS
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import parse_target

from .spec import WmmaSpec, WmmaVariant, load_wmma

__all__ = ["WmmaForm", "forms", "kernel_source", "module_source", "words_per_lane", "observe", "infer_load", "infer_store",
           "tag_digits"]


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


def tag_digits(count: int, bits: int) -> int:
    """Cases needed to give ``count`` items distinct non-zero tags of ``bits`` bits."""
    radix = min(1 << bits, 1 << 16) - 1
    return max(1, math.ceil(math.log(count + 1, radix + 1)))


def _radix(bits: int) -> int:
    return min(1 << bits, 1 << 16)


def _tags(count: int, bits: int, digit: int) -> np.ndarray:
    """Digit ``digit`` of (index + 1) in base 2**bits (capped at 2**16): never all-zero over the digits."""
    r = _radix(bits)
    return ((np.arange(count) + 1) // r**digit) % r


def _lane_images(words: np.ndarray) -> np.ndarray:
    """``uint32[lane, w]`` -> ``uint8[lane, 4 w]``: each lane's register words as bytes."""
    return np.ascontiguousarray(words, dtype="<u4").view(np.uint8).reshape(len(words), -1).copy()


def build_cases(form: WmmaForm, pad: int) -> tuple[np.ndarray, int]:
    """Input words ``[case, lane, word]`` for every digit case; and the digit count."""
    words = words_per_lane(form, pad)
    rows, cols = form.dims
    if form.op == "load":
        digits = tag_digits(rows * cols, form.bits)
        buf = np.zeros((digits, 32 * words * 4), dtype=np.uint8)
        for d in range(digits):
            tags = _tags(rows * cols, form.bits, d).reshape(rows, cols).astype(np.uint64)
            write_matrix(buf[d], 0, tags, form.layout, form.stride(pad), form.bits)
        return buf.view("<u4").reshape(digits, 32, words).astype(np.uint32), digits
    slots = 32 * form.elements
    digits = tag_digits(slots, form.bits)
    out = np.zeros((digits, 32, words), dtype=np.uint32)
    for d in range(digits):
        per_lane = _tags(slots, form.bits, d).reshape(32, form.elements).astype(np.uint64)
        img = np.zeros((32, 4 * words), dtype=np.uint8)
        for lane in range(32):
            write_matrix(img[lane], 0, per_lane[lane : lane + 1], "row", form.elements, form.bits)
        out[d] = img.view("<u4").reshape(32, words)
    return out, digits


def _combine(parts: list[np.ndarray], bits: int) -> np.ndarray:
    r = _radix(bits)
    return sum(p.astype(np.int64) * r**d for d, p in enumerate(parts)) - 1


def infer_load(form: WmmaForm, pad: int, out: np.ndarray) -> np.ndarray:
    """``[lane, element, 3]`` from the registers a load returned (tags of cells)."""
    rows, cols = form.dims
    parts = []
    for d in range(len(out)):
        img = _lane_images(out[d])
        parts.append(np.stack([read_matrix(img[lane], 0, 1, form.elements, "row", form.elements, form.bits)[0]
                               for lane in range(32)]))
    idx = _combine(parts, form.bits)
    ok = (idx >= 0) & (idx < rows * cols)
    m = np.full((32, form.elements, 3), -1, dtype=np.int64)
    m[ok, 0] = 0
    m[ok, 1], m[ok, 2] = np.divmod(idx[ok], cols)
    return m


def infer_store(form: WmmaForm, pad: int, out: np.ndarray) -> np.ndarray:
    """``[lane, element, 3]`` from the matrix image a store wrote (tags of slots)."""
    rows, cols = form.dims
    r, c = np.divmod(np.arange(rows * cols), cols)
    parts = [read_matrix(np.ascontiguousarray(out[d], dtype="<u4").reshape(-1).view(np.uint8), 0, rows, cols,
                         form.layout, form.stride(pad), form.bits).reshape(-1) for d in range(len(out))]
    slot = _combine(parts, form.bits)
    m = np.full((32 * form.elements, 3), -1, dtype=np.int64)
    ok = (slot >= 0) & (slot < 32 * form.elements)
    m[slot[ok]] = np.stack([np.zeros(ok.sum(), dtype=np.int64), r[ok], c[ok]], axis=-1)
    return m.reshape(32, form.elements, 3)


def summarize(form: WmmaForm, m: np.ndarray) -> dict:
    rows, cols = form.dims
    held = m[..., 0] >= 0
    counts = np.bincount((m[held, 1] * cols + m[held, 2]), minlength=rows * cols)
    fits = {axis: fit_formula(np.where(held, m[..., k], 0)) if held.all() else None for k, axis in ((1, "row"), (2, "col"))}
    return {
        "form": form.id,
        "registers": form.registers,
        "elements_per_lane": form.elements,
        "tile": [rows, cols],
        "copies": sorted({int(x) for x in counts}),
        "cells_unheld": int((counts == 0).sum()),
        "row": fits["row"],
        "col": fits["col"],
        "map": [[int(lane), int(e), int(m[lane, e, 1]), int(m[lane, e, 2])] for lane, e in zip(*np.nonzero(held))],
    }


def observe(backend: Backend, seed: int = 0, select: list[WmmaForm] | None = None, target: str = "sm_80") -> list[tuple[WmmaForm, int, np.ndarray | None, str | None]]:
    """Run every form (one module); (form, pad, map or None, error)."""
    rng = np.random.default_rng(seed)
    todo = select or forms()
    pads = [(f, int(rng.integers(0, 3)) * f.pad_unit()) for f in todo]
    version = max([parse_target(target).min_ptx] + [f.variant.min_ptx for f in todo])
    module = module_source(pads, str(version), target)
    results = []
    for form, pad in pads:
        in_words, digits = build_cases(form, pad)
        words = in_words.shape[-1]
        probe = SimpleNamespace(name=form.kernel_name(pad))
        launch = Launch(probe, in_words, words, np.arange(digits, dtype=np.uint32), 1)
        res = backend.run(module, [launch])[0]
        if res.error:
            results.append((form, pad, None, res.error))
            continue
        m = infer_load(form, pad, res.out) if form.op == "load" else infer_store(form, pad, res.out)
        results.append((form, pad, m, None))
    return results


def compare_observations(before: dict, now: dict) -> dict[str, list[str]]:
    """Forms whose observed map is the same, changed, new or no longer observed, between two recorded runs.

    The distribution is a fact about one GPU and driver that may change: a change is reported, not failed."""
    old = {f["form"]: f for f in before.get("forms", []) if "map" in f}
    new = {f["form"]: f for f in now.get("forms", []) if "map" in f}
    out: dict[str, list[str]] = {"same": [], "changed": [], "new": [], "missing": []}
    for form, entry in new.items():
        if form not in old:
            out["new"].append(form)
        else:
            out["same" if sorted(map(tuple, old[form]["map"])) == sorted(map(tuple, entry["map"])) else "changed"].append(form)
    out["missing"] = sorted(set(old) - set(new))
    return out
