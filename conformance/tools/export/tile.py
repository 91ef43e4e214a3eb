"""An operand's spec map as a table over (thread, value): what every export format is made from.

``(lane, element) -> (matrix, row, col)`` comes from the spec (:meth:`Layout.map`); this module
names the tile's modes the way CuTe's MMA atoms do (A is (M, K), B is (N, K), C and D are (M, N);
other operands keep the spec's (row, col)) and numbers its cells column-major, matrix last.
A map with no held slot is one the ISA leaves unspecified (wmma's fragments): it has no tile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ExportError", "Tile", "operand_tile", "tiles_of"]

# CuTe's names for the tile modes of each MMA operand; B is stored (N, K), the spec's (col, row).
_MODES = {"A": ("M", "K", False), "B": ("N", "K", True), "C": ("M", "N", False), "D": ("M", "N", False)}


class ExportError(ValueError):
    """A request that names no exportable thing (variant, operand, parameter): one line for people."""


@dataclass(frozen=True)
class Tile:
    """``(thread, value) -> tile cell`` of one operand under one assignment of its layout parameters."""

    variant: str
    operand: str
    layout: str
    params: Mapping[str, int]
    coords: np.ndarray  # int64[lane, element, 3]: (matrix, row, col) in the spec's terms, -1 where unheld
    rows: int
    cols: int
    matrices: int
    modes: tuple[str, str]  # the tile's two modes in CuTe's order
    transposed: bool  # True: CuTe's first mode is the spec's col

    @property
    def lanes(self) -> int:
        return int(self.coords.shape[0])

    @property
    def elements(self) -> int:
        return int(self.coords.shape[1])

    @property
    def held(self) -> np.ndarray:
        return self.coords[..., 0] >= 0

    @property
    def extents(self) -> tuple[int, int]:
        """Sizes of the two tile modes, CuTe's order."""
        return (self.cols, self.rows) if self.transposed else (self.rows, self.cols)

    @property
    def size(self) -> int:
        return self.rows * self.cols * self.matrices

    def index(self) -> np.ndarray:
        """int64[lane, element]: the column-major tile index ``first + second * E0 + matrix * E0 * E1``; -1 unheld."""
        mat, row, col = (self.coords[..., i] for i in range(3))
        first, second = (col, row) if self.transposed else (row, col)
        e0, e1 = self.extents
        return np.where(self.held, first + second * e0 + mat * e0 * e1, -1)

    def cell(self, index: int) -> tuple[int, int, int]:
        """The spec's (matrix, row, col) of a tile index."""
        e0, e1 = self.extents
        mat, rest = divmod(int(index), e0 * e1)
        second, first = divmod(rest, e0)
        return (mat, second, first) if self.transposed else (mat, first, second)

    def domain(self) -> str:
        """One line: what the tile's index means."""
        e0, e1 = self.extents
        mats = f", {self.matrices} matrices" if self.matrices > 1 else ""
        return (f"(thread {self.lanes}, value {self.elements}) -> column-major ({self.modes[0]} {e0}, "
                f"{self.modes[1]} {e1}{mats}) index")

    def unspecified(self) -> str | None:
        """Why there is no map at all, or None."""
        if not self.held.any():
            return f"{self.variant} operand {self.operand}: the ISA leaves this map unspecified (layout {self.layout})"
        return None

    def partial(self) -> str | None:
        """Why a total form (every thread, every value) cannot describe the map, or None."""
        held = self.held
        if held.all():
            return None
        return f"only {int(held.sum())} of {held.size} (thread, value) slots hold a value"


def _operand(v: Any, name: str) -> Any:
    if name not in v.operands:
        raise ExportError(f"{v.id} has no operand {name!r}; it has {', '.join(v.operands)}")
    return v.operands[name]


def _params(op: Any, given: Mapping[str, int] | None) -> dict[str, int]:
    combos = op.param_combinations()
    if not given:
        return dict(combos[0]) if combos else {}
    for combo in combos:
        if all(combo.get(k) == v for k, v in given.items()) and set(given) <= set(combo):
            return dict(combo)
    legal = "; ".join(", ".join(f"{k}={v}" for k, v in c.items()) for c in combos) or "none"
    raise ExportError(f"operand {op.name}: --param {given} is not a legal assignment; legal: {legal}")


def operand_tile(v: Any, operand: str, params: Mapping[str, int] | None = None) -> Tile:
    """The tile of ``v``'s ``operand`` (layout parameters: ``params``, default the first legal assignment)."""
    op = _operand(v, operand)
    chosen = _params(op, params)
    lay = op.layout
    first, second, transposed = _MODES.get(operand, ("row", "col", False))
    return Tile(v.id, operand, lay.name, chosen, lay.map(chosen or None), lay.rows, lay.cols, lay.matrices,
                (first, second), transposed)


def tiles_of(v: Any, operand: str) -> list[Tile]:
    """One tile per legal assignment of the operand's layout parameters."""
    op = _operand(v, operand)
    return [operand_tile(v, operand, combo) for combo in op.param_combinations()]
