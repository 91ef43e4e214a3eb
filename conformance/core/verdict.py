"""A verdict: what one check of one variant at one seed came to, with its explanation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["MAX_LISTED", "Verdict"]

MAX_LISTED = 8


@dataclass
class Verdict:
    variant: str
    check: str
    seed: int
    status: str  # pass, fail, error, skip
    message: str = ""
    mismatches: list[Any] = field(default_factory=list)  # objects with describe(variant) -> str
    mismatch_count: int = 0
    elements: int = 0
    map_diff: list[str] = field(default_factory=list)
    observed: np.ndarray | None = None  # observed lane map of the tagged operand

    def details(self, v: Any | None) -> str:
        lines = [self.message] if self.message else []
        if v is not None:
            lines += [m.describe(v) for m in self.mismatches[:MAX_LISTED]]
        if self.mismatch_count > MAX_LISTED:
            lines.append(f"... and {self.mismatch_count - MAX_LISTED} more")
        lines += self.map_diff[:MAX_LISTED]
        return "\n".join(lines)
