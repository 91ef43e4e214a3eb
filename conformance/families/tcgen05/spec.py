"""tcgen05 (Blackwell) tables: Table 39, the descriptor formats, block-scale forms, ld/st shapes.

tcgen05.mma names no types or shape in its instruction string; they live in the
32-bit instruction descriptor.  So the spec is not a list of mma.sync-style
variants but a set of tables (``schema: tcgen05/1``), loaded here and checked on
load; every error names file, line and field.  :class:`Tcgen05Spec` enumerates
every valid (kind, .ws, cta_group, sparsity, dtype, atype, btype, M, N, K) tuple
and says, for any other tuple, which row or rule forbids it.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ptxconf.isa.targets import PtxVersion, Target, parse_target, target_satisfies
from ptxconf.isa.yamlsrc import Source, SpecError, first_schema_error, schema_validator

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "SCHEMA_ID",
    "Requirement",
    "Kind",
    "Row",
    "MmaTuple",
    "Field",
    "DescFormat",
    "SmemDescSpec",
    "ScaleForm",
    "CollectorB",
    "SparseVectors",
    "SpVectorForm",
    "REGISTER_LIMIT",
    "LdStShape",
    "Tcgen05Spec",
    "load_document",
    "load_tcgen05",
]

SCHEMA_ID = "tcgen05/1"
_SCHEMA_PATH = Path(__file__).with_name("schema.json")


def _validator() -> jsonschema.protocols.Validator:
    return schema_validator(_SCHEMA_PATH)


@dataclass(frozen=True)
class Requirement:
    """One target the ISA names, with the .version from which it may be named."""

    target: Target
    min_ptx: PtxVersion

    def satisfied(self, target: Target, ptx: PtxVersion | None) -> bool:
        return target_satisfies(target, self.target) and (ptx is None or ptx >= self.min_ptx)

    def __str__(self) -> str:
        return f"{self.target.name} (PTX {self.min_ptx})"


def why_not(reqs: tuple[Requirement, ...], target: Target, ptx: PtxVersion | None, what: str) -> str | None:
    """None when some requirement holds, else the rule that fails."""
    if ptx is not None and ptx < target.min_ptx:
        return f".target {target.name} needs .version {target.min_ptx} or later"
    if any(r.satisfied(target, ptx) for r in reqs):
        return None
    names = ", ".join(str(r) for r in reqs)
    return f"{what} needs one of {names} (Target ISA notes); {target.name} at .version {ptx or 'any'} has none"


@dataclass(frozen=True)
class Kind:
    name: str
    section: str
    min_ptx: PtxVersion
    ab_pairing: str  # "same" or "any"
    requires: tuple[Requirement, ...]
    sparse_requires: tuple[Requirement, ...] | None
    block_scaled: bool
    scale_types: tuple[str, ...]
    scale_requires: dict[str, tuple[Requirement, ...]] = field(default_factory=dict)  # a scale type's own targets


@dataclass(frozen=True)
class Row:
    """One printed row of Table 39 (invalid rows carry the table's reason)."""

    index: int
    line: int | None
    kind: str
    ws: bool
    cta_groups: tuple[int, ...]
    sparsities: tuple[str, ...]
    dtype: str | None = None
    ab: tuple[str, ...] = ()
    M: tuple[int, ...] = ()
    N: tuple[int, ...] = ()
    K: tuple[int, ...] = ()
    requires: tuple[Requirement, ...] | None = None
    invalid: str | None = None
    note: str | None = None
    descriptor: str | None = None  # why the row's descriptor encoding is not transcribed (it encodes nothing)

    def covers(self, kind: str, ws: bool, cta_group: int, sparsity: str) -> bool:
        return self.kind == kind and self.ws == ws and cta_group in self.cta_groups and sparsity in self.sparsities


@dataclass(frozen=True, order=True)
class MmaTuple:
    """A point of Table 39: everything the instruction string and descriptor fix together."""

    kind: str
    ws: bool
    cta_group: int
    sparsity: str
    dtype: str
    atype: str
    btype: str
    M: int
    N: int
    K: int
    scale: str | None = None  # scale-factor type for block-scaled kinds

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def __str__(self) -> str:
        ws = ".ws" if self.ws else ""
        sp = ".sp" if self.sparsity == "sparse" else ""
        sc = f" x .{self.scale}" if self.scale else ""
        return (
            f"tcgen05.mma{ws}{sp}.cta_group::{self.cta_group}.kind::{self.kind} "
            f"D.{self.dtype} A.{self.atype} B.{self.btype}{sc} {self.M}x{self.N}x{self.K}"
        )


@dataclass(frozen=True)
class Field:
    """A bit field of a descriptor."""

    name: str
    lo: int
    hi: int
    reserved: bool = False
    fixed: int | None = None
    encoded: bool = False
    codes: dict[str, dict[str, int]] = field(default_factory=dict)  # kind ("all") -> symbol -> code
    values: dict[str, tuple[int, ...]] = field(default_factory=dict)  # kind ("all") -> allowed ints
    dim: str | None = None
    shift: int = 0
    note: str | None = None
    upper: tuple[int, int] | None = None  # where the code's high bits sit, when the field is split (ISA 9.4 K)
    requires: dict[str, tuple[Requirement, ...]] = field(default_factory=dict)  # symbol -> targets it needs

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1 + (self.upper[1] - self.upper[0] + 1 if self.upper else 0)

    @property
    def bits(self) -> tuple[int, ...]:
        """Every descriptor bit the field owns, its code's least significant first."""
        return tuple(range(self.lo, self.hi + 1)) + (tuple(range(self.upper[0], self.upper[1] + 1)) if self.upper else ())

    @property
    def mask(self) -> int:
        return sum(1 << b for b in self.bits)

    @property
    def where(self) -> str:
        """``bit 3`` / ``bits 7-9`` / ``bits 31, 3`` (a split field: low part first)."""
        part = f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"
        if self.upper:
            up = f"{self.upper[0]}" if self.upper[0] == self.upper[1] else f"{self.upper[0]}-{self.upper[1]}"
            return f"bits {part} (low), {up} (high)"
        return f"bit {part}" if self.lo == self.hi else f"bits {part}"

    def get(self, value: int) -> int:
        return sum(((value >> b) & 1) << i for i, b in enumerate(self.bits))

    def put(self, code: int) -> int:
        """``code`` placed in the field's bits (the inverse of :meth:`get`)."""
        return sum(((code >> i) & 1) << b for i, b in enumerate(self.bits))

    def codes_for(self, kind: str | None) -> dict[str, int] | None:
        if not self.codes:
            return None
        if kind is None or "all" in self.codes:
            return self.codes.get("all") or self.codes.get(kind or "", {})
        return self.codes.get(kind, {})

    def values_for(self, kind: str) -> tuple[int, ...] | None:
        if not self.values:
            return None
        return self.values.get("all", self.values.get(kind, ()))


class _BitFields:
    """A descriptor made of named bit fields."""

    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


@dataclass(frozen=True)
class DescFormat(_BitFields):
    """One instruction-descriptor layout (§9.7.16.4.2), shared by the kinds it names."""

    name: str
    table: str
    kinds: tuple[str, ...]
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class SmemDescSpec(_BitFields):
    section: str
    table: str
    mask: int
    shift: int
    fields: tuple[Field, ...]
    pattern_boundary: dict[str, int]
    aligned16: tuple[str, ...]
    absolute_requires: tuple[Requirement, ...]
    absolute_swizzle: tuple[str, ...]
    absolute_transpose: bool
    absolute_base_offset: int


@dataclass(frozen=True)
class ScaleForm:
    qualifier: str
    kinds: tuple[str, ...]
    vec: int | None
    block: int | None
    scale_types: tuple[str, ...]
    requires: tuple[Requirement, ...]


@dataclass(frozen=True)
class CollectorB:
    """``.collector::b::*`` (ISA 9.4): the usages, the forms that take them and where."""

    section: str
    min_ptx: PtxVersion
    usages: tuple[str, ...]
    forms: tuple[str, ...]
    requires: tuple[Requirement, ...]

    def valid_on(self, target: Target, ptx: PtxVersion | None = None) -> str | None:
        """None when ``.collector::b::*`` is valid PTX for ``target`` at ``.version ptx``; else why not."""
        if ptx is not None and ptx < self.min_ptx:
            return f".collector::b::* needs .version {self.min_ptx}"
        return why_not(self.requires, target, ptx, ".collector::b::*")


@dataclass(frozen=True)
class LdStShape:
    shape: str
    lanes: int
    bits: int
    regs: int
    max_num: int
    figure: str
    halves: int = 1
    map: dict[str, str] | None = None
    note: str | None = None

    def nums(self, all_nums: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(n for n in all_nums if n <= self.max_num)


@dataclass(frozen=True)
class LdRedForm:
    """One tcgen05.ld.red instruction: its text and what its operands are."""

    instruction: str
    shape: str
    num: int
    regs: int  # .b32 destination registers per thread
    float: bool
    half_split: bool  # .16x32bx2 takes the immHalfSplitoff immediate


@dataclass(frozen=True)
class LdRed:
    """tcgen05.ld.red (§9.7.16.8.3): every form its syntax allows, and where."""

    section: str
    min_ptx: PtxVersion
    shapes: tuple[LdStShape, ...]
    nums: tuple[int, ...]
    red_ops: tuple[str, ...]
    float_type: str
    float_qualifiers: tuple[str, ...]
    int_types: tuple[str, ...]
    requires: tuple[Requirement, ...]
    sources: tuple[dict, ...]

    def forms(self) -> list[LdRedForm]:
        """``tcgen05.ld.red.sync.aligned.shape.num.redOp{.abs}{.NaN}.f32`` and ``....redOp.type``, every value."""
        out = []
        quals = [()]
        for q in self.float_qualifiers:  # each optional qualifier present or not, in the syntax's order
            quals = [*quals, *[(*x, q) for x in quals]]
        quals.sort(key=lambda qs: [self.float_qualifiers.index(q) for q in qs])
        for shape in self.shapes:
            for num in shape.nums(self.nums):
                head = f"tcgen05.ld.red.sync.aligned.{shape.shape}.x{num}"
                for op in self.red_ops:
                    for qs in quals:
                        text = ".".join([head, op, *qs, self.float_type])
                        out.append(LdRedForm(text, shape.shape, num, shape.regs * num, True, shape.halves > 1))
                    for t in self.int_types:
                        out.append(LdRedForm(f"{head}.{op}.{t}", shape.shape, num, shape.regs * num, False,
                                             shape.halves > 1))
        return out

    def valid_on(self, target: Target | str, ptx: PtxVersion | None = None) -> str | None:
        """Why PTX of ``target``/``.version`` must refuse tcgen05.ld.red, or None."""
        target = parse_target(target) if isinstance(target, str) else target
        if ptx is not None and ptx < self.min_ptx:
            return f"tcgen05.ld.red needs .version {self.min_ptx} (PTX ISA notes)"
        return why_not(self.requires, target, ptx, "tcgen05.ld.red")


# --- spcompress / spdecompress (ISA 9.4, §9.7.10.30-31) ----------------------------------------------------
# Dense <-> structured-sparse vectors of 8- or 16-bit elements in .b32 registers.  The operand vector sizes are the
# ISA's formulas (Tables 37 and 39 of ISA 9.4) and spdecompress's validity conditions are inequalities over the
# qualifiers, so the forms are enumerated from the syntax and judged here; ptxconf toolchains sp-vectors asks
# ptxas about every one.

REGISTER_LIMIT = 253  # "vecSize(...) + vecSize(...) + vecSize(...) <= 253" (both instructions)


@dataclass(frozen=True)
class SpVectorForm:
    """One spelling of spcompress or spdecompress: its operand vector sizes and why the ISA forbids it (or None)."""

    instruction: str
    op: str  # "spcompress" | "spdecompress"
    elemsize: int
    idxsize: int
    src: int  # the .sp::src:target factor
    target: int
    num: int
    data: int  # .b32 registers of the dense vector
    cdata: int  # ... of the compressed vector
    mdata: int  # ... of the metadata
    invalid: str | None = None


@dataclass(frozen=True)
class SparseVectors:
    """The transcription: qualifier values per instruction, targets and .version, and the public sources."""

    sections: dict[str, str]  # instruction -> section
    min_ptx: PtxVersion
    requires: tuple  # tuple[Requirement, ...] of spec.py
    elemsize: tuple[int, ...]
    idxsize: tuple[int, ...]
    num: tuple[int, ...]
    spfactor: dict[str, tuple[tuple[int, int], ...]]  # instruction -> (src, target) pairs
    spdesc: dict  # the spcompress descriptor's fields (Table 38), as transcribed
    sources: tuple[dict, ...]

    def forms(self) -> list[SpVectorForm]:
        """Every (.elemsize, .idxsize, .spfactor, .num) of both syntaxes, valid or not."""
        out = []
        for op in ("spcompress", "spdecompress"):
            for e in self.elemsize:
                for i in self.idxsize:
                    for s, t in self.spfactor[op]:
                        for n in self.num:
                            out.append(_form(op, e, i, s, t, n))
        return out

    def valid_on(self, target: Target, ptx: PtxVersion | None = None) -> str | None:
        """Why PTX of ``target``/``.version`` must refuse the instructions (every form alike), or None."""
        if ptx is not None and ptx < self.min_ptx:
            return f"spcompress/spdecompress need .version {self.min_ptx} (PTX ISA notes)"
        return why_not(self.requires, target, ptx, "spcompress/spdecompress")


def _form(op: str, e: int, i: int, s: int, t: int, n: int) -> SpVectorForm:
    text = f"{op}.b{e}.b{i}.sp::{s}:{t}.x{n}"
    if op == "spcompress":  # Table 37: data 2 * num, cdata num, mdata ceil(num * idxsize / elemsize)
        data, cdata, mdata = 2 * n, n, math.ceil(n * i / e)
        why = None
    else:  # Table 39: mdata ceil(src * idx * num / 32), cdata ceil(src * elem * num / 32), data ceil(tgt * elem * num / 32)
        mdata, cdata, data = math.ceil(s * i * n / 32), math.ceil(s * e * n / 32), math.ceil(t * e * n / 32)
        why = _spdecompress_rule(e, i, s, t, n)
    if why is None and data + cdata + mdata > REGISTER_LIMIT:
        why = f"the operands take {data + cdata + mdata} .b32 registers; at most {REGISTER_LIMIT}"
    return SpVectorForm(text, op, e, i, s, t, n, data, cdata, mdata, why)


def _spdecompress_rule(e: int, i: int, s: int, t: int, n: int) -> str | None:
    """The first of §9.7.10.31's conditions the form breaks (None: it meets them all)."""
    if s * e > 32:
        return f"num_src * .elemsize = {s * e} > 32: one .num iteration's input must fit a .b32 register"
    if t > 1 << i:
        return f".b{i} indices cannot reach num_target = {t} elements"
    if t * e * n < 32:
        return f"num_target * .elemsize * .num = {t * e * n} < 32: data must be at least one register"
    if t * e * n > 4096:
        return f"num_target * .elemsize * .num = {t * e * n} > 4096: data may be at most 128 registers"
    return None


@dataclass
class Tcgen05Spec:
    """The loaded tcgen05 document."""

    family: str
    document: str
    section: str
    file: str
    kinds: dict[str, Kind]
    rows: tuple[Row, ...]
    table39_section: str
    formats: dict[str, DescFormat]
    idesc_section: str
    smem: SmemDescSpec
    scale_forms: tuple[ScaleForm, ...]
    ldst_section: str
    ldst_nums: tuple[int, ...]
    ldst_min_ptx: PtxVersion
    ldst_shapes: tuple[LdStShape, ...]
    syntax: tuple[dict, ...]
    scale_aliases: tuple[dict, ...]
    errata: tuple[dict, ...]
    tmem_operands: dict = field(default_factory=dict)  # metadata / scale-factor placement in Tensor Memory
    ld_red: LdRed | None = None  # tcgen05.ld.red, where the document transcribes it
    collector_b: CollectorB | None = None  # .collector::b::*, where the document transcribes it
    sparse_vectors: SparseVectors | None = None  # spcompress / spdecompress (ISA 9.4), where transcribed
    pending: tuple[dict, ...] = ()  # additions known but not transcribed, and why

    # --- Table 39 ---------------------------------------------------------------------------

    def format_for(self, kind: str) -> DescFormat:
        for f in self.formats.values():
            if kind in f.kinds:
                return f
        raise KeyError(f"no instruction-descriptor format names .kind::{kind}")

    def _pairs(self, kind: str, ab: tuple[str, ...]) -> list[tuple[str, str]]:
        if self.kinds[kind].ab_pairing == "same":
            return [(t, t) for t in ab]
        return list(itertools.product(ab, ab))

    def _scales(self, kind: str) -> tuple[str | None, ...]:
        k = self.kinds[kind]
        return k.scale_types if k.block_scaled else (None,)

    def row_tuples(self, row: Row) -> list[MmaTuple]:
        if row.invalid:
            return []
        return [
            MmaTuple(row.kind, row.ws, cg, sp, row.dtype or "", a, b, m, n, k, sc)
            for cg in row.cta_groups
            for sp in row.sparsities
            for a, b in self._pairs(row.kind, row.ab)
            for m in row.M
            for n in row.N
            for k in row.K
            for sc in self._scales(row.kind)
        ]

    @cached_property
    def tuples(self) -> tuple[MmaTuple, ...]:
        """Every valid tuple of Table 39, in table order."""
        return tuple(t for r in self.rows for t in self.row_tuples(r))

    @cached_property
    def _tuple_rows(self) -> dict[MmaTuple, Row]:
        return {t: r for r in self.rows for t in self.row_tuples(r)}

    def row_of(self, t: MmaTuple) -> Row | None:
        return self._tuple_rows.get(t)

    def counts(self) -> dict[str, int]:
        c = Counter(t.kind for t in self.tuples)
        return {k: c.get(k, 0) for k in self.kinds}

    def explain(self, t: MmaTuple) -> str | None:
        """None when Table 39 allows ``t``; else the row or rule that forbids it."""
        where = f"§{self.table39_section} Table 39"
        if t.kind not in self.kinds:
            return f"unknown .kind::{t.kind}; known: {', '.join(self.kinds)}"
        rows = [r for r in self.rows if r.covers(t.kind, t.ws, t.cta_group, t.sparsity)]
        if not rows:
            return (
                f"{where} has no row for .kind::{t.kind} {'.ws' if t.ws else 'no .ws'} "
                f"cta_group {t.cta_group} {t.sparsity}"
            )
        bad = [r for r in rows if r.invalid]
        if bad:
            return f"{bad[0].invalid} ({self.file}:{bad[0].line})"
        kind = self.kinds[t.kind]
        dt_rows = [r for r in rows if r.dtype == t.dtype]
        if not dt_rows:
            return f"{where}: .kind::{t.kind} with these qualifiers takes dtype {', '.join(sorted({r.dtype for r in rows if r.dtype}))}, not .{t.dtype}"
        ab_rows = [r for r in dt_rows if t.atype in r.ab and t.btype in r.ab]
        if not ab_rows:
            allowed = sorted({a for r in dt_rows for a in r.ab})
            return f"{where}: .kind::{t.kind} dtype .{t.dtype} takes atype/btype {', '.join(allowed)}; got .{t.atype}/.{t.btype}"
        if kind.ab_pairing == "same" and t.atype != t.btype:
            return f"{where}: .kind::{t.kind} takes one type for A and B (e.g. .f16 x .f16 or .bf16 x .bf16); got .{t.atype} x .{t.btype}"
        if kind.block_scaled:
            if t.scale not in kind.scale_types:
                return f"{where}: .kind::{t.kind} takes scale type {', '.join(kind.scale_types)}; got {t.scale}"
        elif t.scale is not None:
            return f"{where}: .kind::{t.kind} is not block-scaled; no scale type"
        for what in ("M", "N", "K"):
            v = getattr(t, what)
            cand = [r for r in ab_rows if v in getattr(r, what)]
            if not cand:
                allowed = sorted({x for r in ab_rows for x in getattr(r, what)})
                return f"{where}: {what} = {v} not allowed here; {what} in {_ranges(allowed)}"
            ab_rows = cand
        return None

    def requirements(self, t: MmaTuple) -> tuple[Requirement, ...]:
        """Targets on which ``t`` may run (row narrowing, then the kind's Target ISA notes)."""
        row = self.row_of(t)
        if row is not None and row.requires:
            return row.requires
        kind = self.kinds[t.kind]
        if t.sparsity == "sparse" and kind.sparse_requires:
            return kind.sparse_requires
        return kind.requires

    def min_ptx(self, t: MmaTuple) -> PtxVersion:
        scale = self.kinds[t.kind].scale_requires.get(t.scale or "", ())
        return max([self.kinds[t.kind].min_ptx] + [min(r.min_ptx for r in reqs) for reqs in (self.requirements(t), scale) if reqs])

    def valid_on(self, t: MmaTuple, target: Target | str, ptx: PtxVersion | str | None = None) -> str | None:
        """None when ``t`` is valid PTX for ``target`` at ``.version ptx``; else why not."""
        reason = self.explain(t)
        if reason:
            return reason
        target = parse_target(target) if isinstance(target, str) else target
        ptx = PtxVersion.parse(ptx) if isinstance(ptx, str) else ptx
        kind = self.kinds[t.kind]
        if ptx is not None and ptx < kind.min_ptx:
            return f".kind::{t.kind} needs .version {kind.min_ptx} (PTX ISA notes)"
        if t.scale in kind.scale_requires:
            reason = why_not(kind.scale_requires[t.scale], target, ptx, f"scale type .{t.scale}")
            if reason:
                return reason
        return why_not(self.requirements(t), target, ptx, str(t))

    def combos(self) -> list[tuple[str, bool, int, str]]:
        """Every (kind, ws, cta_group, sparsity) Table 39 prints, valid or not."""
        out = []
        for r in self.rows:
            for cg in r.cta_groups:
                for sp in r.sparsities:
                    key = (r.kind, r.ws, cg, sp)
                    if key not in out:
                        out.append(key)
        return out

    def combo_reason(self, kind: str, ws: bool, cta_group: int, sparsity: str) -> str | None:
        rows = [r for r in self.rows if r.covers(kind, ws, cta_group, sparsity)]
        if not rows:
            return f"§{self.table39_section} Table 39 has no row for this combination"
        bad = [r for r in rows if r.invalid]
        return f"{bad[0].invalid} ({self.file}:{bad[0].line})" if bad else None


def _ranges(values: list[int]) -> str:
    if len(values) <= 6:
        return "{" + ", ".join(map(str, values)) + "}"
    return "{" + ", ".join(map(str, values[:3])) + f", ..., {values[-1]}" + "}"


# --- loading -------------------------------------------------------------------------------

_NRANGE = re.compile(r"^(\d+)\.\.(\d+)/(\d+)$")


def _reqs(items: list[dict] | None, path: tuple, src: Source) -> tuple[Requirement, ...] | None:
    if items is None:
        return None
    out = []
    for i, r in enumerate(items):
        try:
            out.append(Requirement(parse_target(r["target"]), PtxVersion.parse(r["min_ptx"])))
        except ValueError as exc:
            raise src.error(path + (i, "target"), str(exc)) from None
        if out[-1].min_ptx < out[-1].target.min_ptx:
            raise src.error(path + (i, "min_ptx"), f"{r['target']} cannot be named before .version {out[-1].target.min_ptx}")
    return tuple(out)


def _as_tuple(v: Any) -> tuple:
    return tuple(v) if isinstance(v, list) else (v,)


def _n_values(items: list, path: tuple, src: Source) -> tuple[int, ...]:
    out: list[int] = []
    for i, it in enumerate(items):
        if isinstance(it, int):
            vals = [it]
        else:
            m = _NRANGE.match(it)
            lo, hi, step = (int(x) for x in m.groups())  # the schema guarantees the pattern
            if step <= 0 or hi < lo or (hi - lo) % step:
                raise src.error(path + (i,), f"range {it!r} does not step from {lo} to {hi} in steps of {step}")
            vals = list(range(lo, hi + 1, step))
        for v in vals:
            if out and v <= out[-1]:
                raise src.error(path + (i,), f"values must increase; {v} follows {out[-1]}")
            out.append(v)
    return tuple(out)


def _field(body: dict, path: tuple, src: Source, kinds: tuple[str, ...] | None) -> Field:
    lo, hi = body["bits"]
    if hi < lo:
        raise src.error(path + ("bits",), f"bits [{lo}, {hi}] run backwards")
    upper = tuple(body["upper_bits"]) if body.get("upper_bits") else None
    if upper and upper[1] < upper[0]:
        raise src.error(path + ("upper_bits",), f"bits [{upper[0]}, {upper[1]}] run backwards")
    f = Field(
        name=body["name"],
        lo=lo,
        hi=hi,
        reserved=bool(body.get("reserved")),
        fixed=body.get("fixed"),
        encoded=bool(body.get("encoded")),
        codes={str(k): {str(s): int(c) for s, c in v.items()} for k, v in (body.get("codes") or {}).items()}
        if body.get("codes") and all(isinstance(v, dict) for v in body["codes"].values())
        else ({"all": {str(s): int(c) for s, c in body["codes"].items()}} if body.get("codes") else {}),
        values={str(k): tuple(v) for k, v in (body.get("values") or {}).items()},
        dim=body.get("dim"),
        shift=body.get("shift", 0),
        note=body.get("note"),
        upper=upper,  # type: ignore[arg-type]
        requires={str(sym): _reqs(reqs, path + ("requires", sym), src) or ()
                  for sym, reqs in (body.get("requires") or {}).items()},
    )
    known = {sym for table in f.codes.values() for sym in table}
    for sym in f.requires:
        if sym not in known:
            raise src.error(path + ("requires", sym), f"{sym!r} is no code of this field ({', '.join(sorted(known))})")
    limit = 1 << f.width
    for k, table in f.codes.items():
        if kinds is not None and k != "all" and k not in kinds:
            raise src.error(path + ("codes", k), f"kind {k!r} is not one this format names ({', '.join(kinds)})")
        for sym, code in table.items():
            if not 0 <= code < limit:
                raise src.error(path + ("codes", k, sym), f"code {code} does not fit {f.width} bit(s)")
    for k, vals in f.values.items():
        for v in vals:
            if not 0 <= v < limit:
                raise src.error(path + ("values", k), f"value {v} does not fit {f.width} bit(s)")
    if f.fixed is not None and not 0 <= f.fixed < limit:
        raise src.error(path + ("fixed",), f"fixed value {f.fixed} does not fit {f.width} bit(s)")
    return f


def _check_cover(fields: tuple[Field, ...], bits: int, path: tuple, src: Source) -> None:
    """Fields tile the descriptor: no overlap, no gap."""
    owner: dict[int, str] = {}
    for i, f in enumerate(fields):
        for b in f.bits:
            if b >= bits:
                raise src.error(path + (i, "bits"), f"bit {b} is outside the {bits}-bit descriptor")
            if b in owner:
                raise src.error(path + (i, "bits"), f"bit {b} belongs to both {owner[b]} and {f.name}")
            owner[b] = f.name
    missing = [b for b in range(bits) if b not in owner]
    if missing:
        raise src.error(path, f"bit(s) {missing} belong to no field")


def load_document(doc: dict, src: Source) -> Tcgen05Spec:
    """Schema-check and build a ``schema: tcgen05/1`` document; raise SpecError naming file:line:field."""
    found = first_schema_error(_validator(), doc, src)
    if found:
        path, err = found
        msg = err.message.replace("Additional properties are not allowed", "unknown key")
        if err.validator == "oneOf" and path[:2] == ("table39", "rows"):
            msg = "a row gives either `invalid` or all of dtype, ab, M, N, K"
        raise src.error(path, msg)

    kinds = {}
    for name, k in doc["kinds"].items():
        p = ("kinds", name)
        kinds[name] = Kind(
            name=name,
            section=k["section"],
            min_ptx=PtxVersion.parse(k["min_ptx"]),
            ab_pairing=k["ab_pairing"],
            requires=_reqs(k["requires"], p + ("requires",), src) or (),
            sparse_requires=_reqs(k.get("sparse_requires"), p + ("sparse_requires",), src),
            block_scaled=bool(k.get("block_scaled")),
            scale_types=tuple(k.get("scale_types") or ()),
            scale_requires={str(t): _reqs(r, p + ("scale_requires", t), src) or ()
                            for t, r in (k.get("scale_requires") or {}).items()},
        )
        if kinds[name].block_scaled and not kinds[name].scale_types:
            raise src.error(p, "a block-scaled kind needs scale_types")
        for t in kinds[name].scale_requires:
            if t not in kinds[name].scale_types:
                raise src.error(p + ("scale_requires", t), f"{t!r} is not one of scale_types ({', '.join(kinds[name].scale_types)})")

    formats: dict[str, DescFormat] = {}
    claimed: dict[str, str] = {}
    for fname, body in doc["idesc"]["formats"].items():
        p = ("idesc", "formats", fname)
        fk = tuple(body["kinds"])
        for k in fk:
            if k not in kinds:
                raise src.error(p + ("kinds",), f"unknown kind {k!r}; kinds: {', '.join(kinds)}")
            if k in claimed:
                raise src.error(p + ("kinds",), f"kind {k} already has format {claimed[k]}")
            claimed[k] = fname
        fields = tuple(_field(f, p + ("fields", i), src, fk) for i, f in enumerate(body["fields"]))
        _check_cover(fields, 32, p + ("fields",), src)
        names = [f.name for f in fields]
        for need in ("atype", "btype", "m", "n", "sparsity"):
            if need not in names:
                raise src.error(p + ("fields",), f"format has no {need!r} field")
        formats[fname] = DescFormat(fname, body["table"], fk, fields)
    for k in kinds:
        if k not in claimed:
            raise src.error(("idesc", "formats"), f"no instruction-descriptor format names kind {k}")

    rows = []
    for i, r in enumerate(doc["table39"]["rows"]):
        p = ("table39", "rows", i)
        if r["kind"] not in kinds:
            raise src.error(p + ("kind",), f"unknown kind {r['kind']!r}; kinds: {', '.join(kinds)}")
        row = Row(
            index=i,
            line=src.line(p),
            kind=r["kind"],
            ws=r["ws"],
            cta_groups=_as_tuple(r["cta_group"]),
            sparsities=_as_tuple(r["sparsity"]),
            dtype=r.get("dtype"),
            ab=tuple(r.get("ab") or ()),
            M=tuple(r.get("M") or ()),
            N=_n_values(r["N"], p + ("N",), src) if "N" in r else (),
            K=tuple(r.get("K") or ()),
            requires=_reqs(r.get("requires"), p + ("requires",), src),
            invalid=r.get("invalid"),
            note=r.get("note"),
            descriptor=r.get("descriptor"),
        )
        for prev in rows:
            for cg in row.cta_groups:
                for sp in row.sparsities:
                    if prev.covers(row.kind, row.ws, cg, sp) and (prev.invalid or row.invalid or prev.dtype == row.dtype) and (
                        prev.invalid or row.invalid or (set(prev.K) & set(row.K) and set(prev.M) & set(row.M))
                    ):
                        raise src.error(p, f"overlaps row {prev.index} (line {prev.line}) for {row.kind} cta_group {cg} {sp}")
        rows.append(row)

    sd = doc["smem_desc"]
    sfields = tuple(_field(f, ("smem_desc", "fields", i), src, None) for i, f in enumerate(sd["fields"]))
    _check_cover(sfields, 64, ("smem_desc", "fields"), src)
    am = sd["absolute_mode"]
    smem = SmemDescSpec(
        section=sd["section"],
        table=sd["table"],
        mask=sd["encode"]["mask"],
        shift=sd["encode"]["shift"],
        fields=sfields,
        pattern_boundary=dict(sd["pattern_boundary"]),
        aligned16=tuple(sd["aligned16"]),
        absolute_requires=_reqs(am["requires"], ("smem_desc", "absolute_mode", "requires"), src) or (),
        absolute_swizzle=tuple(am["swizzle"]),
        absolute_transpose=am["transpose"],
        absolute_base_offset=am["base_offset"],
    )
    swz = smem.field("swizzle").codes_for(None) or {}
    for i, name in enumerate(smem.absolute_swizzle):
        if name not in swz:
            raise src.error(("smem_desc", "absolute_mode", "swizzle", i), f"unknown swizzle {name!r}; known: {', '.join(swz)}")
    for name in smem.pattern_boundary:
        if name not in swz:
            raise src.error(("smem_desc", "pattern_boundary", name), f"unknown swizzle {name!r}; known: {', '.join(swz)}")

    forms = []
    for i, f in enumerate(doc["block_scale"]["forms"]):
        p = ("block_scale", "forms", i)
        for k in f["kinds"]:
            if k not in kinds or not kinds[k].block_scaled:
                raise src.error(p + ("kinds",), f"{k!r} is not a block-scaled kind")
        forms.append(
            ScaleForm(f["qualifier"], tuple(f["kinds"]), f.get("vec"), f.get("block"), tuple(f["scale_types"]),
                      _reqs(f["requires"], p + ("requires",), src) or ())
        )

    ld = doc["ldst_shapes"]
    shapes = []
    for i, s in enumerate(ld["shapes"]):
        p = ("ldst_shapes", "shapes", i)
        shape = LdStShape(s["shape"], s["lanes"], s["bits"], s["regs"], s["max_num"], s["figure"], s.get("halves", 1), s.get("map"), s.get("note"))
        # One warp of 32 threads x .b32 registers carries lanes x bits per .num.
        if shape.lanes * shape.bits * shape.halves != 32 * 32 * shape.regs:
            raise src.error(p + ("regs",), f"{shape.lanes} lanes x {shape.bits} bits x {shape.halves} need {shape.lanes * shape.bits * shape.halves // 1024} .b32 per thread, not {shape.regs}")
        if shape.max_num not in ld["num"]:
            raise src.error(p + ("max_num",), f"max_num {shape.max_num} is not a .num value")
        shapes.append(shape)

    ld_red = None
    if "ld_red" in doc:
        r = doc["ld_red"]
        by_shape = {sh.shape: sh for sh in shapes}
        red_shapes = []
        for i, name in enumerate(r["shapes"]):
            if name not in by_shape:
                raise src.error(("ld_red", "shapes", i), f"{name!r} is not a shape of ldst_shapes")
            red_shapes.append(by_shape[name])
        if r["min_num"] not in ld["num"]:
            raise src.error(("ld_red", "min_num"), f"min_num {r['min_num']} is not a .num value")
        ld_red = LdRed(r["section"], PtxVersion.parse(r["min_ptx"]), tuple(red_shapes),
                       tuple(n for n in ld["num"] if n >= r["min_num"]), tuple(r["red_ops"]), r["float"]["type"],
                       tuple(r["float"]["qualifiers"]), tuple(r["int_types"]),
                       _reqs(r["requires"], ("ld_red", "requires"), src) or (), tuple(r["sources"]))

    collector_b = None
    if "collector_b" in doc:
        c = doc["collector_b"]
        collector_b = CollectorB(c["section"], PtxVersion.parse(c["min_ptx"]), tuple(c["usages"]), tuple(c["forms"]),
                                 _reqs(c["requires"], ("collector_b", "requires"), src) or ())

    sparse_vectors = None
    if "sparse_vectors" in doc:
        v = doc["sparse_vectors"]
        p = ("sparse_vectors",)
        factors = {}
        for op, items in v["spfactor"].items():
            pairs = []
            for i, f in enumerate(items):
                src_n, tgt_n = (int(x) for x in f.split(":"))
                if not 0 < src_n < tgt_n:
                    raise src.error(p + ("spfactor", op, i), f"{f}: num_src must be below num_target")
                pairs.append((src_n, tgt_n))
            factors[op] = tuple(pairs)
        spdesc = tuple(_field(f, p + ("spdesc", i), src, None) for i, f in enumerate(v["spdesc"]))
        _check_cover(spdesc, 32, p + ("spdesc",), src)
        sparse_vectors = SparseVectors(dict(v["sections"]), PtxVersion.parse(v["min_ptx"]),
                                       _reqs(v["requires"], p + ("requires",), src) or (), tuple(v["elemsize"]),
                                       tuple(v["idxsize"]), tuple(v["num"]), factors,
                                       {f.name: f for f in spdesc}, tuple(v["sources"]))

    for i, s in enumerate(doc.get("syntax") or ()):
        for k in s["kinds"]:
            if k not in kinds:
                raise src.error(("syntax", i, "kinds"), f"unknown kind {k!r}")

    return Tcgen05Spec(
        family=doc["family"],
        document=doc["document"],
        section=doc["section"],
        file=src.file,
        kinds=kinds,
        rows=tuple(rows),
        table39_section=doc["table39"]["section"],
        formats=formats,
        idesc_section=doc["idesc"]["section"],
        smem=smem,
        scale_forms=tuple(forms),
        ldst_section=ld["section"],
        ldst_nums=tuple(ld["num"]),
        ldst_min_ptx=PtxVersion.parse(ld["min_ptx"]),
        ldst_shapes=tuple(shapes),
        syntax=tuple(doc.get("syntax") or ()),
        scale_aliases=tuple(doc.get("scale_aliases") or ()),
        errata=tuple(doc.get("errata") or ()),
        tmem_operands=dict(doc.get("tmem_operands") or {}),
        ld_red=ld_red,
        collector_b=collector_b,
        sparse_vectors=sparse_vectors,
        pending=tuple(doc.get("pending") or ()),
    )


def load_tcgen05(directory: str | Path | None = None) -> Tcgen05Spec:
    """The tcgen05 document of a spec directory (default: the tree's specs/)."""
    from ptxconf.isa.loader import load_specs

    specs = load_specs(directory)
    for doc in specs.documents.values():
        if isinstance(doc, Tcgen05Spec):
            return doc
    raise SpecError(str(directory or "specs"), None, "", f"no spec file with schema {SCHEMA_ID}")
