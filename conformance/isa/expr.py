"""The formula language of specs/: integer expressions that read like the ISA's text.

A formula such as ``groupID + 8 if i in {2, 3, 6, 7} else groupID`` is parsed once
into a small AST and evaluated over NumPy arrays (one value per lane and element),
never through Python's ``eval``.  The semantics are Python's, for the subset
accepted here:

* integers (``12``, ``0x1f``, ``0b10``), names (``groupID``, ``i``, ``%laneid``);
* unary ``-``, ``+``, ``~``; binary ``* // % + - << >> & ^ |``;
* comparisons ``< <= > >= == !=`` (chained as in Python) and ``in`` / ``not in``
  against a set literal ``{0, 1, 4, 5}`` or an ISA range ``{0,..,3}``;
* ``not``, ``and``, ``or`` (returning operands, as Python does);
* the conditional ``a if cond else b``.

Errors (unknown names, division by zero, negative shifts) are raised only for the
positions where the failing sub-expression is actually taken, as Python would.
``/`` is refused with a hint, because the ISA's "/" is integer division and
Python's is not.

Formulas come from user spec directories and ``doc-import`` drafts, so parsing and
evaluation bound their work (``MAX_FORMULA_LENGTH``, ``MAX_FORMULA_DEPTH``,
``MAX_SET_SIZE``, ``MAX_BINDING_DEPTH``, 64-bit literals): a hostile formula is an
:class:`ExprError`, never a ``RecursionError`` or ``MemoryError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ExprError", "Expr", "parse", "evaluate", "evaluate_all", "MAX_FORMULA_LENGTH", "MAX_FORMULA_DEPTH"]

# The limits, far above what the ISA needs (specs/ today: 96 characters, nesting 6,
# a few values per set, bindings one level deep) and far below what would exhaust
# Python's recursion limit (parser ~14 frames per parenthesis, evaluator 2 per
# level, times the binding chain) or memory.
MAX_FORMULA_LENGTH = 1000  # characters
MAX_FORMULA_DEPTH = 32  # nested parentheses/unary/not/conditionals, and height of the parsed tree
MAX_SET_SIZE = 4096  # values in a set literal such as {0,..,3}
MAX_BINDING_DEPTH = 8  # a binding that uses a binding that uses ...
_INT64 = range(-(2**63), 2**63)


class ExprError(ValueError):
    """A formula that cannot be parsed or evaluated; ``column`` is 1-based."""

    def __init__(self, message: str, text: str = "", column: int | None = None):
        self.message = message
        self.text = text
        self.column = column
        where = f" at column {column}" if column is not None else ""
        super().__init__(f"{message}{where} in formula {text!r}" if text else message)


# ---------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>0[xX][0-9a-fA-F_]+|0[bB][01_]+|[0-9][0-9_]*)
  | (?P<name>%?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\.\.|//|<<|>>|<=|>=|==|!=|[-+*%&|^~<>(){},/])
    """,
    re.VERBOSE,
)

_KEYWORDS = {"if", "else", "and", "or", "not", "in"}


@dataclass(frozen=True)
class Tok:
    kind: str  # "num", "name", "op", "kw", "end"
    text: str
    pos: int


