"""The ISA's own example instructions (``mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {d0,...}, ...;``).

Collected per section from the text of code blocks and paragraphs, with the
``.reg`` declarations the section makes before them, so :mod:`.example_check`
can check them against specs/ and ptxas: an example that disagrees with its own
section's tables is an ISA erratum, like the ones the tcgen05 self-check finds.
Read from the block tree, so every rendering (HTML, markdown, text, pdftotext)
gives the same examples.  Statements are split at ``;`` and also where a new
``.reg`` or instruction line begins, because the ISA's examples sometimes drop a
``;`` -- that is recorded as a syntax problem of the example, not lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .source import Line
from .tree import HEADING, PARA, PRE, DocTree

__all__ = ["CHECKED_OPCODES", "Decl", "Example", "examples_in", "examples_of", "split_operands"]

# Opcodes whose examples are checked (ISA §9.7.14-9.7.16); other instructions of an example are context.
CHECKED_OPCODES = re.compile(r"^(?:mma(?:\.sp(?:::ordered_metadata)?)?\.sync|wgmma\.mma_async(?:\.sp)?|ldmatrix|"
                             r"stmatrix|movmatrix|tcgen05\.mma(?:\.sp|\.ws)*)\b")
_OPWORD = r"(?:mma|wmma|wgmma|ldmatrix|stmatrix|movmatrix|tcgen05)\.[\w.:{}]*"
_INSTR = re.compile(rf"^\s*(?:@!?%?\w+\s+)?({_OPWORD})\s*(.*?)\s*;?\s*$", re.S)
# Where a statement starts although no ';' ended the one before: a new line opening a directive or instruction.
_STARTS = re.compile(rf"(?m)^[ \t]*(?=\.reg\b|(?:@!?%?\w+\s+)?{_OPWORD}\s)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DECL = re.compile(r"^\.reg\s+\.(\w+)\s+(.*?)\s*;?\s*$", re.S)
_PROSE = re.compile(r"(?<![\w%])[A-Za-z]+\s+[A-Za-z]+\s+[A-Za-z]+(?![\w(])")
_NAME = re.compile(r"^(%?[A-Za-z_$][\w$]*)(?:<(\d+)>)?$")


@dataclass
class Decl:
    """One name a ``.reg`` statement declares (``%Ra<4>`` declares %Ra0..%Ra3 under the base %Ra)."""

    base: str
    type: str  # "f16x2", "b32", ...
    count: int | None  # the <N> of a parameterized name; None for a plain name
    line: int
    text: str

    def declares(self, name: str) -> bool:
        if self.count is None:
            return name == self.base
        m = re.fullmatch(re.escape(self.base) + r"(\d+)", name)
        return bool(m) and int(m.group(1)) < self.count and (m.group(1) == "0" or not m.group(1).startswith("0"))


@dataclass
class Example:
    """One instruction of an example: its opcode with modifiers, its operand list, and the declarations
    (by base name) the section made before it; ``problems`` are syntax faults of the example as written."""

    section: str
    shape: str | None
    family: str
    line: int
    opcode: str
    operands: list[str]
    text: str
    decls: dict[str, Decl] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def declaration(self, name: str) -> Decl | None:
        """The declaration of register ``name`` (``%Ra2``), if the example's section has one."""
        for d in self.decls.values():
            if d.declares(name):
                return d
        return None

    def base_of(self, name: str) -> Decl | None:
        """The declaration whose base ``name`` belongs to, even when its <N> is too small for it."""
        if name in self.decls:
            return self.decls[name]
        m = re.fullmatch(r"(.*?)(\d+)", name)
        return self.decls.get(m.group(1)) if m else None


