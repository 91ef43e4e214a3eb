"""Pins of the comparators: one hash per (variant, seed) over every verdict its checks get, from the emulator's
out words as they come and from out and in words corrupted so that map checks see elements moved, lost and tagged
twice.

A comparator made faster must say exactly what it said before: every status, message, listed mismatch, observed
lane map and map-diff line.  Each plan is made as a run makes it (seed, cc 9.0), run on the emulator, and each of
its check records compared as recorded and then under each corruption of :data:`CORRUPTIONS` (lanes swapped, words
zeroed, one lane's tags in another's place, in the out words and in the in words).  Each family's test folder
holds ``compare_pins.json``: mma.sync, mma.sp, wmma and the movement forms every form this target runs; wgmma and
wgmma.sp a sample (``plan_pin.sample``'s groups: every A/B/D type and A's source, the smallest, a middle and the
largest N); all at seeds 0 and 1.  A quick test recompares a few.

    python tests/families/compare_pin.py check [FAMILY...]   # recompare the pinned plans (minutes)
    python tests/families/compare_pin.py record [FAMILY...]  # write compare_pins.json (only from a tree known right)
    python tests/families/compare_pin.py time [FAMILY...]    # CPU seconds comparing each family's plans, as recorded
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
from plan_pin import CC, MAX_PTX, _feed, record_or_check, supported

HERE = Path(__file__).parent
# The pin file of each form family (a spec's ``family``), by the folder of its comparator.
PINS = {"mma.sync": HERE / "mma", "mma.sp": HERE / "mma", "wgmma": HERE / "wgmma", "wgmma.sp": HERE / "wgmma_sp",
        "wmma": HERE / "wmma", "ldmatrix": HERE / "movement", "stmatrix": HERE / "movement",
        "movmatrix": HERE / "movement"}
SEEDS = (0, 1)
SAMPLED = ("wgmma", "wgmma.sp")  # too many forms to emulate all: a sample of them
# Forms whose comparator reads the tags from the in words (the rest read addresses and descriptors there).
TAGS_IN = ("mma.sync", "mma.sp")


def _swap_lanes(w: np.ndarray) -> np.ndarray:
    """Lanes 0 and 1, and 5 and 9, trade their words."""
    w = w.copy()
    w[:, [0, 1, 5, 9]] = w[:, [1, 0, 9, 5]]
    return w


def _zero_words(w: np.ndarray) -> np.ndarray:
    """Every lane's first word, and every word of lane 3, zero."""
    w = w.copy()
    w[:, :, 0] = 0
    w[:, 3] = 0
    return w


def _duplicate_lane(w: np.ndarray) -> np.ndarray:
    """Lane 4 holds lane 2's words (its tags twice)."""
    w = w.copy()
    w[:, 4] = w[:, 2]
    return w


# name -> (corrupts the out words, corrupts the in words)
CORRUPTIONS: dict[str, tuple[Callable | None, Callable | None]] = {
    "out-lanes-swapped": (_swap_lanes, None),
    "out-words-zeroed": (_zero_words, None),
    "out-lane-duplicated": (_duplicate_lane, None),
    "in-lane-duplicated": (None, _duplicate_lane),
    "in-lanes-swapped": (None, _swap_lanes),
}


@cache
def variants() -> dict:
    """Every variant of the pinned families by id."""
    import ptxconf.core.family as family
    import ptxconf.isa as isa

    specs = isa.load_specs()
    family.run_variants_of(specs)
    return {vid: v for vid, v in specs.variants.items() if v.family in PINS}


def sample(folder: Path) -> list[tuple[str, int]]:
    """(variant id, seed) of every pinned plan of the forms whose comparator lives in ``folder``."""
    from plan_pin import sample as plan_sample

    fams = {f for f, d in PINS.items() if d == folder}
    if fams & set(SAMPLED):
        ids = sorted({vid for f in fams for vid, _, _ in plan_sample(f) if variants()[vid].family in fams})
    else:
        ids = sorted(vid for vid, v in variants().items() if v.family in fams and supported(v))
    return [(vid, seed) for vid in ids for seed in SEEDS]


def emulated(vid: str, seed: int):
    """The plan a run makes of (variant, seed) and its out words from the emulator."""
    from ptxconf.backends.emulator import EmulatorBackend
    from ptxconf.isa.targets import PtxVersion
    from ptxconf.oracle import mma
    from ptxconf.run.runner import plan_variant, run_module

    plan = plan_variant(variants()[vid], seed, CC, PtxVersion(*MAX_PTX))
    (outcome,) = run_module(EmulatorBackend(mma, cc=CC), [plan])
    return plan, np.array(outcome.out_words)


def records(plan, out) -> list:
    """Each check record as recorded, then each map check's record under every corruption (of the in words only
    where they hold the tags)."""
    from ptxconf.run.observations import records as recorded

    recs = []
    for rec in recorded(plan, out):
        recs.append(("", rec))
        if rec.check.startswith("map."):
            for name, (bad_out, bad_in) in CORRUPTIONS.items():
                if bad_in and plan.variant.family not in TAGS_IN:
                    continue
                recs.append((name, replace(rec, out_words=bad_out(rec.out_words) if bad_out else rec.out_words,
                                           in_words=bad_in(rec.in_words) if bad_in else rec.in_words)))
    return recs


def verdict_hash(plan, out) -> str:
    """sha256 over every verdict of ``records``: status, message, counts, mismatches as described, map diff and
    observed map."""
    from ptxconf.core.family import compare

    v, h = plan.variant, hashlib.sha256()
    for name, rec in records(plan, out):
        vd = compare(v, rec)
        _feed(h, [name, rec.check, vd.status, vd.message, vd.mismatch_count, vd.elements, vd.map_diff,
                  vd.observed, [m.describe(v) for m in vd.mismatches]])
    return h.hexdigest()


def pin_key(vid: str, seed: int) -> str:
    return f"{vid}@{seed}"


def pinned(vid: str, seed: int) -> str:
    return json.loads((PINS[variants()[vid].family] / "compare_pins.json").read_text())[pin_key(vid, seed)]


def time_compare(folders: list[Path], rounds: int) -> None:
    """CPU seconds of comparing each folder's pinned plans at seed 0 as a run does (``compare_plan``, BLAS on one
    thread), ``rounds`` times; planning and emulating outside the timing."""
    from ptxconf.run.runner import compare_plan
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    for folder in folders:
        pairs = [emulated(vid, seed) for vid, seed in sample(folder) if seed == 0]
        cpu = []
        for _ in range(rounds):
            t0 = time.process_time()
            for plan, out in pairs:
                compare_plan(plan, out)
            cpu.append(time.process_time() - t0)
        cases = sum(len(p.in_words) for p, _ in pairs)
        print(f"{folder.name}: {len(pairs)} plans, {cases} cases, compare CPU-s " + " / ".join(f"{c:.3f}" for c in cpu))


def main(argv: list[str]) -> int:
    what, names = (argv[0] if argv else "check"), argv[1:]
    if what not in ("check", "record", "time") or any(n not in PINS for n in names):
        print(f"usage: compare_pin.py check|record|time [FAMILY...] (FAMILY: {', '.join(PINS)}; the forms sharing "
              f"its pin file come too) (not {' '.join(argv)!r})", file=sys.stderr)
        return 2
    folders = sorted({PINS[n] for n in names or PINS})
    if what == "time":
        time_compare(folders, 3)
        return 0
    bad = sum(record_or_check(what, folder / "compare_pins.json",
                              {pin_key(*it): verdict_hash(*emulated(*it)) for it in sample(folder)}, "plans' verdicts")
              for folder in folders)
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
