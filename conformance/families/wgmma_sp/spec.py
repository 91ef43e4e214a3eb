"""specs/wgmma_sp.yaml (schema "wgmma_sp/1"): the wgmma.mma_async.sp forms and their sparse operands.

The document reads like the dense wgmma one (register fragments over a warpgroup, shared-memory
layouts as formulas, the descriptor's field table, forms crossed from axes) and adds what a
sparse form has besides: the chunk geometry per A type, the compressed A fragment, and the
metadata layouts with the sparsity selector as a parameter.  Each form is a
:class:`WgmmaSpVariant`, a dense :class:`WgmmaVariant` with a ``metadata`` operand, so the
dense family's shared-memory reader, descriptor codec and numerics apply unchanged.

Invariants checked on load (each failure is ``FILE:LINE: field: reason``): every fragment
covers its tile exactly once for every N a form uses and, for the metadata, for every selector
the form allows (so no chunk has two suppliers or none); the compressed A tile is 64 x K/2 and the metadata tile 64 x 2 * chunks; the shared-memory
layouts are one-to-one on the compressed A and the dense B tiles of every form.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.families.wgmma.spec import (
    MAJORS,
    WgmmaSpec,
    WgmmaVariant,
    _check_smem,
    _f,
    axis_combos,
    canonical_strides,
    layout_templates,
    load_smem_and_descriptor,
)
from ptxconf.isa.expr import Expr, ExprError, evaluate
from ptxconf.isa.model import Fragment, Operand
from ptxconf.isa.ptxtypes import TYPES
from ptxconf.isa.targets import PtxVersion, parse_target
from ptxconf.isa.yamlsrc import Source, check_schema, schema_validator

__all__ = ["WgmmaSpVariant", "WgmmaSpSpec", "load_document", "k_major_fits"]

_SCHEMA = Path(__file__).with_name("schema.json")


@lru_cache(maxsize=1)
def _validator():
    return schema_validator(_SCHEMA)


@dataclass(frozen=True)
class WgmmaSpVariant(WgmmaVariant):
    """One wgmma.mma_async.sp form; ``K`` is the dense K (A is stored as 64 x K/2)."""

    selectors: tuple[int, ...] = (0,)
    width: int = 4  # dense elements per chunk
    nz: int = 2  # stored elements per chunk
    table: str = ""

    @property
    def kc(self) -> int:
        """Compressed K: the columns of A as stored."""
        return self.K // 2

    @property
    def chunks(self) -> int:
        return self.K // self.width

    @cached_property
    def a_view(self) -> WgmmaVariant:
        """The compressed A as the dense reader sees it (a 64 x K/2 tile of the same type)."""
        return replace(self, K=self.kc)


@dataclass(kw_only=True)
class WgmmaSpSpec(WgmmaSpec):
    """A ``wgmma_sp/1`` document: wgmma's, plus the sparsity of each A type and the K-major fit rule."""

    sparsity: dict[str, dict[str, int]]
    k_major_fits_expr: Expr


def k_major_fits(spec: Any, swizzle: str, kbytes: int) -> bool:
    """Whether a K-major ``swizzle`` layout holds a row of ``kbytes`` along K (the spec's rule)."""
    if swizzle == "none":
        return True
    return bool(evaluate(spec.k_major_fits_expr, {"kbytes": int(kbytes), "W": spec.smem.width(swizzle)}))


def _schema_error(doc: dict, src: Source) -> None:
    check_schema(_validator(), doc, src)


def load_document(doc: dict, src: Source) -> WgmmaSpSpec:
    """Schema-check and build a ``schema: wgmma_sp/1`` document; raise SpecError naming file:line:field."""
    _schema_error(doc, src)
    bindings = {k: _f(v, ("bindings", k), src) for k, v in (doc.get("bindings") or {}).items()}
    fragments = {n: Fragment(n, f["register"], f["per_register"]) for n, f in (doc.get("fragments") or {}).items()}
    layouts = layout_templates(doc, src, bindings)
    smem, desc = load_smem_and_descriptor(doc, src)
    sparsity = {t: dict(g) for t, g in doc["sparsity"]["types"].items()}
    for t, g in sparsity.items():
        if g["nz"] * 2 != g["width"]:
            raise src.error(("sparsity", "types", t), f"{t}: {g['nz']} of {g['width']} is not 50% sparsity")
    spec = WgmmaSpSpec(family=doc["family"], file=src.file, section=doc["section"], layouts=layouts,
                       fragments=fragments, bindings=bindings, smem=smem, descriptor=desc, sparsity=sparsity,
                       k_major_fits_expr=_f(doc["smem"]["k_major_fits"], ("smem", "k_major_fits"), src))
    _check_smem(spec, src)
    checked: set[tuple[str, int]] = set()
    for g, form in enumerate(doc["forms"]):
        for v in _expand(spec, form, ("forms", g), src):
            _check_operands(spec, v, checked, src)
            spec.variants.append(v)
    ids = [v.id for v in spec.variants]
    if len(ids) != len(set(ids)):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise src.error(("forms",), f"form {dup} defined twice")
    _check_sparse_smem(spec, src)
    return spec


