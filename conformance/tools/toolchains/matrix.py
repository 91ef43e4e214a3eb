"""The acceptance matrix: every form x target x ptxas release, assembled or refused, against the spec.

A form is emitted as ``ptxconf assemble`` emits it (:func:`ptxconf.backends.ptxas.module_for`, the
family's assembly probe) at ``.version`` = max(the form's minimum, the target's minimum), capped at what
the release accepts, so a release older than the spec's minimum is asked whether it takes the form
anyway.  Many kernels go into one module; a refused module is settled by the line numbers of ptxas's
errors (each names one kernel: that kernel is refused, the rest are assembled again), by the kernel
names in its messages, and only where neither says, by halving the module.  Every module's verdict is
cached by :func:`ptxconf.backends.ptxas.assemble` (ptxas build, arch, PTX hash).

One code per cell:

* ``A`` assembled, as the spec says; ``R`` refused, as the spec says;
* ``X`` assembled although the spec says this target or ``.version`` lacks the form;
* ``F`` refused although the spec says it assembles;
* ``C`` ptxas crashed or timed out; ``-`` the release does not know the target (nothing run).
"""

from __future__ import annotations

import bisect
import re
import shlex
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ptxconf.backends.ptxas import assemble, compile_cubin, module_for
from ptxconf.core.family import family_of
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, Target

from .sass import SassUnavailable, kernel_ops, lowered

__all__ = ["ACCEPTED", "EARLY", "REFUSED", "WRONGLY_REFUSED", "CRASHED", "NOT_RUN", "CODES", "Toolchain", "Matrix", "Stats",
           "emitted_version", "attribute", "compact_message", "settle", "build_matrix", "derive", "replay_command",
           "counts", "KINDS", "DEFAULT_CHUNK"]

ACCEPTED, EARLY, REFUSED, WRONGLY_REFUSED, CRASHED, NOT_RUN = "A", "X", "R", "F", "C", "-"
CODES = {
    ACCEPTED: "assembled, as the spec says",
    EARLY: "assembled although the spec says this target or .version lacks the form",
    REFUSED: "refused, as the spec says",
    WRONGLY_REFUSED: "refused although the spec says it assembles",
    CRASHED: "ptxas crashed or timed out",
    NOT_RUN: "the release does not know the target",
}
DEFAULT_CHUNK = 256  # kernels per module: ptxas starts once per module, and a refused one is settled by its lines
_FAILED_RUN = ("ptxas crashed", "ptxas timed out", "could not run ptxas")
_KERNEL = re.compile(r"\bprobe_[0-9a-f]+\b")
_LOCATED = re.compile(r"^ptxas <input>, line (\d+);\s*(.*)$")


@dataclass(frozen=True)
class Toolchain:
    """One ptxas as the matrix uses it."""

    name: str  # the release ("13.0.88"), or the path's own name where the release is unknown
    exe: str
    max_ptx: PtxVersion
    targets: tuple[str, ...]


def emitted_version(v: Variant, target: Target, max_ptx: PtxVersion) -> PtxVersion:
    """The ``.version`` a cell is assembled at: the lowest the spec allows, capped at the release's maximum
    (the rule of ``ptxconf assemble``)."""
    return min(max(v.min_ptx, target.min_ptx), max_ptx)


def compact_message(line: str) -> str:
    """One ptxas error line without the file, line number and kernel name, spaces collapsed."""
    m = _LOCATED.match(line.strip())
    text = m.group(2) if m else re.sub(r"^ptxas\s+", "", line.strip())
    return re.sub(r"\s+", " ", _KERNEL.sub("<kernel>", text)).strip()


def _error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines()
            if ("error" in ln or "fatal" in ln) and "Ptx assembly aborted due to errors" not in ln]


