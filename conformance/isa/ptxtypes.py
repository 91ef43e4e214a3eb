"""PTX scalar element types: width, kind, and exact bits <-> value conversion.

Every element type a matrix instruction names (``.f16``, ``.e4m3``, ``.s4``,
``.b1``, the scale-factor types ``.ue8m0``/``.ue4m3`` ...) is described once
here.  Values are decoded to float64 (floats) or int64 (integers) so that the
oracle can compute exactly; ``ml_dtypes`` supplies the narrow float formats.
``tf32`` is a 32-bit container whose low 13 mantissa bits are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["PtxType", "TYPES", "ptx_type"]


@dataclass(frozen=True)
class PtxType:
    name: str
    bits: int
    kind: str  # "float", "sint", "uint", "bits"
    numpy: str | None = None  # NumPy / ml_dtypes dtype name for floats
    ignored_low_bits: int = 0  # tf32: low mantissa bits the hardware ignores

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    def _dtype(self) -> np.dtype:
        if self.name == "tf32":
            return np.dtype(np.float32)
        if self.name == "ue4m3":
            return np.dtype(ml_dtypes.float8_e4m3fn)
        if self.numpy in ("float16", "float32", "float64"):
            return np.dtype(self.numpy)
        return np.dtype(getattr(ml_dtypes, self.numpy))

    def decode(self, bits: np.ndarray) -> np.ndarray:
        """Container bits (any unsigned int array) -> float64 / int64 values."""
        keep = self.mask ^ ((1 << self.ignored_low_bits) - 1) if self.kind == "float" else self.mask
        bits = np.asarray(bits, dtype=np.uint64) & np.uint64(keep)
        if self.kind == "float":
            dt = self._dtype()
            storage = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
            with np.errstate(invalid="ignore"):
                return bits.astype(storage).view(dt).astype(np.float64)
        if self.kind == "sint":
            v = bits.view(np.int64)  # masked to fewer than 64 bits: the same value
            return np.where(v >= (1 << (self.bits - 1)), v - (1 << self.bits), v)
        return bits.view(np.int64)

    def encode(self, values: np.ndarray, *, exact: bool = True) -> np.ndarray:
        """Values -> container bits (uint64); with ``exact`` refuse any rounding."""
        values = np.asarray(values)
        if self.kind == "float":
            dt = self._dtype()
            with np.errstate(over="ignore"):  # overflow to Inf is the conversion's answer, checked below
                conv = values.astype(np.float64, copy=False).astype(dt)
            storage = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
            bits = conv.view(storage).astype(np.uint64)
            if self.bits < 8 * dt.itemsize:
                bits &= np.uint64(self.mask)
            if exact:
                back = self.decode(bits)
                ok = back == values
                if not ok.all():
                    ok |= np.isnan(back) & np.isnan(values.astype(np.float64))
                if not np.all(ok):
                    bad = values.reshape(-1)[~ok.reshape(-1)][0]
                    raise ValueError(f"{bad!r} is not exactly representable as .{self.name}")
            return bits
        ints = values.astype(np.int64)
        if exact:
            lo, hi = self.int_range()
            if np.any((ints < lo) | (ints > hi)):
                raise ValueError(f"value out of range for .{self.name} [{lo}, {hi}]")
        return ints.astype(np.uint64) & np.uint64(self.mask)

    def int_range(self) -> tuple[int, int]:
        if self.kind == "sint":
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return 0, self.mask

    def finite_values(self) -> np.ndarray:
        """All distinct finite values, sorted (only for types of at most 16 bits); read-only, decoded once per
        process and type (every value grid and tag alphabet of a type filters this one table: 65536 patterns
        decoded and sorted for .f16 and .bf16)."""
        if self.bits > 16:
            raise ValueError(f".{self.name} is too wide to enumerate")
        vals = _FINITE.get(self)
        if vals is None:
            vals = self.decode(np.arange(1 << self.bits, dtype=np.uint64)).astype(np.float64)
            vals = np.unique(vals[np.isfinite(vals)])
            vals.setflags(write=False)
            _FINITE[self] = vals
        return vals


_FINITE: dict[PtxType, np.ndarray] = {}  # PtxType.finite_values, by type


def _t(name: str, bits: int, kind: str, numpy: str | None = None, ignored: int = 0) -> PtxType:
    return PtxType(name, bits, kind, numpy, ignored)


TYPES: dict[str, PtxType] = {
    t.name: t
    for t in [
        _t("f16", 16, "float", "float16"),
        _t("bf16", 16, "float", "bfloat16"),
        _t("tf32", 32, "float", "float32", ignored=13),
        _t("f32", 32, "float", "float32"),
        _t("f64", 64, "float", "float64"),
        _t("e4m3", 8, "float", "float8_e4m3fn"),
        _t("e5m2", 8, "float", "float8_e5m2"),
        _t("e3m2", 6, "float", "float6_e3m2fn"),
        _t("e2m3", 6, "float", "float6_e2m3fn"),
        _t("e2m1", 4, "float", "float4_e2m1fn"),
        _t("ue8m0", 8, "float", "float8_e8m0fnu"),
        _t("ue4m3", 7, "float", "float8_e4m3fn"),
        _t("s32", 32, "sint"),
        _t("s8", 8, "sint"),
        _t("u8", 8, "uint"),
        _t("s4", 4, "sint"),
        _t("u4", 4, "uint"),
        _t("b1", 1, "bits"),
        _t("b2", 2, "uint"),  # mma.sp metadata: one 2-bit index field
        _t("b16", 16, "bits"),
        _t("b32", 32, "bits"),
        # untyped bits of ldmatrix/stmatrix data (b6/b4: packed source rows of .b6x16_p32/.b4x16_p64)
        _t("b8", 8, "bits"),
        _t("b6", 6, "bits"),
        _t("b4", 4, "bits"),
    ]
}


def ptx_type(name: str) -> PtxType:
    """Look up a type by its ISA name, with or without the leading dot."""
    key = name.lstrip(".")
    try:
        return TYPES[key]
    except KeyError:
        raise KeyError(f"unknown PTX type {name!r}; known: {', '.join(sorted(TYPES))}") from None
