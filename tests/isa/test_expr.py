"""The formula language (conformance/isa/expr.py) against Python's own semantics.

A Hypothesis strategy builds random expression trees, renders each one twice
(the formula text, and the same text in plain Python), and checks that
``evaluate(parse(text), env)`` equals Python's ``eval`` of the Python text for
every (lane, element) position.  Python's ``eval`` is used here only as the
reference; the evaluator itself never uses it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ptxconf.isa.expr import Expr, ExprError, evaluate, parse

LANES = 32

# ---------------------------------------------------------------------------
# Random expressions
# ---------------------------------------------------------------------------
# A rendered node is (formula text, Python text, precedence, Python texts of
# every sub-expression).  Precedences follow Python's grammar, low to high.
COND, OR, AND, NOT, CMP, BOR, BXOR, BAND, SHIFT, ADD, MUL, UNARY, ATOM = range(1, 14)

BINARY = {"|": BOR, "^": BXOR, "&": BAND, "+": ADD, "-": ADD, "*": MUL, "//": MUL, "%": MUL}

# (formula name, Python name): %laneid is not a Python identifier.
NAMES = [("x", "x"), ("y", "y"), ("z", "z"), ("i", "i"), ("%laneid", "laneid"), ("groupID", "groupID")]


def _node(ev: str, py: str, prec: int, *children: tuple) -> tuple:
    subs = (py,) + tuple(s for c in children for s in c[3])
    return (ev, py, prec, subs)


def _wrap(node: tuple, need: int) -> tuple[str, str]:
    ev, py, prec, _ = node
    return (f"({ev})", f"({py})") if prec < need else (ev, py)


def _render_int(n: int, style: str) -> str:
    return {"dec": str(n), "hex": hex(n), "HEX": f"0X{n:X}", "bin": bin(n)}[style]


literals = st.builds(
    lambda n, style: _node(_render_int(n, style), str(n), ATOM),
    st.integers(0, 40) | st.sampled_from([0xFF, 0x1F, 0b1010, 1000]),
    st.sampled_from(["dec", "hex", "HEX", "bin"]),
)
names = st.sampled_from(NAMES).map(lambda n: _node(n[0], n[1], ATOM))

# Shift counts stay small (the evaluator refuses counts above 62); a name minus a
# constant can go negative, which Python answers with ValueError.
shift_counts = (
    st.integers(0, 6).map(lambda n: _node(str(n), str(n), ATOM))
    | names
    | st.tuples(st.sampled_from(NAMES), st.integers(1, 4)).map(
        lambda t: _node(f"({t[0][0]} - {t[1]})", f"({t[0][1]} - {t[1]})", ATOM)
    )
)

set_items = st.lists(
    st.integers(-3, 9).map(lambda v: (str(v), [v]))
    | st.tuples(st.integers(-2, 6), st.integers(0, 8)).map(
        lambda t: (f"{t[0]},..,{t[1]}", list(range(t[0], t[1] + 1)) or [t[0]])
    ),
    min_size=1,
    max_size=3,
)


def _unary(op, c):
    ev, py = _wrap(c, UNARY)
    return _node(f"{op}{ev}", f"{op}{py}", UNARY, c)


def _binary(op, a, b, sep):
    prec = SHIFT if op in ("<<", ">>") else BINARY[op]
    (ea, pa), (eb, pb) = _wrap(a, prec), _wrap(b, prec + 1)
    return _node(f"{ea}{sep}{op}{sep}{eb}", f"{pa} {op} {pb}", prec, a, b)


def _compare(first, rest):
    ev, py = _wrap(first, BOR)
    for op, c in rest:
        ec, pc = _wrap(c, BOR)
        ev, py = f"{ev} {op} {ec}", f"{py} {op} {pc}"
    return _node(ev, py, CMP, first, *(c for _, c in rest))


def _member(c, items, negate):
    ec, pc = _wrap(c, BOR)
    kw = "not in" if negate else "in"
    values = sorted({v for _, vs in items for v in vs})
    ev = f"{ec} {kw} {{{', '.join(t for t, _ in items)}}}"
    return _node(ev, f"{pc} {kw} {{{', '.join(map(str, values))}}}", CMP, c)


def _boolop(op, a, b):
    prec = AND if op == "and" else OR
    (ea, pa), (eb, pb) = _wrap(a, prec), _wrap(b, prec + 1)
    return _node(f"{ea} {op} {eb}", f"{pa} {op} {pb}", prec, a, b)


def _cond(then, test, orelse):
    (et, pt), (ec, pc), (eo, po) = _wrap(then, OR), _wrap(test, OR), _wrap(orelse, COND)
    return _node(f"{et} if {ec} else {eo}", f"{pt} if {pc} else {po}", COND, then, test, orelse)


KINDS = ["binary"] * 5 + ["shift", "unary", "compare", "member", "not", "boolop", "cond", "paren"]


@st.composite
def expressions(draw, depth: int = 5):
    """A random expression tree, rendered; stops at a leaf one time in four."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(literals | names)
    kind = draw(st.sampled_from(KINDS))
    sub = expressions(depth - 1)
    if kind == "binary":
        op = draw(st.sampled_from(sorted(BINARY)))
        return _binary(op, draw(sub), draw(sub), draw(st.sampled_from([" ", ""])))
    if kind == "shift":
        op = draw(st.sampled_from(["<<", ">>"]))
        return _binary(op, draw(sub), draw(shift_counts), draw(st.sampled_from([" ", ""])))
    if kind == "unary":
        return _unary(draw(st.sampled_from("-+~")), draw(sub))
    if kind == "compare":
        ops = draw(st.lists(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), min_size=1, max_size=3))
        return _compare(draw(sub), [(op, draw(sub)) for op in ops])
    if kind == "member":
        return _member(draw(sub), draw(set_items), draw(st.booleans()))
    if kind == "not":
        c = draw(sub)
        ev, py = _wrap(c, NOT)
        return _node(f"not {ev}", f"not {py}", NOT, c)
    if kind == "boolop":
        return _boolop(draw(st.sampled_from(["and", "or"])), draw(sub), draw(sub))
    if kind == "cond":
        return _cond(draw(sub), draw(sub), draw(sub))
    c = draw(sub)
    return _node(f"({c[0]})", f"({c[1]})", ATOM, c)