def attribute(stderr: str, starts: Sequence[int], names: Sequence[str]) -> tuple[dict[int, list[str]], list[str], list[str]]:
    """Split ptxas's errors by kernel: ``({kernel index: messages}, header messages, unplaced messages)``.

    ``starts`` are the 1-based lines where kernels begin (ascending) and ``names`` their entry names; an
    error on a line before the first kernel is the module's (every kernel's), one with neither a line nor a
    kernel name is unplaced.  Nothing after the first ``fatal`` line counts: past a parse abort ptxas
    reports errors that are not there (12.0 names line 3 of a module whose line 3 is ``.address_size``)."""
    by_kernel: dict[int, list[str]] = defaultdict(list)
    header: list[str] = []
    unplaced: list[str] = []
    index = {n: i for i, n in enumerate(names)}
    lines = _error_lines(stderr)
    fatal = next((i for i, ln in enumerate(lines) if "fatal" in ln), len(lines))
    for ln in lines[: fatal + 1]:
        msg = compact_message(ln)
        m = _LOCATED.match(ln.strip())
        if m:
            k = bisect.bisect_right(starts, int(m.group(1))) - 1
            (header if k < 0 else by_kernel[k]).append(msg)
            continue
        hit = [index[n] for n in _KERNEL.findall(ln) if n in index]
        if hit:
            by_kernel[hit[0]].append(msg)
        else:
            unplaced.append(msg)
    return dict(by_kernel), header, unplaced


def _kernel_starts(text: str, names: Sequence[str]) -> list[int]:
    """The 1-based line of each named kernel's ``.entry``."""
    lines = {}
    for no, ln in enumerate(text.splitlines(), 1):
        if ".entry" in ln:
            m = re.search(r"\.entry\s+([\w$]+)", ln)
            if m:
                lines[m.group(1)] = no
    return [lines[n] for n in names]


def _joined(messages: Iterable[str]) -> str:
    distinct = list(dict.fromkeys(m for m in messages if m))
    text = " | ".join(distinct[:4])
    return text[:400] or "refused with no message"


@dataclass
class Stats:
    modules: int = 0  # ptxas runs asked for (cached ones included)
    seconds: float = 0.0  # inside those runs
    confirmed: int = 0  # disagreeing cells assembled again alone
    # (release, target, form, in the module, alone): cells whose verdict alone differs from the one in a module
    context: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    sass_missing: list[str] = field(default_factory=list)  # why a module's SASS could not be read
    lock: threading.Lock = field(default_factory=threading.Lock)


def settle(forms: Sequence[Variant], version: PtxVersion, target: Target, exe: str, probes: dict,
           assemble_fn: Callable[[str, str, str], tuple[bool, str]], stats: Stats | None = None, *,
           render: Callable[[Sequence], str] | None = None) -> dict[str, tuple[str, str]]:
    """``{form id: ("ok" | "refused" | "crashed", message)}`` for forms of one family at one version.

    ``render`` makes the module of a list of forms (default: the family's probes through :func:`module_for`);
    any object with an ``id`` and a probe in ``probes`` (naming its kernel) can be settled through it."""
    out: dict[str, tuple[str, str]] = {}
    header_verdict: list[bool] = []
    if render is None:
        def render(pending: Sequence) -> str:
            return module_for(pending, version, target, probes)

    def header_ok(v) -> bool:
        """Does the module's header alone assemble?  Then an error ptxas placed there belongs to no kernel."""
        if not header_verdict:
            header_verdict.append(assemble_fn(render([]) if not isinstance(v, Variant)
                                              else family_of(v).module_source([], version, target), target.name, exe)[0])
        return header_verdict[0]

    stack = [list(forms)]
    while stack:
        pending = stack.pop()
        while pending:
            text = render(pending)
            t0 = time.perf_counter()
            ok, err = assemble_fn(text, target.name, exe)
            if stats is not None:
                with stats.lock:
                    stats.modules += 1
                    stats.seconds += time.perf_counter() - t0
            if ok:
                out.update((v.id, ("ok", "")) for v in pending)
                break
            if err.startswith(_FAILED_RUN):
                if len(pending) == 1:
                    out[pending[0].id] = ("crashed", compact_message(err.splitlines()[0]))
                    break
            else:
                names = [probes[v.id].name for v in pending]
                blamed, header, _ = attribute(err, _kernel_starts(text, names), names)
                if header and not header_ok(pending[0]):  # the module's own lines: every kernel is refused alike
                    out.update((v.id, ("refused", _joined(header))) for v in pending)
                    break
                if blamed:
                    out.update((pending[k].id, ("refused", _joined(msgs))) for k, msgs in blamed.items())
                    pending = [v for k, v in enumerate(pending) if k not in blamed]
                    continue
                if len(pending) == 1:
                    lines = _error_lines(err) or err.splitlines()[:1]
                    out[pending[0].id] = ("refused", _joined(compact_message(ln) for ln in lines))
                    break
            half = len(pending) // 2  # nothing says which kernel: halve
            stack.append(pending[half:])
            pending = pending[:half]
    return out


