"""Read a PTX ISA section (HTML, markdown or plain text) into numbered plain-text lines.

The three renderings of one section must extract identically, so every format is
reduced to the same line shape: headings as ``9.7.14.5.1. Title``, table rows as
``| cell | cell |``, formula blocks verbatim, and the site debris ("Copy to
clipboard", permalinks, image links, search boxes) dropped.  Each line keeps the
line number of the source it came from, so errors can name file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

__all__ = ["DocError", "Line", "read_doc", "normalize_text"]


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

_DEBRIS = re.compile(r"^(copy to clipboard|esc|type to search.*|permalink to this.*|ptx isa v?[0-9.]+)$", re.I)


def normalize_text(text: str) -> str:
    return _UNICODE_RE.sub(lambda m: _UNICODE[m.group()], text)


def read_doc(path: str | Path) -> tuple[str, list[Line]]:
    """(format, lines) of a document; raises :class:`DocError` naming file and line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocError(str(path), None, f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DocError(str(path), line, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); is this a PTX ISA page?") from None
    bad = re.search(r"[\x00-\x08\x0e-\x1f]", text)
    if bad:
        line = text[: bad.start()].count("\n") + 1
        raise DocError(str(path), line, f"binary data (control character 0x{ord(bad.group()):02x}); is this a PTX ISA page?")
    fmt = detect_format(text)
    lines = {"html": _html_lines, "markdown": _markdown_lines, "text": _text_lines}[fmt](text)
    out = []
    for ln in lines:
        t = normalize_text(ln.text).rstrip()
        if _DEBRIS.match(t.strip()):
            continue
        out.append(Line(ln.number, t))
    return fmt, out


def detect_format(text: str) -> str:
    head = text[:20000]
    if re.search(r"<(html|body|div|p|table|pre|h[1-6])\b", head, re.I):
        return "html"
    if re.search(r"^\s*(```|#{1,6} |\|\s*---)", head, re.M) or re.search(r"\]\(https?://", head):
        return "markdown"
    return "text"


def _text_lines(text: str) -> list[Line]:
    return [Line(n, t) for n, t in enumerate(text.splitlines(), 1)]


_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_EMPTY_LINK = re.compile(r"\[\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


def _markdown_lines(text: str) -> list[Line]:
    out = []
    in_code = False
    for n, t in enumerate(text.splitlines(), 1):
        s = t.strip()
        if s.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            out.append(Line(n, t.rstrip()))  # formula blocks keep their alignment
            continue
        s = _MD_IMAGE.sub("", s)
        s = _MD_EMPTY_LINK.sub("", s)
        s = _MD_LINK.sub(r"\1", s)
        s = re.sub(r"^#{1,6}\s+", "", s)
        s = re.sub(r"^[*+-]\s+", "", s)
        s = s.replace("`", "")
        out.append(Line(n, s))
    return out


class _HtmlLines(HTMLParser):
    """Block elements end lines; ``<pre>`` keeps its text; table cells become ``| a | b |``."""

    _BLOCK = {"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "table", "caption",
              "figure", "figcaption", "dt", "dd", "section", "blockquote", "tr", "thead", "tbody"}
    _SKIP = {"script", "style", "head", "nav", "button", "footer"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[Line] = []
        self.buf = ""
        self.start = 1
        self.pre = 0
        self.skip = 0

    def flush(self) -> None:
        text = self.buf
        if self.pre:
            for k, part in enumerate(text.split("\n")):
                self.lines.append(Line(self.start + k, part.rstrip()))
        else:
            text = re.sub(r"\s+", " ", text).strip()
            if text:
                self.lines.append(Line(self.start, text))
        self.buf = ""

    def handle_starttag(self, tag, attrs):
        if tag in self._SKIP:
            self.skip += 1
        elif tag == "pre":
            self.flush()
            self.pre += 1
        elif tag in self._BLOCK:
            self.flush()
            if tag == "tr":
                self.buf, self.start = "|", self.getpos()[0]
        elif tag in ("td", "th"):
            self.buf += " "

    def handle_endtag(self, tag):
        if tag in self._SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "pre":
            self.flush()
            self.pre = max(0, self.pre - 1)
        elif tag in ("td", "th"):
            self.buf += " |"
        elif tag in self._BLOCK:
            self.flush()

    def handle_data(self, data):
        if self.skip:
            return
        if not self.buf.strip(" |"):
            self.start = self.getpos()[0]
            if self.pre:
                data = data.lstrip("\n")
        self.buf += data


def _html_lines(text: str) -> list[Line]:
    p = _HtmlLines()
    p.feed(text)
    p.close()
    p.flush()
    return p.lines
