"""Bulk cases: a variant's fresh cases at one seed, drawn, packed and predicted on any array module.

Why: a host-side round (plan, pickle, launch, compare) verifies a few thousand cases a second;
the GPU runs a probe for millions.  A family that can say what its probe must write as array code
(NumPy or CuPy alike) gives a :class:`BulkCases`; the bulk fuzzer then draws inputs on the device,
launches the family's own probe kernel, and compares every defined output word there, bringing back
only the cases that differ.  Case ``i`` is a function of (variant, seed, i) alone (counter-based
randomness), so any case replays on its own, on the host or any device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ptxconf.core.record import CheckRecord
from ptxconf.isa.targets import PtxVersion, Target

__all__ = ["BulkCases", "BulkFields", "Drawn", "bulk_record", "case_digests"]


@dataclass
class Drawn:
    """Cases ``first .. first + n - 1``: what goes in, what must come out, and which output words the ISA defines."""

    in_words: Any  # uint32[case, lane, in_words]
    expected: Any  # uint32[case, lane, out_words]
    defined: Any  # bool[lane, out_words]: words compared (padding is not)


class BulkCases(Protocol):
    """What the bulk fuzzer needs of one variant at one seed (the family builds it; nothing here is family-specific)."""

    variant: Any
    check: str  # the verdict name a failure is reported under (the family's comparator explains it)
    seed: int
    version: PtxVersion
    target: Target
    probe: Any  # the kernel: ``name``, ``surroundings``, what the family's emulate reads
    lanes: int  # threads per case
    out_words: int
    warps_per_block: int
    params: dict  # the selector immediates the probe was built with (what the comparator reads)
    meta: dict

    def draw(self, xp: Any, first: int, n: int) -> Drawn:
        """Cases ``first .. first + n - 1`` on the array module ``xp``."""
        ...


@dataclass
class BulkFields:
    """What every family's bulk cases hold (a family's class adds ``out_words`` and ``draw``)."""

    variant: Any
    seed: int
    version: PtxVersion
    target: Target
    probe: Any
    warps_per_block: int
    check: str = "value"
    lanes: int = 32
    params: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Where a family's class derives what its draws need from these fields."""


def bulk_record(bc: BulkCases, in_words: Any, out_words: Any) -> CheckRecord:
    """Drawn cases of ``bc`` and what the device wrote for them, as the record the family's comparator reads."""
    return CheckRecord(bc.variant.id, bc.check, bc.seed, bc.params or {}, bc.meta or {}, bc.probe.surroundings,
                       in_words, out_words)


_GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment and finaliser constants (Steele, Lea, Flood 2014)
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_POSITIONS: dict[tuple, Any] = {}  # (array module, words a case) -> uint64[words]: each word's position << 32
_KERNELS: dict[int, Any] = {}  # array module -> its digest reduction kernel (CuPy)
_MIX = f"""
__device__ unsigned long long ptxconf_mix(unsigned long long x) {{
    x = (x ^ (x >> 30)) * {_MIX1:#x}ull;
    x = (x ^ (x >> 27)) * {_MIX2:#x}ull;
    return x ^ (x >> 31);
}}
"""


def _positions(xp: Any, words: int) -> Any:
    key = (id(xp), words)
    if key not in _POSITIONS:
        _POSITIONS[key] = xp.arange(words, dtype=xp.uint64) << xp.uint64(32)
    return _POSITIONS[key]


def case_digests(xp: Any, words: Any, defined: Any | None) -> Any:
    """``uint64[case]``: a digest of each case's defined out words (``defined`` None: every word), the same on NumPy
    and CuPy (wrapping 64-bit integer arithmetic), so that a run can keep a case's outcome in 8 bytes and a replay check
    it against the words the host predicts.  Each defined word is mixed with its position (splitmix64's finaliser of
    ``position << 32 | word``) and the mixes summed: words the ISA leaves undefined count as nothing.  On CuPy one
    reduction kernel (the same expression as NumPy's below, written once in C)."""
    n = words.shape[0]
    flat = words.reshape(n, -1)
    pos = _positions(xp, flat.shape[1])[None, :]
    keep = xp.ones((1, flat.shape[1]), dtype=bool) if defined is None else xp.asarray(defined).reshape(1, -1)
    if hasattr(xp, "ReductionKernel"):
        if id(xp) not in _KERNELS:
            _KERNELS[id(xp)] = xp.ReductionKernel(
                "uint32 w, uint64 p, bool d", "uint64 y",
                f"d ? ptxconf_mix((p | (unsigned long long)w) + {_GOLDEN:#x}ull) : 0ull", "a + b", "y = a", "0",
                "ptxconf_case_digest", reduce_type="unsigned long long", preamble=_MIX)
        return _KERNELS[id(xp)](flat, xp.broadcast_to(pos, flat.shape), xp.broadcast_to(keep, flat.shape), axis=1)
    x = (flat.astype(xp.uint64) | pos) + xp.uint64(_GOLDEN)
    x = (x ^ (x >> xp.uint64(30))) * xp.uint64(_MIX1)
    x = (x ^ (x >> xp.uint64(27))) * xp.uint64(_MIX2)
    x = x ^ (x >> xp.uint64(31))
    return (x * keep.astype(xp.uint64)).sum(axis=1, dtype=xp.uint64)
