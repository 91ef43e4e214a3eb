"""The neighbourhood of the specs: every form one step from a valid one, assembled by every release for every
target, and what ptxas made of it.

A step changes the emitted instruction of a spec form (the one its assembly probe holds): a qualifier
dropped, added (where the family's other forms place it) or swapped with its neighbour, a qualifier, type or
shape swapped for a sibling of the same class from the family's forms.  Two more steps keep the instruction
and move the module: the target one step down from the form's lowest (among the targets a release knows) and
the ``.version`` one step down from the form's minimum.  An instruction that is itself a spec form is no
neighbour (the acceptance matrix asks about it).  A neighbour keeps its form's operands, so a step that changes
the operand shape is refused for that (the message says so).

Codes per cell:

* ``R`` refused, as the ISA says;  ``A`` assembled, as the spec says (target and .version steps);
* ``U`` accepted although no spec form says so, and the SASS holds a matrix instruction (a gap in specs/ or
  a ptxas bug: the instruction it became is recorded);
* ``E`` accepted, and the SASS holds no matrix instruction: emptied or lowered in software, silently;
* ``F`` refused although the spec says it assembles;  ``C`` ptxas crashed;  ``-`` not run.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ptxconf.backends.ptxas import assemble, compile_cubin
from ptxconf.core.family import family_of
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, Target, parse_target

from .facts import target_key
from .matrix import ACCEPTED, CRASHED, NOT_RUN, REFUSED, WRONGLY_REFUSED, Stats, Toolchain, emitted_version, settle
from .matrix import CODES as MATRIX_CODES
from .sass import SassUnavailable, kernel_ops, lowered

__all__ = ["Neighbour", "STEPS", "CODES", "token_class", "neighbours", "specified_instructions", "version_below",
           "target_below", "narrowed", "fresh",
           "Cell", "Campaign", "run_campaign", "kernel_of"]

STEPS = {
    "drop": "a qualifier dropped",
    "add": "a qualifier added where the family's forms place it",
    "reorder": "two neighbouring qualifiers swapped",
    "sibling": "a qualifier swapped for a sibling",
    "type": "a type swapped (both multiplicand types at once where A and B are one type)",
    "shape": "a shape swapped",
    "target": "the target one step down from the form's lowest",
    "version": "the .version one step down from the form's minimum",
}
# The acceptance matrix's codes, and two of a neighbour's own: what an accepted neighbour's SASS holds.
UNSPECIFIED, EMPTIED = "U", "E"
CODES = {
    REFUSED: "refused, as the ISA says",
    ACCEPTED: MATRIX_CODES[ACCEPTED],
    UNSPECIFIED: "accepted but unspecified; the SASS holds a matrix instruction",
    EMPTIED: "accepted, and the SASS holds no matrix instruction (silently emptied or lowered in software)",
    WRONGLY_REFUSED: MATRIX_CODES[WRONGLY_REFUSED],
    CRASHED: MATRIX_CODES[CRASHED],
    NOT_RUN: "not run: the release does not know the target or .version, or a narrowed campaign did not ask it",
}
# PTX ISA versions in order (what "one step down" walks); 6.x to 9.5.
_VERSIONS = tuple(PtxVersion(6, m) for m in range(6)) + tuple(PtxVersion(7, m) for m in range(9)) + tuple(
    PtxVersion(8, m) for m in range(9)) + tuple(PtxVersion(9, m) for m in range(6))
_SHAPE = re.compile(r"^m\d+n\d+(?:k\d+)?$")
_TYPE = re.compile(r"^(?:[fsub]\d+|bf16|tf32|e\dm\d|ue\dm\d|b\d+x\d+(?:_p\d+)?)$")
_STATE_SPACES = {"global", "shared", "shared::cta", "local"}


def token_class(tok: str) -> str:
    """``shape``, ``type``, ``layout`` or ``qualifier``: what a sibling of a token must be."""
    if _SHAPE.match(tok):
        return "shape"
    if _TYPE.match(tok):
        return "type"
    if tok in ("row", "col"):
        return "layout"
    return "qualifier"


@dataclass(frozen=True)
class Neighbour:
    """One step from a spec form."""

    id: str  # the instruction; "<instruction> @sm_90" / "<instruction> @.version 7.8" for the module steps
    opcode: str  # the instruction as emitted
    base: str  # the spec form it is one step from
    step: str  # a key of STEPS
    change: str  # what the step did: "-.aligned", "f16->bf16", "sm_90a->sm_90"
    family: str
    target: str | None = None  # the one target a target step runs on; None: every target of the campaign
    version: PtxVersion | None = None  # the one .version a version step runs at


def version_below(v: PtxVersion) -> PtxVersion | None:
    """The PTX ISA version just before ``v`` (7.8 before 8.0), None below 6.0."""
    lower = [x for x in _VERSIONS if x < v]
    return lower[-1] if lower else None


def target_below(lowest: Target, known: Sequence[str]) -> str | None:
    """The target just below ``lowest`` among ``known`` (``sm_90`` below ``sm_90a``; ``sm_89`` below ``sm_90``)."""
    key = target_key(lowest.name)
    lower = [t for t in known if target_key(t) < key]
    return max(lower, key=target_key) if lower else None


def _emitted(v: Variant) -> str:
    """The instruction as v's assembly probe emits it (wmma's loads name a state space the id leaves out)."""
    return instruction_line(kernel_of(v, PtxVersion(9, 0), parse_target("sm_100a"))[0], v)[1]


def instruction_line(kernel: str, v: Variant) -> tuple[int, str]:
    """``(line index, opcode)`` of the instruction under test in one probe kernel."""
    want = v.id.split("/")[0].split(".")
    for i, line in enumerate(kernel.splitlines()):
        words = line.split()
        if not words:
            continue
        tok = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        if tok.split(".") == want or [x for x in tok.split(".") if x not in _STATE_SPACES] == want:
            return i, tok
    raise ValueError(f"{v.id}: its assembly probe holds no such instruction")


_KERNELS: dict[tuple[str, PtxVersion, str], tuple[str, str]] = {}
_KLOCK = threading.Lock()


def kernel_of(v: Variant, version: PtxVersion, target: Target) -> tuple[str, str]:
    """``(kernel text, kernel name)`` of v's assembly probe for one module (cached)."""
    key = (v.id, version, target.name)
    with _KLOCK:
        hit = _KERNELS.get(key)
    if hit is None:
        fam = family_of(v)
        probe = _probe(v)
        header = fam.module_source([], version, target)
        text = fam.module_source([probe], version, target)
        if not text.startswith(header):
            raise ValueError(f"{v.id}: the family's module does not start with its header")
        hit = (text[len(header):], probe.name)
        with _KLOCK:
            _KERNELS[key] = hit
    return hit


