"""Captioned ISA tables ("Table 39 ...") as rows of cells, whatever the rendering did to the pipes.

Text renderings of the ISA's HTML tables split a row's cells over several lines
and drop the cells a rowspan covers.  A row ends at a line of trailing empty
cells, when the next line opens with ``|``, or when it has every column; a
short row's first cell goes to the column where that value was seen before (or
right-aligned), its last cell to the last column, and the columns in between
that it skips keep the value above (the rowspan).  Data only: no meaning is
given to any column here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .source import Line

__all__ = ["DocTable", "collect_glued", "merge_columns", "parse_glued", "respan", "spread", "two_level_header"]

_CAPTION = re.compile(r"^Table (\d+)\s+(.*)$")
_HEADING = re.compile(r"^\d+(?:\.\d+)+\.\s+\S")


@dataclass
class DocTable:
    number: int
    caption: str
    line: int
    header: list[str]
    rows: list[list[str]]
    row_lines: list[int]

    def canonical(self) -> dict:
        return {"number": self.number, "caption": self.caption, "header": self.header, "rows": self.rows}

    def records(self) -> list[dict[str, str]]:
        return [dict(zip(self.header, r)) for r in self.rows]


def _cells(text: str) -> list[str]:
    return [c.strip() for c in text.split("|") if c.strip()]


def collect_glued(lines: list[Line], k: int) -> tuple[list[Line], int]:
    """The pipe-table lines from ``lines[k]`` on (up to a heading, a caption, or prose after prose)."""
    j = k
    block: list[Line] = []
    while j < len(lines):
        t = lines[j].text.strip()
        if _HEADING.match(t) or _CAPTION.match(t) or (t and "|" not in t and block and "|" not in block[-1].text):
            break
        if t:
            block.append(Line(lines[j].number, t))
        j += 1
    while block and "|" not in block[-1].text:
        block.pop()
        j -= 1
    return block, j


def parse_glued(block: list[Line]) -> tuple[list[list[str]], list[int]] | None:
    """``([header, *rows], [line per row])`` of a pipe table a text copy spread over lines (None: no table)."""
    t = _parse(0, "", block[0].number if block else 0, block)
    if t is None:
        return None
    return [t.header, *t.rows], [t.line, *t.row_lines]


def _parse(number: int, caption: str, line: int, block: list[Line]) -> DocTable | None:
    sep = next((i for i, ln in enumerate(block) if re.fullmatch(r"\|?(\s*:?-{3,}:?\s*\|)+\s*", ln.text)), None)
    if sep is None:
        return None
    header = _cells(" ".join(ln.text for ln in block[:sep]))
    ncols = len(header)
    raw_rows: list[tuple[int, list[str]]] = []
    cur: list[str] = []
    start = None
    body = block[sep + 1:]
    for i, ln in enumerate(body):
        if start is None:
            start = ln.number
        cur += _cells(ln.text)
        trailing_empty = bool(re.search(r"\|\s*\|\s*$", ln.text)) and not ln.text.startswith("|---")
        next_opens = i + 1 < len(body) and body[i + 1].text.startswith("|")
        if trailing_empty or next_opens or len(cur) >= ncols or i + 1 == len(body):
            if cur:
                raw_rows.append((start, cur))
            cur, start = [], None
    rows: list[list[str]] = []
    seen: list[set[str]] = [set() for _ in range(ncols)]
    prev = [""] * ncols
    for _, cells in raw_rows:
        cells = cells[:ncols]
        if len(cells) == ncols:
            row = cells
        else:
            first = next((c for c in range(ncols - 1) if cells[0] in seen[c]), ncols - len(cells))
            row = list(prev)
            middle = cells[:-1]
            for off, val in enumerate(middle):
                if first + off < ncols - 1:
                    row[first + off] = val
            row[-1] = cells[-1]
        for c, val in enumerate(row):
            seen[c].add(val)
        rows.append(row)
        prev = row
    return DocTable(number, caption, line, header, rows, [s for s, _ in raw_rows])


def spread(table: list[list[tuple[str, int, int]]]) -> list[list[str]]:
    """Rows of cell texts with each rowspan/colspan cell repeated where it reaches (an HTML table's grid)."""
    grid: dict[tuple[int, int], str] = {}
    for r, row in enumerate(table):
        c = 0
        for text, rs, cs in row:
            while (r, c) in grid:
                c += 1
            for dr in range(max(rs, 1)):
                for dc in range(max(cs, 1)):
                    grid[(r + dr, c + dc)] = text
            c += max(cs, 1)
    if not grid:
        return []
    width = max(c for _, c in grid) + 1
    height = max(r for r, _ in grid) + 1
    return [[grid.get((r, c), "") for c in range(width)] for r in range(height) if any((r, c) in grid for c in range(width))]


def _signature(value: str) -> str:
    """What kind of value a cell holds, for placing cells whose row lost its rowspans: ``K = 32`` -> ``K = ``."""
    v = value.strip()
    if re.fullmatch(r"(?:\.?[a-z][a-z0-9]*\s*(?:,|/|or|and)?\s*)+", v) and v.startswith("."):
        return "types"
    return re.sub(r"\d+", "0", v)[:4]


def respan(rows: list[list[str]], width: int) -> list[list[str]]:
    """Rows of a pipe table whose rendering dropped the cells a rowspan covered, back on the full grid.

    A full row stays as it is.  A short row's cells keep their order and go to the columns where the
    same value (or else the same kind of value, :func:`_signature`) was seen before, the missing leading
    columns first when nothing tells; every column the row skips keeps the value of the row above -- what
    the rowspan meant."""
    seen: list[set[str]] = [set() for _ in range(width)]
    kinds: list[set[str]] = [set() for _ in range(width)]
    out: list[list[str]] = []
    prev = [""] * width
    for cells in rows:
        if not any(c.strip() for c in cells):
            continue  # the row of a rowspan's tail that the rendering kept empty
        if len(cells) >= width or not out:
            row = (list(cells) + [""] * width)[:width]
        else:
            row = list(prev)
            for col, value in zip(_place(cells, seen, kinds, width), cells):
                row[col] = value
        for c, value in enumerate(row):
            if value.strip():
                seen[c].add(value.strip())
                kinds[c].add(_signature(value))
        out.append(row)
        prev = row
    return out


def _place(cells: list[str], seen: list[set[str]], kinds: list[set[str]], width: int) -> list[int]:
    """Increasing columns for ``cells`` with the best agreement with what each column held before
    (same value 3, same kind 1); among equals, the placement furthest right."""
    n = len(cells)

    def score(i: int, c: int) -> int:
        v = cells[i].strip()
        return 3 if v and v in seen[c] else 1 if v and _signature(v) in kinds[c] else 0

    best: dict[tuple[int, int], tuple[int, int, tuple[int, ...]]] = {}

    def go(i: int, lo: int) -> tuple[int, int, tuple[int, ...]]:
        if i == n:
            return (0, 0, ())
        key = (i, lo)
        if key not in best:
            options = []
            for c in range(lo, width - (n - i) + 1):
                s, pos, rest = go(i + 1, c + 1)
                options.append((s + score(i, c), pos + c, (c, *rest)))
            best[key] = max(options)
        return best[key]

    return list(go(0, 0)[2])


def two_level_header(header: list[str], first: list[str]) -> list[str] | None:
    """The header of a pipe table whose two-level heading lost its colspans (``Various Combinations | | |
    ... | Shapes Supported | |`` over ``.kind::* | Has .ws | ...``): the lower row where it gives a name, else
    the upper name carried right.  None when ``header`` has no gap such a row would fill."""
    if not header or all(h.strip() for h in header) or not any(f.strip() for f in first):
        return None
    named = [f for f in first if f.strip()]
    if len(named) >= len(header) or any(re.search(r"\d", f) and not re.search(r"[a-z]{3}", f) for f in named):
        return None
    carried, last = [], ""
    for h in header:
        last = h.strip() or last
        carried.append(last)
    return [first[k].strip() if k < len(first) and first[k].strip() else carried[k] for k in range(len(header))]


def merge_columns(header: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Neighbouring columns under one header name (a colspan heading: ``Shapes Supported`` over M, N and K)
    as one column, their cells joined with ``; `` (a value a span repeated across them, once)."""
    groups: list[list[int]] = []
    for k, h in enumerate(header):
        if groups and h and header[groups[-1][0]] == h:
            groups[-1].append(k)
        else:
            groups.append([k])
    if len(groups) == len(header):
        return header, rows

    def join(row: list[str], cols: list[int]) -> str:
        vals = [row[c].strip() for c in cols if c < len(row) and row[c].strip()]
        return "; ".join(dict.fromkeys(vals))

    return [header[g[0]] for g in groups], [[join(r, g) for g in groups] for r in rows]