@st.composite
def environments(draw):
    elements = draw(st.integers(1, 4))
    x = np.array(draw(st.lists(st.integers(-2, 8), min_size=LANES, max_size=LANES)))[:, None]
    y = np.array(draw(st.lists(st.integers(-3, 5), min_size=elements, max_size=elements)))[None, :]
    z = draw(st.integers(-4, 9))
    env = {
        "x": x,
        "y": y,
        "z": z,
        "i": np.arange(elements)[None, :],
        "%laneid": np.arange(LANES)[:, None],
        "groupID": parse("%laneid >> 2"),  # a binding that is itself a formula
    }
    return env, elements


def _python_env(env: dict, lane: int, e: int) -> dict:
    return {
        "x": int(env["x"][lane, 0]),
        "y": int(env["y"][0, e]),
        "z": env["z"],
        "i": e,
        "laneid": lane,
        "groupID": lane >> 2,
    }


def _py_eval(code, scope: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(code, {"__builtins__": {}}, scope)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(expressions(), environments())
def test_evaluate_matches_python(node, env_e):
    text, py_text, _, subs = node
    env, elements = env_e
    scopes = [(lane, e, _python_env(env, lane, e)) for lane in range(LANES) for e in range(elements)]

    # int64 must not overflow anywhere, even in sub-expressions Python discards.
    for sub in {*subs}:
        code = compile(sub, "<sub>", "eval")
        for _, _, scope in scopes:
            try:
                v = _py_eval(code, scope)
            except (ZeroDivisionError, ValueError):
                continue
            assume(abs(int(v)) < 2**62)

    code = compile(py_text, "<ref>", "eval")
    expected = np.zeros((LANES, elements), dtype=object)
    raised = None
    for lane, e, scope in scopes:
        try:
            expected[lane, e] = int(_py_eval(code, scope))
        except (ZeroDivisionError, ValueError) as exc:
            raised = (lane, e, exc)

    expr = parse(text)
    if raised is not None:
        with pytest.raises(ExprError, match="division by zero|negative shift count"):
            evaluate(expr, env)
        return
    got = evaluate(expr, env)
    assert got.shape == (LANES, elements)
    assert got.dtype == np.int64
    assert got.tolist() == expected.tolist(), f"{text!r} vs Python {py_text!r}"


@given(expressions())
def test_names_are_those_written(node):
    text = node[0]
    used = parse(text).names()
    assert used <= {n for n, _ in NAMES}
    for name in used:
        assert name in text


# ---------------------------------------------------------------------------
# Unit tests
# ---------------------------------------------------------------------------


def _error(text: str, env: dict | None = None) -> ExprError:
    with pytest.raises(ExprError) as info:
        if env is None:
            parse(text)
        else:
            evaluate(parse(text), env)
    assert "\n" not in str(info.value)
    return info.value


def test_unbalanced_open_paren_names_column():
    text = "(i * 2) - 2 + (threadID_in_group"  # the ISA's m16n8k16 .f64 typo
    err = _error(text)
    assert "unbalanced '('" in err.message
    assert err.column == len(text) + 1
    assert f"at column {len(text) + 1}" in str(err)
    assert repr(text) in str(err)


def test_unbalanced_close_paren():
    err = _error("i + 1)")
    assert "unbalanced ')'" in err.message and err.column == 6


def test_slash_is_refused_with_hint():
    err = _error("i / 2")
    assert "'//'" in err.message and err.column == 3


def test_bad_character_and_literal():
    assert _error("i $ 2").column == 3
    err = _error("groupID + 01")  # Python refuses leading zeros too
    assert "01" in err.message and err.column == 11


def test_in_cannot_chain_with_comparison():
    assert "chained" in _error("0 < i in {1, 2}").message


@pytest.mark.parametrize("text", ["", "   ", "i +", "if i else 2", "{0, 1}", "i in {}", "i in {,..,3}"])
def test_malformed(text):
    _error(text)


def test_unknown_name_lists_known_names():
    env = {"groupID": parse("%laneid >> 2"), "%laneid": np.arange(32)[:, None], "i": np.arange(4)[None, :]}
    err = _error("grupID + 8", env)
    assert "unknown name 'grupID'" in err.message
    assert "known: %laneid, groupID, i" in err.message
    assert err.column == 1


def test_int_and_bool_inputs():
    assert evaluate(parse(7), {}) == 7
    with pytest.raises(ExprError):
        parse(True)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-7 // 2", -4), ("-7 % 2", 1), ("7 % -2", -1), ("-1 >> 1", -1), ("~5", -6), ("0x1F & 0b110", 6),
        ("3 and 0 or 7", 7), ("0 or 0", 0), ("not 2", 0), ("1 < 2 < 3", 1), ("1 < 3 < 2", 0),
        ("2 in {0,..,3}", 1), ("4 in {0,..,3}", 0), ("-1 not in {-1, 5}", 0), ("1 + 2 * 3 << 1", 14),
        ("5 if 0 else 6 if 1 else 7", 6), ("1_000 + 0x_ff", 1255),
    ],
)
def test_constants(text, value):
    assert int(evaluate(parse(text), {})) == value


