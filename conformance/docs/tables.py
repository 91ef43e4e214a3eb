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

__all__ = ["DocTable", "collect_glued", "parse_glued"]

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