@dataclass
class Matrix:
    """Codes per (release, target), one character per form; messages of refused cells by index."""

    forms: list[str]
    families: list[str]
    targets: list[str]
    releases: list[str]
    codes: dict[tuple[str, str], str] = field(default_factory=dict)
    message_of: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    # with SASS read: (release, target) -> {form index: the matrix instructions it was lowered to ("none")}
    lowered: dict[tuple[str, str], dict[int, str]] = field(default_factory=dict)

    def message_id(self, text: str) -> int:
        if not hasattr(self, "_ids"):
            self._ids = {m: i for i, m in enumerate(self.messages)}
        if text not in self._ids:
            self._ids[text] = len(self.messages)
            self.messages.append(text)
        return self._ids[text]

    def canonical(self) -> None:
        """Number the messages in cell order (release, target, form), not in the order ptxas answered, so that
        the same verdicts always give the same files."""
        order: dict[int, int] = {}
        for r in self.releases:
            for t in self.targets:
                for _, k in sorted(self.message_of.get((r, t), {}).items()):
                    order.setdefault(k, len(order))
        self.messages = [m for _, m in sorted((order[k], m) for k, m in enumerate(self.messages) if k in order)]
        self.message_of = {key: {i: order[k] for i, k in cells.items()} for key, cells in self.message_of.items()}
        self._ids = {m: i for i, m in enumerate(self.messages)}

    def code(self, release: str, target: str, form: int) -> str:
        return self.codes[release, target][form]

    def cell_message(self, release: str, target: str, form: int) -> str:
        k = self.message_of.get((release, target), {}).get(form)
        return "" if k is None else self.messages[k]


def build_matrix(forms: Sequence[Variant], targets: Sequence[Target], toolchains: Sequence[Toolchain], *,
                 jobs: int = 2, chunk: int = DEFAULT_CHUNK, use_cache: bool = True, sass: bool = False,
                 on_progress: Callable[[int, int], None] | None = None) -> tuple[Matrix, Stats]:
    """Assemble every (form, target, release) cell; modules run ``jobs`` at a time.  With ``sass``, each module is
    built into a cubin and every assembled cell records the matrix instructions its SASS holds."""
    forms = list(forms)
    mat = Matrix([v.id for v in forms], [family_of(v).name for v in forms], [t.name for t in targets],
                 [tc.name for tc in toolchains])
    probes = {v.id: family_of(v).assembly_probe(v) for v in forms}
    stats = Stats()

    def run_ptxas(text: str, arch: str, exe: str) -> tuple[bool, str]:
        if sass:  # the cubin is kept (cached), so reading the SASS of the accepted module builds nothing again
            cubin, err = compile_cubin(text, arch, exe, use_cache=use_cache)
            return cubin is not None, err
        return assemble(text, arch, exe, use_cache=use_cache)

    def lowered_to(vs: Sequence[Variant], version: PtxVersion, t: Target, exe: str) -> dict[str, str]:
        cubin, _ = compile_cubin(module_for(vs, version, t, probes), t.name, exe, use_cache=use_cache)
        if cubin is None:
            return {}
        ops = kernel_ops(cubin, use_cache=use_cache)
        return {v.id: lowered(ops.get(probes[v.id].name, ())) for v in vs}

    tasks = []
    for tc in toolchains:
        for t in targets:
            if t.name not in tc.targets:
                mat.codes[tc.name, t.name] = NOT_RUN * len(forms)
                continue
            groups: dict[tuple[str, PtxVersion], list[Variant]] = defaultdict(list)
            for v in forms:
                groups[family_of(v).name, emitted_version(v, t, tc.max_ptx)].append(v)
            for (_, version), vs in groups.items():
                for i in range(0, len(vs), chunk):
                    tasks.append((tc, t, version, vs[i : i + chunk]))
    tasks.sort(key=lambda task: -len(task[3]))  # the big modules first: the pool ends evenly
    index = {v.id: i for i, v in enumerate(forms)}
    cells: dict[tuple[str, str], list[str]] = {}
    done = [0]
    lock = threading.Lock()

    def work(task) -> None:
        tc, t, version, vs = task
        got = settle(vs, version, t, tc.exe, probes, run_ptxas, stats)
        for v in vs:  # a disagreement with the spec is confirmed alone: a cell's verdict never rests on its neighbours
            outcome = got[v.id][0]
            if len(vs) > 1 and (outcome == "crashed" or (outcome == "ok") != (v.valid_for(t, version) is None)):
                alone = settle([v], version, t, tc.exe, probes, run_ptxas, stats)[v.id]
                with stats.lock:
                    stats.confirmed += 1
                    if alone[0] != outcome:
                        stats.context.append((tc.name, t.name, v.id, outcome, alone[0]))
                got[v.id] = alone
        low: dict[str, str] = {}
        if sass:
            ok = [v for v in vs if got[v.id][0] == "ok"]
            try:
                low = lowered_to(ok, version, t, tc.exe) if ok else {}
            except SassUnavailable as exc:
                with stats.lock:
                    stats.sass_missing.append(str(exc))
        with lock:
            row = cells.setdefault((tc.name, t.name), [NOT_RUN] * len(forms))
            msgs = mat.message_of.setdefault((tc.name, t.name), {})
            for v in vs:
                outcome, message = got[v.id]
                spec_ok = v.valid_for(t, version) is None
                i = index[v.id]
                if outcome == "ok":
                    row[i] = ACCEPTED if spec_ok else EARLY
                    if v.id in low:
                        mat.lowered.setdefault((tc.name, t.name), {})[i] = low[v.id]
                else:
                    row[i] = CRASHED if outcome == "crashed" else (WRONGLY_REFUSED if spec_ok else REFUSED)
                    msgs[i] = mat.message_id(message)
            done[0] += 1
            if on_progress:
                on_progress(done[0], len(tasks))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for f in [pool.submit(work, task) for task in tasks]:
            f.result()
    for key, row in cells.items():
        mat.codes[key] = "".join(row)
    mat.canonical()
    return mat, stats


