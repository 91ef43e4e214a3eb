"""Plain text: a copy of the ISA's HTML page, pdftotext output, or an excerpt pasted in a tutorial.

Nothing marks structure here, so it is recognised from the words: numbered
headings, "Figure N" captions, fragment tables (whatever happened to their
pipes), "Table N" tables with pipes, and formula runs that begin at ``row =`` /
``col =`` / ``groupID =`` and go on while lines read as formulas.  Headings and
labels glued onto the line before them are split off first; page headers,
footers and page numbers of a PDF are dropped.
"""

from __future__ import annotations

import re

from ..source import Line
from ..tables import collect_glued, parse_glued
from ..tree import CAPTION, PARA, PRE, TABLE, Block, caption, clean_cell, heading
from .common import FRAG_HEADER, LABEL, fragment_table, is_debris, is_formula_start, is_prose, unglue

__all__ = ["read_text_blocks"]

_HEADING = re.compile(r"^\d+(?:\.\d+)+\.\s+\S|^\d+(?:\.\d+){2,}\s+[A-Z]")
_TABLE_CAPTION = re.compile(r"^Table \d+\s+\S")
_FRAG_END = re.compile(r"^(The |Fragment layout|Matrix fragments|Metadata|Multiplicand|Accumulator|Figure|"
                       r"row\s*=|col\s*=|groupID\b|threadID_in_group\b)")
_FRAG_MORE = re.compile(r"^(\||\.[a-z]|A vector|[abcd]\d|Mapping|Fragment|Elements|register|with |containing|elements)")


def _prepare(lines: list[Line]) -> list[Line]:
    """Unglued, debris-free lines; a PDF's running header, footer and page number around a page break go."""
    out: list[Line] = []
    after_break = False
    for ln in lines:
        t = ln.text
        if after_break and not t.strip():
            continue
        after_break = False
        if "\f" in t:
            after_break = True
            while out and (not out[-1].text.strip() or re.fullmatch(r"\s*\d{1,4}\s*", out[-1].text)
                           or is_debris(out[-1].text)):
                out.pop()
            t = t.replace("\f", "")
            if re.fullmatch(r"\s*\d{1,4}\s*", t):
                continue
        if is_debris(t) or re.match(r"^\s*!\S", t):  # "!Figure alt text" of an image
            continue
        out += [Line(ln.number, part) for part in unglue(t)]
    return out


def _formula(lines: list[Line], k: int) -> tuple[Block, int]:
    """The formula run starting at ``lines[k]``: continuation lines, ``where`` clauses and comments,
    across blank lines while what follows still reads as a formula."""
    block = [lines[k]]
    j = k + 1
    while j < len(lines):
        t = lines[j].text.strip()
        if not t:
            nxt = next((m for m in range(j, len(lines)) if lines[m].text.strip()), None)
            if nxt is None:
                break
            s = lines[nxt].text
            if not (is_formula_start(s.strip()) or re.match(r"^\s*(where\b|//)", s, re.I)
                    or (s[:1].isspace() and not is_prose(s))):
                break
            j = nxt
            continue
        if _HEADING.match(t) or LABEL.match(t) or t.endswith(":") or (is_prose(t) and not t.startswith("//")):
            break
        block.append(lines[j])
        j += 1
    return Block(PRE, lines[k].number, lines=block), j


def _fragment_table(lines: list[Line], k: int) -> tuple[Block, int]:
    body = [lines[k]]
    j = k + 1
    while j < len(lines):
        t = lines[j].text.strip()
        if not t:
            nxt = next((m for m in range(j, len(lines)) if lines[m].text.strip()), None)
            if nxt is None or not _FRAG_MORE.match(lines[nxt].text.strip()) or _FRAG_END.match(lines[nxt].text.strip()):
                break
            j = nxt
            continue
        if _FRAG_END.match(t) or _HEADING.match(t) or LABEL.match(t):
            break
        body.append(lines[j])
        j += 1
    return fragment_table(body), j


def read_text_blocks(lines: list[Line]) -> list[Block]:
    lines = _prepare(lines)
    out: list[Block] = []
    para: list[Line] = []

    def flush() -> None:
        if para:
            out.append(Block(PARA, para[0].number, clean_cell(" ".join(ln.text for ln in para))))
            para.clear()

    k = 0
    while k < len(lines):
        ln = lines[k]
        t = ln.text.strip()
        if not t:
            flush()
            k += 1
            continue
        if _HEADING.match(t):
            flush()
            out.append(heading(t, ln.number))
            k += 1
            continue
        if _TABLE_CAPTION.match(t) and any("|" in x.text for x in lines[k + 1: k + 4]):
            flush()
            cap = caption(t, ln.number)
            block, k = collect_glued(lines, k + 1)
            table = parse_glued(block)
            if cap is not None:
                out.append(cap)
            if table is not None:
                out.append(Block(TABLE, block[0].number, rows=table[0], row_lines=table[1]))
            continue
        if FRAG_HEADER.match(t):
            flush()
            block_, k = _fragment_table(lines, k)
            out.append(block_)
            continue
        if is_formula_start(t):
            flush()
            block_, k = _formula(lines, k)
            out.append(block_)
            continue
        mid_sentence = para and not re.search(r"[.:;!?]$", para[-1].text)
        cap = caption(t, ln.number) if t.startswith("Figure ") and not mid_sentence else None
        if cap is not None:
            flush()
            out.append(cap)
            k += 1
            continue
        starts_new = LABEL.match(t) or re.match(r"^[-*\u2022]\s+", t) or (para and re.search(r"[.:;!?]$", para[-1].text))
        if starts_new:
            flush()
        para.append(Line(ln.number, re.sub(r"^[-*\u2022]\s+", "", t)))
        if LABEL.match(t) or t.endswith(":"):
            flush()
        k += 1
    flush()
    return [b for b in out if b.kind != CAPTION or b.text or b.number]
