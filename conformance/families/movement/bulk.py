"""ldmatrix / stmatrix / movmatrix value cases in bulk: the ``value`` check's distribution as array code.

The same recipe as :func:`ptxconf.families.movement.cases.make_cases` gives the ``value`` check: every input
word random (the shared-memory image, stmatrix's source registers, movmatrix's ``a``, the padding), a
distinct random 16-byte row of the image per row address, the poison address in every lane the
instruction ignores.  The expected words come from :func:`ptxconf.families.movement.probe.apply` on the
same array module, so the prediction is the comparator's, not a second one.  Randomness is
counter-based (:mod:`ptxconf.isa.arrays`): case ``i`` is a function of (variant, seed, i) alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ptxconf.core.bulk import BulkFields, Drawn
from ptxconf.core.plan import pick_build, variant_rng
from ptxconf.isa.arrays import case_counters, key_of, uniform_bits
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion

from . import probe as mv

__all__ = ["MovementBulk", "bulk_cases"]

_STREAMS = ("words", "rows")


class MovementBulk(BulkFields):

    def __post_init__(self) -> None:
        v = self.variant
        self.motion = mv.motion(v)
        self.in_words, self.out_words = mv.in_words(v), mv.out_words(v)
        self.key = key_of("bulk", v.id, self.seed)
        # Row addresses: the lane that gives each (matrix, row); every other lane gets the poison.
        self.row_lanes = None if v.family == "movmatrix" else mv.row_lanes(v).ravel()
        defined = np.zeros((32, self.out_words), dtype=bool)
        defined[:, : self.out_words if v.family == "stmatrix" else self.motion.registers] = True  # not the padding
        self.defined = defined

    def _counter(self, xp: Any, stream: str, first: int, n: int, per_case: int) -> Any:
        return case_counters(xp, _STREAMS.index(stream), len(_STREAMS), first, n, per_case)

    def _addresses(self, xp: Any, first: int, n: int) -> Any:
        """``uint32[case, lane]``: distinct random rows of the image, one per row address (a sort of random keys
        whose low bits are the row: a permutation per case), the poison elsewhere."""
        keys = uniform_bits(xp, self.key, self._counter(xp, "rows", first, n, mv.SLOTS))
        keys = (keys & ~xp.uint64(mv.SLOTS - 1)) | xp.arange(mv.SLOTS, dtype=xp.uint64)
        slots = (xp.sort(keys, axis=1)[:, : len(self.row_lanes)] & xp.uint64(mv.SLOTS - 1)).astype(xp.uint32)
        addr = xp.full((n, 32), mv.POISON, dtype=xp.uint32)
        addr[:, xp.asarray(self.row_lanes)] = slots * xp.uint32(mv.ROW_BYTES)
        return addr

    def draw(self, xp: Any, first: int, n: int) -> Drawn:
        per_case = 32 * self.in_words
        bits = uniform_bits(xp, self.key, self._counter(xp, "words", first, n, per_case))
        words = (bits >> xp.uint64(32)).astype(xp.uint32).reshape(n, 32, self.in_words)
        if self.row_lanes is not None:
            words[:, :, mv.ADDR_WORD] = self._addresses(xp, first, n)
        expected = mv.apply(self.variant, words, self.motion)
        return Drawn(words, expected, xp.asarray(self.defined))


def bulk_cases(v: Variant, seed: int, cc: tuple[int, int], max_ptx: PtxVersion) -> MovementBulk:
    """The variant's bulk cases at ``seed``: the build, the state space of the address and the warps per block
    are drawn from their own streams, the words by counter."""
    target, version = pick_build(v, variant_rng(v, seed, "build"), cc, max_ptx)
    rng = variant_rng(v, seed, "bulk")
    probe = mv.MoveProbe(v, mv.pick_space(v, rng, version))
    return MovementBulk(v, seed, version, target, probe, int(rng.choice([1, 2, 4, 8])))