# ---------------------------------------------------------------------------
# What the matrix says
# ---------------------------------------------------------------------------

KINDS = {
    "accepted-but-spec-invalid": "a release assembles a form the spec says needs a newer target or .version",
    "refused-but-spec-valid": "a release refuses a form the spec says assembles",
    "accepted-then-refused": "a release assembles a form and a later release refuses it",
    "ptxas-crashed": "ptxas crashed or timed out on the form",
}


def derive(mat: Matrix) -> tuple[list[dict], dict[str, dict[str, str]]]:
    """The disagreements, one per (kind, form, target) with the releases it holds for, and for each form the
    first release that assembles it on each target (releases in ``mat.releases`` order, oldest first)."""
    findings: list[dict] = []
    first: dict[str, dict[str, str]] = {}
    per_kind = (("accepted-but-spec-invalid", EARLY), ("refused-but-spec-valid", WRONGLY_REFUSED),
                ("ptxas-crashed", CRASHED))
    for t in mat.targets:
        rows = [mat.codes[r, t] for r in mat.releases]
        for fi, form in enumerate(mat.forms):
            column = [row[fi] for row in rows]
            for kind, code in per_kind:
                hit = [r for r, c in zip(mat.releases, column) if c == code]
                if hit:
                    findings.append({"kind": kind, "form": form, "family": mat.families[fi], "target": t,
                                     "releases": hit, "message": mat.cell_message(hit[0], t, fi)})
            accepted = [k for k, c in enumerate(column) if c in (ACCEPTED, EARLY)]
            if accepted:
                first.setdefault(form, {})[t] = mat.releases[accepted[0]]
                later = [k for k, c in enumerate(column) if k > accepted[0] and c in (REFUSED, WRONGLY_REFUSED, CRASHED)]
                if later:
                    k = later[0]
                    last_ok = max(a for a in accepted if a < k)
                    findings.append({"kind": "accepted-then-refused", "form": form, "family": mat.families[fi],
                                     "target": t, "releases": [mat.releases[last_ok], mat.releases[k]],
                                     "message": mat.cell_message(mat.releases[k], t, fi)})
    return findings, first


def replay_command(form: str, target: str, release: str, capped: bool) -> str:
    """The command that shows this one cell again: ``ptxconf assemble`` where it emits the same module,
    the matrix itself where assemble would call the cell untestable (the .version was capped)."""
    if capped:
        return (f"ptxconf toolchains matrix --ptxas {release} --arch {target} --select {shlex.quote(form)} "
                "--out toolchains-replay")
    return f"ptxconf assemble --ptxas {release} --arch {target} --select {shlex.quote(form)}"


def counts(mat: Matrix) -> Counter:
    """Cells per code over the whole matrix."""
    c: Counter = Counter()
    for row in mat.codes.values():
        c.update(row)
    return c
