"""What an implementation of the arithmetic model beside model.py (a compiled or a GPU kernel) reproduces exactly.

Such an implementation names the parameter values it implements; anything else is refused, never approximated.  A
parameter model.py gains later is accepted only at its default (the only value the implementation knows), so a new
rule can never pass through unnoticed."""

from __future__ import annotations

import dataclasses

__all__ = ["NOT_ARITHMETIC", "refusal", "unsupported_types"]

# naming and selection, not arithmetic
NOT_ARITHMETIC = frozenset({"name", "kind", "a_types", "d_types", "nan_bits", "families", "shapes"})


def _field_default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def refusal(p, implemented: dict, skip=NOT_ARITHMETIC) -> str | None:
    """Why path ``p`` is outside ``implemented`` (parameter -> accepted values, or a predicate): the first parameter
    value it does not accept, as text; None when every value is accepted."""
    for f in dataclasses.fields(p):
        value = getattr(p, f.name)
        if f.name in skip:
            continue
        if f.name not in implemented:
            if value != _field_default(f):
                return f"parameter {f.name}={value!r} is not implemented (only its default {_field_default(f)!r} is)"
            continue
        ok = implemented[f.name]
        if not (ok(value) if callable(ok) else value in ok):
            return f"{f.name}={value!r} is not implemented"
    return None


def unsupported_types(p, t, float_in, float_acc, int_in) -> list[str]:
    """The A/B/C/D types (and ``.b1`` operation) of ``t`` outside what an implementation takes for ``p``'s kind."""
    if p.kind == "float":
        return [x for x in (t.a, t.b) if x not in float_in] + [x for x in (t.c, t.d) if x not in float_acc]
    if p.kind == "int":
        return [x for x in (t.a, t.b) if x not in int_in] + [x for x in (t.c, t.d) if x != "s32"]
    if p.kind == "b1":
        bad = [x for x in (t.a, t.b) if x != "b1"] + [x for x in (t.c, t.d) if x != "s32"]
        return bad + ([] if t.bitop in ("xor", "and") else [f"bitop {t.bitop}"])
    return [x for x in (t.a, t.b, t.c, t.d) if x != "f64"]
