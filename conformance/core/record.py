"""A check record: one check's recorded cases, what a comparator judges.

The same value comes from a fresh run (a plan and its observed words) and from an observation
file (replay), so a family's comparator has one argument to read, whichever made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CheckRecord"]


@dataclass(frozen=True, eq=False, slots=True)
class CheckRecord:
    """One check of one variant at one seed: its cases' input and output words and how they were made.

    ``variant`` is the variant's id as recorded (the comparator gets today's variant object beside it);
    ``params`` and ``meta`` are the check's own (selector values, tags, layouts), ``surroundings`` the
    probe's (``ptxconf.generators.ptx.Surroundings``)."""

    variant: str
    check: str
    seed: int
    params: dict
    meta: dict
    surroundings: Any
    in_words: np.ndarray  # uint32[case, lane, word]
    out_words: np.ndarray  # uint32[case, lane, word]

    def __repr__(self) -> str:  # never the words: a record may hold megabytes
        return f"CheckRecord({self.variant}:{self.check}:seed={self.seed}, {len(self.in_words)} cases)"
