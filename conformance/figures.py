"""Fragment figures: operand tiles drawn like the PTX ISA's layout figures.

Each cell of an operand's ``rows x cols`` tile is labelled ``T<lane>: <x><i>``
(the lane holding it and the element index), coloured by lane, with thick
outlines around the elements of one register.  :func:`map_diff_figure` puts an
expected and an observed map side by side; :func:`ascii_grid` is the terminal
version.  Figures are drawn on :class:`matplotlib.figure.Figure` directly (no
pyplot, no GUI backend); ``.svg`` keeps text as text, other suffixes go to Agg.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from ptxconf.isa import Layout, Variant

if TYPE_CHECKING:  # matplotlib is imported only where something is drawn: ascii_grid and specs show work without it
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["operand_figure", "metadata_figure", "map_diff_figure", "ascii_grid", "holders", "operand_letter", "lane_colors"]

Cell = tuple[int, int, int]  # (matrix, row, col)
Holder = tuple[int, int]  # (lane, element)
Holders = dict[Cell, list[Holder]]
Labeller = Callable[[Holder], str]

MAX_PANEL_COLS = 64
_LETTERS = {"A": "a", "B": "b", "C": "c", "D": "d", "scale_A": "sfa", "scale_B": "sfb", "metadata": "e"}


def operand_letter(name: str) -> str:
    """The ISA's lowercase element prefix: A -> a, scale_A -> sfa."""
    return _LETTERS.get(name, name.lower())


def lane_colors() -> np.ndarray:
    """32 light RGB colours (tab20 + tab20b), ordered so nearby lanes differ in hue."""
    import matplotlib

    t20 = matplotlib.colormaps["tab20"].colors
    t20b = matplotlib.colormaps["tab20b"].colors
    order = [t20[i] for i in range(0, 20, 2)] + [t20[i] for i in range(1, 20, 2)]
    order += [t20b[i] for i in (0, 4, 8, 12, 16, 2, 6, 10, 14, 18, 1, 5)]
    rgb = np.array(order[:32], dtype=float)
    return 0.55 * rgb + 0.45  # blend with white so black text stays legible


def holders(m: np.ndarray) -> Holders:
    """Cell -> the (lane, element) pairs holding it, from an ``[lane, element, 3]`` map."""
    out: Holders = defaultdict(list)
    for lane, elem in zip(*np.nonzero(m[..., 0] >= 0), strict=True):
        q, r, c = (int(v) for v in m[lane, elem])
        out[(q, r, c)].append((int(lane), int(elem)))
    return dict(out)


def _shape(*maps: np.ndarray) -> tuple[int, int, int]:
    """(matrices, rows, cols) spanned by the held entries of all maps."""
    dims = [1, 1, 1]
    for m in maps:
        held = m[m[..., 0] >= 0]
        if held.size:
            dims = [max(d, int(v) + 1) for d, v in zip(dims, held.max(axis=0), strict=True)]
    return dims[0], dims[1], dims[2]


def _blocks(cols: int) -> list[tuple[int, int]]:
    """Column ranges of at most MAX_PANEL_COLS each."""
    return [(c0, min(c0 + MAX_PANEL_COLS, cols)) for c0 in range(0, cols, MAX_PANEL_COLS)]


def _fontsize(rows: int, cols: int) -> float:
    cells = rows * min(cols, MAX_PANEL_COLS)
    return 8.0 if cells <= 256 else 7.0 if cells <= 512 else 6.0


def _cell_inches(label_chars: int, fontsize: float, two_lines: bool) -> tuple[float, float]:
    width = (label_chars * 0.62 + 1.2) * fontsize / 72
    height = (2.9 if two_lines else 1.9) * fontsize / 72
    return width, height


def _cell_text(holds: list[Holder], label: Labeller) -> str:
    return " / ".join(label(h) for h in holds)


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) runs of True in a 1-D boolean array."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(np.int8), [0]])))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True))


def _register_edges(key: np.ndarray) -> list[list[tuple[float, float]]]:
    """Merged segments between cells of different (lane, register) keys, plus the border."""
    rows, cols = key.shape
    pad = np.full((rows + 2, cols + 2), -2, dtype=np.int64)
    pad[1:-1, 1:-1] = key
    vert = pad[1:-1, 1:] != pad[1:-1, :-1]  # [rows, cols + 1]: edge left of column c
    horiz = pad[1:, 1:-1] != pad[:-1, 1:-1]  # [rows + 1, cols]: edge above row r
    segs = [[(c, r0), (c, r1)] for c in range(cols + 1) for r0, r1 in _runs(vert[:, c])]
    segs += [[(c0, r), (c1, r)] for r in range(rows + 1) for c0, c1 in _runs(horiz[r])]
    return segs


