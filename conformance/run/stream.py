"""Variants that arrive while a pipeline runs them (a lane's modules, asked of its run one at a time)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["VariantStream"]


class VariantStream:
    """Variants that arrive while they are run: a lane's modules, each asked of the run when the lane's planning
    reaches it, so the lanes that finish first take more (the shares were dealt before any lane started,
    the run's process alone: 0.5 s of a 7.6 s warm run on one H100, and lanes ended up to 1.1 s apart).  ``known``:
    every variant it may give, by id (what a pool's workers resolve ids against)."""

    def __init__(self, chunks: Iterable[list[str]], known: dict[str, Any]):
        self._chunks, self.known = chunks, known

    def __iter__(self) -> Iterator[Any]:
        for chunk in self._chunks:
            for vid in chunk:
                yield self.known[vid]
