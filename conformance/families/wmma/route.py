"""wmma probe kernels: wmma.load A, B, C -> wmma.mma -> wmma.store D, in one kernel, memory to memory.

Every form runs this way: a wmma.mma form with its own loads and store; a wmma.load or
wmma.store form inside a wmma.mma form that consumes it (the *companion*, chosen per seed), so a
load of one form feeding an mma of the same form composes on every form.  The kernel holds one
*route* per (C layout, D layout) the case may pick; each case also picks its strides (ldm) and
base offsets, and the kernel its state space (generic, .global, .shared, .shared::cta).  Shared
memory kernels copy the case's ``in`` region into the warp's shared slice, run the route there,
and copy the ``out`` slice back.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from ptxconf.generators.ptx import KeyedProbe, case_prologue
from ptxconf.generators.ptx import module_source as probe_module_source
from ptxconf.spec.ptxtypes import TYPES
from ptxconf.spec.targets import PtxVersion, Target

from .memory import HEADER_WORDS, SLACK, Sizes, as_words, max_stride, scatter_matrices, sizes
from .spec import WmmaSpec, WmmaVariant

__all__ = ["WmmaProbe", "companions", "routes_for", "kernel_source", "module_source", "case_words"]

SHARED_BUDGET = 40 * 1024  # bytes of static shared memory one block may take
_REG = {"b32": "b32", "f32": "f32", "s32": "s32", "f64": "f64"}


def companions(v: WmmaVariant) -> list[WmmaVariant]:
    """wmma.mma forms that consume load/store form ``v`` and need nothing newer than it does."""
    if v.op == "mma":
        return [v]
    spec: WmmaSpec = v.doc  # type: ignore[assignment]
    m, t, lay = v.matrix, v.type_of(v.matrix), v.layout_of(v.matrix)
    low_cc = min(r.cc for r in v.requires)
    return [x for x in spec.variants if x.op == "mma" and x.shape_name == v.shape_name and x.type_of(m) == t
            and (m not in "ab" or x.layout_of(m) == lay) and x.max_ptx is None and x.min_ptx <= v.min_ptx
            and min(r.cc for r in x.requires) <= low_cc]


def routes_for(v: WmmaVariant) -> tuple[tuple[str, str], ...]:
    """(C layout, D layout) pairs the kernel offers: all four, less what the form under test fixes."""
    c = [v.layout_of("c")] if v.op == "load" and v.matrix == "c" else ["row", "col"]
    d = [v.layout_of("d")] if v.op == "store" else ["row", "col"]
    return tuple(itertools.product(c, d))


@dataclass(frozen=True)
class WmmaProbe(KeyedProbe):
    variant: WmmaVariant  # the form under test
    mma: WmmaVariant  # the wmma.mma form the kernel runs
    routes: tuple[tuple[str, str], ...]
    space: str  # state-space suffix of every load and store
    size: Sizes = field(compare=False)

    def key(self) -> str:
        return f"wmma|{self.variant.id}|{self.mma.id}|{self.routes}|{self.space}|{self.size.in_words}|{self.size.out_words}"

    @property
    def shared(self) -> bool:
        return self.space.startswith(".shared")

    @property
    def warp_bytes(self) -> int:
        return 128 * (self.size.in_words + self.size.out_words)


def _regs(prefix: str, n: int) -> str:
    return "{" + ", ".join(f"%{prefix}{i}" for i in range(n)) + "}"


def _copy(lines: list, src: str, dst: str, words: int, ld: str, st: str, tag: str, zero: bool = False) -> None:
    """Lanes copy ``words`` u32 words, 32 at a time (``zero``: store zeros instead of copying)."""
    lines += ["    mov.u32 %t18, %t1;", f"$L_{tag}:", f"    setp.ge.u32 %p1, %t18, {words};", f"    @%p1 bra $L_{tag}_end;",
              "    mul.wide.u32 %q10, %t18, 4;", f"    add.s64 %q12, {dst}, %q10;"]
    if zero:
        lines.append(f"    {st}.u32 [%q12], 0;")
    else:
        lines += [f"    add.s64 %q11, {src}, %q10;", f"    {ld}.u32 %t19, [%q11];", f"    {st}.u32 [%q12], %t19;"]
    lines += ["    add.u32 %t18, %t18, 32;", f"    bra $L_{tag};", f"$L_{tag}_end:"]


def kernel_source(p: WmmaProbe) -> str:
    spec: WmmaSpec = p.mma.doc  # type: ignore[assignment]
    mv, shape, ss = p.mma, p.mma.shape_name, p.space
    frags = {m: spec.frag(m, mv.type_of(m), shape) for m in "abcd"}
    in_bytes, out_bytes = 128 * p.size.in_words, 128 * p.size.out_words
    lines = [
        f".visible .entry {p.name}(.param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases)",
        "{",
        "    .reg .b32 %t<24>;", "    .reg .b64 %q<24>;", "    .reg .pred %p<4>;",
        *(f"    .reg .{_REG[f.register]} %f{m}<{f.registers}>;" for m, f in frags.items()),
    ]
    if p.shared:
        lines.append(f"    .shared .align 128 .b8 wmma_smem[{SHARED_BUDGET}];")
    lines += case_prologue(32)
    lines += [
        "    shr.u32 %t7, %t6, 5;",
        f"    mul.wide.u32 %q3, %t7, {in_bytes};", "    add.s64 %q3, %q2, %q3;",
        "    ld.param.u64 %q4, [p_out];", "    cvta.to.global.u64 %q4, %q4;",
        f"    mul.wide.u32 %q5, %t7, {out_bytes};", "    add.s64 %q4, %q4, %q5;",
        "    ld.global.v4.u32 {%t9, %t10, %t11, %t12}, [%q3];",
        "    ld.global.v4.u32 {%t13, %t14, %t15, %t16}, [%q3+16];",
        "    ld.global.u32 %t17, [%q3+32];",
    ]
    if p.shared:
        lines += ["    mov.u64 %q8, wmma_smem;", f"    mul.wide.u32 %q9, %t2, {p.warp_bytes};", "    add.s64 %q6, %q8, %q9;",
                  f"    add.s64 %q7, %q6, {in_bytes};"]
        _copy(lines, "%q3", "%q6", 32 * p.size.in_words, "ld.global", "st.shared", "cp_in")
        _copy(lines, "", "%q7", 32 * p.size.out_words, "", "st.shared", "zero_out", zero=True)
        lines.append("    bar.warp.sync -1;")
    elif ss == ".global":
        lines += ["    mov.u64 %q6, %q3;", "    mov.u64 %q7, %q4;"]
    else:  # generic addresses of the same global memory
        lines += ["    cvta.global.u64 %q6, %q3;", "    cvta.global.u64 %q7, %q4;"]
    for k, (reg, base) in enumerate([("%t14", "%q6"), ("%t15", "%q6"), ("%t16", "%q6"), ("%t17", "%q7")]):
        lines += [f"    cvt.u64.u32 %q{13 + k}, {reg};", f"    add.s64 %q{13 + k}, {base}, %q{13 + k};"]
    for r in range(len(p.routes)):
        lines += [f"    setp.eq.u32 %p1, %t9, {r};", f"    @%p1 bra $L_route{r};"]
    lines.append("    bra $L_end;")
    al, bl = mv.layout_of("a"), mv.layout_of("b")
    for r, (cl, dl) in enumerate(p.routes):
        lines += [
            f"$L_route{r}:",
            f"    wmma.load.a.sync.aligned.{al}.{shape}{ss}.{mv.type_of('a')} {_regs('fa', frags['a'].registers)}, [%q13], %t10;",
            f"    wmma.load.b.sync.aligned.{bl}.{shape}{ss}.{mv.type_of('b')} {_regs('fb', frags['b'].registers)}, [%q14], %t11;",
            f"    wmma.load.c.sync.aligned.{cl}.{shape}{ss}.{mv.type_of('c')} {_regs('fc', frags['c'].registers)}, [%q15], %t12;",
            f"    {mv.id} {_regs('fd', frags['d'].registers)}, {_regs('fa', frags['a'].registers)}, "
            f"{_regs('fb', frags['b'].registers)}, {_regs('fc', frags['c'].registers)};",
            f"    wmma.store.d.sync.aligned.{dl}.{shape}{ss}.{mv.type_of('d')} [%q16], {_regs('fd', frags['d'].registers)}, %t13;",
            "    bra $L_end;",
        ]
    lines.append("$L_end:")
    if p.shared:
        lines.append("    bar.warp.sync -1;")
        _copy(lines, "%q7", "%q4", 32 * p.size.out_words, "ld.shared", "st.global", "cp_out")
    lines += ["$L_done:", "    ret;", "}"]
    return "\n".join(lines)


def module_source(probes: list, version: PtxVersion, target: Target) -> str:
    return probe_module_source(probes, version, target, kernel_source)


def case_words(p: WmmaProbe, bits: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """``uint32[case, lane, in_words]``: random bytes, the header, and A, B, C at random strides and offsets."""
    spec: WmmaSpec = p.mma.doc  # type: ignore[assignment]
    mv, shape = p.mma, p.mma.shape_name
    cases = len(bits["A"])
    img = rng.integers(0, 256, size=(cases, 128 * p.size.in_words), dtype=np.uint8)
    where: dict[str, list] = {m: [] for m in "abc"}  # per matrix: each case's (layout, stride, offset)
    for case in range(cases):
        route = int(rng.integers(len(p.routes)))
        lay = {"a": mv.layout_of("a"), "b": mv.layout_of("b"), "c": p.routes[route][0], "d": p.routes[route][1]}
        hdr = [route]
        for m in "abcd":
            t = mv.type_of(m)
            unit = spec.stride_unit(m, t, shape, lay[m])
            ld = spec.min_stride(m, t, shape, lay[m]) + int(rng.integers(SLACK + 1)) * unit
            assert ld <= max_stride(spec, mv, m, lay[m])
            hdr.append(ld)
        offs = []
        for k, m in enumerate("abcd"):
            align = spec.base_alignment(m, mv.type_of(m), shape)
            start = p.size.slots[k] if m != "d" else 0
            offs.append(start + int(rng.integers(SLACK + 1)) * align)
        hdr += offs
        img[case, : 4 * HEADER_WORDS] = np.array(hdr, dtype="<u4").view(np.uint8)
        for k, m in enumerate("abc"):
            where[m].append((lay[m], hdr[1 + k], offs[k]))
    for m in "abc":  # every case's matrix in one scatter, A then B then C as a case writes them
        if not cases:
            break
        lays, lds, offs = zip(*where[m])
        layout = lays[0] if len(set(lays)) == 1 else np.array([x == "col" for x in lays])
        scatter_matrices(img, np.array(offs), bits[m.upper()][:, 0], layout, np.array(lds), TYPES[mv.type_of(m)].bits)
    return as_words(img, p.size.in_words)


def probe_for(v: WmmaVariant, mv: WmmaVariant, space: str) -> WmmaProbe:
    return WmmaProbe(v, mv, routes_for(v), space, sizes(v.doc, mv))  # type: ignore[arg-type]