def _grid_lines(rows: int, cols: int) -> list[list[tuple[float, float]]]:
    return [[(c, 0), (c, rows)] for c in range(cols + 1)] + [[(0, r), (cols, r)] for r in range(rows + 1)]


def _cell_keys(cells: Holders, q: int, rows: int, cols: tuple[int, int], per_register: int) -> np.ndarray:
    """``[rows, cols]`` of lane * 4096 + register of each cell's first holder; -1 where unheld."""
    c0, c1 = cols
    key = np.full((rows, c1 - c0), -1, dtype=np.int64)
    for r in range(rows):
        for c in range(c0, c1):
            holds = cells.get((q, r, c))
            if holds:
                key[r, c - c0] = holds[0][0] * 4096 + holds[0][1] // per_register
    return key


def _backgrounds(ax: Axes, key: np.ndarray) -> None:
    """One rectangle per horizontal run of a lane's cells (keeps SVGs small)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    colors = lane_colors()
    lanes = np.where(key >= 0, key // 4096, -1)
    rects, faces = [], []
    for r, row in enumerate(lanes):
        for lane in np.unique(row[row >= 0]):
            for c0, c1 in _runs(row == lane):
                rects.append(Rectangle((c0, r), c1 - c0, 1))
                faces.append(colors[lane % 32])
    ax.add_collection(PatchCollection(rects, facecolors=faces, edgecolors="none"))


def _draw_panel(
    ax: Axes,
    cells: Holders,
    q: int,
    rows: int,
    cols: tuple[int, int],
    label: Labeller,
    per_register: int,
    fontsize: float,
    marked: Iterable[Cell] = (),
) -> None:
    """One matrix's column block: coloured cells, labels, register outlines, marks."""
    from matplotlib.collections import LineCollection

    c0, c1 = cols
    key = _cell_keys(cells, q, rows, cols, per_register)
    _backgrounds(ax, key)
    ax.add_collection(LineCollection(_grid_lines(rows, c1 - c0), colors="0.7", linewidths=0.4))
    ax.add_collection(LineCollection(_register_edges(key), colors="black", linewidths=1.4))
    for r in range(rows):
        for c in range(c0, c1):
            holds = cells.get((q, r, c))
            if holds:
                _label_cell(ax, r, c - c0, holds, label, per_register, fontsize)
    _mark_cells(ax, [(r, c - c0) for (mq, r, c) in marked if mq == q and c0 <= c < c1])
    _style_axes(ax, rows, c0, c1, fontsize)


def _label_cell(
    ax: Axes, r: int, c: int, holds: list[Holder], label: Labeller, per_register: int, fontsize: float
) -> None:
    """Holder label; below it the register index (every element, or a register's first if many)."""
    text = _cell_text(holds, label)
    shown = [e for _, e in holds if per_register > 1 and (per_register <= 4 or e % per_register == 0)]
    ax.text(c + 0.5, r + (0.36 if shown else 0.5), text, ha="center", va="center", fontsize=fontsize)
    if shown:
        regs = ",".join(f"r{e // per_register}" for e in shown)
        ax.text(c + 0.5, r + 0.76, regs, ha="center", va="center", fontsize=max(5.0, fontsize * 0.75), color="0.25")


def _mark_cells(ax: Axes, cells: list[tuple[int, int]]) -> None:
    """Red border and light red wash over cells whose holders differ."""
    if not cells:
        return
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    rects = [Rectangle((c + 0.05, r + 0.06), 0.9, 0.88) for r, c in cells]
    ax.add_collection(
        PatchCollection(rects, facecolors=(1.0, 0.0, 0.0, 0.22), edgecolors="red", linewidths=2.0, hatch="//")
    )


