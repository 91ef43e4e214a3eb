"""The ISA's HTML as saved from the documentation site (or any HTML rendering of it).

Structure comes from the elements: ``h1``-``h6`` headings, ``table`` (rowspan and
colspan spread back over the cells they cover), ``pre`` formula and code blocks,
``figcaption``/``caption`` captions, and every other block element a paragraph.
Navigation, scripts, buttons and permalink anchors are skipped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ..source import Line
from ..tree import CAPTION, PARA, PRE, TABLE, Block, caption, clean_cell, heading
from .common import is_debris

__all__ = ["read_html_blocks"]

_BLOCK = {"p", "div", "br", "li", "ul", "ol", "dt", "dd", "section", "blockquote", "figure", "article", "main", "hr"}
_VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "source", "col", "area", "base"}
_SKIP = {"script", "style", "head", "nav", "button", "footer", "header", "noscript", "svg", "title"}


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.buf, self.start = "", 1
        self.skip = 0
        self.mode: str | None = None  # "h", "pre", "caption" while inside one
        self.pre: list[str] = []
        self.table: list[list[tuple[str, int, int]]] | None = None  # rows of (text, rowspan, colspan)
        self.row_lines: list[int] = []
        self.cell: list[str] | None = None
        self.cell_span = (1, 1)
        self.caption_text: str | None = None

    # -- text ------------------------------------------------------------
    def flush(self) -> None:
        text = clean_cell(self.buf)
        self.buf = ""
        if not text or is_debris(text):
            return
        cap = caption(text, self.start)
        self.blocks.append(cap if cap is not None else Block(PARA, self.start, text))

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.cell is not None:
            self.cell.append(data)
        elif self.mode == "pre":
            self.pre.append(data)
        else:
            if not self.buf.strip():
                self.start = self.getpos()[0]
            self.buf += data

    # -- tags ------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if self.skip or tag in _SKIP or "headerlink" in (a.get("class") or "") or a.get("aria-hidden") == "true":
            if tag not in _VOID:
                self.skip += 1
            return
        if tag == "pre":
            self.flush()
            self.mode, self.pre, self.start = "pre", [], self.getpos()[0]
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.mode, self.start = "h", self.getpos()[0]
        elif tag in ("figcaption", "caption"):
            self.flush()
            self.mode, self.start = "caption", self.getpos()[0]
        elif tag == "table":
            self.flush()
            self.table, self.row_lines = [], []
        elif tag == "tr" and self.table is not None:
            self.table.append([])
            self.row_lines.append(self.getpos()[0])
        elif tag in ("td", "th") and self.table is not None:
            self.cell = []
            self.cell_span = (int(a.get("rowspan") or 1), int(a.get("colspan") or 1))
        elif tag == "br" and self.mode == "pre":
            self.pre.append("\n")
        elif tag in _BLOCK and self.cell is None and self.mode is None:
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag not in _VOID:
                self.skip -= 1
            return
        if tag == "pre" and self.mode == "pre":
            text = "".join(self.pre).strip("\n")
            self.blocks.append(Block(PRE, self.start, lines=[Line(self.start + k, t.rstrip())
                                                             for k, t in enumerate(text.split("\n"))]))
            self.mode = None
        elif re.fullmatch(r"h[1-6]", tag) and self.mode == "h":
            text = clean_cell(self.buf)
            self.buf, self.mode = "", None
            if text:
                self.blocks.append(heading(text, self.start))
        elif tag in ("figcaption", "caption") and self.mode == "caption":
            text = clean_cell(self.buf)
            self.buf, self.mode = "", None
            cap = caption(text, self.start)
            if cap is not None:
                self.blocks.append(cap)
            elif text:
                self.blocks.append(Block(CAPTION, self.start, text))
        elif tag in ("td", "th") and self.cell is not None and self.table is not None:
            if not self.table:
                self.table.append([])
            self.table[-1].append((clean_cell("".join(self.cell)), *self.cell_span))
            self.cell = None
        elif tag == "table" and self.table is not None:
            rows = _spread(self.table)
            if rows:
                self.blocks.append(Block(TABLE, self.row_lines[0] if self.row_lines else self.getpos()[0],
                                         rows=rows, row_lines=self.row_lines[: len(rows)]))
            self.table = None
        elif tag in _BLOCK and self.cell is None and self.mode is None:
            self.flush()


def _spread(table: list[list[tuple[str, int, int]]]) -> list[list[str]]:
    """Rows of cell texts with each rowspan/colspan cell repeated where it reaches."""
    grid: dict[tuple[int, int], str] = {}
    for r, row in enumerate(table):
        c = 0
        for text, rs, cs in row:
            while (r, c) in grid:
                c += 1
            for dr in range(rs):
                for dc in range(cs):
                    grid[(r + dr, c + dc)] = text
            c += cs
    if not grid:
        return []
    width = max(c for _, c in grid) + 1
    return [[grid.get((r, c), "") for c in range(width)] for r in range(len(table)) if any((r, c) in grid for c in range(width))]


def read_html_blocks(lines: list[Line]) -> list[Block]:
    r = _Reader()
    r.feed("\n".join(ln.text for ln in lines))
    r.close()
    r.flush()
    return r.blocks
