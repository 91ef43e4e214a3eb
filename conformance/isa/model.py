"""The spec model: layouts, register fragments, operands and variants.

A *layout* maps ``(lane, element) -> (matrix, row, col)`` by formulas; a
*fragment* says how an operand's elements pack into registers (low to high);
an *operand* joins an element type, a layout and a fragment; a *variant* is one
PTX instruction string with its operands, minimum ``.version`` and targets.

Nothing here runs anything: later layers (generators, backends, oracle,
compare) only interpret these values.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .expr import Expr, evaluate, evaluate_all
from .ptxtypes import PtxType
from .targets import PtxVersion, Target, parse_target, target_satisfies

__all__ = ["Layout", "Fragment", "Operand", "Variant", "Instruction", "REGISTER_BITS"]

REGISTER_BITS = {"b32": 32, "f32": 32, "s32": 32, "u32": 32, "f64": 64, "b64": 64}


@dataclass(frozen=True)
class Layout:
    """``(lane, element) -> (matrix, row, col)``, stated once and shared by name."""

    name: str
    maps: str
    section: str
    figure: str | None
    rows: int
    cols: int
    elements: int
    matrices: int
    lanes: int
    matrix: Expr
    row: Expr
    col: Expr
    where: Expr | None
    copies: int
    bindings: Mapping[str, Expr]
    params: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    errata: tuple[Mapping[str, str], ...] = ()
    file: str = ""
    line: int | None = None

    def env(self, params: Mapping[str, int] | None = None) -> dict[str, object]:
        lane = np.arange(self.lanes, dtype=np.int64)[:, None]
        elem = np.arange(self.elements, dtype=np.int64)[None, :]
        env: dict[str, object] = dict(self.bindings)
        env.update({"%laneid": lane, "i": elem})
        missing = [p for p in self.params if p not in (params or {})]
        if missing:
            raise ValueError(f"layout {self.name} needs parameter(s) {', '.join(missing)}")
        env.update(params or {})
        return env

    def _memo(self) -> dict:
        """Evaluated maps by parameter values: a layout is evaluated once per selector, not once per case."""
        memo = self.__dict__.get("_evaluated")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_evaluated", memo)
        return memo

    def held(self, params: Mapping[str, int] | None = None) -> np.ndarray:
        """Boolean ``[lane, element]``: which registers slots hold a value."""
        key = ("held", tuple(sorted((params or {}).items())))
        memo = self._memo()
        if key not in memo:
            memo[key] = self._held(params)
        return memo[key].copy()

    def _held(self, params: Mapping[str, int] | None) -> np.ndarray:
        shape = (self.lanes, self.elements)
        if self.where is None:
            return np.ones(shape, dtype=bool)
        return np.broadcast_to(evaluate(self.where, self.env(params)) != 0, shape).copy()

    def map(self, params: Mapping[str, int] | None = None) -> np.ndarray:
        """``int64[lane, element, 3]`` of (matrix, row, col); -1 where nothing is held."""
        key = ("map", tuple(sorted((params or {}).items())))
        memo = self._memo()
        if key not in memo:
            memo[key] = self._map(params)
        return memo[key].copy()

    def _map(self, params: Mapping[str, int] | None) -> np.ndarray:
        env = self.env(params)
        shape = (self.lanes, self.elements)
        out = np.stack(
            [np.broadcast_to(x, shape) for x in evaluate_all((self.matrix, self.row, self.col), env)],
            axis=-1,
        ).copy()
        out[~self.held(params)] = -1
        return out

    @cached_property
    def default_map(self) -> np.ndarray:
        return self.map()


@dataclass(frozen=True)
class Fragment:
    """How elements pack into registers: ``per_register`` containers, low to high."""

    name: str
    register: str
    per_register: int
    value_shift: int = 0

    @property
    def register_bits(self) -> int:
        return REGISTER_BITS[self.register]

    @property
    def container_bits(self) -> int:
        return self.register_bits // self.per_register

    @property
    def words_per_register(self) -> int:
        return self.register_bits // 32


@dataclass(frozen=True)
class Operand:
    name: str  # A, B, C, D, scale_A, scale_B
    type: PtxType
    layout: Layout
    fragment: Fragment
    params: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def param_combinations(self) -> list[dict[str, int]]:
        """Every legal assignment of the layout's parameters (one empty one if none)."""
        names = list(self.params)
        return [dict(zip(names, vals)) for vals in itertools.product(*(self.params[n] for n in names))]

    @property
    def registers(self) -> int:
        return self.layout.elements // self.fragment.per_register

    @property
    def words(self) -> int:
        """32-bit words this operand occupies per lane in a probe buffer."""
        return self.registers * self.fragment.words_per_register