_PROBES: dict[str, object] = {}


def _probe(v: Variant):
    """v's assembly probe, made once per form (it draws the probe's inputs)."""
    if v.id not in _PROBES:
        _PROBES[v.id] = family_of(v).assembly_probe(v)
    return _PROBES[v.id]


def _vocabulary(forms: Sequence[tuple[Variant, str]]) -> tuple[dict[str, set[str]], dict[str, Counter]]:
    """Per instruction root (``mma``, ``wgmma``, ...): every token of its forms, and each token's predecessors."""
    vocab: dict[str, set[str]] = defaultdict(set)
    before: dict[str, Counter] = defaultdict(Counter)
    for _, op in forms:
        toks = op.split(".")
        vocab[toks[0]].update(toks[1:])
        for a, b in zip(toks, toks[1:]):
            before[f"{toks[0]}:{b}"][a] += 1
    return vocab, before


def specified_instructions(forms: Sequence[Variant]) -> set[str]:
    """The instruction of every spec form, as its probe emits it and as the spec names it (wmma's loads name no
    state space, which is generic addressing): what no neighbour may be."""
    return {_emitted(v) for v in forms} | {v.id.split("/")[0] for v in forms}


def neighbours(forms: Sequence[Variant], known_targets: Sequence[str], *, reorders: int = 1,
               universe: Sequence[Variant] | None = None) -> list[Neighbour]:
    """Every neighbour of ``forms`` (each instruction once, from the first form that reaches it), the target
    and .version steps of every form.  ``universe`` (default: ``forms``) are every spec form: their tokens are the
    siblings a step may swap in, and none of their instructions is a neighbour.  ``reorders`` > 1 keeps one in that
    many reorder steps (chosen by a hash of the instruction, so the same ones every time): ptxas takes qualifiers in
    most orders, and every one it takes is a compiled kernel."""
    emitted = [(v, _emitted(v)) for v in forms]
    every = emitted if universe is None else [(v, _emitted(v)) for v in universe]
    specified = specified_instructions([v for v, _ in every]) | specified_instructions(forms)
    vocab, before = _vocabulary(every)
    out: dict[str, Neighbour] = {}

    def offer(v: Variant, toks: list[str], step: str, change: str) -> None:
        op = ".".join(toks)
        if step == "reorder" and reorders > 1 and int(hashlib.sha1(op.encode()).hexdigest()[:8], 16) % reorders:
            return
        if op not in specified and op not in out:
            out[op] = Neighbour(op, op, v.id, step, change, v.family)

    for v, op in emitted:
        toks = op.split(".")
        root = toks[0]
        for i in range(1, len(toks)):
            offer(v, toks[:i] + toks[i + 1:], "drop", f"-.{toks[i]}")
            if i + 1 < len(toks) and toks[i] != toks[i + 1]:
                offer(v, toks[:i] + [toks[i + 1], toks[i]] + toks[i + 2:], "reorder", f".{toks[i]}<->.{toks[i + 1]}")
            cls = token_class(toks[i])
            if cls == "type" and i + 1 < len(toks) and toks[i + 1] == toks[i]:  # .atype.btype of one type: both
                for alt in sorted(vocab[root]):
                    if alt != toks[i] and token_class(alt) == "type" and before[f"{root}:{alt}"][alt]:
                        offer(v, toks[:i] + [alt, alt] + toks[i + 2:], "type", f"{toks[i]}.{toks[i]}->{alt}.{alt}")
            for alt in sorted(vocab[root]):  # a sibling: same class, and some form has it after the same token
                if alt != toks[i] and token_class(alt) == cls and before[f"{root}:{alt}"][toks[i - 1]]:
                    step = {"shape": "shape", "type": "type"}.get(cls, "sibling")
                    offer(v, toks[:i] + [alt] + toks[i + 1:], step, f"{toks[i]}->{alt}")
        for q in sorted(vocab[root] - set(toks)):
            if token_class(q) != "qualifier":
                continue
            for prev, _ in before[f"{root}:{q}"].most_common():
                if prev in toks:
                    k = toks.index(prev) + 1
                    offer(v, toks[:k] + [q] + toks[k:], "add", f"+.{q}")
                    break
    result = list(out.values())
    for v, op in emitted:
        below = target_below(v.min_target, known_targets)
        if below:
            result.append(Neighbour(f"{op} @{below}", op, v.id, "target", f"{v.min_target.name}->{below}", v.family,
                                    target=below))
        lower = version_below(v.min_ptx)
        if lower:
            result.append(Neighbour(f"{op} @.version {lower}", op, v.id, "version", f"{v.min_ptx}->{lower}", v.family,
                                    version=lower))
    return result


