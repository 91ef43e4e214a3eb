"""One reader per rendering of the ISA, all producing the same :class:`~ptxconf.docs.tree.DocTree`.

Markdown is read by a CommonMark parser with GFM tables (:mod:`.markdown`), HTML by
lxml (:mod:`.html`), the PDF by pypdf (:mod:`.pdf`, then as text); plain text --
a browser copy, pdftotext output, a pasted excerpt -- has no markup, so
:mod:`.text` reads its structure from the words: a heuristic, and the least sure
of the four.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..source import Line, read_doc, read_text
from ..tree import DocTree
from .html import read_html_blocks
from .markdown import front_matter, read_markdown_blocks
from .pdf import is_pdf, read_pdf_lines
from .text import read_text_blocks

__all__ = ["FORMATS", "HEURISTIC", "doc_version", "parse_tree", "read_tree", "tree_from_text"]

FORMATS = {"html": read_html_blocks, "markdown": read_markdown_blocks, "text": read_text_blocks}
HEURISTIC = {"text"}  # formats read from the words alone, with no markup to go by

_TITLE_VERSION = re.compile(r"(?:PTX ISA|Parallel Thread Execution(?: ISA)?)\s*(?:[Vv]ersion\s*|v)(\d+\.\d+)\b")


def doc_version(lines: list[Line]) -> str | None:
    """The ISA version a document states of itself: its front matter's ``version:``, else a title line
    such as "PTX ISA Version 9.2" / "NVIDIA PTX ISA v9.2" (never "Introduced in PTX ISA version ...")."""
    _, meta = front_matter(lines)
    if re.fullmatch(r"\d+\.\d+", meta.get("version", "")):
        return meta["version"]
    for ln in lines[:400]:
        t = ln.text.strip().lstrip("#> ").strip()
        if re.search(r"introduced|requires|support", t, re.I):
            continue
        m = _TITLE_VERSION.search(t)
        if m and len(t) < 80:
            return m.group(1)
    return None


def parse_tree(lines: list[Line], file: str = "<doc>", fmt: str = "text") -> DocTree:
    """The block tree of a document already split into (normalized) source lines."""
    return DocTree(file, fmt, FORMATS[fmt](lines), doc_version(lines))


def read_tree(path: str | Path) -> DocTree:
    if is_pdf(path):
        return DocTree(str(path), "pdf", read_text_blocks(read_pdf_lines(path)), None)
    fmt, lines = read_doc(path)
    return parse_tree(lines, str(path), fmt)


def tree_from_text(text: str, file: str = "<doc>", fmt: str | None = None) -> DocTree:
    """For documents held in memory (tests, perturbations); ``fmt`` overrides the guess."""
    guessed, lines = read_text(text, file)
    return parse_tree(lines, file, fmt or guessed)
