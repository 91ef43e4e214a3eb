"""wmma cases: the companion wmma.mma form's case sets, each case written into its memory image.

The values are mma's own (:func:`ptxconf.families.mma.cases.make_checks` on the companion form, the same seed); this
module places them: a random byte image, the header (route, strides, base offsets, each random within what the
hardware takes), and A, B, C where those say.  The image's layout is :mod:`.memory`'s.
"""

from __future__ import annotations

import numpy as np
from ptxconf.core.plan import CaseSet
from ptxconf.families.wgmma.cases import bounded_draws
from ptxconf.isa.ptxtypes import TYPES

from .memory import HEADER_WORDS, SLACK, as_words, scatter_matrices
from .probe import WmmaProbe
from .spec import WmmaSpec, WmmaVariant

__all__ = ["CHECKS", "make_cases", "case_words"]

CHECKS = ("value", "map.A", "map.B", "map.C")


def make_cases(probe: WmmaProbe, seed: int, checks, value_cases: int, rng: np.random.Generator) -> list[CaseSet]:
    """The case sets of ``checks`` for ``probe`` at ``seed``: the companion's values, placed with draws from ``rng``
    (the plan's own stream)."""
    from ptxconf.families.mma.cases import make_checks

    params = {"mma": probe.mma.id, "routes": [list(r) for r in probe.routes], "space": probe.space}
    drawn = make_checks(probe.mma, seed, tuple(c for c in checks if c in CHECKS), value_cases)
    return [CaseSet(cs.check, case_words(probe, cs.bits, rng), dict(params), cs.meta) for cs in drawn]


def case_words(p: WmmaProbe, bits: dict[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """``uint32[case, lane, in_words]``: random bytes, the header, and A, B, C at random strides and offsets.

    Each case draws its route, then a padding of each stride (A, B, C, D), then an offset of each base: every
    case's integers in one :func:`~ptxconf.families.wgmma.cases.bounded_draws`, the numbers drawn one by one."""
    mv = p.mma
    cases = len(bits["A"])
    img = rng.integers(0, 256, size=(cases, 128 * p.size.in_words), dtype=np.uint8)
    if not cases:
        return as_words(img, p.size.in_words)
    lays, least, unit, align = _strides(mv, p.routes)
    start = np.array([*p.size.slots, 0])
    drawn = bounded_draws(rng, np.tile([len(p.routes)] + [SLACK + 1] * 8, cases)).reshape(cases, 9)
    route = drawn[:, 0]
    lds = least[route] + drawn[:, 1:5] * unit[route]
    offs = start + drawn[:, 5:] * align
    hdr = np.concatenate([route[:, None], lds, offs], axis=1)
    img[:, : 4 * HEADER_WORDS] = hdr.astype("<u4").view(np.uint8)
    for k, m in enumerate("abc"):  # every case's matrix in one scatter, A then B then C as a case writes them
        col = np.array([ls[k] == "col" for ls in lays])[route]
        layout = ("col" if col[0] else "row") if (col == col[0]).all() else col
        scatter_matrices(img, offs[:, k], bits[m.upper()][:, 0], layout, lds[:, k], TYPES[mv.type_of(m)].bits)
    return as_words(img, p.size.in_words)


def _strides(mv: WmmaVariant, routes: tuple) -> tuple:
    """(each route's layouts of A, B, C, D; per route and matrix the least stride and the stride unit (elements);
    per matrix the base alignment (bytes)), once per process and mma form and routes."""
    key = (mv.id, routes)
    hit = _STRIDES.get(key)
    if hit is not None and hit[0] is mv:
        return hit[1]
    spec: WmmaSpec = mv.doc  # type: ignore[assignment]
    shape = mv.shape_name
    lays = [(mv.layout_of("a"), mv.layout_of("b"), c, d) for c, d in routes]
    least = np.array([[spec.min_stride(m, mv.type_of(m), shape, lay) for m, lay in zip("abcd", ls)] for ls in lays])
    unit = np.array([[spec.stride_unit(m, mv.type_of(m), shape, lay) for m, lay in zip("abcd", ls)] for ls in lays])
    align = np.array([spec.base_alignment(m, mv.type_of(m), shape) for m in "abcd"])
    if len(_STRIDES) > 4096:
        _STRIDES.clear()
    _STRIDES[key] = (mv, (lays, least, unit, align))  # the form kept alive: an entry is its own
    return lays, least, unit, align


_STRIDES: dict[tuple, tuple] = {}
