"""Linear layouts over GF(2): bases from (register, lane, warp) to the tile's coordinates.

Triton writes a distributed layout as one basis vector per bit of each input dimension; the
coordinates of an input are the XOR of the bases of its set bits.  Here the input dimensions
are ``register`` (the element index within a thread, low to high), ``lane`` (5 bits) and
``warp`` (the warp of a wgmma warpgroup: 2 bits; none for warp-wide instructions), and the
outputs are the spec's ``(row, col)``, with ``matrix`` first where an operand holds several
(ldmatrix .x2/.x4, m8n8k4's four computations).  Rows and columns keep the spec's orientation:
A is M x K, B is K x N.

A map is linear when every dimension is a power of two and the bases reproduce every held slot
(unheld slots are don't-care: zero bases where nothing decides); :func:`fit` says which fails.  wgmma's shared-memory
layouts are in :mod:`.smem`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .tile import Tile

__all__ = ["LinearLayout", "LinearError", "fit", "fit_flat", "fit_tile", "in_dims_of", "read", "read_smem"]


SCHEMA_FILE = Path(__file__).with_name("linear.schema.json")


def validate(doc: dict) -> list[str]:
    """Schema errors of a ``ptxconf-linear/1`` document (empty: valid)."""
    from .jsonform import schema_errors

    return schema_errors(SCHEMA_FILE, doc)


class LinearError(ValueError):
    """A map with no linear form, or a document that is no linear layout."""


@dataclass(frozen=True)
class LinearLayout:
    """``bases[in_dim]``: one out-vector per bit of that input, in ``out_dims`` order."""

    bases: dict[str, list[list[int]]]
    out_dims: dict[str, int]

    def sizes(self) -> dict[str, int]:
        return {d: 1 << len(b) for d, b in self.bases.items()}

    def __call__(self, **inputs: np.ndarray) -> np.ndarray:
        """int64[..., len(out_dims)]: the XOR of the bases of the set bits of each input."""
        shape = np.broadcast_shapes(*(np.shape(x) for x in inputs.values()))
        out = np.zeros(shape + (len(self.out_dims),), dtype=np.int64)
        for dim, bases in self.bases.items():
            x = np.broadcast_to(np.asarray(inputs.get(dim, 0), dtype=np.int64), shape)
            for bit, vec in enumerate(bases):
                out ^= ((x >> bit) & 1)[..., None] * np.asarray(vec, dtype=np.int64)
        return out

    def doc(self, **head: Any) -> dict:
        return {**head, "in_dims": self.sizes(), "out_dims": dict(self.out_dims),
                "bases": {d: [list(map(int, v)) for v in b] for d, b in self.bases.items()}}


def _bits(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        raise LinearError(f"{what} {n} is not a power of two")
    return n.bit_length() - 1


def in_dims_of(lanes: int, elements: int) -> dict[str, int]:
    """The input dimensions of a fragment of ``lanes`` threads holding ``elements`` values each."""
    dims = {"register": elements, "lane": min(lanes, 32)}
    if lanes > 32:
        dims["warp"] = lanes // 32
    return dims


def fit_flat(values: np.ndarray, in_dims: dict[str, int], out_dims: dict[str, int],
             name=lambda x: f"input {x}") -> LinearLayout:
    """The linear layout of ``values`` (int64[x, len(out_dims)]), x the inputs' bits concatenated, first
    dimension lowest; ``name(x)`` says which slot ``x`` is in an error.

    Slots that hold nothing (-1) are don't-care: a basis is read from two held slots that differ in its
    bit alone, and is zero where no such pair exists (the others then repeat held ones, as broadcast
    dimensions do in Triton's layouts)."""
    widths = {d: _bits(n, f"{d} count") for d, n in in_dims.items()}
    for dim, n in out_dims.items():
        _bits(n, f"{dim} extent")
    held = (values >= 0).all(axis=-1)
    x = np.arange(len(values))
    vecs = []
    for b in range(sum(widths.values())):
        lo = x[(x >> b) & 1 == 0]
        both = held[lo] & held[lo + (1 << b)]
        vecs.append([int(v) for v in values[lo[both][0] + (1 << b)] ^ values[lo[both][0]]] if both.any()
                    else [0] * len(out_dims))
    bases, shift = {}, 0
    for dim in in_dims:
        bases[dim] = vecs[shift:shift + widths[dim]]
        shift += widths[dim]
    layout = LinearLayout(bases, dict(out_dims))
    inputs, shift = {}, 0
    for dim in in_dims:
        inputs[dim] = (x >> shift) & ((1 << widths[dim]) - 1)
        shift += widths[dim]
    got = layout(**inputs)
    bad = np.argwhere(held & (got != values).any(axis=-1))
    if len(bad):
        i = int(bad[0][0])
        raise LinearError(f"not XOR-linear: {name(i)} holds {tuple(int(v) for v in values[i])}, "
                          f"the bases give {tuple(int(v) for v in got[i])}")
    return layout


def fit(coords: np.ndarray, out_dims: dict[str, int]) -> LinearLayout:
    """The linear layout of ``coords`` (int64[lane, register, len(out_dims)]), or :class:`LinearError`."""
    lanes, elements = coords.shape[:2]
    dims = in_dims_of(lanes, elements)
    for d, n in dims.items():
        _bits(n, f"{d} count")
    return fit_flat(coords.reshape(lanes * elements, -1), dims, out_dims,
                    name=lambda x: f"lane {x // elements} register {x % elements}")


def out_dims_of(tile: Tile) -> dict[str, int]:
    dims = {"row": tile.rows, "col": tile.cols}
    return {"matrix": tile.matrices, **dims} if tile.matrices > 1 else dims


def tile_coords(tile: Tile) -> np.ndarray:
    """int64[lane, element, k]: the tile's coordinates in ``out_dims_of`` order."""
    return tile.coords if tile.matrices > 1 else tile.coords[..., 1:]


def fit_tile(tile: Tile) -> LinearLayout:
    why = tile.unspecified()
    if why:
        raise LinearError(why)
    return fit(tile_coords(tile), out_dims_of(tile))


def _layout(doc: Any, path: Path, prefix: str, dims: tuple[str, ...]) -> LinearLayout:
    """One ``{"bases", "out_dims"}`` object at field ``prefix`` of ``path`` (errors: ``FILE: field PREFIX.KEY``)."""
    where = f"{path}: field {prefix}"
    if not isinstance(doc, dict):
        raise LinearError(f"{where.rstrip('.') if prefix else f'{path}: document'}: expected an object with "
                          "'bases' and 'out_dims'")
    for key in ("bases", "out_dims"):
        if not isinstance(doc.get(key), dict):
            raise LinearError(f"{where}{key}: expected an object")
    out_dims = doc["out_dims"]
    for name, n in out_dims.items():
        if not isinstance(n, int):
            raise LinearError(f"{where}out_dims.{name}: expected an integer, found {n!r}")
    bases: dict[str, list[list[int]]] = {}
    for dim, vecs in doc["bases"].items():
        if dim not in dims:
            raise LinearError(f"{where}bases.{dim}: unknown input dimension ({', '.join(dims)})")
        if not isinstance(vecs, list):
            raise LinearError(f"{where}bases.{dim}: expected a list of vectors")
        for i, vec in enumerate(vecs):
            if not (isinstance(vec, list) and len(vec) == len(out_dims) and all(isinstance(x, int) for x in vec)):
                raise LinearError(f"{where}bases.{dim}[{i}]: expected {len(out_dims)} integers "
                                  f"({', '.join(out_dims)}), found {vec!r}")
        bases[dim] = vecs
    return LinearLayout(bases, dict(out_dims))


def _document(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise LinearError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise LinearError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise LinearError(f"{path}: expected a JSON object")
    return doc


def read(path: Path) -> LinearLayout:
    """The register fragment of a linear layout document (``export layout --as linear``: its ``fragment``), or
    a bare ``{"bases", "out_dims"}`` object written by hand."""
    doc = _document(path)
    if "fragment" in doc:
        return _layout(doc["fragment"], path, "fragment.", ("register", "lane", "warp"))
    return _layout(doc, path, "", ("register", "lane", "warp"))


def read_smem(path: Path) -> list[tuple[str, str, LinearLayout]]:
    """The shared-memory atoms of a linear layout document: (major, swizzle, offset -> (row, col))."""
    doc = _document(path)
    atoms = doc.get("smem")
    if not isinstance(atoms, list) or not atoms:
        raise LinearError(f"{path}: field smem: expected a list of swizzle atoms (major, swizzle, bases, out_dims)")
    out = []
    for i, atom in enumerate(atoms):
        layout = _layout(atom, path, f"smem[{i}].", ("offset",))
        if not (isinstance(atom.get("major"), str) and isinstance(atom.get("swizzle"), str)):
            raise LinearError(f"{path}: field smem[{i}]: expected 'major' and 'swizzle' strings")
        out.append((atom["major"], atom["swizzle"], layout))
    return out