def _style_axes(ax: Axes, rows: int, c0: int, c1: int, fontsize: float) -> None:
    ax.set_xlim(0, c1 - c0)
    ax.set_ylim(rows, 0)
    step = 1 if c1 - c0 <= 32 else 4
    ax.set_xticks(np.arange(0, c1 - c0, step) + 0.5, [str(c) for c in range(c0, c1, step)])
    ax.set_yticks(np.arange(rows) + 0.5, [str(r) for r in range(rows)])
    ax.xaxis.tick_top()
    ax.tick_params(labelsize=fontsize, length=0)
    ax.set_xlabel("col", fontsize=fontsize)
    ax.xaxis.set_label_position("top")
    ax.set_ylabel("row", fontsize=fontsize)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _panel_title(q: int, matrices: int, cols: tuple[int, int], total_cols: int) -> str:
    parts = [f"computation {q}"] if matrices > 1 else []
    if total_cols > MAX_PANEL_COLS:
        parts.append(f"cols {cols[0]}..{cols[1] - 1}")
    return ", ".join(parts)


_RC = {
    "svg.fonttype": "none",  # text stays <text>, searchable and small
    "svg.hashsalt": "ptx-conformance",  # deterministic ids
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "hatch.linewidth": 0.6,
}


def _rc_context() -> AbstractContextManager[None]:
    """matplotlib's rc_context with the figure settings, importing matplotlib only when drawing."""
    import matplotlib

    return matplotlib.rc_context(_RC)


def _save(fig: Figure, path: Path | str) -> Path:
    """Write by suffix (svg, png, pdf, ...); no rasters are embedded in vector output."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lstrip(".").lower() or "png", dpi=110)
    return path


def _figure(
    nrows: int, ncols: int, panel_in: tuple[float, float], title: str, panel_titles: bool = True
) -> tuple[Figure, np.ndarray]:
    """A figure of ``nrows x ncols`` panels sized so cells keep a fixed size; wide enough for ``title``."""
    from matplotlib.figure import Figure

    pw, ph = panel_in
    margin_w, margin_h = 0.9, 0.8  # room for row labels / panel title, col ticks and label
    lines = title.splitlines()
    header = 0.2 + 0.19 * len(lines) + (margin_h if panel_titles else 0.5)
    grid_w = ncols * (pw + margin_w) - margin_w
    width = max(grid_w + 1.0, max(map(len, lines)) * 9 * 0.56 / 72 + 0.4)
    height = nrows * (ph + margin_h) - margin_h + header + 0.15
    fig = Figure(figsize=(width, height))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    left = (width - grid_w) / 2 + 0.2
    fig.subplots_adjust(
        left=left / width,
        right=(left + grid_w) / width,
        top=1 - header / height,
        bottom=0.15 / height,
        wspace=margin_w / pw,
        hspace=margin_h / ph,
    )
    fig.suptitle(title, fontsize=9, y=1 - 0.15 / height, va="top")
    return fig, axes


def _label_width(cells: Holders, label: Labeller) -> int:
    return max((len(_cell_text(h, label)) for h in cells.values()), default=4)


def operand_figure(
    variant: Variant, operand_name: str, path: Path | str, params: Mapping[str, int] | None = None
) -> Path:
    """Draw ``variant``'s ``operand_name`` tile (ISA fragment-figure style) to ``path``.

    ``params`` picks the layout parameters (scale operands); default: the first legal set.
    """
    op = variant.operands[operand_name]
    params = op.param_combinations()[0] if params is None else dict(params)
    letter = operand_letter(operand_name)

    def label(h: Holder) -> str:
        return f"T{h[0]}: {letter}{h[1]}"

    with _rc_context():
        title = _operand_title(variant, operand_name, params)
        fig = _operand_fig(op.layout, holders(op.layout.map(params)), label, op.fragment.per_register, title)
        return _save(fig, path)


def metadata_figure(variant: Variant, path: Path | str, selector: int | None = None) -> Path:
    """mma.sp metadata drawn like the ISA's: each field cell (row, 2*chunk+slot) labelled ``T<lane>: [hi:lo]``."""
    op = variant.operands["metadata"]
    params = op.param_combinations()[0] if selector is None else {"selector": selector}

    def label(h: Holder) -> str:
        return f"T{h[0]}: [{2 * h[1] + 1}:{2 * h[1]}]"

    with _rc_context():
        title = f"{variant.id}: metadata, selector {params['selector']} (cell: row, 2*chunk + slot)"
        fig = _operand_fig(op.layout, holders(op.layout.map(params)), label, 2, title)
        return _save(fig, path)


