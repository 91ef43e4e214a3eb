"""Decode a PTX ISA document and guess its rendering: the step before the readers.

Every spelling of the ISA's punctuation (Unicode dashes and ellipses, the same
bytes mis-decoded as cp1252, PDF ligatures, form feeds) is made ASCII here, once,
so no reader and no formula parser has to know about it.  Lines keep their
numbers in the source file, so errors can name file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DocError", "Line", "detect_format", "normalize_text", "read_doc", "read_text"]


class DocError(ValueError):
    """A document that cannot be read: ``file:line: message``."""

    def __init__(self, file: str, line: int | None, message: str):
        self.file, self.line, self.message = file, line, message
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line in the source file
    text: str


# Non-ASCII punctuation the ISA pages use for ASCII operators and ranges.
_UNICODE = {
    "\u2013": "-", "\u2014": "-", "\u2012": "-", "\u2212": "-", "\u2010": "-", "\u2011": "-",
    "\u2026": "...", "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u00d7": "x",
    "\u2264": "<=", "\u2265": ">=", "\u2260": "!=", "\u2018": "'", "\u2019": "'",
    "\u201c": '"', "\u201d": '"', "\u200b": "",
}
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))

# UTF-8 read as Latin-1 or cp1252 and written back ("\u00e2\u0080\u00a6" or "\u00e2\u20ac\u00a6" for "\u2026"): a
# lead byte's character followed by continuation bytes' characters, in either single-byte table.
_CP1252_HIGH = "\u20ac\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u017d\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u017e\u0178"
_CONT = "[\u0080-\u00bf" + _CP1252_HIGH + "]"
_MOJIBAKE_RE = re.compile(f"[\u00c2-\u00df]{_CONT}|[\u00e0-\u00ef]{_CONT}{{2}}|[\u00f0-\u00f4]{_CONT}{{3}}")


def _unmojibake(m: re.Match) -> str:
    """The character a mis-decoded UTF-8 sequence stood for (the text unchanged when it is no such sequence)."""
    for enc in ("cp1252", "latin-1"):
        try:
            raw = b"".join(c.encode(enc) if ord(c) > 0xFF or enc == "cp1252" else bytes([ord(c)]) for c in m.group())
            return raw.decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    return m.group()


_LIGATURES = {"\ufb01": "fi", "\ufb02": "fl", "\ufb00": "ff", "\ufb03": "ffi", "\ufb04": "ffl", "\u00b6": "", "\uf0c1": ""}  # U+F0C1: a permalink icon font glyph


def normalize_text(text: str) -> str:
    """ASCII operators, ranges and ellipses for every spelling a rendering or a bad copy gives them."""
    text = _MOJIBAKE_RE.sub(_unmojibake, text)
    text = "".join(_LIGATURES.get(c, c) for c in text) if any(c in text for c in _LIGATURES) else text
    return _UNICODE_RE.sub(lambda m: _UNICODE[m.group()], text)


def read_doc(path: str | Path) -> tuple[str, list[Line]]:
    """(format, lines) of a document: its source lines, decoded and normalized (see :func:`normalize_text`);
    the readers (:func:`ptxconf.docs.readers.parse_tree`) turn them into blocks.  Raises
    :class:`DocError` naming file and line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocError(str(path), None, f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DocError(str(path), line, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); is this a PTX ISA page?") from None
    return read_text(text, str(path))


def read_text(text: str, file: str = "<doc>") -> tuple[str, list[Line]]:
    """:func:`read_doc` for text already in memory (tests, perturbations)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    bad = re.search(r"[\x00-\x08\x0e-\x1f]", text)
    if bad:
        line = text[: bad.start()].count("\n") + 1
        raise DocError(file, line, f"binary data (control character 0x{ord(bad.group()):02x}); is this a PTX ISA page?")
    fmt = detect_format(text)
    return fmt, [Line(n, normalize_text(t).rstrip()) for n, t in enumerate(text.split("\n"), 1)]


def detect_format(text: str) -> str:
    """"html", "markdown" or "text".  Markdown may hold raw HTML (a table kept with its rowspans), so an
    HTML document is one that opens as HTML or has no markdown at all.  A text copy of an HTML table also
    has ``|---|`` lines; markdown's header row before them opens with a pipe, the copy's does not (a GFM
    table without outer pipes has none on either row)."""
    head = text[:50000]
    if re.match(r"\s*(<!doctype\b|<html\b|<\?xml\b)", head, re.I):
        return "html"
    markdown = (re.match(r"---[ \t]*\n(?:[\w-]+:.*\n)+---[ \t]*\n", head)
                or re.search(r"^[ \t>]*(```|~~~|#{1,6} )", head, re.M) or re.search(r"\]\((https?://|#|\.?/)", head)
                or re.search(r"^[ \t>]*\|[^\n]*\|[ \t]*\n[ \t>]*\|?\s*:?-{3,}:?\s*\|", head, re.M)
                or re.search(r"^[ \t>]*[^|\s][^\n]*\|[^\n]*\n[ \t>]*:?-{3,}:?[ \t]*\|", head, re.M))
    if markdown:
        return "markdown"
    if re.search(r"<(html|body|div|p|table|pre|h[1-6])\b", head, re.I):
        return "html"
    return "text"
