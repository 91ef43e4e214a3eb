"""specs/wmma.yaml (schema "wmma/1"): wmma.load / wmma.mma / wmma.store forms, fragments, storage.

The ISA leaves the fragment distribution unspecified, so the document states what it does
specify: shapes, fragment register counts and types, the memory layouts (.row/.col), strides
(ldm) with their defaults and alignment, the state spaces, and the wmma.mma syntax blocks.
Forms are crossed from the blocks; load/store forms are derived from the matrices the blocks
use, so a load form exists exactly when some mma form consumes it.  Each form becomes a
:class:`WmmaVariant`, so ``specs list``, ``--select 'wmma*'`` and the runner see them.

Invariants checked on load: every fragment is whole registers of its element type and covers
its matrix a whole number of times; every (matrix, type, shape) a block uses has a fragment;
sub-byte load/store layouts admit every mma layout pair of the block; versions and targets parse.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ptxconf.isa.expr import parse
from ptxconf.isa.model import REGISTER_BITS, Fragment, Layout, Operand, Variant
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion, Target, parse_target
from ptxconf.isa.yamlsrc import Source, first_schema_error, schema_validator

__all__ = ["WmmaVariant", "WmmaSpec", "load_document", "load_wmma", "MATRICES", "HW_ROW_ALIGN", "HW_BASE_ALIGN"]

_SCHEMA = Path(__file__).with_name("schema.json")
MATRICES = ("a", "b", "c", "d")
# The hardware's floor under the ISA's fragment-size rule (see the storage errata of specs/wmma.yaml):
# every row/column start a multiple of 16 bytes (CUDA's ldm rule), every base of 32 bytes (CUDA's
# 256-bit pointer rule); below these an H100 faults with "misaligned address".
HW_ROW_ALIGN = 16
HW_BASE_ALIGN = 32
OPERAND = {"a": "A", "b": "B", "c": "C", "d": "D"}


@lru_cache(maxsize=1)
def _validator():
    return schema_validator(_SCHEMA)


@dataclass(frozen=True)
class WmmaVariant(Variant):
    """One wmma form.  ``op`` is load, store or mma; ``types``/``layouts`` are per matrix."""

    op: str = "mma"
    shape_name: str = ""
    types: tuple[tuple[str, str], ...] = ()  # (matrix, element type) for the matrices it touches
    layouts: tuple[tuple[str, str], ...] = ()  # (matrix, row|col) fixed by the instruction
    rnd: str = ""
    satfinite: bool = False
    bitop: str | None = None
    max_ptx: PtxVersion | None = None  # forms removed from later versions (.satfinite on .f16)
    group: str = ""
    doc: object | None = field(default=None, compare=False, hash=False, repr=False)

    def type_of(self, matrix: str) -> str:
        return dict(self.types)[matrix]

    def layout_of(self, matrix: str) -> str | None:
        return dict(self.layouts).get(matrix)

    @property
    def matrix(self) -> str:
        """The matrix a load/store form moves."""
        return self.types[0][0]

    def valid_for(self, target: Target | str, ptx: PtxVersion | str | None = None) -> str | None:
        why = super().valid_for(target, ptx)
        if why is None and ptx is not None and self.max_ptx is not None:
            ptx = PtxVersion.parse(ptx) if isinstance(ptx, str) else ptx
            if ptx > self.max_ptx:
                return f"removed after .version {self.max_ptx} (PTX ISA notes)"
        return why


@dataclass(frozen=True)
class FragSpec:
    register: str
    per_register: int
    registers: int

    @property
    def bytes(self) -> int:
        """The fragment's size in bytes (the storage alignment unit)."""
        return self.registers * REGISTER_BITS[self.register] // 8