def _tokenize(text: str) -> list[Tok]:
    out: list[Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExprError(f"unexpected character {text[pos]!r}", text, pos + 1)
        kind = m.lastgroup
        tok = m.group()
        if kind == "name" and tok[0] == "%" and out and (out[-1].kind in ("num", "name") or out[-1].text == ")"):
            # after an operand, '%' is the modulo operator (``x%y``), not a %register name
            out.append(Tok("op", "%", pos))
            pos += 1
            continue
        if kind == "name" and tok in _KEYWORDS:
            out.append(Tok("kw", tok, pos))
        elif kind != "ws":
            out.append(Tok(kind or "op", tok, pos))
        pos = m.end()
    out.append(Tok("end", "", len(text)))
    return out


# ---------------------------------------------------------------------------
# AST
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Num:
    value: int


@dataclass(frozen=True)
class Name:
    name: str
    pos: int


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node
    pos: int


@dataclass(frozen=True)
class Compare:
    first: Node
    rest: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class Member:
    operand: Node
    values: frozenset[int]
    negate: bool


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" | "or"
    left: Node
    right: Node


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class Cond:
    then: Node
    test: Node
    orelse: Node


Node = Num | Name | Unary | Binary | Compare | Member | BoolOp | Not | Cond


class _Parser:
    """Recursive descent with Python's precedence levels."""

    _LEVELS = [("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "//", "%")]

    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.k = 0
        self.depth = 0  # open parentheses, unary operators, 'not's and 'else' chains

    def enter(self, tok: Tok) -> None:
        """Count one more level of recursion; refuse it past MAX_FORMULA_DEPTH (no RecursionError)."""
        self.depth += 1
        if self.depth > MAX_FORMULA_DEPTH:
            raise self.error(f"formula nests deeper than the limit of {MAX_FORMULA_DEPTH} levels", tok)

    def peek(self) -> Tok:
        return self.toks[self.k]

    def take(self) -> Tok:
        tok = self.toks[self.k]
        self.k += 1
        return tok

    def expect(self, text: str) -> Tok:
        tok = self.take()
        if tok.text != text:
            found = tok.text or "end of formula"
            raise ExprError(f"expected {text!r}, found {found!r}", self.text, tok.pos + 1)
        return tok

    def error(self, msg: str, tok: Tok) -> ExprError:
        return ExprError(msg, self.text, tok.pos + 1)

    def parse(self) -> Node:
        node = self.cond()
        tok = self.peek()
        if tok.kind != "end":
            if tok.text == ")":
                raise self.error("unbalanced ')'", tok)
            raise self.error(f"unexpected {tok.text!r}", tok)
        return node

    def cond(self) -> Node:
        then = self.or_()
        if self.peek().text == "if":
            self.take()
            test = self.or_()
            self.enter(self.expect("else"))
            orelse = self.cond()
            self.depth -= 1
            return Cond(then, test, orelse)
        return then

    def or_(self) -> Node:
        node = self.and_()
        while self.peek().text == "or":
            self.take()
            node = BoolOp("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.peek().text == "and":
            self.take()
            node = BoolOp("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.peek().text == "not":
            self.enter(self.take())
            node = Not(self.not_())
            self.depth -= 1
            return node
        return self.compare()

    def compare(self) -> Node:
        first = self.binary(0)
        rest: list[tuple[str, Node]] = []
        while True:
            tok = self.peek()
            if tok.text in ("<", "<=", ">", ">=", "==", "!="):
                self.take()
                rest.append((tok.text, self.binary(0)))
            elif tok.text == "in" or (tok.text == "not" and self.toks[self.k + 1].text == "in"):
                if rest:
                    raise self.error("'in' cannot be chained with comparisons", tok)
                negate = tok.text == "not"
                self.take()
                if negate:
                    self.take()
                return Member(first, self.set_literal(), negate)
            else:
                break
        return Compare(first, tuple(rest)) if rest else first

    def set_literal(self) -> frozenset[int]:
        self.expect("{")
        values: list[int] = []
        while True:
            tok = self.peek()
            if tok.text == "..":
                self.take()
                self.expect(",")
                hi = self.signed_int()
                if not values:
                    raise self.error("range '{a,..,b}' needs a first value", tok)
                if len(values) + hi - values[-1] > MAX_SET_SIZE:
                    raise self.error(f"set has more than the limit of {MAX_SET_SIZE} values", tok)
                values.extend(range(values[-1] + 1, hi + 1))
            else:
                values.append(self.signed_int())
            sep = self.take()
            if sep.text == "}":
                return frozenset(values)
            if sep.text != ",":
                raise self.error(f"expected ',' or '}}' in set, found {sep.text!r}", sep)

    def signed_int(self) -> int:
        sign = 1
        if self.peek().text == "-":
            self.take()
            sign = -1
        tok = self.take()
        if tok.kind != "num":
            raise self.error(f"expected an integer in set, found {tok.text!r}", tok)
        return sign * self.integer(tok)

    def integer(self, tok: Tok) -> int:
        try:
            value = int(tok.text.replace("_", ""), 0)
        except ValueError:
            raise self.error(f"bad integer literal {tok.text!r}", tok) from None
        if value not in _INT64:  # evaluation is in int64: refuse rather than overflow
            raise self.error(f"integer literal {tok.text!r} does not fit 64 bits", tok)
        return value

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek().text in self._LEVELS[level]:
            tok = self.take()
            node = Binary(tok.text, node, self.binary(level + 1), tok.pos)
        if self.peek().text == "/":
            raise self.error("'/' is not allowed; write '//' for integer division", self.peek())
        return node

    def unary(self) -> Node:
        tok = self.peek()
        if tok.text in ("-", "+", "~"):
            self.enter(self.take())
            node = Unary(tok.text, self.unary())
            self.depth -= 1
            return node
        return self.atom()

    def atom(self) -> Node:
        tok = self.take()
        if tok.kind == "num":
            return Num(self.integer(tok))
        if tok.kind == "name":
            return Name(tok.text, tok.pos)
        if tok.text == "(":
            self.enter(tok)
            node = self.cond()
            close = self.peek()
            if close.text != ")":
                raise self.error("unbalanced '(': missing ')'", close)
            self.take()
            self.depth -= 1
            return node
        found = tok.text or "end of formula"
        raise self.error(f"expected a number, name or '(', found {found!r}", tok)


@dataclass(frozen=True)
class Expr:
    """A parsed formula: keep the text for messages, the AST for evaluation."""

    text: str
    node: Node

    def names(self) -> set[str]:
        return _names(self.node)

    def __call__(self, env: Mapping[str, object]) -> np.ndarray:
        return evaluate(self, env)


def parse(text: str | int) -> Expr:
    """Parse a formula; an ``int`` (YAML's ``row: 0``) is accepted as a constant."""
    if isinstance(text, bool):
        raise ExprError(f"expected a formula, found boolean {text}")
    if isinstance(text, int):
        if text not in _INT64:
            raise ExprError(f"integer {text} does not fit 64 bits")
        return Expr(str(text), Num(text))
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty formula")
    if len(text) > MAX_FORMULA_LENGTH:  # checked first: the message must not quote the formula
        raise ExprError(f"formula of {len(text)} characters exceeds the limit of {MAX_FORMULA_LENGTH}")
    node = _Parser(text).parse()
    if _height(node) > MAX_FORMULA_DEPTH:  # e.g. 'a+a+...+a': flat text, deep tree
        raise ExprError(f"formula nests deeper than the limit of {MAX_FORMULA_DEPTH} levels", text)
    return Expr(text, node)


def _height(node: Node) -> int:
    """Height of the tree, without recursion (the tree may be deep: that is what is checked)."""
    best, stack = 0, [(node, 1)]
    while stack:
        n, h = stack.pop()
        best = max(best, h)
        stack.extend((c, h + 1) for c in _children(n))
    return best


def _names(node: Node) -> set[str]:
    if isinstance(node, Name):
        return {node.name}
    out: set[str] = set()
    for child in _children(node):
        out |= _names(child)
    return out


def _children(node: Node) -> list[Node]:
    if isinstance(node, (Unary, Not)):
        return [node.operand]
    if isinstance(node, Member):
        return [node.operand]
    if isinstance(node, (Binary, BoolOp)):
        return [node.left, node.right]
    if isinstance(node, Compare):
        return [node.first, *(n for _, n in node.rest)]
    if isinstance(node, Cond):
        return [node.then, node.test, node.orelse]
    return []


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------


_SCALAR_CACHE: dict[tuple, tuple[Expr, np.ndarray]] = {}
_SCALAR_CACHE_MAX = 1 << 16


def evaluate(expr: Expr, env: Mapping[str, object]) -> np.ndarray:
    """Evaluate over broadcast NumPy integer arrays; names come from ``env``.

    ``env`` values may be ints, arrays, or other ``Expr`` objects (bindings such
    as ``groupID = %laneid >> 2``), which are evaluated on first use.  A formula over
    scalars alone (a descriptor field, an encode rule) is evaluated once per distinct
    environment: planning asks the same questions for every case.
    """
    key = _scalar_key(expr, env)
    if key is not None:
        hit = _SCALAR_CACHE.get(key)
        if hit is not None:
            return hit[1].copy()
        out = _evaluate(expr, env)
        if len(_SCALAR_CACHE) >= _SCALAR_CACHE_MAX:
            _SCALAR_CACHE.clear()
        _SCALAR_CACHE[key] = (expr, out.copy())  # the Expr is kept alive, so its id stays its own
        return out
    return _evaluate(expr, env)


def _scalar_key(expr: Expr, env: Mapping[str, object]) -> tuple | None:
    items = []
    for name, value in env.items():
        if isinstance(value, Expr):
            items.append((name, "expr", id(value), value.text))
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            items.append((name, int(value)))
        else:
            return None
    return (id(expr), expr.text, tuple(sorted(items, key=lambda x: x[0])))


def evaluate_all(exprs: Sequence[Expr], env: Mapping[str, object]) -> list[np.ndarray]:
    """:func:`evaluate` of each formula in turn over one environment, each binding evaluated once for all of them
    (a layout's matrix, row and col formulas read the same ``groupID``)."""
    if exprs and _scalar_key(exprs[0], env) is not None:  # scalars only (what the key says): evaluate's own cache
        return [evaluate(e, env) for e in exprs]
    return _evaluate_all(exprs, env)


def _evaluate(expr: Expr, env: Mapping[str, object]) -> np.ndarray:
    return _evaluate_all([expr], env)[0]


def _evaluate_all(exprs: Sequence[Expr], env: Mapping[str, object]) -> list[np.ndarray]:
    arrays = [np.asarray(v) for v in env.values() if not isinstance(v, Expr)]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    cache: dict[str, np.ndarray] = {}
    out = []
    for expr in exprs:
        ev = _Evaluator(expr.text, env, shape)
        ev.cache = cache
        out.append(np.broadcast_to(ev.eval(expr.node, _EVERYWHERE), shape).astype(np.int64))
    return out


_EVERYWHERE = np.True_  # the mask of a whole formula: every position is taken


class _Evaluator:
    """Evaluates a parsed formula over the environment's arrays in their own shapes, broadcast only as the operations
    broadcast them (a layout's ``mn`` column and ``k`` row meet first where a formula combines them; a literal stays a
    scalar): the result is the same as over arrays of the whole shape, with a fraction of the elementwise work.
    ``mask`` (where a sub-expression is taken) broadcasts likewise."""

    def __init__(self, text: str, env: Mapping[str, object], shape: tuple[int, ...]):
        self.text = text
        self.env = env
        self.shape = shape
        self.cache: dict[str, np.ndarray] = {}
        self.active: set[str] = set()

    def fail(self, msg: str, pos: int | None = None) -> ExprError:
        return ExprError(msg, self.text, None if pos is None else pos + 1)

    def lookup(self, node: Name) -> np.ndarray:
        if node.name in self.cache:
            return self.cache[node.name]
        if node.name not in self.env:
            known = ", ".join(sorted(self.env)) or "none"
            raise self.fail(f"unknown name {node.name!r} (known: {known})", node.pos)
        value = self.env[node.name]
        if isinstance(value, Expr):
            if node.name in self.active:
                raise self.fail(f"binding {node.name!r} refers to itself", node.pos)
            if len(self.active) >= MAX_BINDING_DEPTH:
                raise self.fail(f"bindings nest deeper than the limit of {MAX_BINDING_DEPTH}", node.pos)
            self.active.add(node.name)
            try:
                sub = _Evaluator(value.text, self.env, self.shape)
                sub.cache, sub.active = self.cache, self.active
                arr = sub.eval(value.node, _EVERYWHERE)  # (a binding is evaluated wherever it is used first)
            finally:
                self.active.discard(node.name)
        else:
            arr = value
        arr = np.asarray(arr, dtype=np.int64)
        if not arr.ndim:  # a scalar as a literal is one (operations on it are cheaper, and checked as one number)
            arr = arr[()]
        self.cache[node.name] = arr
        return arr

    def eval(self, node: Node, mask: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self._eval(node, mask)

    def _eval(self, node: Node, mask: np.ndarray) -> np.ndarray:
        if isinstance(node, Num):
            return np.int64(node.value)
        if isinstance(node, Name):
            return self.lookup(node)
        if isinstance(node, Unary):
            v = self._eval(node.operand, mask)
            return {"-": np.negative, "+": np.positive, "~": np.invert}[node.op](v)
        if isinstance(node, Binary):
            return self._binary(node, mask)
        if isinstance(node, Compare):
            left = self._eval(node.first, mask)
            result = _EVERYWHERE
            for op, right_node in node.rest:
                right = self._eval(right_node, mask & result)
                result = result & _COMPARE[op](left, right)
                left = right
            return np.asarray(result).astype(np.int64)
        if isinstance(node, Member):
            v = self._eval(node.operand, mask)
            hit = np.isin(v, np.fromiter(node.values, dtype=np.int64, count=len(node.values)))
            return (~hit if node.negate else hit).astype(np.int64)
        if isinstance(node, Not):
            return np.asarray(self._eval(node.operand, mask) == 0).astype(np.int64)
        if isinstance(node, BoolOp):
            left = self._eval(node.left, mask)
            truthy = left != 0
            if node.op == "and":
                right = self._eval(node.right, mask & truthy)
                return np.where(truthy, right, left)
            right = self._eval(node.right, mask & ~truthy)
            return np.where(truthy, left, right)
        if isinstance(node, Cond):
            test = self._eval(node.test, mask) != 0
            then = self._eval(node.then, mask & test)
            orelse = self._eval(node.orelse, mask & ~test)
            return np.where(test, then, orelse)
        raise TypeError(f"unknown node {node!r}")  # pragma: no cover

    def _binary(self, node: Binary, mask: np.ndarray) -> np.ndarray:
        a = self._eval(node.left, mask)
        b = self._eval(node.right, mask)
        op = node.op
        if op in ("//", "%"):
            if type(b) is np.int64:  # a scalar divisor (a literal, most often): checked as one number
                if b == 0:
                    if np.any(mask):
                        raise self.fail("division by zero", node.pos)
                    b = np.int64(1)
            else:
                zero = b == 0
                if np.any(zero):
                    if np.any(zero & mask):
                        raise self.fail("division by zero", node.pos)
                    b = np.where(zero, 1, b)
            return np.floor_divide(a, b) if op == "//" else np.mod(a, b)
        if op in ("<<", ">>"):
            if type(b) is np.int64:
                if not 0 <= b <= 62:
                    if np.any(mask):
                        raise self.fail("negative shift count" if b < 0 else "shift count above 62", node.pos)
                    b = np.int64(min(max(int(b), 0), 62))
            else:
                if np.any((b < 0) & mask):
                    raise self.fail("negative shift count", node.pos)
                if np.any((b > 62) & mask):
                    raise self.fail("shift count above 62", node.pos)
                if np.any(b < 0) or np.any(b > 62):
                    b = np.clip(b, 0, 62)
            return np.left_shift(a, b) if op == "<<" else np.right_shift(a, b)
        return _ARITH[op](a, b)


_ARITH = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "^": np.bitwise_xor,
}

_COMPARE = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}
