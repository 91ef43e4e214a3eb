"""Markdown conversions of the ISA, read by a CommonMark parser (markdown-it-py) with GFM tables.

The parser settles what markdown itself says: containers (lists at any depth,
``> `` quotes), fenced and indented code, pipe tables with or without outer
pipes, headings, links, images and inline code.  What conversions of the ISA
add on top is settled here:

* front matter (``---`` ... ``---``) is not text; its ``version:`` is the document's;
* raw HTML blocks (a table a converter kept as HTML, with its rowspans) go to the
  HTML reader (:mod:`.html`);
* an indented "code block" that holds no formula is a nested list the conversion
  indented by four spaces: it is read again as markdown;
* a paragraph that opens with ``row =`` / ``col =`` / ``groupID =`` is a formula
  whose fence the conversion lost, and a bare fence whose first line is markdown
  (a list item, a quote, a table) is a stray one a broken quote left behind: its
  content is read again as markdown;
* a pipe table whose rows lost the cells a rowspan covered is put back on its grid
  (:func:`ptxconf.docs.tables.respan`), and a two-level heading that lost its
  colspans is rebuilt (:func:`ptxconf.docs.tables.two_level_header`);
* headings used as labels (``### Multiplicand A:``) are the labels' paragraphs
  (:func:`ptxconf.docs.tree.heading`);
* a fragment table written one cell per paragraph is read as the table it is.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..source import Line
from ..tables import respan, two_level_header
from ..tree import PARA, PRE, TABLE, Block, caption, clean_cell, heading
from .common import FRAG_HEADER, LABEL, fragment_table, is_debris, is_formula_start, is_prose

__all__ = ["front_matter", "read_markdown_blocks"]

_MD = MarkdownIt("commonmark", {"html": True}).enable("table")
_FRONT = re.compile(r"^---\s*$")
_STRUCTURE = re.compile(r"^\s*(?:[*+-]\s|\d+[.)]\s|>|\||!\[|#{1,6}\s|<a\s)")  # markdown, not code, opens it


def front_matter(lines: list[Line]) -> tuple[int, dict[str, str]]:
    """(lines it takes, its ``key: value`` pairs) of a YAML front matter block opening the document."""
    if not lines or not _FRONT.match(lines[0].text):
        return 0, {}
    for k in range(1, min(len(lines), 60)):
        if _FRONT.match(lines[k].text):
            pairs = dict(m.groups() for ln in lines[1:k]
                         if (m := re.match(r"^(\w+):\s*[\"']?(.*?)[\"']?\s*$", ln.text)))
            return k + 1, pairs
    return 0, {}


def _inline(tok: Token) -> str:
    """The words of an inline token: text, code spans and link texts; images, raw tags and permalinks go."""
    out = []
    for c in tok.children or []:
        if c.type in ("text", "code_inline"):
            out.append(c.content)
        elif c.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif c.type == "html_inline" and re.match(r"<br\b", c.content, re.I):
            out.append("\n")
    return "".join(out)


def _raw_cells(text: str) -> list[str]:
    """A pipe-table source line's cells as written (GFM pads short rows; the rowspan repair needs the count)."""
    t = text.strip()
    t = t[1:] if t.startswith("|") else t
    t = t[:-1] if t.endswith("|") and not t.endswith("\\|") else t
    return [clean_cell(c.replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", t)]


class _Reader:
    def __init__(self, lines: list[Line]):
        self.lines = lines
        self.out: list[Block] = []

    def number(self, k: int) -> int:
        return self.lines[min(max(k, 0), len(self.lines) - 1)].number if self.lines else k + 1

    def read(self, text: str, offset: int) -> None:
        tokens = _MD.parse(text)
        k = 0
        while k < len(tokens):
            t = tokens[k]
            line = offset + (t.map[0] if t.map else 0)
            if t.type == "heading_open":
                self.out.append(heading(_inline(tokens[k + 1]), self.number(line)))
                k += 3
            elif t.type == "paragraph_open":
                self.paragraph(_inline(tokens[k + 1]), line)
                k += 3
            elif t.type == "fence" and not t.info.strip() and _STRUCTURE.match(
                    next((b for b in t.content.split("\n") if b.strip()), "")):
                self.read(t.content, line + 1)  # a stray fence (one a broken quote left open) swallowed markdown
                k += 1
            elif t.type == "fence":
                self.code(t.content, line + 1, fenced=True)
                k += 1
            elif t.type == "code_block":
                self.code(t.content, line, fenced=False)
                k += 1
            elif t.type == "html_block":
                html, start = [t.content], line
                while k + 1 < len(tokens) and tokens[k + 1].type == "html_block":
                    k += 1
                    html.append(tokens[k].content)
                self.html("".join(html), start)
                k += 1
            elif t.type == "table_open":
                k = self.table(tokens, k, offset)
            else:
                k += 1

    def paragraph(self, text: str, line: int) -> None:
        parts = [p for p in text.split("\n")]
        if parts and is_formula_start(parts[0].strip()):
            self.out.append(Block(PRE, self.number(line), lines=[Line(self.number(line + j), p.rstrip())
                                                                   for j, p in enumerate(parts)]))
            return
        group: list[tuple[int, str]] = []

        def flush() -> None:
            if group:
                words = clean_cell(" ".join(p for _, p in group))
                n = self.number(line + group[0][0])
                if words and not is_debris(words):
                    cap = caption(words, n)
                    self.out.append(cap if cap is not None else Block(PARA, n, words))
                group.clear()

        for j, p in enumerate(parts):
            if is_debris(p.strip()):
                flush()
                continue
            if re.match(r"^\s*Figure \d+\b", p) and group and (
                    not "".join(q for _, q in group).strip() or re.search(r"[.:;!?]\s*$", group[-1][1])):
                flush()  # a caption glued under an image (or under a finished sentence), not "... in\nFigure 51"
            group.append((j, p))
            s = clean_cell(p)
            if LABEL.match(s) or s.endswith(":"):
                flush()
        flush()

    def code(self, content: str, line: int, fenced: bool) -> None:
        body = content.rstrip("\n").split("\n")
        if not fenced and not any(is_formula_start(b.strip()) for b in body) and any(
                re.match(r"^\s*(?:[*+-]|\d+[.)])\s+\S", b) or is_prose(b) for b in body if b.strip()):
            self.read(_dedent(content), line)  # a nested list indented into a code block
            return
        self.out.append(Block(PRE, self.number(line), lines=[Line(self.number(line + j), b.rstrip())
                                                             for j, b in enumerate(body)]))

    def html(self, text: str, line: int) -> None:
        from .html import read_html_blocks

        src = [Line(self.number(line + j), t) for j, t in enumerate(text.split("\n"))]
        self.out += read_html_blocks(src)

    def table(self, tokens: list[Token], k: int, offset: int) -> int:
        header: list[str] = []
        rows: list[list[str]] = []
        lines: list[int] = []
        head_line = self.number(offset + tokens[k].map[0]) if tokens[k].map else 0
        while tokens[k].type != "table_close":
            t = tokens[k]
            if t.type == "tr_open" and t.map:
                src = offset + t.map[0]
                cells: list[str] = []
                j = k + 1
                while tokens[j].type != "tr_close":
                    if tokens[j].type == "inline":
                        cells.append(clean_cell(_inline(tokens[j])))
                    j += 1
                raw = len(_raw_cells(self.lines[src].text)) if 0 <= src < len(self.lines) else len(cells)
                cells = cells[:max(raw, 1)]
                if not header:
                    header = cells
                else:
                    rows.append(cells)
                    lines.append(self.number(src))
                k = j
            k += 1
        width = len(header)
        if rows and len(rows[0]) < width:
            upper = two_level_header(header, rows[0])
            if upper is not None:
                header, rows, lines = upper, rows[1:], lines[1:]
        kept = [(r, n) for r, n in zip(rows, lines) if any(c.strip() for c in r)]
        body = respan([r for r, _ in kept], width)
        self.out.append(Block(TABLE, head_line, rows=[header, *body], row_lines=[head_line, *[n for _, n in kept]]))
        return k + 1


def _dedent(text: str) -> str:
    body = text.split("\n")
    pad = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
    return "\n".join(b[pad:] for b in body)


_CELL_END = re.compile(r"^(The |Fragment layout|Matrix fragments|Metadata|Multiplicand|Accumulator|Figure|where |row\s*=|col\s*=)")


def _one_cell_per_paragraph(blocks: list[Block]) -> list[Block]:
    """A fragment table a converter wrote one cell per paragraph (``.ctype / .dtype``, ``Fragment``, ...)
    as the table it is, read from the words as the text reader reads one."""
    out: list[Block] = []
    k = 0
    while k < len(blocks):
        b = blocks[k]
        if b.kind == PARA and FRAG_HEADER.match(b.text) and "|" not in b.text:
            j = k + 1
            while j < len(blocks) and blocks[j].kind == PARA and not _CELL_END.match(blocks[j].text) \
                    and not LABEL.match(blocks[j].text):
                j += 1
            if j - k >= 4:
                out.append(fragment_table([Line(x.line, x.text) for x in blocks[k:j]]))
                k = j
                continue
        out.append(b)
        k += 1
    return out


def read_markdown_blocks(lines: list[Line]) -> list[Block]:
    skip, _ = front_matter(lines)
    r = _Reader(lines)
    r.read("\n".join("" if k < skip else ln.text for k, ln in enumerate(lines)), 0)
    return _one_cell_per_paragraph(r.out)