@dataclass
class WmmaSpec:
    family: str
    file: str
    section: str
    shapes: dict[str, tuple[int, int, int]]
    fragments: dict[tuple[str, str, str], FragSpec]  # (matrix, type, shape)
    default_stride: dict[str, dict[str, str]]
    state_spaces: list[tuple[str, str, PtxVersion]]  # (name, suffix, min_ptx)
    shape_ptx: dict[str, PtxVersion] = field(default_factory=dict)  # the .version that introduced each shape
    storage_section: str = ""
    errata: tuple = ()
    variants: list[WmmaVariant] = field(default_factory=list)

    def dims(self, matrix: str, shape: str) -> tuple[int, int]:
        m, n, k = self.shapes[shape]
        return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[matrix]

    def frag(self, matrix: str, type_name: str, shape: str) -> FragSpec:
        return self.fragments[matrix, type_name, shape]

    def leading(self, matrix: str, layout: str, shape: str) -> int:
        """The default stride in elements: the length of a row (row-major) or column (col-major)."""
        m, n, k = self.shapes[shape]
        return {"M": m, "N": n, "K": k}[self.default_stride[matrix][layout]]

    def row_alignment(self, matrix: str, type_name: str, shape: str, layout: str) -> int:
        """Bytes every row/column start is a multiple of (see the storage errata).

        The fragment size where the default stride allows it (the ISA's statement), never less
        than HW_ROW_ALIGN (16) bytes: the hardware faults below (misaligned address).
        """
        frag = self.frag(matrix, type_name, shape)
        lead_bits = self.leading(matrix, layout, shape) * TYPES[type_name].bits
        isa = math.gcd(frag.bytes, lead_bits // 8) if lead_bits % 8 == 0 else 1
        return max(HW_ROW_ALIGN, isa)

    def base_alignment(self, matrix: str, type_name: str, shape: str) -> int:
        """Bytes a matrix's base address is a multiple of: the fragment size, and at least HW_BASE_ALIGN (32)."""
        frag = self.frag(matrix, type_name, shape)
        return frag.bytes * HW_BASE_ALIGN // math.gcd(frag.bytes, HW_BASE_ALIGN)

    def stride_unit(self, matrix: str, type_name: str, shape: str, layout: str) -> int:
        """The step of legal strides in elements: the row alignment's worth of elements."""
        return self.row_alignment(matrix, type_name, shape, layout) * 8 // TYPES[type_name].bits

    def min_stride(self, matrix: str, type_name: str, shape: str, layout: str) -> int:
        """The least legal stride in elements: the default stride rounded up to the stride unit."""
        unit = self.stride_unit(matrix, type_name, shape, layout)
        return -(-self.leading(matrix, layout, shape) // unit) * unit

    def spaces_for(self, version: PtxVersion) -> list[str]:
        return [suffix for _, suffix, low in self.state_spaces if low <= version]


def _error(doc: dict, src: Source) -> None:
    found = first_schema_error(_validator(), doc, src)
    if found:
        path, err = found
        raise src.error(path, err.message.replace("Additional properties are not allowed", "unknown key"))


def _version(text: str, path: tuple, src: Source) -> PtxVersion:
    try:
        return PtxVersion.parse(text)
    except ValueError as exc:
        raise src.error(path, str(exc)) from None


def _targets(names: list, path: tuple, src: Source) -> tuple[Target, ...]:
    out = []
    for i, name in enumerate(names):
        try:
            out.append(parse_target(name))
        except ValueError as exc:
            raise src.error(path + (i,), str(exc)) from None
    return tuple(out)


def _type(name: str, path: tuple, src: Source) -> str:
    if name not in TYPES:
        raise src.error(path, f"unknown element type {name!r}")
    return name


def _fragments(doc: dict, shapes: dict, src: Source) -> dict:
    out: dict[tuple[str, str, str], FragSpec] = {}
    for i, f in enumerate(doc["fragments"]):
        p = ("fragments", i)
        t = TYPES[_type(f["type"], p + ("type",), src)]
        if f["per_register"] * t.bits != REGISTER_BITS[f["register"]]:
            raise src.error(p + ("per_register",),
                            f"{f['per_register']} x .{t.name} ({t.bits} bits) does not fill one .{f['register']} register")
        for shape, count in f["registers"].items():
            if shape not in shapes:
                raise src.error(p + ("registers", shape), f"unknown shape {shape!r}; known: {', '.join(shapes)}")
            m, n, k = shapes[shape]
            for matrix in f["matrices"]:
                rows, cols = {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[matrix]
                held = count * f["per_register"] * 32
                if held % (rows * cols):
                    raise src.error(p + ("registers", shape),
                                    f"{count} registers x {f['per_register']} x 32 threads = {held} elements do not cover "
                                    f"the {rows}x{cols} {matrix} matrix a whole number of times")
                key = (matrix, t.name, shape)
                if key in out:
                    raise src.error(p + ("matrices",), f"fragment {matrix} .{t.name} {shape} given twice")
                out[key] = FragSpec(f["register"], f["per_register"], count)
    return out


def _layout(spec: WmmaSpec, matrix: str, type_name: str, shape: str) -> Layout:
    """An operand layout saying only what the ISA says: the matrix, and elements per thread."""
    rows, cols = spec.dims(matrix, shape)
    frag = spec.frag(matrix, type_name, shape)
    elements = frag.registers * frag.per_register
    zero = parse("0")
    return Layout(
        name=f"wmma.{matrix}.{shape}.{type_name}", maps=f"(lane 32, element {elements}) -> unspecified ({rows}x{cols})",
        section="9.7.14.4.1", figure=None, rows=rows, cols=cols, elements=elements, matrices=1, lanes=32,
        matrix=zero, row=zero, col=zero, where=zero, copies=elements * 32 // (rows * cols), bindings={},
        notes=("The ISA leaves the distribution of fragment elements over threads unspecified; "
               "`ptxconf wmma-observe` records what a GPU does.",), file=spec.file,
    )


def _operand(spec: WmmaSpec, matrix: str, type_name: str, shape: str) -> Operand:
    frag = spec.frag(matrix, type_name, shape)
    return Operand(OPERAND[matrix], TYPES[type_name], _layout(spec, matrix, type_name, shape),
                   Fragment(type_name, frag.register, frag.per_register))


# Every form here is spelled with ``.aligned``, which ptxas accepts on wmma from PTX 6.3 only ("Feature
# '.aligned modifier for wmma' requires PTX ISA .version 6.3"); at 6.2 the H100 driver's JIT killed the
# process instead of refusing (results/h100-wmma-run).
ALIGNED_PTX = PtxVersion(6, 3)


def _need_fragment(spec: WmmaSpec, matrix: str, t: str, shape: str, path: tuple, src: Source) -> None:
    if (matrix, t, shape) not in spec.fragments:
        raise src.error(path, f"no fragment for matrix {matrix} .{t} {shape} (add it under fragments)")


def _expand(spec: WmmaSpec, g: dict, gi: int, src: Source, ldst: dict) -> list[WmmaVariant]:
    p = ("mma", gi)
    out = []
    requires = _targets(g["requires"], p + ("requires",), src)
    low = _version(g["min_ptx"], p + ("min_ptx",), src)
    lay_ok = g.get("ldst_layouts") or {m: ["row", "col"] for m in MATRICES}
    for pair in g["layouts"]:
        if pair[0] not in lay_ok["a"] or pair[1] not in lay_ok["b"]:
            raise src.error(p + ("layouts",), f".{pair[0]}.{pair[1]} needs load layouts the block's ldst_layouts lack")
    sat = g.get("satfinite")
    sat_max = _version(sat["max_ptx"], p + ("satfinite", "max_ptx"), src) if sat and "max_ptx" in sat else None
    ops = g.get("operations") or [{"op": "", "min_ptx": g["min_ptx"], "requires": g["requires"]}]
    for si, shape in enumerate(g["shapes"]):
        if shape not in spec.shapes:
            raise src.error(p + ("shapes", si), f"unknown shape {shape!r}; known: {', '.join(spec.shapes)}")
        shape_low = max(low, spec.shape_ptx[shape], ALIGNED_PTX)
        for at, ct, dt in itertools.product(g["atype"], g["ctype"], g["dtype"]):
            types = {"a": at, "b": at, "c": ct, "d": dt}
            for m, t in types.items():
                _type(t, p + ({"a": "atype", "b": "atype", "c": "ctype", "d": "dtype"}[m],), src)
                _need_fragment(spec, m, t, shape, p + ("shapes", si), src)
                for layout in lay_ok[m]:
                    key = ("store" if m == "d" else "load", m, layout, shape, t)
                    have = ldst.get(key)
                    if have is None or (shape_low, min(r.cc for r in requires)) < (have[0], min(r.cc for r in have[1])):
                        ldst[key] = (shape_low, requires, g["section"], gi)
            sig = g["signature"].format(dtype=dt, atype=at, btype=at, ctype=ct)
            for o, (al, bl), rnd, satf in itertools.product(ops, g["layouts"], g.get("rounding") or [""],
                                                            [False, True] if sat is not None else [False]):
                op_low = max(shape_low, _version(o["min_ptx"], p + ("operations",), src))
                reqs = _targets(o["requires"], p + ("operations",), src)
                name = o["op"]
                ptx = (f"wmma.mma{'.' + name if name else ''}.sync.aligned.{al}.{bl}.{shape}{'.' + rnd if rnd else ''}"
                       f".{sig}{'.satfinite' if satf else ''}")
                operands = {OPERAND[m]: _operand(spec, m, t, shape) for m, t in types.items()}
                out.append(WmmaVariant(
                    id=ptx, family=spec.family, section=g["section"], min_ptx=op_low, requires=reqs, operands=operands,
                    notes=tuple(g.get("notes", ())), file=src.file, line=src.line(p), op="mma", shape_name=shape,
                    types=tuple(types.items()), layouts=(("a", al), ("b", bl)), rnd=rnd, satfinite=satf,
                    bitop=name.split(".")[0] if name else None, max_ptx=sat_max if satf else None, group=g["name"],
                    doc=spec))
    return out


def _ldst_variant(spec: WmmaSpec, key: tuple, entry: tuple, src: Source) -> WmmaVariant:
    op, m, layout, shape, t = key
    low, requires, section, gi = entry
    ptx = f"wmma.{op}.{m}.sync.aligned.{layout}.{shape}.{t}"
    sec = {"load": "9.7.14.4.3", "store": "9.7.14.4.4"}[op]
    return WmmaVariant(
        id=ptx, family=spec.family, section=sec, min_ptx=low, requires=requires,
        operands={OPERAND[m]: _operand(spec, m, t, shape)}, file=src.file, line=src.line(("mma", gi)), op=op,
        shape_name=shape, types=((m, t),), layouts=((m, layout),), group=f"{op}.{m}", doc=spec,
    )


def load_document(doc: dict, src: Source) -> WmmaSpec:
    """Schema-check and build a ``schema: wmma/1`` document; raise SpecError naming file:line:field."""
    _error(doc, src)
    shapes, shape_ptx = {}, {}
    for name, s in doc["shapes"].items():
        m, n, k = (int(x) for x in name[1:].replace("n", " ").replace("k", " ").split())
        if (m, n, k) != (s["m"], s["n"], s["k"]):
            raise src.error(("shapes", name), f"m/n/k {s['m']}/{s['n']}/{s['k']} disagree with the name {name}")
        shape_ptx[name] = _version(s["min_ptx"], ("shapes", name, "min_ptx"), src)
        shapes[name] = (m, n, k)
    st = doc["storage"]
    spaces = [(s["name"], s["suffix"], _version(s["min_ptx"], ("storage", "state_spaces", i, "min_ptx"), src))
              for i, s in enumerate(st["state_spaces"])]
    spec = WmmaSpec(doc["family"], src.file, doc["section"], shapes, _fragments(doc, shapes, src), st["default_stride"],
                    spaces, shape_ptx, st["section"], tuple(st.get("errata", ())))
    ldst: dict[tuple, tuple] = {}
    mma: list[WmmaVariant] = []
    for gi, g in enumerate(doc["mma"]):
        mma += _expand(spec, g, gi, src, ldst)
    order = {"load": 0, "store": 1}
    forms = [_ldst_variant(spec, key, ldst[key], src) for key in sorted(ldst, key=lambda k: (order[k[0]], k[1:]))]
    seen: dict[str, WmmaVariant] = {}
    for v in forms + mma:
        if v.id in seen:
            raise src.error(("mma",), f"form {v.id} arises twice")
        seen[v.id] = v
    spec.variants = forms + mma
    return spec


def load_wmma(directory: str | Path | None = None) -> WmmaSpec:
    from ptxconf.isa.loader import load_specs

    return load_specs(directory).documents["wmma"]