def _check_operands(spec: WgmmaSpSpec, v: WgmmaSpVariant, checked: set, src: Source) -> None:
    """Each layout a form uses covers its tile exactly once (per selector for the metadata)."""
    from ptxconf.isa.loader import check_layout  # late: the loader imports document kinds by name

    for op in v.operands.values():
        lay = op.layout
        for params in op.param_combinations():
            key = (lay.name, lay.cols, tuple(sorted(params.items())))
            if key in checked:
                continue
            checked.add(key)
            try:
                check_layout(lay, params=params or None)
            except Exception as exc:  # SpecError from check_layout: re-point it at the layout
                fld = str(getattr(exc, "field", "") or "").rsplit(".", 1)[-1] or "row"
                msg = getattr(exc, "message", str(exc))
                raise src.error(("layouts", lay.name.split("[")[0], fld), f"{v.id} {params or ''}: {msg}") from None


def _check_sparse_smem(spec: WgmmaSpSpec, src: Source) -> None:
    """The layouts are one-to-one on every form's compressed A (64 x K/2) and dense B (K x 256)."""
    sm = spec.smem
    seen = set()
    for v in spec.variants:
        for operand, ext, kext in (("A", 64, v.kc), ("B", 256, v.K)):
            for major, sw in itertools.product(MAJORS, sm.swizzles):
                key = (operand, ext, kext, v.bits, major, sw)
                if key in seen or (major == "MN" and "trans_" + operand.lower() not in v.immediates):
                    continue
                seen.add(key)
                if major == "K" and not k_major_fits(spec, sw, kext * v.bits // 8):
                    continue
                lbo, sbo = canonical_strides(major, sw, sm.width(sw), v.bits, ext, kext)
                mn, k = np.meshgrid(np.arange(ext), np.arange(kext), indexing="ij")
                try:
                    off = sm.addresses(major, sw, 0, mn, k, v.bits, lbo, sbo)
                except ExprError as exc:
                    raise src.error(("smem", "offset", major), str(exc)) from None
                if len(np.unique(off)) != off.size:
                    raise src.error(("smem", "offset", major, "none" if sw == "none" else "swizzled"),
                                    f"{v.id}: {operand} {major}-major {sw} {ext}x{kext}: two elements share a byte")


def _expand(spec: WgmmaSpSpec, form: dict, path: tuple, src: Source):
    imm = tuple(form["immediates"])
    requires = tuple(parse_target(t) for t in form["targets"])
    min_ptx = PtxVersion.parse(form["min_ptx"])
    meta = form["metadata"]
    for key, name in (("a_layout", form["a_layout"]), ("metadata", meta["layout"])):
        if name not in spec.layouts:
            raise src.error(path + ((key, "layout") if key == "metadata" else (key,)), f"unknown layout {name!r}")
    if spec.layouts[meta["layout"]]["body"].get("params") != ["selector"]:
        raise src.error(("layouts", meta["layout"], "params"), "a metadata layout takes the parameter `selector`")
    for e, entry_ptx, ax, ptx in axis_combos(spec, form, path, src, min_ptx):
            if ax["atype"] not in spec.sparsity:
                raise src.error(path + ("axes", e, "atype"), f"{ax['atype']} has no entry under sparsity ({ptx})")
            if ("trans_a" in imm or "trans_b" in imm) and TYPES[ax["atype"]].bits != 16:
                raise src.error(path + ("immediates",), f"{ptx}: imm-trans needs 16-bit elements (§9.7.15.6.3)")
            N, K = int(ax["N"]), int(form["k"])
            g = spec.sparsity[ax["atype"]]
            if K % g["width"]:
                raise src.error(path + ("k",), f"K={K} is not whole chunks of {g['width']} ({ptx})")
            dl = spec.layout("D.m64nN", N)
            if (dl.rows, dl.cols) != (64, N):
                raise src.error(("layouts", "D.m64nN", "shape"), f"D must be 64 x {N} for {ptx}")
            ml = spec.layout(meta["layout"])
            if (ml.rows, ml.cols) != (64, 2 * K // g["width"]):
                raise src.error(path + ("metadata", "layout"),
                                f"{meta['layout']} is {ml.rows}x{ml.cols}; {ptx} has 64 rows of {K // g['width']} chunks (2 fields each)")
            operands = {
                "D": Operand("D", TYPES[ax["dtype"]], dl, spec.fragments[ax["dtype"]]),
                "metadata": Operand("metadata", TYPES["b2"], ml, spec.fragments["b2"], {"selector": tuple(meta["selector"])}),
            }
            if ax["a"] == "registers":
                al = spec.layout(form["a_layout"])
                if (al.rows, al.cols) != (64, K // 2):
                    raise src.error(path + ("a_layout",), f"{form['a_layout']} is {al.rows}x{al.cols}, {ptx} stores 64x{K // 2}")
                frag = spec.fragments[ax["atype"]]
                if al.elements % frag.per_register:
                    raise src.error(path + ("a_layout",), f"{al.elements} elements do not fill whole registers ({ptx})")
                operands = {"A": Operand("A", TYPES[ax["atype"]], al, frag), **operands}
            yield WgmmaSpVariant(
                id=ptx + ("/rs" if ax["a"] == "registers" else "/ss"), family=spec.family, section=form["section"],
                min_ptx=entry_ptx, requires=requires, operands=operands, notes=tuple(form.get("notes", ())),
                file=src.file, line=src.line(path + ("axes", e)), ptx=ptx, atype=ax["atype"], btype=ax["btype"],
                dtype=ax["dtype"], N=N, K=K, a_src=ax["a"],
                immediates=tuple(i for i in imm if not (i == "trans_a" and ax["a"] == "registers")),
                satfinite=bool(ax["sat"]), doc=spec, selectors=tuple(meta["selector"]), width=g["width"], nz=g["nz"],
                table=form["table"],
            )
