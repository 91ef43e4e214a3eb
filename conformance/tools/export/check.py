"""``check layout``: a user's own layout against the spec's map and against recorded hardware maps.

The user's layout (a CuTe string or a linear-layout document) is evaluated over every (lane,
element) of the operand and compared slot by slot, lanes first, like the run's map
comparators: the first slot that differs is named with its lane, element, register and both
cells.  Recorded maps are the ``observed_maps.npz`` of run directories (read with the run's own
reader); slots a run could not decide (-1) are not compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.run.diff import RunDir, _load_maps

from .cute import CuteError, CuteLayout
from .linear import LinearError, LinearLayout, in_dims_of
from .tile import Tile

__all__ = ["Recorded", "cute_coords", "linear_coords", "first_difference", "recorded_maps", "smem_differences",
           "UserLayoutError"]


class UserLayoutError(ValueError):
    """A user layout that does not fit the operand (its sizes or its codomain): bad input, exit 2."""


@dataclass
class Recorded:
    run: str  # the run directory's name
    device: str
    coords: np.ndarray  # int64[lane, element, 3], -1 where the run could not decide


def cute_coords(layout: CuteLayout, tile: Tile) -> np.ndarray:
    """int64[lane, element, 3]: the (matrix, row, col) a CuTe TV layout gives each slot; -2 off the tile."""
    try:
        index = layout.tv(tile.lanes, tile.elements)
    except CuteError as exc:
        raise UserLayoutError(str(exc)) from None
    out = np.full(index.shape + (3,), -2, dtype=np.int64)
    inside = (index >= 0) & (index < tile.size)
    for (ln, e), i in np.ndenumerate(index):
        if inside[ln, e]:
            out[ln, e] = tile.cell(int(i))
    return out


def linear_coords(layout: LinearLayout, tile: Tile) -> np.ndarray:
    """int64[lane, element, 3] a linear layout gives each slot; its dimensions must be the operand's."""
    want_in = in_dims_of(tile.lanes, tile.elements)
    got_in = {d: n for d, n in layout.sizes().items() if n > 1 or d in want_in}
    if {d: n for d, n in got_in.items() if n > 1} != {d: n for d, n in want_in.items() if n > 1}:
        raise UserLayoutError(f"input dimensions {layout.sizes()} do not match the operand's {want_in}")
    want_out = ["matrix", "row", "col"] if tile.matrices > 1 else ["row", "col"]
    if list(layout.out_dims) != want_out:
        raise UserLayoutError(f"output dimensions {list(layout.out_dims)}; the operand's are {want_out}")
    lane = np.arange(tile.lanes)[:, None]
    vals = layout(register=np.arange(tile.elements)[None, :], lane=lane % 32, warp=lane // 32)
    if tile.matrices == 1:
        vals = np.concatenate([np.zeros(vals.shape[:2] + (1,), dtype=np.int64), vals], axis=-1)
    limits = np.array([tile.matrices, tile.rows, tile.cols])
    return np.where(((vals >= 0) & (vals < limits)).all(axis=-1, keepdims=True), vals, -2)


def _cell(tile: Tile, c: np.ndarray) -> str:
    if c[0] == -2:
        return "a cell outside the tile"
    mat = f"matrix {c[0]}, " if tile.matrices > 1 else ""
    return f"({mat}row {c[1]}, col {c[2]})"


def first_difference(tile: Tile, per_register: int, reference: np.ndarray, user: np.ndarray,
                     against: str) -> tuple[int, str | None]:
    """(slots differing, the line naming the first one) of the user's map against ``reference``.

    Slots the reference does not hold or could not decide (< 0) are skipped."""
    decided = reference[..., 0] >= 0
    differ = decided & (reference != user).any(axis=-1)
    if not differ.any():
        return 0, None
    ln, e = (int(x) for x in np.argwhere(differ)[0])
    line = (f"{tile.operand} lane {ln} element {e} (register {e // per_register}): {against} "
            f"{_cell(tile, reference[ln, e])}, layout {_cell(tile, user[ln, e])}")
    return int(differ.sum()), line


def smem_differences(user: list[tuple[str, str, LinearLayout]], spec_atoms: list[dict]) -> list[str]:
    """One line per user atom: agrees with the spec's atom of the same major-ness and swizzle, or where it first
    differs (element offset, both cells).  Raises UserLayoutError for an atom the operand does not have."""
    lines = []
    for major, swizzle, layout in user:
        spec = next((a for a in spec_atoms if a["major"] == major and a["swizzle"] == swizzle), None)
        what = f"{major}-major swizzle {swizzle}"
        if spec is None:
            have = ", ".join(f"{a['major']}/{a['swizzle']}" for a in spec_atoms)
            raise UserLayoutError(f"smem atom {what}: the operand has no such layout; it has {have}")
        n = spec["in_dims"]["offset"]
        if layout.sizes().get("offset") != n or layout.out_dims != spec["out_dims"]:
            raise UserLayoutError(f"smem atom {what}: {layout.sizes()} -> {layout.out_dims}; the spec's atom is "
                                  f"{{'offset': {n}}} -> {spec['out_dims']}")
        offsets = np.arange(n)
        want = LinearLayout(spec["bases"], spec["out_dims"])(offset=offsets)
        got = layout(offset=offsets)
        bad = np.argwhere((want != got).any(axis=-1))
        if not len(bad):
            lines.append(f"smem {what}: agrees with the spec ({n} elements)")
            continue
        i = int(bad[0][0])
        lines.append(f"smem {what}: differs from the spec at {len(bad)} element offset(s); first: offset {i}: spec "
                     f"(row {want[i][0]}, col {want[i][1]}), layout (row {got[i][0]}, col {got[i][1]})")
    return lines


def recorded_maps(dirs: list[Path], variant: str, operand: str) -> list[Recorded]:
    """The observed map of ``variant``'s ``operand`` in each run directory that recorded one."""
    out = []
    key = f"{variant.replace('/', '_')}|{operand}"
    for d in dirs:
        maps, _problem = _load_maps(RunDir(Path(d), {}, None, ""))
        if not maps or key not in maps:
            continue
        device = "device not recorded"
        index = Path(d) / "observed_maps.json"
        if index.exists():
            try:
                dev = json.loads(index.read_text()).get("device", {})
                parts = [str(dev["gpu"])] if "gpu" in dev else []
                parts += [f"driver {dev['driver']}"] if "driver" in dev else []
                device = ", ".join(parts) or device
            except ValueError:
                pass
        out.append(Recorded(Path(d).name, device, np.asarray(maps[key], dtype=np.int64)))
    return out


def run_dirs(root: Path) -> list[Path]:
    """Every recorded run under ``root`` that kept observed maps."""
    return sorted(p.parent for p in Path(root).glob("*/observed_maps.npz"))


def parse_smem(linear: str) -> list[tuple[str, str, LinearLayout]]:
    from .linear import read_smem

    try:
        return read_smem(Path(linear))
    except LinearError as exc:
        raise UserLayoutError(f"--linear: {exc}") from None


def parse_user(cute: str | None, linear: str | None) -> Any:
    """The user's layout from ``--cute STRING`` or ``--linear FILE``; raises UserLayoutError."""
    from .cute import parse
    from .linear import read

    try:
        return parse(cute) if cute is not None else read(Path(linear))
    except (CuteError, LinearError) as exc:
        what = "--cute" if cute is not None else "--linear"
        raise UserLayoutError(f"{what}: {exc}") from None
