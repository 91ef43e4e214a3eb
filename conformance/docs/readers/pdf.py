"""The ISA's PDF, read by pypdf: each page's text in reading order, pages apart by a form feed.

What comes out is what pdftotext gives, so the plain-text reader (:mod:`.text`)
takes it from there: running headers, footers and page numbers at the page
breaks go, ligatures are undone (:func:`ptxconf.docs.source.normalize_text`).
"""

from __future__ import annotations

from pathlib import Path

from ..source import DocError, Line, normalize_text

__all__ = ["is_pdf", "read_pdf_lines"]


def is_pdf(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(5) == b"%PDF-"
    except OSError:
        return False


def read_pdf_lines(path: str | Path) -> list[Line]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:  # pragma: no cover - a dependency of the package
        raise DocError(str(path), None, "reading a PDF needs pypdf (pip install pypdf)") from None
    try:
        pages = [p.extract_text() or "" for p in PdfReader(str(path)).pages]
    except (PdfReadError, OSError, ValueError) as exc:
        raise DocError(str(path), None, f"cannot read this PDF: {exc}") from None
    text = "\f".join(pages)
    return [Line(n, normalize_text(t).rstrip()) for n, t in enumerate(text.split("\n"), 1)]