def test_vectorised_over_lanes_and_elements():
    lane = np.arange(32)[:, None]
    elem = np.arange(8)[None, :]
    env = {"%laneid": lane, "i": elem, "groupID": parse("%laneid >> 2")}
    got = evaluate(parse("groupID + 8 if i in {2, 3, 6, 7} else groupID"), env)
    assert got.shape == (32, 8)
    for ln in (0, 5, 31):
        for e in range(8):
            assert got[ln, e] == (ln // 4) + (8 if e in (2, 3, 6, 7) else 0)
    # a formula of lane alone still broadcasts to the full (lane, element) grid
    assert evaluate(parse("%laneid % 4"), env).shape == (32, 8)


def test_binding_chain_of_exprs():
    env = {
        "%laneid": np.arange(32)[:, None],
        "i": np.arange(2)[None, :],
        "groupID": parse("%laneid >> 2"),
        "threadID_in_group": parse("%laneid % 4"),
        "col0": parse("threadID_in_group * 2"),
    }
    got = evaluate(parse("groupID * 100 + col0 + i"), env)
    assert got[13].tolist() == [302, 303]
    assert isinstance(env["groupID"], Expr) and env["groupID"].names() == {"%laneid"}


def test_self_referencing_binding():
    env = {"a": parse("b + 1"), "b": parse("a * 2"), "i": np.arange(2)}
    assert "refers to itself" in _error("a", env).message
    assert "refers to itself" in _error("loop", {"loop": parse("loop + 1")}).message


def test_errors_only_where_taken():
    env = {"x": np.array([[0], [1], [2], [-1]]), "i": np.arange(3)[None, :]}
    assert evaluate(parse("12 // x if x != 0 else -1"), env)[:, 0].tolist() == [-1, 12, 6, -12]
    assert evaluate(parse("x != 0 and 12 % x"), env)[:, 0].tolist() == [0, 0, 0, 0]
    assert evaluate(parse("1 << x if x >= 0 else 0"), env)[:, 0].tolist() == [1, 2, 4, 0]
    assert evaluate(parse("x < 0 or 1 << x"), env)[:, 0].tolist() == [1, 2, 4, 1]
    assert evaluate(parse("0 < x < 12 // x"), env)[:, 0].tolist() == [0, 1, 1, 0]
    assert _error("12 // x", env).message == "division by zero"
    assert _error("1 << x", env).message == "negative shift count"
    assert "above 62" in _error("1 << 63", {}).message


def test_scalars_and_own_shapes():
    """Operands are evaluated in their own shapes (a column, a row, a scalar) and broadcast only where combined: the
    result is the whole shape's, and a scalar divisor or shift count is checked only where taken, as an array is."""
    mn, k = np.arange(4)[:, None], np.arange(3)[None, :]
    env = {"mn": mn, "k": k, "z": 0, "s": 70, "n": -1}
    got = evaluate(parse("(mn * 8 + k) % 5 - (k if mn > 1 else 7) + (mn >> 1 << 2)"), env)
    assert got.shape == (4, 3) and got.dtype == np.int64
    assert got.tolist() == [[(m * 8 + c) % 5 - (c if m > 1 else 7) + (m >> 1 << 2) for c in range(3)] for m in range(4)]
    assert evaluate(parse("mn // z if z != 0 else mn"), env).tolist() == [[m] * 3 for m in range(4)]
    assert evaluate(parse("0 if s > 62 else 1 << s"), env).tolist() == [[0] * 3] * 4
    assert evaluate(parse("n < 0 or k >> n"), env).tolist() == [[1] * 3] * 4
    assert evaluate(parse("7 // z if mn > 9 else 2"), env).tolist() == [[2] * 3] * 4  # taken nowhere
    assert _error("mn // z", env).message == "division by zero"
    assert _error("k % z", env).message == "division by zero"
    assert "above 62" in _error("k << s", env).message
    assert _error("k >> n", env).message == "negative shift count"
    assert evaluate(parse("3 + 4"), {}).shape == ()
