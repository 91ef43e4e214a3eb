"""Pins of wgmma, wgmma.sp, mma.sync, mma.sp and wmma plans: one hash per (variant, seed, checks) over everything a
plan holds.

A seed names its cases: committed runs and replay lines redraw them from (variant, seed) alone, so any change to
how these families plan must leave every plan bit for bit as it was.  :func:`plan_hash` hashes the input words,
the predicted words, their defined bits and checks, the slices, launches and their kernels (the module text they
render to, too), each case set's check, params and meta, the target and the version.  Each family's test folder
holds ``plan_pins.json``: for wgmma and wgmma.sp a sample (every A/B/D type, A from shared memory and from
registers, small, middle and large N, the sparse form's undefined checks too); for mma.sync, mma.sp and wmma
every form; all at seeds 0, 7 and 4099 (the sparse forms' undefined checks at seed 0).  A quick test replans a few.

    python tests/families/plan_pin.py check [FAMILY]   # replan the pinned plans and compare (a few minutes)
    python tests/families/plan_pin.py record [FAMILY]  # write plan_pins.json (only from a tree known to be right)
    python tests/families/plan_pin.py time [FAMILY]    # CPU seconds per plan and per case (BLAS on one thread)
    python tests/families/plan_pin.py time all         # every supported form at seed 0, as a whole-suite run
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

HERE = Path(__file__).parent
# The pin file of each form family (a spec's ``family``).
PINS = {"wgmma": HERE / "wgmma" / "plan_pins.json", "wgmma.sp": HERE / "wgmma" / "plan_pins.json",
        "mma.sync": HERE / "mma" / "plan_pins.json", "mma.sp": HERE / "mma" / "plan_pins.json",
        "wmma": HERE / "wmma" / "plan_pins.json"}
SEEDS = (0, 7, 4099)
SPARSE = {"wgmma.sp": ("value", "map.A", "map.B", "map.metadata", "undefined.metadata", "undefined.selector"),
          "mma.sp": ("value", "map.A", "map.B", "map.C", "map.metadata", "undefined.metadata", "undefined.selector")}
CC, MAX_PTX = (9, 0), (9, 0)


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
    elif hasattr(x, "operands") and hasattr(x, "id"):  # a variant (in a wmma kernel): by its id
        _feed(h, ["variant", x.id])
    elif is_dataclass(x):
        _feed(h, [type(x).__name__, {f.name: getattr(x, f.name) for f in fields(x)}])
    else:
        h.update(f"{type(x).__name__}:{x!s};".encode())


def plan_hash(plan) -> str:
    """sha256 of everything a plan holds (its variant by id), with the module text of its kernels."""
    from ptxconf.core.family import family_of

    h = hashlib.sha256()
    exp = plan.expected
    _feed(h, [plan.variant.id, plan.seed, str(plan.version), str(plan.target), plan.in_words, plan.slices,
              plan.launches, plan.warps_per_block, plan.out_words, plan.probe, plan.probes, plan.launch_probe,
              None if exp is None else [exp.words, exp.defined, exp.checks]])
    for cs in plan.case_sets:
        _feed(h, [cs.check, getattr(cs, "words", None), cs.params, cs.meta, getattr(cs, "expected", None),
                  getattr(cs, "bits", None), getattr(cs, "filler", None)])  # mma's case sets: operand bits
    _feed(h, family_of(plan.variant).module_source(plan.kernels, plan.version, plan.target))
    return h.hexdigest()


@cache
def variants() -> dict:
    """Every variant of the pinned families by id."""
    import ptxconf.core.family as family
    import ptxconf.isa as isa

    specs = isa.load_specs()
    family.run_variants_of(specs)
    return {vid: v for vid, v in specs.variants.items() if v.family in PINS}


def supported(v) -> bool:
    from ptxconf.core.plan import support_reason
    from ptxconf.isa.targets import PtxVersion

    return support_reason(v, CC, PtxVersion(*MAX_PTX)) is None


def sample(family: str) -> list[tuple[str, int, tuple[str, ...] | None]]:
    """(variant id, seed, checks or None for the family's own) of every pinned plan of the forms whose pins
    ``family`` names: wgmma and wgmma.sp, for each (A, B, D type, satfinite, A's source) the smallest, a middle and
    the largest N; mma.sync, mma.sp and wmma every form this target runs; all at every seed, and the sparse forms
    (the smallest N of each group) with their undefined checks too, at seed 0."""
    groups: dict[tuple, list] = {}
    for v in variants().values():
        if PINS[v.family] != PINS[family] or not supported(v):
            continue
        key = (v.family, v.atype, v.btype, v.dtype, v.satfinite, v.a_src) if v.family.startswith("wgmma") else (v.id,)
        groups.setdefault(key, []).append(v)
    out = []
    for key in sorted(groups):
        vs = sorted(groups[key], key=lambda v: getattr(v, "N", 0))
        for v in {id(x): x for x in (vs[0], vs[len(vs) // 2], vs[-1])}.values():
            out += [(v.id, seed, None) for seed in SEEDS]
            if v.family in SPARSE and v is vs[0]:
                out.append((v.id, 0, SPARSE[v.family]))
    return out


def make_plan(vid: str, seed: int, checks):
    """The plan a run makes (``plan_variant``); with the undefined checks the family's own ``plan`` (their
    ``settle`` asks ptxas, which a pin must not need)."""
    from ptxconf.core.family import family_of
    from ptxconf.isa.targets import PtxVersion
    from ptxconf.run.runner import plan_variant

    v = variants()[vid]
    if checks is None:
        return plan_variant(v, seed, CC, PtxVersion(*MAX_PTX))
    return family_of(v).plan(v, seed, CC, PtxVersion(*MAX_PTX), checks, 8, None)


def pin_key(vid: str, seed: int, checks) -> str:
    return f"{vid}@{seed}" + ("" if checks is None else "+" + ",".join(checks))


def hashes(items) -> dict[str, str]:
    return {pin_key(*it): plan_hash(make_plan(*it)) for it in items}


def pinned(vid: str, seed: int, checks) -> str:
    """The pinned hash of one plan."""
    return json.loads(PINS[variants()[vid].family].read_text())[pin_key(vid, seed, checks)]


def time_plans(items) -> None:
    """CPU seconds of planning ``items``, per form family (BLAS on one thread, as the run's planning processes)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    make_plan(*items[0])  # load the specs and warm the imports outside the timing
    for fam in sorted({variants()[it[0]].family for it in items}):
        mine = [it for it in items if variants()[it[0]].family == fam and it[2] is None]
        t0, cases = time.process_time(), 0
        for it in mine:
            cases += len(make_plan(*it).in_words)
        cpu = time.process_time() - t0
        print(f"{fam}: {len(mine)} plans, {cases} cases, {cpu:.2f} CPU-s: {1e3 * cpu / len(mine):.1f} ms per "
              f"plan, {1e3 * cpu / cases:.3f} ms per case")


def main(argv: list[str]) -> int:
    what, names = (argv[0] if argv else "check"), argv[1:]
    if what == "time" and names == ["all"]:  # every supported form once at seed 1, as a whole-suite run plans
        time_plans([(vid, 1, None) for vid, v in sorted(variants().items()) if supported(v)])
        return 0
    if what not in ("check", "record", "time") or any(n not in PINS for n in names):
        print(f"usage: plan_pin.py check|record|time [FAMILY...] (FAMILY: {', '.join(PINS)}; the forms sharing its "
              f"pin file come too) or time all (not {' '.join(argv)!r})", file=sys.stderr)
        return 2
    files = sorted({PINS[n] for n in names or PINS})
    if what == "time":
        time_plans([it for n in names or PINS for it in sample(n) if PINS[n] in files])
        return 0
    bad = sum(record_or_check(what, path, hashes(sample(next(n for n in PINS if PINS[n] == path))), "plans")
              for path in files)
    return 1 if bad else 0


def record_or_check(what: str, path: Path, got: dict[str, str], things: str) -> int:
    """``record``: write ``got`` to the pin file ``path``; ``check``: compare it with the file, say how many agree
    and name the first that differ.  Returns how many differ."""
    if what == "record":
        path.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n")
        print(f"{len(got)} {things} pinned in {path.relative_to(HERE)}")
        return 0
    want = json.loads(path.read_text())
    bad = [k for k in want if got.get(k) != want[k]]
    print(f"{path.relative_to(HERE)}: {len(want) - len(bad)} of {len(want)} {things} as pinned"
          + (": differ: " + ", ".join(bad[:10]) if bad else ""))
    return len(bad)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
