"""A verdict: what one check of one variant at one seed came to, with its explanation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["MAX_LISTED", "STATUSES", "UNDEFINED", "UNDEFINED_LABEL", "Verdict", "labelled"]

MAX_LISTED = 8
# An ``undefined`` verdict: the check fed inputs the ISA leaves undefined, so nothing can pass or fail;
# its message is what the hardware did (an observation), shown to people after UNDEFINED_LABEL.
UNDEFINED = "undefined"
UNDEFINED_LABEL = "undefined by the ISA"
STATUSES = ("pass", "fail", "error", "skip", UNDEFINED)


def labelled(status: str, message: str) -> str:
    """A verdict's message as people read it: an undefined observation carries its label."""
    return f"{UNDEFINED_LABEL}: {message}" if status == UNDEFINED else message


@dataclass
class Verdict:
    variant: str
    check: str
    seed: int
    status: str  # one of STATUSES
    message: str = ""  # undefined: the observation, one line (what ``diff`` compares between runs)
    mismatches: list[Any] = field(default_factory=list)  # objects with describe(variant) -> str
    mismatch_count: int = 0
    elements: int = 0
    map_diff: list[str] = field(default_factory=list)
    observed: np.ndarray | None = None  # observed lane map of the tagged operand
    replay: str | None = None  # the command that runs it again, where not ``ptxconf run`` of the check (a device case)

    def details(self, v: Any | None) -> str:
        lines = [labelled(self.status, self.message)] if self.message else []
        if v is not None:
            lines += [m.describe(v) for m in self.mismatches[:MAX_LISTED]]
        if self.mismatch_count > MAX_LISTED:
            lines.append(f"... and {self.mismatch_count - MAX_LISTED} more")
        lines += self.map_diff if self.status == UNDEFINED else self.map_diff[:MAX_LISTED]  # an observation, whole
        return "\n".join(lines)
