"""The wgmma matrix descriptor as code, driven by specs/wgmma.yaml's field table (§9.7.15.5.1.2.2).

:func:`encode` refuses what the ISA forbids and names the rule; :func:`decode` reports every
field (byte values where the field is encoded) and every problem (reserved bits set, an
unknown swizzle code, a base offset with no swizzle).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .spec import DescSpec, SmemSpec

__all__ = ["DescriptorError", "Desc", "encode", "decode", "field_values", "shift_of", "with_leading_byte_offset"]


class DescriptorError(ValueError):
    """A descriptor the ISA forbids; the message names the rule."""


@dataclass(frozen=True)
class Desc:
    start: int  # bytes
    lbo: int  # bytes
    sbo: int  # bytes
    base_offset: int = 0
    swizzle: int = 0  # the descriptor's code
    problems: tuple[str, ...] = field(default=(), compare=False)


def shift_of(spec: DescSpec) -> int:
    """How far the encode formula shifts a byte value (4 for (x & 0x3FFFF) >> 4); asked once per spec."""
    hit = _SHIFTS.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = _SHIFTS[id(spec)] = (spec, next((s for s in range(8) if spec.encode_value(1 << s) == 1), 0))
    return hit[1]


_SHIFTS: dict[int, tuple[DescSpec, int]] = {}


def encode(spec: DescSpec, smem: SmemSpec, start: int, lbo: int, sbo: int, swizzle: str = "none", base_offset: int = 0) -> int:
    """Fields -> 64-bit descriptor; DescriptorError naming the rule for anything the ISA forbids."""
    if swizzle not in smem.swizzles:
        raise DescriptorError(f"unknown swizzle mode {swizzle!r}; modes: {', '.join(smem.swizzles)}")
    for name, val in (("matrix start address", start), ("leading dimension byte offset", lbo), ("stride dimension byte offset", sbo)):
        _check_bytes(smem, name, val)
    bo = spec.fields["base_offset"]
    if not 0 <= base_offset <= bo.mask:
        raise DescriptorError(f"base offset {base_offset} does not fit {bo.width} bits")
    if base_offset and swizzle == "none":
        raise DescriptorError("base offset is valid for every swizzling mode except no-swizzle (§9.7.15.5.1.2.2)")
    vals = {
        "start_address": _encoded_value(spec, start),
        "leading_byte_offset": _encoded_value(spec, lbo),
        "stride_byte_offset": _encoded_value(spec, sbo),
        "base_offset": base_offset,
        "swizzle": smem.code_of(swizzle),
    }
    out = 0
    for name, val in vals.items():
        f = spec.fields[name]
        out |= (int(val) & f.mask) << f.lo
    return out


def _check_bytes(smem: SmemSpec, name: str, val: int) -> None:
    """DescriptorError where a byte-valued field's value is one the ISA forbids."""
    if val < 0:
        raise DescriptorError(f"{name} {val} is negative")
    if val % smem.alignment:
        raise DescriptorError(f"{name} 0x{val:x} is not {smem.alignment}-byte aligned (§{smem.section})")
    if val > 0x3FFFF:
        raise DescriptorError(f"{name} 0x{val:x} does not fit: matrix-descriptor-encode keeps bits 17..4 ((x & 0x3FFFF) >> 4)")


def with_leading_byte_offset(spec: DescSpec, smem: SmemSpec, value: int, lbo: int) -> int:
    """``encode``'s descriptor ``value`` with the leading dimension byte offset ``lbo`` instead (checked as encode
    checks it): a descriptor that differs from an encoded one only there, without encoding it all."""
    _check_bytes(smem, "leading dimension byte offset", lbo)
    f = spec.fields["leading_byte_offset"]
    return (value & ~(f.mask << f.lo)) | (int(_encoded_value(spec, lbo)) & f.mask) << f.lo


def _encoded_value(spec: DescSpec, x: int) -> int:
    """``spec.encode_value(x)`` (the spec's formula, evaluated), once per process and spec and byte value."""
    key = (id(spec), x)
    hit = _VALUES.get(key)
    if hit is None or hit[0] is not spec:
        if len(_VALUES) > 65536:
            _VALUES.clear()
        hit = _VALUES[key] = (spec, spec.encode_value(x))  # the spec kept alive, so its id stays its own
    return hit[1]


_VALUES: dict[tuple, tuple] = {}


def field_values(spec: DescSpec, value: int) -> dict[str, int]:
    return {name: (int(value) >> f.lo) & f.mask for name, f in spec.fields.items()}


def decode(spec: DescSpec, smem: SmemSpec, value: int, shift: int | None = None) -> Desc:
    """64-bit value -> fields (bytes), with every problem found; never raises."""
    value = int(value)
    s = shift_of(spec) if shift is None else shift
    f = field_values(spec, value)
    problems = []
    if value & spec.reserved_mask:
        problems.append(f"reserved bits set: 0x{value & spec.reserved_mask:016x}")
    if smem.name_of(f["swizzle"]) is None:
        problems.append(f"swizzle code {f['swizzle']} names no mode")
    if f["base_offset"] and f["swizzle"] == smem.code_of("none"):
        problems.append("base offset set with no swizzle (valid only for swizzled modes)")
    return Desc(f["start_address"] << s, f["leading_byte_offset"] << s, f["stride_byte_offset"] << s,
                f["base_offset"], f["swizzle"], tuple(problems))
