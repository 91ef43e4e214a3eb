"""``export layout``: one operand of one variant in the form a user asks for (cute, linear, json).

Each form is built from the spec's own map (:mod:`.tile`) and the wgmma shared-memory formulas
(:mod:`.smem`); where a form cannot describe the map the result says why instead of
approximating it.  :func:`inventory` counts, over every variant and operand, which forms exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import FORMATS
from .cute import CuteError, fit_tile
from .jsonform import layout_doc
from .linear import LinearError
from .linear import fit_tile as linear_tile
from .smem import smem_atoms, smem_operands
from .tile import ExportError, Tile, operand_tile

__all__ = ["Export", "export_layout", "operands_of", "FORMS"]

FORMS = ("cute", "linear", "json")


@dataclass
class Export:
    """What ``export layout`` prints: ``text`` (cute) or ``doc`` (linear, json); ``missing``: why a form has none."""

    form: str
    text: str = ""
    doc: dict | None = None
    missing: list[str] = field(default_factory=list)


def operands_of(v: Any) -> tuple[str, ...]:
    """Every operand of ``v`` with a register fragment or a shared-memory layout."""
    return tuple(v.operands) + tuple(o for o in smem_operands(v) if o not in v.operands)


def _tile(v: Any, operand: str, params: Mapping[str, int] | None) -> Tile | None:
    if operand in v.operands:
        return operand_tile(v, operand, params)
    if operand in smem_operands(v):
        return None
    raise ExportError(f"{v.id} has no operand {operand!r}; it has {', '.join(operands_of(v))}")


def export_layout(v: Any, operand: str, form: str, params: Mapping[str, int] | None = None) -> Export:
    """``operand`` of ``v`` as ``form``; raises :class:`ExportError` for an operand or parameter it lacks."""
    if form not in FORMS:
        raise ExportError(f"--as {form}: expected one of {', '.join(FORMS)}")
    tile = _tile(v, operand, params)
    atoms = smem_atoms(v, operand) if operand in smem_operands(v) else []
    out = Export(form)
    if form == "json":
        out.doc = layout_doc(v, operand, tile, atoms)
        return out
    if form == "linear":
        doc: dict[str, Any] = {"schema": FORMATS["linear"], "variant": v.id, "operand": operand}
        if tile is not None:
            try:
                doc["fragment"] = linear_tile(tile).doc(layout=tile.layout, params=dict(tile.params))
                if tile.partial():
                    doc["fragment"]["holds"] = _partial_note(tile, "zero bases")
            except LinearError as exc:
                out.missing.append(f"register fragment: no linear form: {exc}")
                doc["no_linear_form"] = str(exc)
        if atoms:
            doc["smem"] = atoms
        out.doc = doc
        return out
    lines = [f"# {FORMATS['cute']}  {v.id}  operand {operand}"]
    if tile is not None:
        try:
            lay = fit_tile(tile)
            lines.append(f"# layout {tile.layout}{_params_text(tile)}: {tile.domain()}")
            if tile.partial():
                lines.append(f"# {_partial_note(tile, 'stride 0')}")
            lines += [str(lay), lay.cpp()]
        except CuteError as exc:
            out.missing.append(f"register fragment: no shape:stride form: {exc}")
    for a in atoms:
        lines.append(f"# shared memory, {a['major']}-major, swizzle {a['swizzle']} (swizzle on byte addresses)")
        lines.append(a["cute"])
    out.text = "\n".join(lines) + "\n"
    return out


def _partial_note(tile: Tile, how: str) -> str:
    """What a form of a map that only some slots hold promises."""
    return (f"{tile.partial()}: the layout gives each of them its cell; the others, which the instruction does "
            f"not read, are don't-care ({how} where no held pair decides)")


def _params_text(tile: Tile) -> str:
    return f" [{', '.join(f'{k}={v}' for k, v in tile.params.items())}]" if tile.params else ""