def narrowed(ns: Sequence[Neighbour], prior: dict[str, set[str]], share: float, seed: int
             ) -> tuple[list[Neighbour], str]:
    """The neighbours worth asking more releases about, given the codes an earlier campaign got for each
    (``prior``: neighbour id -> its codes over that campaign's releases and targets): every one some cell did
    not refuse, every target and .version step (their outcome is specified either way), every one the earlier
    campaign never tried, and a ``share`` of those it refused everywhere, drawn with ``seed``.  The sample says
    how often an older release takes what the newer ones refuse; what they took, every release is asked about.
    Returns the neighbours (in their order) and a note saying what was kept."""
    refused = [n for n in ns if n.step not in ("target", "version") and n.id in prior
               and prior[n.id] <= {REFUSED, NOT_RUN}]
    drawn = set(random.Random(seed).sample(refused, round(share * len(refused))))
    skip = {n.id for n in refused if n not in drawn}
    kept = [n for n in ns if n.id not in skip]
    taken = sum(1 for n in ns if n.id in prior and not prior[n.id] <= {REFUSED, NOT_RUN})
    steps = sum(1 for n in ns if n.step in ("target", "version"))
    note = (f"narrowed by an earlier campaign: the {taken} neighbours some earlier cell did not refuse, the {steps} "
            f"target and .version steps, {sum(1 for n in ns if n.id not in prior)} not tried before, and "
            f"{len(drawn)} of the {len(refused)} refused everywhere before (drawn with seed {seed})")
    return kept, note


