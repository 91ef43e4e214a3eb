"""Load specs/: YAML -> JSON Schema -> formulas -> variants -> invariants.

Every failure is a :class:`SpecError` naming file, line and field.  The
invariants checked on load are the ones a transcription error breaks:

* every formula parses and uses only known names;
* each layout covers its ``matrices x rows x cols`` tile: every cell is held
  exactly ``copies`` times, and no (lane, element) maps outside the tile;
* each operand's fragment packs whole registers, with containers wide enough
  for the element type;
* the operand tiles agree with the instruction's shape (A is MxK, B KxN, C/D MxN).
"""

from __future__ import annotations

import difflib
import fnmatch
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from ptxconf import registry

from . import stored
from .expr import Expr, ExprError, parse
from .model import Fragment, Layout, Operand, Variant
from .ptxtypes import TYPES
from .targets import PtxVersion, parse_target
from .yamlsrc import Source, SpecError, field_name, first_schema_error, load_yaml, schema_validator

if TYPE_CHECKING:
    import jsonschema

__all__ = ["Specs", "load_specs", "load_file", "default_specs_dir", "SpecError"]

_SCHEMA_PATH = Path(__file__).with_name("schema.json")


def default_specs_dir() -> Path:
    """The specs shipped with the package, else specs/ of the checkout this package runs from.

    A wheel or sdist install carries the top-level specs/ as package data ``ptxconf/specdata``
    (mapped at build time, see setup.py); an editable install or a checkout on PYTHONPATH has no
    such folder and reads specs/ beside the package, so both see the same files.
    """
    import importlib.resources

    shipped = importlib.resources.files("ptxconf").joinpath("specdata")
    if isinstance(shipped, Path) and shipped.is_dir() and any(shipped.glob("*.yaml")):
        return shipped
    return Path(__file__).resolve().parents[2] / "specs"


def _validator() -> jsonschema.protocols.Validator:
    return schema_validator(_SCHEMA_PATH)


