"""The layout fuzzer: fresh seeds for every runnable variant, round after round, until the budget ends.

Each round is an ordinary run at the next seed (new tags, values, selectors, builds, surroundings,
launch splits), compared as ``ptxconf run`` compares; nothing is written but the failures, each
with the command that replays exactly that case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ptxconf.backends.base import Backend

from .report import replay_command
from .runner import RunRequest, run_variants

__all__ = ["FuzzResult", "fuzz_layouts"]


@dataclass
class FuzzResult:
    seeds: int = 0
    variants: int = 0
    checks: int = 0
    cases: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)  # "variant:check:seed=S: message | replay: ..."

    @property
    def cases_per_s(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0


def fuzz_layouts(backend: Backend, variants: list, budget_s: float, first_seed: int, checks=None, value_cases: int = 8,
                 jobs: int = 1, on_round: Callable[[FuzzResult, int], None] | None = None) -> FuzzResult:
    """Run seeds ``first_seed, first_seed + 1, ...`` over ``variants`` until ``budget_s`` seconds have passed."""
    res = FuzzResult()
    t0 = time.monotonic()

    def out_of_time() -> bool:
        return time.monotonic() - t0 >= budget_s

    def on_outcome(outcome) -> None:
        res.variants += 1
        res.cases += len(outcome.plan.in_words)
        for vd in outcome.verdicts:
            res.checks += 1
            if vd.status in ("fail", "error"):
                res.failures.append(f"{vd.variant}:{vd.check}:seed={vd.seed}: {vd.message} | replay: "
                                    + replay_command(vd.variant, vd.check, vd.seed, backend.name))

    seed = first_seed
    while not out_of_time():
        request = RunRequest(seed, None if checks is None else tuple(checks), value_cases, jobs=jobs,
                             words_done_after_outcome=True)  # counted above, never kept
        run_variants(backend, variants, request, on_outcome, stop=out_of_time)
        res.seeds += 1
        res.seconds = time.monotonic() - t0
        if on_round:
            on_round(res, seed)
        seed += 1
    res.seconds = time.monotonic() - t0
    return res
