"""Pins of wgmma and wgmma.sp plans: one hash per (variant, seed, checks) over everything a plan holds.

A seed names its cases: committed runs and replay lines redraw them from (variant, seed) alone, so any change to
how the dense and sparse families plan must leave every plan bit for bit as it was.  :func:`plan_hash` hashes the
input words, the predicted words, their defined bits and checks, the slices, launches and their kernels, each
case set's check, params and meta, the target and the version.  ``plan_pins.json`` holds the hashes of a sample
(every A/B/D type, A from shared memory and from registers, small, middle and large N, dense and sparse, the
sparse form's undefined checks too) at seeds 0, 7 and 4099; a quick test replans a few of them.

    python tests/families/wgmma/plan_pin.py check    # replan the whole sample and compare (about a minute)
    python tests/families/wgmma/plan_pin.py record   # write plan_pins.json (only from a tree known to be right)
    python tests/families/wgmma/plan_pin.py time     # CPU seconds per plan and per case (BLAS on one thread)
    python tests/families/wgmma/plan_pin.py time all # the same over every form at seed 0, as a whole-suite run
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import fields, is_dataclass
from functools import cache
from pathlib import Path

import numpy as np

PINS = Path(__file__).with_name("plan_pins.json")
SEEDS = (0, 7, 4099)
UNDEFINED = ("value", "map.A", "map.B", "map.metadata", "undefined.metadata", "undefined.selector")


def _feed(h, x) -> None:
    """Feed ``x`` to ``h`` unambiguously: type tags, lengths, dtypes and shapes, dict keys sorted."""
    if isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        h.update(f"nd{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    elif isinstance(x, np.generic):
        h.update(f"np{x.dtype.str}{x.item()!r}".encode())
    elif isinstance(x, dict):
        h.update(f"d{len(x)}".encode())
        for k in sorted(x, key=repr):
            _feed(h, k)
            _feed(h, x[k])
    elif isinstance(x, (list, tuple)):
        h.update(f"l{len(x)}".encode())
        for y in x:
            _feed(h, y)
    elif isinstance(x, (str, int, float, bool)) or x is None:
        h.update(f"{type(x).__name__}:{x!r};".encode())
    elif hasattr(x, "key") and hasattr(x, "params"):  # a probe kernel
        _feed(h, ["probe", type(x).__name__, x.key(), x.name, x.params, repr(x.surroundings)])
    elif is_dataclass(x):
        _feed(h, [type(x).__name__, {f.name: getattr(x, f.name) for f in fields(x)}])
    else:
        h.update(f"{type(x).__name__}:{x!s};".encode())


def plan_hash(plan) -> str:
    """sha256 of everything a plan holds (its variant by id)."""
    h = hashlib.sha256()
    exp = plan.expected
    _feed(h, [plan.variant.id, plan.seed, str(plan.version), str(plan.target), plan.in_words, plan.slices,
              plan.launches, plan.warps_per_block, plan.out_words, plan.probe, plan.probes, plan.launch_probe,
              None if exp is None else [exp.words, exp.defined, exp.checks]])
    for cs in plan.case_sets:
        _feed(h, [cs.check, cs.words, cs.params, cs.meta, getattr(cs, "expected", None)])
    return h.hexdigest()


@cache
def variants() -> dict:
    """Every wgmma and wgmma.sp variant by id."""
    import ptxconf.core.family as family
    import ptxconf.isa as isa

    specs = isa.load_specs()
    family.run_variants_of(specs)
    return {vid: v for vid, v in specs.variants.items() if v.family in ("wgmma", "wgmma.sp")}


def sample() -> list[tuple[str, int, tuple[str, ...] | None]]:
    """(variant id, seed, checks or None for the family's own) of every pinned plan: for each family and (A, B, D
    type, satfinite, A's source) the smallest, a middle and the largest N, at every seed; the sparse forms with
    their undefined checks too, at seed 0."""
    groups: dict[tuple, list] = {}
    for v in variants().values():
        groups.setdefault((v.family, v.atype, v.btype, v.dtype, v.satfinite, v.a_src), []).append(v)
    out = []
    for key in sorted(groups):
        vs = sorted(groups[key], key=lambda v: v.N)
        for v in {id(x): x for x in (vs[0], vs[len(vs) // 2], vs[-1])}.values():
            out += [(v.id, seed, None) for seed in SEEDS]
            if v.family == "wgmma.sp" and v is vs[0]:
                out.append((v.id, 0, UNDEFINED))
    return out


def make_plan(vid: str, seed: int, checks):
    """The plan a run makes (``plan_variant``); with the undefined checks the family's own ``plan`` (their
    ``settle`` asks ptxas, which a pin must not need)."""
    from ptxconf.core.family import family_of
    from ptxconf.isa.targets import PtxVersion
    from ptxconf.run.runner import plan_variant

    v = variants()[vid]
    if checks is None:
        return plan_variant(v, seed, (9, 0), PtxVersion(9, 0))
    return family_of(v).plan(v, seed, (9, 0), PtxVersion(9, 0), checks, 8, None)


def pin_key(vid: str, seed: int, checks) -> str:
    return f"{vid}@{seed}" + ("" if checks is None else "+" + ",".join(checks))


def hashes(items) -> dict[str, str]:
    return {pin_key(*it): plan_hash(make_plan(*it)) for it in items}


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "check"
    items = sample()
    if what == "record":
        PINS.write_text(json.dumps(hashes(items), indent=0, sort_keys=True) + "\n")
        print(f"{len(items)} plans pinned in {PINS.name}")
        return 0
    if what == "check":
        want = json.loads(PINS.read_text())
        got = hashes(items)
        bad = [k for k in want if got.get(k) != want[k]]
        print(f"{len(want) - len(bad)} of {len(want)} plans as pinned" + (": differ: " + ", ".join(bad[:10]) if bad else ""))
        return 1 if bad else 0
    if what == "time":  # BLAS on one thread, as the run's planning processes
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        make_plan(*items[0])  # load the specs and warm the imports outside the timing
        if argv[1:] == ["all"]:  # every form once at seed 0, in one process: what a whole-suite run plans
            items = [(vid, 0, None) for vid in sorted(variants())]
        for fam in ("wgmma", "wgmma.sp"):
            mine = [it for it in items if variants()[it[0]].family == fam and it[2] is None]
            t0, cases = time.process_time(), 0
            for it in mine:
                cases += len(make_plan(*it).in_words)
            cpu = time.process_time() - t0
            print(f"{fam}: {len(mine)} plans, {cases} cases, {cpu:.2f} CPU-s: {1e3 * cpu / len(mine):.1f} ms per "
                  f"plan, {1e3 * cpu / cases:.3f} ms per case")
        return 0
    print(f"usage: plan_pin.py check|record|time [all] (not {what!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