@dataclass
class Specs:
    """All loaded variants, by id, in file order."""

    variants: dict[str, Variant] = field(default_factory=dict)
    layouts: dict[str, Layout] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    # Table-shaped documents of other schemas (e.g. "tcgen05/1"), by family.
    documents: dict[str, Any] = field(default_factory=dict)

    def get(self, variant_id: str) -> Variant:
        try:
            return self.variants[variant_id]
        except KeyError:
            close = difflib.get_close_matches(variant_id, list(self.variants), n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise KeyError(f"unknown variant {variant_id!r}{hint}") from None

    def select(self, patterns: Iterable[str] | str | None) -> list[Variant]:
        """Variants whose id matches any glob or prefix; None selects all."""
        if patterns is None:
            return list(self.variants.values())
        if isinstance(patterns, str):
            patterns = [patterns]
        pats = list(patterns)
        return [
            v
            for v in self.variants.values()
            if any(v.id == p or v.id.startswith(p) or fnmatch.fnmatchcase(v.id, p) for p in pats)
        ]


def load_specs(directory: str | Path | None = None) -> Specs:
    """Every spec file of ``directory``, parsed and checked.  A directory loaded before by this very code is read
    back from the cache (parsing and checking the YAML took most of a second, in every process that asked)."""
    directory = Path(directory) if directory else default_specs_dir()
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise SpecError(str(directory), None, "", "no *.yaml spec files here")
    key = stored.specs_key(files)
    specs = stored.load_stored(key, Specs, directory) if key else None
    if specs is not None:
        return specs
    specs = Specs()
    # Two passes: layouts are shared by name across files, whatever their file order.
    parsed = [_load_layouts(path, specs) for path in files]
    for path, state in zip(files, parsed):
        if state is not None:  # None: a document kind, loaded whole in the first pass
            _load_variants(path, specs, *state)
    if key:
        stored.store(key, specs, directory)
    return specs


# Spec files whose ``schema`` is a string name a document kind with its own JSON Schema and
# loader ("module:function" taking (doc, Source), returning an object with a ``family``),
# registered by families and tools (ptxconf.registry); integer schemas are variant files.


def _load_document(doc: dict, src: Source, specs: Specs) -> None:
    kind = doc["schema"]
    kinds = registry.document_kinds()
    if kind not in kinds:
        known = ", ".join(["1", *kinds])
        raise src.error(("schema",), f"unknown schema {kind!r}; known: {known}")
    loaded = registry.resolve(kinds[kind])(doc, src)
    if loaded.family in specs.documents:
        raise src.error(("family",), f"family {loaded.family} already loaded from {specs.documents[loaded.family].file}")
    specs.documents[loaded.family] = loaded
    for v in getattr(loaded, "variants", ()):  # documents whose forms are variants (wgmma)
        if v.id in specs.variants:
            raise src.error(("forms",), f"variant {v.id} already defined at {specs.variants[v.id].file}")
        specs.variants[v.id] = v


def load_file(path: str | Path, specs: Specs | None = None) -> Specs:
    specs = specs if specs is not None else Specs()
    state = _load_layouts(path, specs)
    if state is not None:
        _load_variants(path, specs, *state)
    return specs


def _load_layouts(path: str | Path, specs: Specs) -> tuple[dict, Source, dict] | None:
    """First pass: a variant file's layouts (returning what the second pass needs), or a whole document."""
    doc, src = load_yaml(path)
    if isinstance(doc, dict) and isinstance(doc.get("schema"), str):
        _load_document(doc, src, specs)
        specs.files.append(str(path))
        return None
    _check_schema(doc, src)
    bindings = {k: _formula(v, ("bindings", k), src) for k, v in (doc.get("bindings") or {}).items()}
    fragments = {
        name: Fragment(name, f["register"], f["per_register"], f.get("value_shift", 0))
        for name, f in (doc.get("fragments") or {}).items()
    }
    for name, frag in fragments.items():
        if frag.register_bits % frag.per_register:
            raise src.error(("fragments", name), "per_register does not divide the register")
    layouts = {}
    for name, body in doc["layouts"].items():
        if name in specs.layouts:
            raise src.error(("layouts", name), f"layout defined twice (also in {specs.layouts[name].file})")
        layouts[name] = _layout(name, body, bindings, src)
        specs.layouts[name] = layouts[name]
    return doc, src, fragments


def _load_variants(path: str | Path, specs: Specs, doc: dict, src: Source, fragments: dict) -> None:
    for g, group in enumerate(doc["variants"]):
        for variant in _expand(doc, group, ("variants", g), fragments, specs, src):
            if variant.id in specs.variants:
                other = specs.variants[variant.id]
                raise src.error(("variants", g), f"variant {variant.id} already defined at {other.file}:{other.line}")
            specs.variants[variant.id] = variant
    specs.files.append(str(path))


def _check_schema(doc: Any, src: Source) -> None:
    found = first_schema_error(_validator(), doc, src)
    if found:
        path, err = found
        raise src.error(path, _schema_message(err))


def _schema_message(err: jsonschema.ValidationError) -> str:
    if err.validator == "additionalProperties":
        return err.message.replace("Additional properties are not allowed", "unknown key")
    if err.validator == "required":
        return err.message.replace("is a required property", "is missing")
    if err.validator == "oneOf" and err.schema.get("oneOf") and "required" in err.schema["oneOf"][0]:
        return "give exactly one of min_target or targets"
    return err.message


def _formula(text: Any, path: tuple, src: Source) -> Expr:
    try:
        return parse(text)
    except ExprError as exc:
        raise src.error(path, str(exc)) from None


def _layout(name: str, body: dict, bindings: dict[str, Expr], src: Source) -> Layout:
    path = ("layouts", name)
    local = dict(bindings)
    for k, v in (body.get("let") or {}).items():
        local[k] = _formula(v, path + ("let", k), src)
    rows, cols = body["shape"]
    layout = Layout(
        name=name,
        maps=body["maps"],
        section=body["section"],
        figure=body.get("figure"),
        rows=rows,
        cols=cols,
        elements=body["elements"],
        matrices=body.get("matrices", 1),
        lanes=body.get("lanes", 32),
        matrix=_formula(body.get("matrix", 0), path + ("matrix",), src),
        row=_formula(body["row"], path + ("row",), src),
        col=_formula(body["col"], path + ("col",), src),
        where=_formula(body["where"], path + ("where",), src) if "where" in body else None,
        copies=body.get("copies", 1),
        bindings=local,
        params=tuple(body.get("params", ())),
        notes=tuple(body.get("notes", ())),
        errata=tuple(body.get("errata", ())),
        file=src.file,
        line=src.line(path),
    )
    known = set(local) | {"%laneid", "i"} | set(layout.params)
    for fld in ("matrix", "row", "col", "where"):
        expr = getattr(layout, fld)
        if expr is not None and expr.names() - known:
            unknown = ", ".join(sorted(expr.names() - known))
            raise src.error(path + (fld,), f"unknown name(s) {unknown}; known: {', '.join(sorted(known))}")
    if not layout.params:
        check_layout(layout, src)
    return layout


def check_layout(layout: Layout, src: Source | None = None, params: dict | None = None) -> None:
    """Raise unless the layout covers its tile exactly ``copies`` times."""

    def fail(fld: str, msg: str) -> SpecError:
        if src is None:
            return SpecError(layout.file, layout.line, f"layouts.{layout.name}.{fld}", msg)
        return src.error(("layouts", layout.name, fld), msg)

    try:
        m = layout.map(params)
    except ExprError as exc:
        raise fail("row", str(exc)) from None
    held = layout.held(params)
    cells = m[held]
    for axis, (fld, bound) in enumerate((("matrix", layout.matrices), ("row", layout.rows), ("col", layout.cols))):
        bad = np.nonzero((m[..., axis] < 0) & held | (m[..., axis] >= bound))
        if len(bad[0]):
            lane, elem = int(bad[0][0]), int(bad[1][0])
            raise fail(fld, f"lane {lane} element {elem} gives {fld} {int(m[lane, elem, axis])}, outside 0..{bound - 1}")
    flat = (cells[:, 0] * layout.rows + cells[:, 1]) * layout.cols + cells[:, 2]
    counts = np.bincount(flat, minlength=layout.matrices * layout.rows * layout.cols)
    wrong = np.nonzero(counts != layout.copies)[0]
    if len(wrong):
        cell = int(wrong[0])
        mat, rest = divmod(cell, layout.rows * layout.cols)
        r, c = divmod(rest, layout.cols)
        holders = [(int(a), int(b)) for a, b in zip(*np.nonzero(held & (m[..., 0] == mat) & (m[..., 1] == r) & (m[..., 2] == c)))]
        who = ", ".join(f"lane {a} element {b}" for a, b in holders[:4]) or "nobody"
        raise fail(
            "row",
            f"cell (matrix {mat}, row {r}, col {c}) is held {int(counts[cell])} times (by {who}), "
            f"expected {layout.copies}; {len(wrong)} cell(s) wrong",
        )


class _Template(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def _subst(text: Any, axes: dict, path: tuple, src: Source) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return text.format_map(_Template({k: v for k, v in axes.items()}))
    except KeyError as exc:
        raise src.error(path, f"template names {{{exc.args[0]}}}, which no axis defines") from None


_OVERRIDES = ("min_ptx", "min_target", "targets", "notes")


def _axis_points(group: dict) -> list[tuple[dict, dict, int]]:
    """(axis values, overrides, entry index) for every point of the group's axes."""
    out = []
    for e, entry in enumerate(group.get("axes") or [{}]):
        keys = [k for k in entry if k not in _OVERRIDES]
        choices = [entry[k] if isinstance(entry[k], list) else [entry[k]] for k in keys]
        overrides = {k: entry[k] for k in _OVERRIDES if k in entry}
        for combo in itertools.product(*choices):
            out.append((dict(zip(keys, combo)), overrides, e))
    return out


def _expand(doc: dict, group: dict, path: tuple, fragments: dict, specs: Specs, src: Source) -> Iterable[Variant]:
    for axes, overrides, e in _axis_points(group):
        gpath = path + ("axes", e) if group.get("axes") else path
        vid = _subst(group["instruction"], axes, path + ("instruction",), src)
        settings = {**{k: group[k] for k in _OVERRIDES if k in group}, **overrides}
        if "targets" in overrides:
            settings.pop("min_target", None)
        if "min_target" in overrides:
            settings.pop("targets", None)
        try:
            requires = tuple(parse_target(t) for t in settings.get("targets") or [settings["min_target"]])
            min_ptx = PtxVersion.parse(settings["min_ptx"])
        except ValueError as exc:
            raise src.error(gpath, str(exc)) from None
        operands = {}
        for name, op in group["operands"].items():
            opath = path + ("operands", name)
            tname = _subst(op["type"], axes, opath + ("type",), src)
            lname = _subst(op["layout"], axes, opath + ("layout",), src)
            fname = _subst(op.get("fragment", tname), axes, opath + ("fragment",), src)
            if tname not in TYPES:
                raise src.error(opath + ("type",), f"unknown type {tname!r} (variant {vid})")
            layout = specs.layouts.get(lname)
            if layout is None:
                close = difflib.get_close_matches(lname, list(specs.layouts), n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                raise src.error(opath + ("layout",), f"unknown layout {lname!r}{hint} (variant {vid})")
            frag = fragments.get(fname)
            if frag is None:
                raise src.error(opath + ("fragment",), f"no fragment {fname!r} in this file's fragments (variant {vid})")
            params = {k: tuple(v) for k, v in (op.get("params") or {}).items()}
            if set(params) != set(layout.params):
                raise src.error(
                    opath + ("params",),
                    f"layout {lname} takes parameters {sorted(layout.params)}, operand gives {sorted(params)}",
                )
            operand = Operand(name, TYPES[tname], layout, frag, params)
            for combo in operand.param_combinations():
                check_layout(layout, src, combo)
            _check_operand(operand, vid, opath, src)
            operands[name] = operand
        variant = Variant(
            id=vid,
            family=doc["family"],
            section=group["section"],
            min_ptx=min_ptx,
            requires=requires,
            operands=operands,
            notes=tuple(settings.get("notes", ())),
            file=src.file,
            line=src.line(gpath),
        )
        _check_family_operands(variant, path, src)
        yield variant


def _check_operand(op: Operand, vid: str, path: tuple, src: Source) -> None:
    frag, lay = op.fragment, op.layout
    if lay.elements % frag.per_register:
        raise src.error(path, f"{lay.elements} elements do not fill whole {frag.register} registers of {frag.per_register} (variant {vid})")
    if op.type.bits + frag.value_shift > frag.container_bits:
        raise src.error(path, f".{op.type.name} ({op.type.bits} bits) does not fit a {frag.container_bits}-bit container (variant {vid})")


def _check_family_operands(v: Variant, path: tuple, src: Source) -> None:
    """The owning family's invariants (operand names, shapes, sparsity)."""
    try:
        fam = registry.family_of(v)
    except LookupError as exc:
        raise src.error(path + ("family",), str(exc)) from None
    fam.check_variant(v, path, src)


def describe_path(path: tuple) -> str:
    return field_name(path)
