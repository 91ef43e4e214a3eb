"""specs/wgmma.yaml (schema "wgmma/1"): wgmma.mma_async forms, fragments, smem layouts, descriptor.

The document gives, once each: the register fragments over a warpgroup (D is one layout
for every N: ``N`` is bound per form, its shape and element count are formulas), the
shared-memory matrix layouts as formulas ``(mn, k) -> byte offset`` per major-ness and
swizzle mode, the swizzle as an address formula, and the descriptor's bit fields.  Forms
are crossed from axes.  Each form becomes a :class:`WgmmaVariant` (a ``Variant``), so
``specs list``, ``--select 'wgmma*'`` and the runner see them like any other variant.

Invariants checked on load: every fragment covers its tile exactly once for every N a
form uses; every (major-ness, swizzle, element width) layout with its canonical LBO/SBO
is one-to-one on a 64 x K and K x 256 tile and the swizzle is a bijection inside each
repeat; descriptor fields do not overlap and fit 64 bits; imm-trans only where the
element type is 16 bits wide.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.isa.expr import Expr, ExprError, evaluate, parse
from ptxconf.isa.model import Fragment, Layout, Operand, Variant
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion, parse_target
from ptxconf.isa.yamlsrc import Source, check_schema, schema_validator

__all__ = ["WgmmaVariant", "WgmmaSpec", "SmemSpec", "DescSpec", "load_document", "load_wgmma", "canonical_strides"]

_SCHEMA = Path(__file__).with_name("schema.json")
MAJORS = ("K", "MN")


@lru_cache(maxsize=1)
def _validator():
    return schema_validator(_SCHEMA)


@dataclass(frozen=True)
class WgmmaVariant(Variant):
    """One wgmma.mma_async form: ``ptx`` is the instruction string; ``id`` adds /ss or /rs."""

    ptx: str = ""
    atype: str = ""
    btype: str = ""
    dtype: str = ""
    N: int = 0
    K: int = 0
    a_src: str = "shared"  # or "registers"
    immediates: tuple[str, ...] = ()
    satfinite: bool = False
    bitop: str | None = None
    doc: object | None = field(default=None, compare=False, hash=False, repr=False)  # the WgmmaSpec it came from

    @property
    def shape(self) -> tuple[int, int, int]:
        return 64, self.N, self.K

    @property
    def bits(self) -> int:
        return TYPES[self.atype].bits

    def can_transpose(self, operand: str) -> bool:
        return f"trans_{operand.lower()}" in self.immediates and not (operand == "A" and self.a_src == "registers")


@dataclass(frozen=True)
class SmemSpec:
    section: str
    swizzles: Mapping[str, Mapping[str, int]]  # name -> code, width, repeat
    let: Mapping[str, Expr]
    offset: Mapping[str, Mapping[str, Expr]]  # major -> none/swizzled -> formula
    swizzle: Expr
    alignment: int
    transpose: Mapping[int, str] = field(default_factory=lambda: {0: "K", 1: "MN"})
    notes: tuple[str, ...] = ()
    errata: tuple[Mapping[str, str], ...] = ()

    def major_of(self, trans: int) -> str:
        """Major-ness of a matrix read with imm-trans = ``trans``."""
        return self.transpose[int(trans)]

    def code_of(self, name: str) -> int:
        return int(self.swizzles[name]["code"])

    def name_of(self, code: int) -> str | None:
        names = _NAMES.get(id(self))
        if names is None or names[0] is not self:  # every mode by code, once per layout spec
            table: dict[int, str] = {}
            for n, s in self.swizzles.items():
                table.setdefault(int(s["code"]), n)
            names = _NAMES[id(self)] = (self, table)
        return names[1].get(int(code))

    def width(self, name: str) -> int:
        return int(self.swizzles[name]["width"])

    def offsets(self, major: str, swizzle: str, mn, k, bits: int, lbo: int, sbo: int) -> np.ndarray:
        """Byte offsets (before the swizzle) of elements (mn, k), broadcast; each distinct layout is
        evaluated once (every case and every comparison asks again with the same tile).  A stride the
        formula never reads (LBO of K-major swizzled layouts) does not make a layout distinct."""
        mn, k = np.asarray(mn, dtype=np.int64), np.asarray(k, dtype=np.int64)
        uses = self.strides_read(major, swizzle)
        key = (id(self), major, swizzle, int(bits), int(lbo) if "LBO" in uses else None,
               int(sbo) if "SBO" in uses else None, mn.shape, k.shape, mn.tobytes(), k.tobytes())
        hit = _OFFSETS.get(key)
        if hit is None:
            if len(_OFFSETS) > 4096:
                _OFFSETS.clear()
            hit = _OFFSETS[key] = (self, self._offsets(major, swizzle, mn, k, bits, lbo, sbo))
        return hit[1].copy()

    def strides_read(self, major: str, swizzle: str) -> frozenset[str]:
        """Which of LBO and SBO the offset formula of (major, swizzle) reads, through its bindings too."""
        key = (id(self), major, swizzle == "none")
        hit = _READS.get(key)
        if hit is None or hit[0] is not self:
            seen: set[str] = set()
            todo = list(self.offset[major]["none" if swizzle == "none" else "swizzled"].names())
            while todo:
                name = todo.pop()
                if name not in seen:
                    seen.add(name)
                    if name in self.let:
                        todo.extend(self.let[name].names())
            hit = _READS[key] = (self, frozenset(seen & {"LBO", "SBO"}))
        return hit[1]

    def _offsets(self, major: str, swizzle: str, mn, k, bits: int, lbo: int, sbo: int) -> np.ndarray:
        env: dict[str, Any] = dict(self.let)
        env.update(mn=np.asarray(mn, dtype=np.int64), k=np.asarray(k, dtype=np.int64), bits=bits, LBO=lbo, SBO=sbo,
                   W=self.width(swizzle))
        expr = self.offset[major]["none" if swizzle == "none" else "swizzled"]
        return evaluate(expr, env)

    def swizzled(self, swizzle: str, addr, base_offset: int = 0) -> np.ndarray:
        """The absolute shared address the hardware reads for a pre-swizzle address, with the
        descriptor's base offset.  The formula is evaluated once per (mode, base offset) over every
        address up to the highest asked for, and looked up from then on."""
        addr = np.asarray(addr, dtype=np.int64)
        if swizzle == "none":
            return addr.copy()
        if addr.size == 0 or addr.min() < 0:
            return evaluate(self.swizzle, {"addr": addr, "W": self.width(swizzle), "BO": int(base_offset)})
        return self.swizzle_table(swizzle, int(base_offset), int(addr.max()) + 1)[addr]

    def swizzle_table(self, swizzle: str, base_offset: int, size: int) -> np.ndarray:
        """The swizzled address of every pre-swizzle address below ``size`` at least (``table[addr]``)."""
        key = (id(self), swizzle, base_offset)
        hit = _SWIZZLES.get(key)
        if hit is None or hit[0] is not self or len(hit[1]) < size:
            # the formula is elementwise: a table outgrown is extended by the addresses past its end alone
            have = hit[1] if hit is not None and hit[0] is self else np.zeros(0, dtype=np.int64)
            span = max(4096, 1 << (size - 1).bit_length())
            more = evaluate(self.swizzle, {"addr": np.arange(len(have), span, dtype=np.int64), "W": self.width(swizzle),
                                           "BO": base_offset})
            hit = _SWIZZLES[key] = (self, np.concatenate([have, more]))  # the layout spec kept alive: its id its own
        return hit[1]

    def addresses(self, major: str, swizzle: str, start: int, mn, k, bits: int, lbo: int, sbo: int,
                  base_offset: int = 0) -> np.ndarray:
        return self.swizzled(swizzle, start + self.offsets(major, swizzle, mn, k, bits, lbo, sbo), base_offset)


_NAMES: dict[int, tuple[Any, dict[int, str]]] = {}
_OFFSETS: dict[tuple, tuple[Any, np.ndarray]] = {}
_READS: dict[tuple, tuple[Any, frozenset[str]]] = {}
_SWIZZLES: dict[tuple, tuple[Any, np.ndarray]] = {}


_ENCODED_VALUES: dict[tuple, tuple[Any, int]] = {}
_RESERVED: dict[int, tuple[Any, int]] = {}


def canonical_strides(major: str, swizzle: str, width: int, bits: int, mn_extent: int, k_extent: int) -> tuple[int, int]:
    """(LBO, SBO) in bytes of the compact canonical layout of an mn_extent x k_extent tile.

    K-major none: core matrices of one 8-row group side by side along K (LBO = 128),
    groups along MN after all of K (SBO = 128 * K chunks).  K-major swizzled: SBO = 8
    rows of the swizzle width; LBO unused (given as the full MN span).  MN-major none:
    16-byte MN chunks 128 bytes apart (SBO = 128), K groups of 8 after all of MN
    (LBO = 128 * MN chunks).  MN-major swizzled: K groups of 8 rows of the width (SBO),
    width-wide MN stripes after all of K (LBO).
    """
    kb = max(16, k_extent * bits // 8)
    mb = max(16, mn_extent * bits // 8)
    if major == "K":
        if swizzle == "none":
            return 128, 128 * (kb // 16)
        return 8 * width * max(1, mn_extent // 8), 8 * width
    if swizzle == "none":
        return 128 * (mb // 16), 128
    groups = max(1, k_extent // 8)
    return groups * 8 * width, 8 * width


@dataclass(frozen=True)
class DescField:
    name: str
    lo: int
    hi: int
    encoded: bool = False

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class DescSpec:
    section: str
    fields: Mapping[str, DescField]
    encode_expr: Expr
    rules: tuple[str, ...] = ()
    base_offset_expr: Expr | None = None  # P (pattern start, absolute), R (repeat bytes) -> base offset

    def encode_value(self, x: int) -> int:
        """The encode formula of a byte value, evaluated once per process and value."""
        key = (id(self), int(x))
        hit = _ENCODED_VALUES.get(key)
        if hit is None or hit[0] is not self:
            if len(_ENCODED_VALUES) > 65536:
                _ENCODED_VALUES.clear()
            hit = _ENCODED_VALUES[key] = (self, int(evaluate(self.encode_expr, {"x": int(x)})))
        return hit[1]

    def base_offset_for(self, smem: SmemSpec, swizzle: str, pattern_start: int) -> int:
        """The base offset the ISA requires for a ``swizzle`` pattern starting at ``pattern_start``."""
        if swizzle == "none" or self.base_offset_expr is None:
            return 0
        return int(evaluate(self.base_offset_expr, {"P": int(pattern_start), "R": int(smem.swizzles[swizzle]["repeat"])}))

    @property
    def reserved_mask(self) -> int:
        hit = _RESERVED.get(id(self))
        if hit is None or hit[0] is not self:
            hit = _RESERVED[id(self)] = (self, self._reserved_mask())
        return hit[1]

    def _reserved_mask(self) -> int:
        used = 0
        for f in self.fields.values():
            used |= f.mask << f.lo
        return ((1 << 64) - 1) ^ used


@dataclass
class WgmmaSpec:
    family: str
    file: str
    section: str
    layouts: dict[str, dict]  # templates: name -> {"body": ..., "exprs": ...}
    fragments: dict[str, Fragment]
    bindings: dict[str, Expr]
    smem: SmemSpec
    descriptor: DescSpec
    variants: list[WgmmaVariant] = field(default_factory=list)
    _cache: dict = field(default_factory=dict)

    def layout(self, name: str, N: int | None = None) -> Layout:
        """The layout ``name`` with ``N`` bound (one Layout object per (name, N))."""
        return bound_layout(self, name, N)

    def select(self, **kw) -> list[WgmmaVariant]:
        return [v for v in self.variants if all(getattr(v, k) == val for k, val in kw.items())]


def bound_layout(spec, name: str, N: int | None = None) -> Layout:
    """A wgmma document's layout template ``name`` with ``N`` bound, cached on the document per (name, N); dense and
    sparse documents alike (a sparse template adds its ``where`` and its parameters)."""
    key = (name, N)
    if key not in spec._cache:
        t = spec.layouts[name]
        env = {"N": N} if N is not None else {}
        rows, cols = (int(evaluate(e, env)) for e in t["shape"])
        bindings = dict(spec.bindings)
        if N is not None:
            bindings["N"] = parse(str(N))
        body = t["body"]
        spec._cache[key] = Layout(
            name=name if N is None or "N" not in t["names"] else f"{name}[N={N}]",
            maps=body["maps"], section=body["section"], figure=body.get("figure"),
            rows=rows, cols=cols, elements=int(evaluate(t["elements"], env)), matrices=1, lanes=int(body["lanes"]),
            matrix=parse("0"), row=t["row"], col=t["col"], where=t.get("where"), copies=1, bindings=bindings,
            params=tuple(body.get("params", ())), notes=tuple(body.get("notes", ())), file=spec.file, line=t["line"],
        )
    return spec._cache[key]


def _f(text, path, src) -> Expr:
    try:
        return parse(text)
    except ExprError as exc:
        raise src.error(path, str(exc)) from None


def _axis_values(val, path, src) -> list:
    if isinstance(val, dict):
        lo, hi, step = val["range"]
        if step <= 0 or hi < lo:
            raise src.error(path, f"bad range {val['range']}")
        return list(range(lo, hi + 1, step))
    return val if isinstance(val, list) else [val]


def layout_templates(doc: dict, src: Source, bindings: dict[str, Expr]) -> dict[str, dict]:
    """The document's layout templates, parsed and checked: a formula reads only bindings, ``%laneid``, ``i``, ``N``
    and the template's own parameters; a sparse document's template may add a ``where``."""
    layouts = {}
    for name, body in doc["layouts"].items():
        p = ("layouts", name)
        t = {
            "body": body,
            "shape": [_f(x, p + ("shape", i), src) for i, x in enumerate(body["shape"])],
            "elements": _f(body["elements"], p + ("elements",), src),
            "row": _f(body["row"], p + ("row",), src),
            "col": _f(body["col"], p + ("col",), src),
            "where": _f(body["where"], p + ("where",), src) if "where" in body else None,
            "line": src.line(p),
        }
        exprs = [*t["shape"], t["elements"], t["row"], t["col"]] + ([t["where"]] if t["where"] is not None else [])
        t["names"] = set().union(*(e.names() for e in exprs))
        known = set(bindings) | {"%laneid", "i", "N"} | set(body.get("params", ()))
        for fld in ("row", "col", "where"):
            if t[fld] is not None and t[fld].names() - known:
                unknown = ", ".join(sorted(t[fld].names() - known))
                raise src.error(p + (fld,), f"unknown name(s) {unknown}; known: {', '.join(sorted(known))}")
        layouts[name] = t
    return layouts


def load_document(doc: dict, src: Source) -> WgmmaSpec:
    """Schema-check and build a ``schema: wgmma/1`` document; raise SpecError naming file:line:field."""
    from ptxconf.isa.loader import check_layout  # late: the loader imports document kinds by name

    check_schema(_validator(), doc, src)
    bindings = {k: _f(v, ("bindings", k), src) for k, v in (doc.get("bindings") or {}).items()}
    fragments = {n: Fragment(n, f["register"], f["per_register"]) for n, f in (doc.get("fragments") or {}).items()}
    layouts = layout_templates(doc, src, bindings)

    smem, desc = load_smem_and_descriptor(doc, src)
    spec = WgmmaSpec(doc["family"], src.file, doc["section"], layouts, fragments, bindings, smem, desc)
    _check_smem(spec, src)
    seen: set[tuple[str, int]] = set()
    for g, form in enumerate(doc["forms"]):
        for v in _expand(spec, form, ("forms", g), src):
            for lay in [o.layout for o in v.operands.values()]:
                key = (lay.name, lay.cols)
                if key not in seen:
                    seen.add(key)
                    try:
                        check_layout(lay)
                    except Exception as exc:  # SpecError from check_layout: re-point it here
                        raise src.error(("layouts", lay.name.split("[")[0]), f"{v.id}: {exc}") from None
            spec.variants.append(v)
    ids = [v.id for v in spec.variants]
    if len(ids) != len(set(ids)):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise src.error(("forms",), f"form {dup} defined twice")
    return spec


def axis_combos(spec, form: dict, path: tuple, src: Source, min_ptx: PtxVersion):
    """Every combination of a form's axes, as ``(axis entry index, its min .version, axis values, PTX string)``, each
    type checked against the document's fragments, N in 8..256 by 8, A from shared memory or registers; dense and
    sparse wgmma documents expand their forms alike."""
    for e, entry in enumerate(form["axes"]):
        entry = dict(entry)
        entry_ptx = PtxVersion.parse(str(entry.pop("min_ptx"))) if "min_ptx" in entry else min_ptx
        keys = list(entry)
        choices = [_axis_values(entry[k], path + ("axes", e, k), src) for k in keys]
        for combo in itertools.product(*choices):
            ax = dict(zip(keys, combo))
            ax.setdefault("dtype", "s32")
            ax.setdefault("sat", "")
            try:
                ptx = form["instruction"].format(**ax)
            except KeyError as exc:
                raise src.error(path + ("instruction",), f"template names {{{exc.args[0]}}}, which no axis defines") from None
            for t in (ax["atype"], ax["btype"], ax["dtype"]):
                if t not in TYPES or t not in spec.fragments:
                    raise src.error(path + ("axes", e), f"type {t!r} has no PTX type or fragment here ({ptx})")
            N = int(ax["N"])
            if N % 8 or not 8 <= N <= 256:
                raise src.error(path + ("axes", e, "N"), f"N={N} is not a multiple of 8 in 8..256")
            if ax["a"] not in ("shared", "registers"):
                raise src.error(path + ("axes", e, "a"), f"a is shared or registers, not {ax['a']!r}")
            yield e, entry_ptx, ax, ptx


def _expand(spec: WgmmaSpec, form: dict, path: tuple, src: Source):
    imm = tuple(form["immediates"])
    requires = tuple(parse_target(t) for t in form["targets"])
    min_ptx = PtxVersion.parse(form["min_ptx"])
    if form["a_layout"] not in spec.layouts:
        raise src.error(path + ("a_layout",), f"unknown layout {form['a_layout']!r}")
    for e, entry_ptx, ax, ptx in axis_combos(spec, form, path, src, min_ptx):
            if ("trans_a" in imm or "trans_b" in imm) and TYPES[ax["atype"]].bits != 16:
                raise src.error(path + ("immediates",), f"{ptx}: imm-trans needs 16-bit elements (§9.7.15.5.2)")
            N, K = int(ax["N"]), int(form["k"])
            dl = spec.layout("D.m64nN", N)
            if (dl.rows, dl.cols) != (64, N):
                raise src.error(("layouts", "D.m64nN", "shape"), f"D must be 64 x {N} for {ptx}")
            operands = {"D": Operand("D", TYPES[ax["dtype"]], dl, spec.fragments[ax["dtype"]])}
            if ax["a"] == "registers":
                al = spec.layout(form["a_layout"])
                if (al.rows, al.cols) != (64, K):
                    raise src.error(path + ("a_layout",), f"{form['a_layout']} is {al.rows}x{al.cols}, {ptx} needs 64x{K}")
                frag = spec.fragments[ax["atype"]]
                if al.elements % frag.per_register:
                    raise src.error(path + ("a_layout",), f"{al.elements} elements do not fill whole registers ({ptx})")
                operands = {"A": Operand("A", TYPES[ax["atype"]], al, frag), **operands}
            suffix = "/rs" if ax["a"] == "registers" else "/ss"
            parts = ptx.split(".")
            yield WgmmaVariant(
                id=ptx + suffix, family=spec.family, section=form["section"], min_ptx=entry_ptx, requires=requires,
                operands=operands, notes=tuple(form.get("notes", ())), file=src.file, line=src.line(path + ("axes", e)),
                ptx=ptx, atype=ax["atype"], btype=ax["btype"], dtype=ax["dtype"], N=N, K=K, a_src=ax["a"],
                immediates=tuple(i for i in imm if not (i == "trans_a" and ax["a"] == "registers")),
                satfinite=bool(ax["sat"]), bitop=parts[parts.index("popc") - 1] if "popc" in parts else None, doc=spec,
            )


def load_smem_and_descriptor(doc: dict, src: Source) -> tuple[SmemSpec, DescSpec]:
    """The document's shared-memory layouts and matrix descriptor (dense and sparse wgmma share both), checked."""
    sm = doc["smem"]
    smem = SmemSpec(
        section=sm["section"],
        swizzles={k: dict(v) for k, v in sm["swizzles"].items()},
        let={k: _f(v, ("smem", "let", k), src) for k, v in (sm.get("let") or {}).items()},
        offset={m: {s: _f(sm["offset"][m][s], ("smem", "offset", m, s), src) for s in ("none", "swizzled")} for m in MAJORS},
        swizzle=_f(sm["swizzle"], ("smem", "swizzle"), src),
        alignment=sm["alignment"],
        transpose=dict(enumerate(sm["transpose"])),
        notes=tuple(sm.get("notes", ())),
        errata=tuple(sm.get("errata", ())),
    )
    if "none" not in smem.swizzles:
        raise src.error(("smem", "swizzles"), "needs the no-swizzle mode `none`")
    d = doc["descriptor"]
    desc = DescSpec(
        section=d["section"],
        fields={k: DescField(k, f["lo"], f["hi"], bool(f.get("encoded"))) for k, f in d["fields"].items()},
        encode_expr=_f(d["encode"], ("descriptor", "encode"), src),
        rules=tuple(d.get("rules", ())),
        base_offset_expr=_f(d["base_offset"], ("descriptor", "base_offset"), src) if "base_offset" in d else None,
    )
    _check_descriptor(desc, smem, src)
    return smem, desc


