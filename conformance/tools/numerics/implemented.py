"""What an implementation of the arithmetic model beside model.py (a compiled or a GPU kernel) reproduces exactly.

Such an implementation names the parameter values it implements; anything else is refused, never approximated.  A
parameter model.py gains later is accepted only at its default (the only value the implementation knows), so a new
rule can never pass through unnoticed."""

from __future__ import annotations

import dataclasses

__all__ = ["FLOAT_ACC", "FLOAT_IN", "INT_IN", "NAN_F64_ONLY", "NAN_ORDERS", "NOT_ARITHMETIC", "ROUNDING", "datapath_values",
           "refusal", "unsupported_types"]

ROUNDING = ("rz", "rne", "rna", "ru", "rd")  # the rounding-mode codes both kernels take, in order
NAN_ORDERS = ("canonical", "payload_c_first", "payload_a_first", "payload_c_b_a", "payload_b_c_a")
NAN_F64_ONLY = ("payload_c_b_a", "payload_b_c_a")  # model.py takes these orders on the f64 chain only
FLOAT_IN = ("f16", "bf16", "tf32", "e4m3", "e5m2")
FLOAT_ACC = ("f16", "f32")
INT_IN = ("s8", "u8", "s4", "u4")


def datapath_values(max_frac_bits: int, max_out_precision: int) -> dict[str, object]:
    """The parameter values the integer datapath (gpu.py's CUDA kernel, compiled.py's) implements, each a tuple of
    accepted values or a predicate; they differ only in how wide an aligned sum may be."""
    return {
        "block": lambda x: isinstance(x, int) and x >= 1,
        "frac_bits": lambda x: isinstance(x, int) and 0 <= x <= max_frac_bits,
        "out_precision": lambda x: isinstance(x, int) and 2 <= x <= max_out_precision,
        "final_rounding": ROUNDING,
        "input_conversion": ("truncate", "rna", "rne"),
        "align": ("truncate", "rne", "sticky"),
        "c_entry": ("fused", "late", "add_rne", "block_add"),
        "acc_type": ("d", "f32"),
        "k_order": ("natural", "pairs"),
        "exp_floor": lambda x: x is None or (isinstance(x, int) and -900 <= x <= 900),
        "in_subnormals": ("keep", "flush"),
        "out_subnormals": ("keep", "flush"),
        "overflow": ("inf", "saturate", "ieee"),
        "neg_zero": ("ieee", "positive"),
        "underflow_sign": ("keep", "positive"),
        "operand_cvt": ("none", "f16"),
        "nan_propagation": NAN_ORDERS,
        "f64_mode": ("sequential_fma", "reverse_fma"),
        "f64_rnd": ("each_fma", "ignored"),
        "integer": ("exact",),
    }


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
