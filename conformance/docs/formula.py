"""Translate the ISA's "row = ... col = ..." blocks into the expression language of specs/.

The ISA writes a conditional formula as branch lines, each an expression with an
element clause and/or a condition::

    row =  %laneid % 4          if %laneid < 16           ->  A if %laneid < 16 else B
           (%laneid % 4) + 4    otherwise
    col =  i                    for ai where i = {0,..,3}  ->  i   (elements 0..3)
    row =  groupID for a0 and a1 / groupID + 8 for a2 and a3   ->  groupID if i in {0, 1} else ...
    ... for ai where 0 <= i < 2 || 4 <= i < 6 / ... Otherwise
    row = X if ... / X + 4 otherwise   where X = (...)       ->  let X
    col = [firstcol ... lastcol]  Where firstcol = ... lastcol = firstcol + 3
                                  ->  kind "range", bounds (firstcol, lastcol) as lets

``i = {0,..,3}`` is the element domain, not a condition.  Each branch is parsed on
its own so that a typo is reported with its own line (an unbalanced parenthesis
is a suspected doc erratum, not a crash).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from conformance.spec.expr import ExprError, parse

from .source import Line

__all__ = ["DocFormula", "translate_block", "FORMULA_START", "BINDING_LINE"]

FORMULA_START = re.compile(r"^\s*(row|col)\s*=(?!=)\s*(.*)$")
BINDING_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)\s*(.*)$")
_WHERE = re.compile(r"^\s*where\b\s*(.*)$", re.I)
_COMMENT = re.compile(r"\s*//\s+[A-Za-z].*$")


@dataclass
class DocFormula:
    """One ``row``/``col`` formula as the document states it, and its translation."""

    field: str  # "row" | "col"
    isa_text: str  # the block as written (lines joined with " / ")
    line: int
    expr: str | None = None  # expression-language text; None when unparseable or not a map
    lets: dict[str, str] = field(default_factory=dict)  # "where X = ..." bindings
    domain: tuple[int, ...] | None = None  # elements named by "for ai where i = {...}"
    kind: str = "map"  # "map" | "range" ([firstcol ... lastcol]: sparse, not a lane map)
    bounds: tuple[str, str] | None = None  # a range's (first, last) names, defined in ``lets``
    error: str | None = None
    error_line: int | None = None

    @property
    def suspected_erratum(self) -> bool:
        return self.error is not None and ("unbalanced" in self.error or "missing ')'" in self.error)

    def canonical(self) -> dict:
        """Line-free content, for comparing two renderings of one section."""
        return {"field": self.field, "expr": self.expr, "lets": dict(sorted(self.lets.items())),
                "domain": self.domain, "kind": self.kind, "bounds": self.bounds, "error": self.error}


@dataclass
class _Branch:
    expr: str
    cond: str | None
    line: int


class _Unreadable(Exception):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.message, self.line = message, line


def _cond(text: str) -> str:
    """ISA condition text -> expression language: ``||``, ``&&``, single ``=``."""
    t = text.replace("||", " or ").replace("&&", " and ")
    t = re.sub(r"(?<![<>=!])=(?!=)", "==", t)
    return re.sub(r"\s+", " ", t).strip()


def _element_clause(clause: str, line: int) -> tuple[str | None, tuple[int, ...] | None]:
    """``ai where i < 4`` -> (condition, None); ``ai where i = {0,..,3}`` -> (None, domain)."""
    c = clause.strip()
    m = re.match(r"^[abcd]i\b\s*(?:where\s+(.*))?$", c, re.I)
    if m:
        body = (m.group(1) or "").strip()
        if not body:
            return None, None
        dm = re.match(r"^i\s*=\s*(\{.*\})$", body)
        if dm:
            try:
                parse(f"i in {dm.group(1)}")
            except ExprError as exc:
                raise _Unreadable(f"element domain {dm.group(1)!r}: {exc.message}", line) from None
            values = sorted(int(v) for v in _set_values(dm.group(1)))
            return None, tuple(values)
        return _cond(body), None
    names = re.findall(r"[abcd](\d+)", c)
    if names and re.fullmatch(r"[abcd]\d+(\s*(,|and)\s*[abcd]\d+)*", c):
        return f"i in {{{', '.join(names)}}}" if len(names) > 1 else f"i == {names[0]}", None
    raise _Unreadable(f"cannot read element clause 'for {c}'", line)


def _set_values(text: str) -> list[int]:
    from conformance.spec.expr import Member

    node = parse(f"i in {text}").node
    assert isinstance(node, Member)
    return sorted(node.values)


def _branch(text: str, line: int) -> tuple[_Branch, tuple[int, ...] | None]:
    s = text.strip()
    otherwise = False
    m = re.search(r"\s*\botherwise\s*$", s, re.I)
    if m:
        s, otherwise = s[: m.start()], True
    cond_if = None
    m = re.search(r"\s+if\s+", s)
    if m:
        s, cond_if = s[: m.start()], _cond(s[m.end():])
    cond_for, domain = None, None
    m = re.search(r"\s+for\s+", s, re.I)
    if m:
        s, (cond_for, domain) = s[: m.start()], _element_clause(s[m.end():], line)
    s = s.strip()
    if not s:
        raise _Unreadable("branch has no expression", line)
    conds = [c for c in (cond_for, cond_if) if c]
    if otherwise and conds:
        raise _Unreadable("branch has both a condition and 'otherwise'", line)
    cond = " and ".join(f"({c})" if len(conds) > 1 else c for c in conds) or None
    return _Branch(s, cond, line), domain


def _check(text: str, what: str, line: int) -> None:
    try:
        parse(text)
    except ExprError as exc:
        raise _Unreadable(f"{what} {text!r}: {exc.message}" + (f" at column {exc.column}" if exc.column else ""), line) from None


def _combine(branches: list[_Branch]) -> str:
    for b in branches:
        _check(b.expr, "expression", b.line)
        if b.cond:
            _check(b.cond, "condition", b.line)
    for b in branches[:-1]:
        if b.cond is None:
            raise _Unreadable("a branch other than the last has no condition", b.line)
    out = branches[-1].expr
    for b in reversed(branches[:-1]):
        expr = f"({b.expr})" if " if " in b.expr else b.expr
        out = f"{expr} if {b.cond} else {out}"
    return out


def translate_block(lines: list[Line]) -> DocFormula:
    """One formula block (first line ``row =``/``col =``, then continuations and ``where``)."""
    first = FORMULA_START.match(lines[0].text)
    assert first, lines[0]
    clean = [Line(ln.number, _COMMENT.sub("", ln.text).strip()) for ln in lines]
    clean = [ln for ln in clean if ln.text]
    isa = " / ".join(ln.text for ln in clean)
    f = DocFormula(first.group(1), isa, lines[0].number)
    main: list[Line] = [Line(clean[0].number, _COMMENT.sub("", first.group(2)).strip())]
    lets: list[tuple[str, list[Line]]] = []
    in_where = False
    for ln in clean[1:]:
        w = _WHERE.match(ln.text)
        if w:
            in_where = True
            rest = w.group(1).strip()
            if rest:
                b = BINDING_LINE.match(rest)
                if not b:
                    f.error, f.error_line = f"cannot read 'where {rest}'", ln.number
                    return f
                lets.append((b.group(1), [Line(ln.number, b.group(2))]))
            continue
        if in_where:
            b = BINDING_LINE.match(ln.text)
            if b and not re.match(r"^\s*\(", ln.text):
                lets.append((b.group(1), [Line(ln.number, b.group(2))]))
            elif lets:
                lets[-1][1].append(ln)
            continue
        main.append(ln)
    rng = re.match(r"^\[\s*([A-Za-z_]\w*)\s*(?:\.\.\.|,)\s*([A-Za-z_]\w*)\s*\]$", main[0].text) if len(main) == 1 else None
    if any("[" in ln.text for ln in main):
        f.kind = "range"
        if rng is None:
            f.error, f.error_line = f"cannot read range {main[0].text!r}", main[0].number
            return f
        f.bounds = (rng.group(1), rng.group(2))
    try:
        domains = []
        branches = []
        if f.kind == "map":
            for ln in main:
                br, dom = _branch(ln.text, ln.number)
                branches.append(br)
                domains.append(dom)
            f.expr = _combine(branches)
        for name, blines in lets:
            lb = []
            for ln in blines:
                br, dom = _branch(ln.text, ln.number)
                lb.append(br)
                domains.append(dom)
            f.lets[name] = _combine(lb)
        if f.bounds:
            missing = [n for n in f.bounds if n not in f.lets]
            if missing:
                raise _Unreadable(f"range bound {missing[0]!r} is not defined ('where {missing[0]} = ...')", lines[0].number)
        doms = {d for d in domains if d is not None}
        if len(doms) > 1:
            raise _Unreadable(f"element domains disagree: {sorted(doms)}", lines[0].number)
        f.domain = doms.pop() if doms else None
    except _Unreadable as exc:
        f.expr = None
        f.error, f.error_line = exc.message, exc.line
    return f