def _check_descriptor(desc: DescSpec, smem: SmemSpec, src: Source) -> None:
    used = 0
    for f in desc.fields.values():
        if f.hi < f.lo:
            raise src.error(("descriptor", "fields", f.name), f"hi {f.hi} < lo {f.lo}")
        m = f.mask << f.lo
        if used & m:
            raise src.error(("descriptor", "fields", f.name), "overlaps another field")
        used |= m
    for need in ("start_address", "leading_byte_offset", "stride_byte_offset", "base_offset", "swizzle"):
        if need not in desc.fields:
            raise src.error(("descriptor", "fields"), f"missing field {need}")
    codes = [int(s["code"]) for s in smem.swizzles.values()]
    if len(set(codes)) != len(codes) or max(codes) > desc.fields["swizzle"].mask:
        raise src.error(("smem", "swizzles"), "swizzle codes must be distinct and fit the descriptor's swizzle field")
    if desc.encode_value(0x40000) != desc.encode_value(0):
        raise src.error(("descriptor", "encode"), "matrix-descriptor-encode must keep only the low 18 bits of an address")


def _check_smem(spec: WgmmaSpec, src: Source) -> None:
    sm = spec.smem
    for name, s in sm.swizzles.items():
        w, rep = int(s["width"]), int(s["repeat"])
        if name != "none":
            if rep != 8 * w:
                raise src.error(("smem", "swizzles", name), f"repeat {rep} is not 8 rows of {w} bytes")
            a = np.arange(rep)
            out = sm.swizzled(name, a)
            if sorted(out.tolist()) != a.tolist() or np.any(out >> 4 << 4 != (out - (a & 15))):
                raise src.error(("smem", "swizzle"), f"{name}: not a permutation of 16-byte chunks within {rep} bytes")
            # a pattern starting at any 128-byte step P, with the base offset the rule gives, is the
            # pattern that starts on the boundary moved to P
            for p in range(0, 2 * rep, 128):
                try:
                    bo = spec.descriptor.base_offset_for(sm, name, p)
                    moved = sm.swizzled(name, p + a, bo) - p
                except ExprError as exc:
                    raise src.error(("descriptor", "base_offset"), str(exc)) from None
                if not np.array_equal(moved, out):
                    raise src.error(("descriptor", "base_offset"),
                                    f"{name}: a pattern starting at {p} with base offset {bo} is not the pattern moved there")
    for major, sw, bits in itertools.product(MAJORS, sm.swizzles, (1, 8, 16, 32)):
        if major == "MN" and bits != 16:
            continue
        for mn_ext, k_ext in ((64, 256 // bits * 8 if bits == 1 else 256 // bits), (256, 256 // bits)):
            k_ext = {1: 256, 8: 32, 16: 16, 32: 8}[bits]
            lbo, sbo = canonical_strides(major, sw, sm.width(sw), bits, mn_ext, k_ext)
            mn, k = np.meshgrid(np.arange(mn_ext), np.arange(0, k_ext, max(1, 8 // bits)), indexing="ij")
            try:
                off = sm.addresses(major, sw, 0, mn, k, bits, lbo, sbo)
            except ExprError as exc:
                raise src.error(("smem", "offset", major), str(exc)) from None
            if len(np.unique(off)) != off.size:
                raise src.error(("smem", "offset", major, "none" if sw == "none" else "swizzled"),
                                f"{major}-major {sw} {bits}-bit {mn_ext}x{k_ext}: two elements share a byte")


def load_wgmma(directory: str | Path | None = None) -> WgmmaSpec:
    from ptxconf.isa.loader import load_specs

    specs = load_specs(directory)
    return specs.documents["wgmma"]