_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")


@dataclass(frozen=True)
class Instruction:
    """The parts of a PTX instruction string, named as the ISA names them."""

    opcode: str  # "mma"
    parts: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Instruction:
        parts = tuple(text.split("."))
        return cls(parts[0], parts[1:])

    @property
    def shape(self) -> tuple[int, int, int]:
        for p in self.parts:
            m = _SHAPE.match(p)
            if m:
                return int(m.group(1)), int(m.group(2)), int(m.group(3))
        raise ValueError("instruction names no .mMnNkK shape")

    @property
    def layouts(self) -> tuple[str, ...]:
        """``.row``/``.col`` of A then B."""
        return tuple(p for p in self.parts if p in ("row", "col"))

    @property
    def satfinite(self) -> bool:
        return "satfinite" in self.parts

    @property
    def rounding(self) -> str:
        """The rounding modifier (``rn``/``rz``/``rm``/``rp``) the form names, or "" (round to nearest even)."""
        return next((p for p in self.parts if p in ("rn", "rz", "rm", "rp")), "")

    @property
    def bitop(self) -> str | None:
        """``xor`` or ``and`` for ``.b1`` forms (``.xor.popc``/``.and.popc``)."""
        if "popc" not in self.parts:
            return None
        return self.parts[self.parts.index("popc") - 1]

    @property
    def kind(self) -> str | None:
        for p in self.parts:
            if p.startswith("kind::"):
                return p[len("kind::") :]
        return None

    @property
    def sparse(self) -> str | None:
        """``sp`` or ``ordered`` for ``mma.sp`` / ``mma.sp::ordered_metadata``; None when dense."""
        if not self.parts or not self.parts[0].startswith("sp"):
            return None
        return "ordered" if self.parts[0] == "sp::ordered_metadata" else "sp"

    @property
    def block_scale(self) -> bool:
        return "block_scale" in self.parts

    @property
    def scale_vec(self) -> int | None:
        """Scale factors per row of A; the ISA's defaults: 1X for mxf8f6f4, 2X for mxf4."""
        for p in self.parts:
            if p.startswith("scale_vec::"):
                return int(p[len("scale_vec::") :].rstrip("X"))
        if self.block_scale:
            return {"mxf8f6f4": 1, "mxf4": 2}.get(self.kind or "")
        return None


@dataclass(frozen=True)
class Variant:
    """One PTX instruction string and everything needed to probe it."""

    id: str
    family: str
    section: str
    min_ptx: PtxVersion
    requires: tuple[Target, ...]  # any one suffices
    operands: Mapping[str, Operand]
    notes: tuple[str, ...] = ()
    file: str = ""
    line: int | None = None

    @cached_property
    def instruction(self) -> Instruction:
        return Instruction.parse(self.id)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.instruction.shape

    @property
    def min_target(self) -> Target:
        return min(self.requires, key=lambda t: (t.cc, t.suffix))

    def valid_for(self, target: Target | str, ptx: PtxVersion | str | None = None) -> str | None:
        """Why PTX of this ``target``/``.version`` must reject the variant, or None."""
        target = parse_target(target) if isinstance(target, str) else target
        if ptx is not None:
            ptx = PtxVersion.parse(ptx) if isinstance(ptx, str) else ptx
            if ptx < self.min_ptx:
                return f"needs .version {self.min_ptx} or later (PTX ISA notes)"
            if ptx < target.min_ptx:
                return f".target {target.name} needs .version {target.min_ptx} or later"
        if not any(target_satisfies(target, req) for req in self.requires):
            names = ", ".join(r.name for r in self.requires)
            return f"needs target {names} (Target ISA notes); {target.name} lacks it"
        return None

    @property
    def inputs(self) -> tuple[str, ...]:
        """Operand names read by the instruction, in probe-buffer order."""
        return tuple(n for n in self.operands if n != "D")


class TableLayout(Layout):
    """A layout given as a table instead of formulas: observed maps, permuted maps in tests.

    ``table`` is ``int64[lane, element, 3]`` of (matrix, row, col), -1 where unheld.
    """

    def __init__(self, base: Layout, table: np.ndarray, name: str | None = None):
        object.__setattr__(self, "_table", np.asarray(table, dtype=np.int64))
        fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
        fields["name"] = name or f"{base.name}[table]"
        for f, val in fields.items():
            object.__setattr__(self, f, val)

    def map(self, params: Mapping[str, int] | None = None) -> np.ndarray:
        return self._table.copy()

    def held(self, params: Mapping[str, int] | None = None) -> np.ndarray:
        return self._table[..., 0] >= 0