def split_operands(text: str) -> list[str]:
    """Top-level comma-separated operands; braces and brackets keep their commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _family(opcode: str) -> str:
    head = opcode.split(".")
    if head[0] == "mma":
        return "mma.sp" if head[1].startswith("sp") else "mma.sync"
    if head[0] == "wgmma":
        return "wgmma"
    if head[0] == "tcgen05":
        return "tcgen05"
    return head[0]


def _statements(lines: list[Line]) -> list[tuple[int, str, bool]]:
    """(first line, statement, ended by ';') for the code in ``lines``."""
    text, starts, pos = "", [], 0
    for ln in lines:
        starts.append((pos, ln.number))
        text += ln.text + "\n"
        pos = len(text)
    text = _COMMENT.sub(lambda m: " " * len(m.group()), text)
    cuts = sorted({0, *(m.start() for m in _STARTS.finditer(text))})
    out = []

    def line_at(p: int) -> int:
        return max((n for s, n in starts if s <= p), default=lines[0].number if lines else 0)

    for a, b in zip(cuts, [*cuts[1:], len(text)]):
        chunk = text[a:b]
        pieces = chunk.split(";")
        off = a
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                out.append((line_at(off + lead), " ".join(piece.split()), not last))
            off += len(piece) + 1
    return out


def _decls(stmt: str, line: int) -> tuple[list[Decl], list[str]]:
    m = _DECL.match(stmt)
    if not m:
        return [], []
    problems = []
    body = m.group(2).strip()
    names = [n.strip() for n in body.split(",")]
    if any(" " in n for n in names):
        problems.append(f"'.reg .{m.group(1)} {body}' separates names by blanks, not commas")
        names = [p for n in names for p in n.split()]
    out = []
    for n in names:
        nm = _NAME.match(n)
        if nm:
            out.append(Decl(nm.group(1), m.group(1), int(nm.group(2)) if nm.group(2) else None, line, stmt))
    return out, problems


def examples_in(lines: list[Line], section: str, shape: str | None, family: str | None = None,
                decls: dict[str, Decl] | None = None) -> list[Example]:
    """The checked instructions in a run of code lines; ``decls`` (updated in place) carries the
    section's declarations from one block to the next.  ``family`` is kept for old callers: an
    example's family is its own opcode's."""
    decls = {} if decls is None else decls
    out: list[Example] = []
    pending: list[str] = []  # syntax problems of the declarations since the last instruction
    for line, stmt, ended in _statements(lines):
        if stmt.startswith(".reg"):
            new, problems = _decls(stmt, line)
            if not ended:
                problems.append(f"'{stmt}' has no ';'")
            for d in new:
                decls[d.base] = d
            pending += problems
            continue
        im = _INSTR.match(stmt)
        if not im or not CHECKED_OPCODES.match(im.group(1)) or _PROSE.search(im.group(2)):
            continue  # another instruction, or a sentence that begins with an opcode
        problems = pending + ([] if ended else ["the instruction has no ';'"])
        pending = []
        ops = split_operands(im.group(2))
        out.append(Example(section, shape, _family(im.group(1)), line, im.group(1), ops,
                           f"{im.group(1)} {', '.join(ops)};", dict(decls), problems))
    return out


def examples_of(tree: DocTree) -> list[Example]:
    """Every checked example instruction of a document, section by section.  Code is read from
    preformatted blocks and from paragraphs (a text copy or pdftotext has no code blocks); headings
    and tables end a run of code, and declarations carry on until the next numbered section."""
    out: list[Example] = []
    section, decls = "", {}
    run: list[Line] = []

    def flush() -> None:
        if run:
            out.extend(examples_in(run, section, None, None, decls))
            run.clear()

    for b in tree.blocks:
        if b.kind == HEADING:
            flush()
            if b.number:
                section, decls = b.number, {}
        elif b.kind == PRE:
            run.extend(b.lines)
        elif b.kind == PARA:
            run.append(Line(b.line, b.text))
        else:
            flush()
    flush()
    for ex in out:
        m = re.search(r"\.(m\d+n\d+(?:k\d+)?)\b", ex.opcode)
        ex.shape = m.group(1) if m else None
    return out
