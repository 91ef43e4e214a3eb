"""The one intermediate form every reader produces: a flat run of typed blocks, nested by heading.

HTML, markdown, text extracted from HTML and pdftotext output all differ in how
they spell a heading, a table or a formula; the readers (:mod:`.read_html`,
:mod:`.read_markdown`, :mod:`.read_text`) settle that, so the extraction and the
formula parser only ever see clean blocks -- no pipes, fences, ``> ``, glued
headings, "Copy to clipboard" or permalinks.  Every block keeps the source line
it came from so findings can still point into the file the user has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .source import Line

__all__ = ["HEADING", "PARA", "TABLE", "CAPTION", "PRE", "Block", "DocTree", "Section", "caption", "clean_cell", "heading"]

HEADING, PARA, TABLE, CAPTION, PRE = "heading", "para", "table", "caption", "pre"

_NUMBERED = re.compile(r"^(\d+(?:\.\d+)+)\.?\s+(\S.*)$")
_CAPTION = re.compile(r"^(Figure|Table)\s+(\d+)\b[.:]?\s*(.*)$")


@dataclass
class Block:
    """One block: ``text`` for headings, paragraphs and captions; ``rows`` (header first) for
    tables; ``lines`` (verbatim, alignment kept) for preformatted blocks (formulas, code)."""

    kind: str
    line: int
    text: str = ""
    number: str | None = None  # heading: "9.7.14.5.7"; caption: "71"
    label: str | None = None  # caption: "Figure" | "Table"
    rows: list[list[str]] = field(default_factory=list)
    row_lines: list[int] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)

    @property
    def header(self) -> list[str]:
        return self.rows[0] if self.rows else []

    @property
    def body(self) -> list[list[str]]:
        return self.rows[1:]


@dataclass
class Section:
    """A heading and what it holds; ``children`` are its subsections."""

    number: str | None
    title: str
    line: int
    blocks: list[Block] = field(default_factory=list)
    children: list[Section] = field(default_factory=list)


@dataclass
class DocTree:
    file: str
    format: str
    blocks: list[Block]
    version: str | None = None  # the ISA version the document states of itself (front matter, title), if any

    def sections(self) -> list[Section]:
        """Top-level sections; a numbered heading nests under the nearest heading whose number prefixes it."""
        root = Section(None, "", 0)
        stack: list[Section] = [root]
        for b in self.blocks:
            if b.kind != HEADING:
                stack[-1].blocks.append(b)
                continue
            sec = Section(b.number, b.text, b.line)
            while len(stack) > 1 and not (b.number and stack[-1].number and b.number.startswith(stack[-1].number + ".")):
                stack.pop()
            stack[-1].children.append(sec)
            stack.append(sec)
        return [root] if root.blocks and not root.children else ([root] if root.blocks else []) + root.children


    def line_texts(self) -> dict[int, str]:
        """Source line -> the clean text the tree has there (headings as ``9.7.14.5.1. Title``, table rows
        as ``| a | b |``, formula lines verbatim): what findings quote and errata are matched against."""
        out: dict[int, str] = {}
        for b in self.blocks:
            if b.kind == HEADING:
                out.setdefault(b.line, f"{b.number}. {b.text}" if b.number else b.text)
            elif b.kind == CAPTION:
                out.setdefault(b.line, f"{b.label} {b.number} {b.text}" if b.label else b.text)
            elif b.kind == PARA:
                out.setdefault(b.line, b.text)
            elif b.kind == TABLE:
                for n, row in zip(b.row_lines, b.rows):
                    out.setdefault(n, "| " + " | ".join(row) + " |")
            else:
                for ln in b.lines:
                    out.setdefault(ln.number, ln.text)
        return out


def clean_cell(text: str) -> str:
    """A table cell or paragraph as plain words: markup quotes and runs of blanks gone."""
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


_LABEL_HEADING = re.compile(r"^(Multiplicand\s+[AB]\b[^:]{0,30}|Accumulators?\b[^:]{0,30}|Metadata)\s*:?$"
                            r"|^(?:\.\w+\s*(?:,|and|or|/)?\s*)+:$|:$", re.I)


def heading(text: str, line: int) -> Block:
    """A heading block; ``9.7.14.5.7. Title`` gives the number, an unnumbered title keeps none.  A heading a
    conversion made of a label (``### Multiplicand A:``, ``#### .f16 and .bf16:``) is the label's paragraph:
    it opens an operand or a type group inside its section, never a section of its own."""
    t = clean_cell(text)
    m = _NUMBERED.match(t)
    if m:
        return Block(HEADING, line, m.group(2).strip(), number=m.group(1))
    if _LABEL_HEADING.search(t):
        return Block(PARA, line, t if t.endswith(":") else t + ":")
    return Block(HEADING, line, t)


def caption(text: str, line: int) -> Block | None:
    """``Figure 71 MMA ...`` / ``Table 39 ...`` as a caption block (None: not a caption)."""
    m = _CAPTION.match(clean_cell(text))
    if not m:
        return None
    return Block(CAPTION, line, m.group(3).strip(), number=m.group(2), label=m.group(1))
