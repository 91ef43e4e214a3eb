"""Markdown conversions of the ISA: headings, pipe tables, list items, ``> `` quotes, fences at any depth.

A line's container prefix (list indentation, any number of ``>`` markers) is
taken off before anything else is decided, so a table or a fence inside a
quoted list item reads like one at the top level.  Fenced blocks keep their
alignment relative to the fence.  Link targets, images, permalinks and "Copy to
clipboard" go; the words stay.
"""

from __future__ import annotations

import re

from ..source import Line
from ..tree import PARA, PRE, TABLE, Block, caption, clean_cell, heading
from .common import LABEL, is_debris, strip_inline_markup

__all__ = ["read_markdown_blocks"]

_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?[ \t]*)*")
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_ATX = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(?:[*+-]|\d+[.)])\s+")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _strip(text: str) -> tuple[str, str]:
    """(container prefix, content) of a markdown line."""
    m = _PREFIX.match(text)
    return text[: m.end()], text[m.end():]


def _cells(text: str) -> list[str]:
    t = text.strip()
    if t.startswith("|"):
        t = t[1:]
    if t.endswith("|") and not t.endswith("\\|"):
        t = t[:-1]
    return [clean_cell(strip_inline_markup(c)) for c in re.split(r"(?<!\\)\|", t)]


def read_markdown_blocks(lines: list[Line]) -> list[Block]:
    out: list[Block] = []
    para: list[Line] = []

    def flush() -> None:
        if para:
            text = clean_cell(" ".join(strip_inline_markup(ln.text) for ln in para))
            if text and not is_debris(text):
                cap = caption(text, para[0].number)
                out.append(cap if cap is not None else Block(PARA, para[0].number, text))
            para.clear()

    k = 0
    while k < len(lines):
        prefix, body = _strip(lines[k].text)
        fence = _FENCE.match(body)
        if fence:
            flush()
            marker, indent = fence.group(1), len(prefix.replace(">", " ")) if ">" not in prefix else None
            start = lines[k].number
            pre: list[Line] = []
            k += 1
            while k < len(lines):
                p2, b2 = _strip(lines[k].text)
                if b2.startswith(marker[0] * len(marker)) and not b2.strip(marker[0]).strip():
                    k += 1
                    break
                raw = lines[k].text
                if ">" in p2:  # keep what follows the quote markers, alignment and all
                    raw = re.sub(r"^[ \t]*(?:>[ \t]?)+", "", raw)
                elif indent:
                    raw = raw[min(indent, len(raw) - len(raw.lstrip())):]
                pre.append(Line(lines[k].number, raw.rstrip()))
                k += 1
            out.append(Block(PRE, start, lines=pre))
            continue
        t = body.strip()
        k += 1
        if not t:
            flush()
            continue
        atx = _ATX.match(t)
        if atx:
            flush()
            out.append(heading(strip_inline_markup(atx.group(1)), lines[k - 1].number))
            continue
        if t.startswith("|"):
            flush()
            rows: list[list[str]] = []
            row_lines: list[int] = []
            j = k - 1
            while j < len(lines):
                _, b = _strip(lines[j].text)
                if not b.strip().startswith("|"):
                    break
                if not _SEPARATOR.match(b.strip()):
                    rows.append(_cells(b))
                    row_lines.append(lines[j].number)
                j += 1
            k = j
            if not rows:
                continue
            width = max(len(r) for r in rows)
            rows = [r + [""] * (width - len(r)) for r in rows]
            out.append(Block(TABLE, row_lines[0], rows=rows, row_lines=row_lines))
            continue
        item = _ITEM.match(t)
        if item:
            flush()
            t = t[item.end():]
        if is_debris(strip_inline_markup(t)):  # "Copy to clipboard" glued to the paragraph after it
            flush()
            continue
        if not strip_inline_markup(t):
            continue
        para.append(Line(lines[k - 1].number, t))
        if LABEL.match(strip_inline_markup(t)) or strip_inline_markup(t).endswith(":"):
            flush()
    flush()
    return out