def fresh(forms: Sequence[Variant], known_targets: Sequence[str], tried: set[str], *, reorders: int = 1,
          universe: Sequence[Variant] | None = None) -> tuple[list[Neighbour], str]:
    """The neighbours :func:`neighbours` makes now that no earlier campaign tried (``tried``: their ids): what the
    specs or the generator added since, to be asked as a campaign of its own.  Returns them and a note."""
    made = neighbours(forms, known_targets, reorders=reorders, universe=universe)
    ns = [n for n in made if n.id not in tried]
    return ns, f"the {len(ns)} of their {len(made)} neighbours no earlier campaign tried"


@dataclass
class Cell:
    code: str
    message: str = ""  # ptxas's words for a refusal
    sass: str = ""  # the matrix instructions of an accepted cell ("none" where there is none)
    version: str = ""


@dataclass
class Campaign:
    neighbours: list[Neighbour]
    targets: list[str]
    releases: list[str]
    cells: dict[tuple[str, str, int], Cell] = field(default_factory=dict)  # (release, target, neighbour index)
    stats: Stats = field(default_factory=Stats)
    sass_missing: list[str] = field(default_factory=list)


def _cell_plan(n: Neighbour, base: Variant, tc: Toolchain, targets: Sequence[str]) -> list[tuple[Target, PtxVersion]]:
    """Where one neighbour is assembled by one release: ``[(target, .version)]``."""
    if n.step == "target":
        t = parse_target(n.target)
        return [(t, emitted_version(base, t, tc.max_ptx))] if n.target in tc.targets and t.min_ptx <= tc.max_ptx else []
    if n.step == "version":
        t = base.min_target
        ok = t.name in tc.targets and n.version <= tc.max_ptx and t.min_ptx <= n.version
        return [(t, n.version)] if ok else []
    out = []
    for name in targets:
        t = parse_target(name)
        if name in tc.targets and t.min_ptx <= tc.max_ptx:
            out.append((t, emitted_version(base, t, tc.max_ptx)))
    return out


