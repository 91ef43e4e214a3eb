"""The ISA's HTML as saved from the documentation site (or any HTML rendering of it), read by lxml.

lxml parses HTML as browsers recover it (unclosed ``<p>``/``<td>``/``<li>``, stray
end tags), and keeps each element's source line.  Structure comes from the
elements: ``h1``-``h6`` headings, ``table`` (rowspan and colspan spread back over
the cells they cover, :func:`ptxconf.docs.tables.spread`), ``pre`` formula and
code blocks, ``figcaption``/``caption`` captions, every other block element a
paragraph.  Navigation, scripts, buttons, images and permalink anchors are skipped.
"""

from __future__ import annotations

import re

import lxml.html
from lxml import etree

from ..source import Line
from ..tables import spread
from ..tree import CAPTION, PARA, PRE, TABLE, Block, caption, clean_cell, heading
from .common import is_debris

__all__ = ["read_html_blocks"]

_BLOCK = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "section", "blockquote", "figure", "article", "main", "hr",
          "body", "html", "br"}
_SKIP = {"script", "style", "head", "nav", "button", "footer", "header", "noscript", "svg", "title", "img"}
_HEADING = re.compile(r"^h[1-6]$")


def _skipped(el) -> bool:
    return (not isinstance(el.tag, str) or el.tag in _SKIP or "headerlink" in (el.get("class") or "")
            or el.get("aria-hidden") == "true")


def _text(el) -> str:
    """The words of an element without its skipped parts; ``<br>`` and block children break lines."""
    out: list[str] = [el.text or ""] if isinstance(el.tag, str) and not _skipped(el) else []
    for child in el:
        if not _skipped(child):
            if child.tag == "br" or child.tag in ("p", "div", "li"):
                out.append("\n")
            out.append(_text(child))
        out.append(child.tail or "")
    return "".join(out)


class _Reader:
    def __init__(self, offset: list[Line]):
        self.lines = offset
        self.blocks: list[Block] = []
        self.buf: list[str] = []
        self.start = 1

    def number(self, sourceline: int | None) -> int:
        k = (sourceline or 1) - 1
        return self.lines[min(max(k, 0), len(self.lines) - 1)].number if self.lines else k + 1

    def flush(self) -> None:
        text = clean_cell("".join(self.buf))
        self.buf = []
        if not text or is_debris(text):
            return
        cap = caption(text, self.start)
        self.blocks.append(cap if cap is not None else Block(PARA, self.start, text))

    def add(self, text: str | None, line: int | None) -> None:
        if text:
            if not "".join(self.buf).strip():
                self.start = self.number(line)
            self.buf.append(text)

    def walk(self, el) -> None:
        tag = el.tag
        if _skipped(el):
            return
        if _HEADING.match(tag):
            self.flush()
            text = clean_cell(_text(el))
            if text:
                self.blocks.append(heading(text, self.number(el.sourceline)))
        elif tag == "pre":
            self.flush()
            body = _text(el).strip("\n").split("\n")
            n = self.number(el.sourceline)
            self.blocks.append(Block(PRE, n, lines=[Line(n + k, t.rstrip()) for k, t in enumerate(body)]))
        elif tag in ("figcaption", "caption"):
            self.flush()
            text = clean_cell(_text(el))
            n = self.number(el.sourceline)
            cap = caption(text, n)
            if cap is not None or text:
                self.blocks.append(cap if cap is not None else Block(CAPTION, n, text))
        elif tag == "table":
            self.flush()
            self.table(el)
        else:
            block = tag in _BLOCK
            if block:
                self.flush()
            self.add(el.text, el.sourceline)
            for child in el:
                self.walk(child)
                self.add(child.tail, child.sourceline)
            if block:
                self.flush()

    def table(self, el) -> None:
        cap = el.find("caption")
        if cap is not None:
            self.walk(cap)
        grid: list[list[tuple[str, int, int]]] = []
        lines: list[int] = []
        heads = 0
        for tr in el.iter("tr"):
            if tr.getparent() is not el and tr.getparent().getparent() is not el:
                continue  # a row of a table nested in a cell
            cells = [(clean_cell(_text(td)), _span(td.get("rowspan")), _span(td.get("colspan")))
                     for td in tr if isinstance(td.tag, str) and td.tag in ("td", "th")]
            if tr.getparent().tag == "thead" or (cells and all(td.tag == "th" for td in tr if isinstance(td.tag, str))
                                                 and len(grid) == heads):
                heads += 1
            grid.append(cells)
            lines.append(self.number(tr.sourceline))
        rows = spread(grid)
        if not rows:
            return
        heads = max(1, min(heads, len(rows) - 1)) if len(rows) > 1 else 1
        # a two-level heading: the lowest row names the columns (the spans above it only group them)
        rows = rows[heads - 1:]
        lines = lines[heads - 1: heads - 1 + len(rows)]
        self.blocks.append(Block(TABLE, lines[0] if lines else self.number(el.sourceline), rows=rows, row_lines=lines))


def _span(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


def read_html_blocks(lines: list[Line]) -> list[Block]:
    text = "\n".join(ln.text for ln in lines)
    if not text.strip():
        return []
    try:
        root = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return []
    r = _Reader(lines)
    r.walk(root)
    r.flush()
    return r.blocks
