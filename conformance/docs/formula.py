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

from ptxconf.isa.expr import ExprError, parse

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
    """ISA condition text -> expression language: ``||``, ``&&``, single ``=``, sets in any spelling."""
    t = text.replace("||", " or ").replace("&&", " and ")
    t = re.sub(r"(?<![<>=!])=(?!=)", "==", t)
    t = re.sub(r"\bi\s*==\s*(\{[^}]*\})", r"i in \1", t)
    t = re.sub(r"\{[^}]*\}", lambda m: "{" + ", ".join(str(v) for v in set_values(m.group(0))) + "}", t)
    return re.sub(r"\s+", " ", t).strip()


def set_values(text: str) -> tuple[int, ...]:
    """``{0,..,3}``, ``{0, ...,63}``, ``{0..3}``, ``{0, 1}``, ``{0, 2, ..., 14}``: the values of an ISA
    element set.  An ellipsis continues from the values before it (step 1, or the step of the two
    values before it) up to the value after it."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"not a set: {text!r}")
    body = re.sub(r"\.{2,}", " .. ", body[1:-1])
    if ".." not in body:
        vals = [_int(x) for x in body.split(",") if x.strip()]
    else:
        head, _, tail = body.partition("..")
        before = [_int(x) for x in head.split(",") if x.strip()]
        after = [_int(x) for x in tail.split(",") if x.strip()]
        if not before or len(after) != 1:
            raise ValueError(f"set {text!r}: an ellipsis needs values before it and one after it")
        step = before[-1] - before[-2] if len(before) > 1 else 1
        if step <= 0 or (after[0] - before[-1]) % step:
            raise ValueError(f"set {text!r}: no step of {step} leads from {before[-1]} to {after[0]}")
        vals = before + list(range(before[-1] + step, after[0] + 1, step))
    return tuple(sorted(set(vals)))


def _int(text: str) -> int:
    t = text.strip()
    if not re.fullmatch(r"\d+", t):
        raise ValueError(f"not an element index: {t!r}")
    return int(t)


def _element_clause(clause: str, line: int) -> tuple[str | None, tuple[int, ...] | None]:
    """``ai where i < 4`` -> (condition, None); ``ai where i = {0,..,3}`` -> (None, domain);
    ``a0 and a1``, ``a0, a1 and a4``, ``a0 to a3``, ``a0-a3``, ``a0..a3`` -> (membership, None)."""
    c = clause.strip().rstrip(".,;")
    m = re.match(r"^[abcd]i\b\s*(?:,?\s*where\s+(.*))?$", c, re.I)
    if m:
        body = (m.group(1) or "").strip()
        if not body:
            return None, None
        dm = re.match(r"^i\s*(?:=|in)\s*(\{.*\})$", body)
        if dm:
            try:
                return None, set_values(dm.group(1))
            except ValueError as exc:
                raise _Unreadable(f"element domain {dm.group(1)!r}: {exc}", line) from None
        rm = re.match(r"^(\d+)\s*(<=?)\s*i\s*(<=?)\s*(\d+)$", body)
        if rm and " or " not in body:
            lo = int(rm.group(1)) + (rm.group(2) == "<")
            hi = int(rm.group(4)) - (rm.group(3) == "<")
            return f"{lo} <= i <= {hi}", None
        try:
            return _cond(body), None
        except ValueError as exc:
            raise _Unreadable(f"element condition {body!r}: {exc}", line) from None
    rng = re.fullmatch(r"([abcd])(\d+)\s*(?:to|-|\.{2,}|through)\s*\1(\d+)", c)
    if rng:
        return f"{rng.group(2)} <= i <= {rng.group(3)}", None
    names = re.findall(r"[abcd](\d+)", c)
    if names and re.fullmatch(r"[abcd]\d+((\s*,\s*|\s*,?\s*and\s+|\s+or\s+)[abcd]\d+)*", c):
        return f"i in {{{', '.join(names)}}}" if len(names) > 1 else f"i == {names[0]}", None
    raise _Unreadable(f"cannot read element clause 'for {c}'", line)


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


def _domains_as_conditions(branches: list[_Branch], domains: list[tuple[int, ...] | None]) -> None:
    """``groupID for ai where i = {0, 1, 4, 5}`` / ``groupID + 8 for ai where i = {2, 3, 6, 7}``: branches that
    name different element sets choose by element, so their sets are conditions, not the domain."""
    named = [d for d in domains if d is not None]
    if len(branches) < 2 or len(set(named)) < 2:
        return
    for k, (br, dom) in enumerate(zip(branches, domains)):
        if dom is not None:
            member = f"i in {{{', '.join(map(str, dom))}}}"
            br.cond = f"({member}) and ({br.cond})" if br.cond else member
            domains[k] = None


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
            _domains_as_conditions(branches, domains)
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