def _operand_fig(layout: Layout, cells: Holders, label: Labeller, per_reg: int, title: str) -> Figure:
    panels = [(q, b) for q in range(layout.matrices) for b in _blocks(layout.cols)]
    across = 2 if layout.matrices > 1 and len(panels) % 2 == 0 else 1
    fs = _fontsize(layout.rows, layout.cols)
    cw, ch = _cell_inches(_label_width(cells, label), fs, per_reg > 1)
    panel_in = (min(layout.cols, MAX_PANEL_COLS) * cw, layout.rows * ch)
    titled = len(panels) > 1
    fig, axes = _figure(-(-len(panels) // across), across, panel_in, title, titled)
    for ax, (q, block) in zip(axes.flat, panels, strict=True):
        _draw_panel(ax, cells, q, layout.rows, block, label, per_reg, fs)
        ax.set_title(_panel_title(q, layout.matrices, block, layout.cols), fontsize=fs + 1, pad=4)
    return fig


def _operand_title(variant: Variant, name: str, params: Mapping[str, int]) -> str:
    op = variant.operands[name]
    lay, frag = op.layout, op.fragment
    extra = "".join(f"  |  {k}={v}" for k, v in params.items())
    line2 = f"operand {name} .{op.type.name}  |  layout {lay.name}  |  ISA {lay.figure or lay.section}{extra}"
    line3 = f"cells coloured by lane; thick outlines: one .{frag.register} register ({frag.per_register} element(s))"
    return "\n".join([variant.id, line2, line3])


def map_diff_figure(expected_map: np.ndarray, observed_map: np.ndarray, path: Path | str, title: str) -> Path:
    """Expected vs observed ``[lane, element, 3]`` maps side by side; differing cells marked red."""
    matrices, rows, cols = _shape(expected_map, observed_map)
    exp, obs = holders(expected_map), holders(observed_map)
    diff = {cell for cell in set(exp) | set(obs) if sorted(exp.get(cell, [])) != sorted(obs.get(cell, []))}

    def label(h: Holder) -> str:
        return f"T{h[0]}:{h[1]}"

    with _rc_context():
        panels = [(q, b) for q in range(matrices) for b in _blocks(cols)]
        fs = _fontsize(rows, cols)
        cw, ch = _cell_inches(max(_label_width(exp, label), _label_width(obs, label)), fs, False)
        panel_in = (min(cols, MAX_PANEL_COLS) * cw, rows * ch)
        fig, axes = _figure(len(panels), 2, panel_in, f"{title}\n{len(diff)} cell(s) differ (red)")
        for row_axes, (q, block) in zip(axes, panels, strict=True):
            for ax, cells, side in zip(row_axes, (exp, obs), ("expected", "observed"), strict=True):
                _draw_panel(ax, cells, q, rows, block, label, 1, fs, marked=diff)
                sub = _panel_title(q, matrices, block, cols)
                ax.set_title(side + (f" ({sub})" if sub else ""), fontsize=fs + 1, pad=4)
        return _save(fig, path)


def ascii_grid(layout: Layout, params: Mapping[str, int] | None = None) -> str:
    """Rows of ``T<lane>:<i>`` (``.`` where unheld); one block per computation if several."""
    cells = holders(layout.map(params))
    blocks = []
    for q in range(layout.matrices):
        lines = [
            " ".join("/".join(f"T{ln}:{e}" for ln, e in cells.get((q, r, c), [])) or "." for c in range(layout.cols))
            for r in range(layout.rows)
        ]
        blocks.append(([f"computation {q}:"] if layout.matrices > 1 else []) + lines)
    return "\n".join("\n".join(b) for b in blocks)


def map_figure(m: np.ndarray, path: Path | str, title: str, letter: str = "a", per_register: int = 1) -> Path:
    """Draw a bare observed ``[lane, element, 3]`` map (no spec behind it), like an operand figure.

    Cells held by several slots (duplicated fragments) list every holder.
    """
    from types import SimpleNamespace

    matrices, rows, cols = _shape(m)
    tile = SimpleNamespace(matrices=matrices, rows=rows, cols=cols)

    def label(h: Holder) -> str:
        return f"T{h[0]}: {letter}{h[1]}"

    with _rc_context():
        fig = _operand_fig(tile, holders(m), label, per_register, title)
        return _save(fig, path)
