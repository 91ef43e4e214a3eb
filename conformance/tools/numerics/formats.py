"""The number formats the arithmetic model rounds into, and the rounding each path's parameters pick.

Its own module so that the NumPy model (model.py) and its compiled twin (compiled.py) read one table."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fmt", "FORMATS", "ROUNDING_MODIFIERS", "acc_format", "f64_rounding"]


@dataclass(frozen=True)
class Fmt:
    p: int  # significand bits, implicit bit included
    emin: int
    emax: int


FORMATS = {
    "f16": Fmt(11, -14, 15),
    "bf16": Fmt(8, -126, 127),
    "tf32": Fmt(11, -126, 127),
    "f32": Fmt(24, -126, 127),
    "f64": Fmt(53, -1022, 1023),
    "e4m3": Fmt(4, -6, 8),
    "e5m2": Fmt(3, -14, 15),
}

ROUNDING_MODIFIERS = {"rn": "rne", "rz": "rz", "rm": "rd", "rp": "ru"}  # PTX .rnd -> the model's rounding names


def acc_format(p, d_fmt: Fmt) -> Fmt:
    """The format whose exponent range the blocks' results are rounded within (``acc_type`` of path ``p``)."""
    if p.acc_type not in ("d", "f32"):
        raise ValueError(f"unknown acc_type {p.acc_type!r}")
    return FORMATS["f32"] if p.acc_type == "f32" else d_fmt


def f64_rounding(p, rnd: str | None) -> str:
    """The rounding of each f64 fused multiply-add: the instruction's ``.rnd`` (``f64_rnd: each_fma``) or RNE."""
    if p.f64_rnd not in ("each_fma", "ignored"):
        raise ValueError(f"unknown f64_rnd {p.f64_rnd!r}")
    return ROUNDING_MODIFIERS.get(rnd or "rn", "rne") if p.f64_rnd == "each_fma" else "rne"
