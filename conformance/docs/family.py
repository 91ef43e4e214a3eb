"""Which instruction family a PTX ISA section describes: the one place doc-diff decides it.

A section's formulas are compared only with spec variants of its family
(``Variant.family``: ``mma.sync``, ``mma.sp``, ...), so a dense section never
speaks for ``mma.sp`` and the sparse section never for ``mma.sync``.

Decided from the section title first ("... sparse ...", "mma.sp" -> ``mma.sp``;
"wgmma" / "tcgen05" -> those; any other "mma" -> ``mma.sync``), else from the
nearest enclosing section that decided -- never from section numbers, which
move between ISA versions (warp-level mma is 9.7.14 up to ISA 9.2, 9.7.16 in
9.4).  A
document without headings (a tutorial, a pasted excerpt) is ``mma.sp`` only when
its prose says sparse / ``mma.sp``, otherwise ``mma.sync``.
"""

from __future__ import annotations

import re

__all__ = ["DENSE", "SPARSE", "section_family", "prose_family"]

DENSE = "mma.sync"
SPARSE = "mma.sp"

def _from_text(text: str) -> str | None:
    t = text.lower()
    if re.search(r"\bsparse\b|\bmma\.sp\b", t):
        return SPARSE
    if re.search(r"\bwgmma\b", t):
        return "wgmma"
    if re.search(r"\btcgen05\b", t):
        return "tcgen05"
    if re.search(r"\bmma\b", t):
        return DENSE
    return None


def section_family(number: str, title: str, enclosing: str | None = None) -> str | None:
    """Family of section ``number`` titled ``title``; ``enclosing``: the family of its parent, if decided."""
    return _from_text(title) or enclosing


def prose_family(text: str) -> str | None:
    """Family a prose line of a heading-less document names (None: says nothing)."""
    t = text.lower()
    if re.search(r"\bsparse mma\b|\bmma\.sp\b", t):
        return SPARSE
    return None