def run_campaign(neighbours_: Sequence[Neighbour], forms: dict[str, Variant], targets: Sequence[str],
                 toolchains: Sequence[Toolchain], *, jobs: int = 1, chunk: int = 256, use_cache: bool = True,
                 sass: bool = True, on_progress: Callable[[int, int], None] | None = None) -> Campaign:
    """Assemble every (neighbour, target, release) cell, then read the SASS of every accepted one."""
    camp = Campaign(list(neighbours_), list(targets), [tc.name for tc in toolchains])
    index = {n.id: i for i, n in enumerate(camp.neighbours)}
    names = {n.id: "probe_" + hashlib.sha1(n.id.encode()).hexdigest()[:16] for n in camp.neighbours}
    groups: dict[tuple[str, str, PtxVersion, str], list[Neighbour]] = defaultdict(list)
    by_tc = {tc.name: tc for tc in toolchains}
    for tc in toolchains:
        for n in camp.neighbours:
            for t, version in _cell_plan(n, forms[n.base], tc, targets):
                groups[tc.name, t.name, version, n.family].append(n)
    tasks = [(key, ns[i:i + chunk]) for key, ns in groups.items() for i in range(0, len(ns), chunk)]
    tasks.sort(key=lambda task: -len(task[1]))
    lock = threading.Lock()
    done = [0]

    def build(text: str, arch: str, exe: str) -> tuple[bool, str]:
        """Assembled into a cubin (cached), so that the SASS of the accepted module costs no second build."""
        cubin, err = compile_cubin(text, arch, exe, use_cache=use_cache)
        return cubin is not None, err

    def kernel(n: Neighbour, version: PtxVersion, t: Target) -> str:
        base = forms[n.base]
        text, name = kernel_of(base, version, t)
        lines = text.splitlines()
        i, op = instruction_line(text, base)
        lines[i] = lines[i].replace(op, n.opcode, 1)
        return "\n".join(lines).replace(name, names[n.id]) + "\n"

    def work(task) -> None:
        (release, target, version, family), ns = task
        tc, t = by_tc[release], parse_target(target)
        header = family_of(forms[ns[0].base]).module_source([], version, t)

        def render(pending: Sequence) -> str:
            return header + "".join(kernel(n, version, t) for n in pending)

        probes = {n.id: _Named(names[n.id]) for n in ns}
        got = settle(ns, version, t, tc.exe, probes, build if sass else
                     lambda text, arch, exe: assemble(text, arch, exe, use_cache=use_cache), camp.stats, render=render)
        accepted = [n for n in ns if got[n.id][0] == "ok"]
        lowered_to: dict[str, str] = {}
        if accepted and sass:
            lowered_to = _lowered(render(accepted), accepted, names, target, tc.exe, use_cache, camp)
        with lock:
            for n in ns:
                outcome, message = got[n.id]
                spec_ok = n.step in ("target", "version") and forms[n.base].valid_for(t, version) is None
                if outcome == "ok":
                    low = lowered_to.get(n.id, "unread" if sass else "")
                    code = ACCEPTED if spec_ok else (EMPTIED if low == "none" else UNSPECIFIED)
                    camp.cells[release, target, index[n.id]] = Cell(code, "", low, str(version))
                else:
                    code = CRASHED if outcome == "crashed" else (WRONGLY_REFUSED if spec_ok else REFUSED)
                    camp.cells[release, target, index[n.id]] = Cell(code, message, "", str(version))
            done[0] += 1
            if on_progress:
                on_progress(done[0], len(tasks))

    if jobs <= 1:
        for task in tasks:
            work(task)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for f in [pool.submit(work, task) for task in tasks]:
                f.result()
    return camp


@dataclass(frozen=True)
class _Named:
    name: str


def _lowered(text: str, accepted: Sequence[Neighbour], names: dict[str, str], target: str, exe: str,
             use_cache: bool, camp: Campaign) -> dict[str, str]:
    """``{neighbour id: its matrix instructions}`` from one cubin of every accepted kernel."""
    cubin, err = compile_cubin(text, target, exe, use_cache=use_cache)
    if cubin is None:
        camp.sass_missing.append(f"{target}: {err.splitlines()[0] if err else 'no cubin'}")
        return {}
    try:
        per_kernel = kernel_ops(cubin, use_cache=use_cache)
    except SassUnavailable as exc:
        camp.sass_missing.append(str(exc))
        return {}
    return {n.id: lowered(per_kernel.get(names[n.id], ())) for n in accepted}
