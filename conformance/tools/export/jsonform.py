"""``--as json``: the spec's lane map as one versioned JSON document (schema ``layout.schema.json``).

The ``map`` rows are those ``ptxconf specs show --json`` prints: ``[lane, element, row, col]``, or
``[lane, element, matrix, row, col]`` where the operand holds several matrices; ``map_columns``
names them either way.  Operands wgmma reads from shared memory add ``smem``: the swizzle atoms of
:mod:`.smem`, each with its ``offset -> (row, col)`` table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.isa.yamlsrc import schema_validator

from . import FORMATS
from .tile import Tile

__all__ = ["layout_doc", "validate", "schema_errors", "SCHEMA_FILE"]

SCHEMA_FILE = Path(__file__).with_name("layout.schema.json")


def _fragment(v: Any, tile: Tile) -> dict:
    op = v.operands[tile.operand]
    held = tile.held
    cols = ["lane", "element"] + (["matrix"] if tile.matrices > 1 else []) + ["row", "col"]
    pick = slice(0, 3) if tile.matrices > 1 else slice(1, 3)
    lanes, elems = np.nonzero(held)
    rows = np.concatenate([lanes[:, None], elems[:, None], tile.coords[lanes, elems][:, pick]], axis=1).tolist()
    return {"layout": tile.layout, "type": op.type.name, "register_type": op.fragment.register,
            "per_register": op.fragment.per_register, "registers": op.registers, "lanes": tile.lanes,
            "elements": tile.elements, "shape": [tile.rows, tile.cols], "matrices": tile.matrices,
            "params": dict(tile.params), "specified": bool(held.any()), "map_columns": cols, "map": rows}


def layout_doc(v: Any, operand: str, tile: Tile | None, smem: list[dict] | None) -> dict:
    """The ``ptxconf-layout/1`` document of one operand: its register fragment and/or its smem atoms."""
    doc: dict[str, Any] = {"schema": FORMATS["json"], "variant": v.id, "operand": operand}
    if tile is not None:
        doc["fragment"] = _fragment(v, tile)
    if smem:
        atoms = []
        for a in smem:
            lay = {k: a[k] for k in ("major", "swizzle", "swizzle_bytes", "element_bits", "bytes", "out_dims")}
            sizes = a["out_dims"]
            offsets = np.arange(a["in_dims"]["offset"])
            coords = np.zeros((len(offsets), len(sizes)), dtype=np.int64)
            for bit, vec in enumerate(a["bases"]["offset"]):
                coords ^= ((offsets >> bit) & 1)[:, None] * np.asarray(vec, dtype=np.int64)
            lay["map_columns"] = ["offset", *sizes]
            lay["map"] = [[int(i), *map(int, c)] for i, c in zip(offsets, coords)]
            atoms.append(lay)
        doc["smem"] = atoms
    return doc


def schema_errors(schema_file: Path, doc: dict) -> list[str]:
    """Errors of ``doc`` under a JSON schema file, one line each naming the field (empty: valid)."""
    errors = schema_validator(schema_file).iter_errors(doc)
    return [f"{'.'.join(map(str, e.absolute_path)) or '(document)'}: {e.message}"
            for e in sorted(errors, key=lambda e: list(map(str, e.absolute_path)))]


def validate(doc: dict) -> list[str]:
    """Schema errors of a layout document (empty: valid)."""
    return schema_errors(SCHEMA_FILE, doc)
