"""wmma cases: the companion wmma.mma form's case sets, each case written into its memory image.

The values are mma's own (:func:`ptxconf.families.mma.cases.make_checks` on the companion form, the same seed); this
module places them: a random byte image, the header (route, strides, base offsets, each random within what the
hardware takes), and A, B, C where those say.  The image's layout is :mod:`.memory`'s.
"""

from __future__ import annotations

import numpy as np
from ptxconf.core.plan import CaseSet
from ptxconf.isa.ptxtypes import TYPES

from .memory import HEADER_WORDS, SLACK, as_words, max_stride, scatter_matrices
from .probe import WmmaProbe
from .spec import WmmaSpec

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
    """``uint32[case, lane, in_words]``: random bytes, the header, and A, B, C at random strides and offsets."""
    spec: WmmaSpec = p.mma.doc  # type: ignore[assignment]
    mv, shape = p.mma, p.mma.shape_name
    cases = len(bits["A"])
    img = rng.integers(0, 256, size=(cases, 128 * p.size.in_words), dtype=np.uint8)
    where: dict[str, list] = {m: [] for m in "abc"}  # per matrix: each case's (layout, stride, offset)
    for case in range(cases):
        route = int(rng.integers(len(p.routes)))
        lay = {"a": mv.layout_of("a"), "b": mv.layout_of("b"), "c": p.routes[route][0], "d": p.routes[route][1]}
        hdr = [route]
        for m in "abcd":
            t = mv.type_of(m)
            unit = spec.stride_unit(m, t, shape, lay[m])
            ld = spec.min_stride(m, t, shape, lay[m]) + int(rng.integers(SLACK + 1)) * unit
            assert ld <= max_stride(spec, mv, m, lay[m])
            hdr.append(ld)
        offs = []
        for k, m in enumerate("abcd"):
            align = spec.base_alignment(m, mv.type_of(m), shape)
            start = p.size.slots[k] if m != "d" else 0
            offs.append(start + int(rng.integers(SLACK + 1)) * align)
        hdr += offs
        img[case, : 4 * HEADER_WORDS] = np.array(hdr, dtype="<u4").view(np.uint8)
        for k, m in enumerate("abc"):
            where[m].append((lay[m], hdr[1 + k], offs[k]))
    for m in "abc":  # every case's matrix in one scatter, A then B then C as a case writes them
        if not cases:
            break
        lays, lds, offs = zip(*where[m])
        layout = lays[0] if len(set(lays)) == 1 else np.array([x == "col" for x in lays])
        scatter_matrices(img, np.array(offs), bits[m.upper()][:, 0], layout, np.array(lds), TYPES[mv.type_of(m)].bits)
    return as_words(img, p.size.in_words)
