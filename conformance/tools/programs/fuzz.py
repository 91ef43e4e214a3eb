"""The program fuzzer: batches of Hypothesis-drawn programs through a backend; each failure shrunk and kept.

Programs are drawn in batches of :data:`BATCH` by Hypothesis from ``Random(batch seed)``, so a
program's seed (``batch seed * BATCH + index``) names it on any machine.  A batch is checked at once
(assembled in parallel, launched one program per launch: a fault costs that program only).  A
failing program is shrunk by Hypothesis from the same random: the batch is drawn again, the programs
already checked answer from memory, and every smaller candidate is checked for real until the failure
(of the same kind) is as small as it gets or the shrink time is spent.

Backends: ``ptxas`` assembles only (a legal program refused, or a crash, is a finding); ``emulator``
runs the interpreter (emulated vs the oracle: a self-check of the generator); ``pycuda`` builds with
ptxas and launches on the GPU.
"""

from __future__ import annotations

import os
import random
import re
import shlex
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample
from ptxconf.backends.base import Launch
from ptxconf.backends.ptxas import PtxasNotFound, assemble, compile_cubin, find_ptxas, first_error, ptxas_info
from ptxconf.isa.targets import PtxVersion
from ptxconf.oracle import mma as oracle_mma

from .emit import module_source
from .inputs import make_inputs
from .interp import ProgramEmulator
from .model import Program, ProgramError
from .ops import Kernel, lower
from .oracle import expected
from .strategies import DEFAULT_MAX_PTX, programs, simpler

__all__ = ["BATCH", "Outcome", "Runner", "PtxasRunner", "EmulatorRunner", "GpuRunner", "FuzzResult", "fuzz", "draw_batch",
           "shrink", "replay", "resolve_ptxas", "compare"]

BATCH = 32
MAX_LINES = 3


@dataclass
class Outcome:
    """One program checked once."""

    program: Program
    seed: int
    status: str  # pass | fail
    kind: str = ""  # mismatch | refused | crash | fault | illegal | generator
    message: str = ""
    cases: int = 0
    ptx: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "fail"


@dataclass
class _Prepared:
    kernel: Kernel
    ptx: str
    words: np.ndarray | None = None
    expected: np.ndarray | None = None


def resolve_ptxas(spec: str | None) -> tuple[str, PtxVersion]:
    """``--ptxas VERSION|PATH`` (None: the ptxas on PATH) -> (executable, highest ``.version`` it takes).

    A release is resolved through :mod:`ptxconf.tools.toolchains` where it is installed with the suite."""
    if spec and re.fullmatch(r"\d+\.\d+(?:\.\d+)?", spec):
        try:
            from ptxconf.tools.toolchains.resolve import resolve
        except ImportError:
            raise PtxasNotFound(f"--ptxas {spec}: naming a release needs ptxconf.tools.toolchains, which this "
                                "installation lacks; give the path of a ptxas instead") from None
        tc = resolve(spec)[0]
        return tc.exe, tc.max_ptx
    exe = find_ptxas(spec)
    return exe, ptxas_info(exe)["max_ptx"]


def compare(k: Kernel, exp: np.ndarray, got: np.ndarray) -> str | None:
    """None when every word agrees; else how many differ and where the first ones are (step, output, case, lane)."""
    bad = np.argwhere(exp != got)
    if not len(bad):
        return None
    lines = [f"{len(bad)} of {exp.size} output words differ"]
    for case, lane, word in bad[:MAX_LINES]:
        where = k.output_of(int(word))
        if where is None:
            at = f"padding word {word}"
        else:
            lay, name, idx = where
            step = "filler" if lay.step is None else f"step {lay.index} ({lay.step.kind})"
            at = f"{step} {name} word {idx}"
        lines.append(f"case {case} lane {lane} {at}: expected 0x{int(exp[case, lane, word]):08x}, "
                     f"got 0x{int(got[case, lane, word]):08x}")
    return "; ".join(lines)


class Runner:
    """Checks programs on one backend; ``check_many`` may overlap work across a batch."""

    name = "?"

    def __init__(self, arch: str = "sm_90a", cases: int = 4, max_ptx: PtxVersion = DEFAULT_MAX_PTX):
        self.arch = arch
        self.cases = cases
        self.max_ptx = max_ptx
        self.options: list[str] = []  # what a replay command must repeat

    def info(self) -> dict:
        return {"backend": self.name, "arch": self.arch, "max_ptx": str(self.max_ptx), "cases": self.cases}

    def prepare(self, p: Program, seed: int, inputs: bool = True) -> _Prepared | Outcome:
        try:
            k = lower(p)
            ptx = module_source([k])
            prep = _Prepared(k, ptx)
            if inputs:
                ins = make_inputs(k, seed, self.cases)
                prep.words, prep.expected = ins.words, expected(k, ins, oracle_mma)
            return prep
        except ProgramError as exc:
            return Outcome(p, seed, "fail", "generator", f"the program does not lower: {exc}")
        except Exception as exc:  # a bug of the generator: a finding too, with where it happened
            return _crashed(p, seed, exc)

    def check(self, p: Program, seed: int) -> Outcome:
        return self.check_many([(p, seed)])[0]

    def check_many(self, items: list[tuple[Program, int]]) -> list[Outcome]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class PtxasRunner(Runner):
    """Assemble only: does ptxas take every legal program (and not crash)?"""

    name = "ptxas"

    def __init__(self, arch: str = "sm_90a", ptxas: str | None = None, jobs: int | None = None):
        exe, max_ptx = resolve_ptxas(ptxas)
        super().__init__(arch, 0, max_ptx)
        self.exe = exe
        self.jobs = jobs or os.cpu_count() or 1
        self.options += (["--arch", arch] if arch != "sm_90a" else []) + (["--ptxas", ptxas] if ptxas else [])

    def info(self) -> dict:
        return {**super().info(), "ptxas": ptxas_info(self.exe)["ptxas"]}  # the release, not the path: artifacts hold no machine paths

    def _one(self, item: tuple[Program, int]) -> Outcome:
        p, seed = item
        prep = self.prepare(p, seed, inputs=False)
        if isinstance(prep, Outcome):
            return prep
        ok, err = assemble(prep.ptx, self.arch, self.exe, use_cache=False)
        return Outcome(p, seed, "pass", ptx=prep.ptx) if ok else _refused(p, seed, prep, err)

    def check_many(self, items: list[tuple[Program, int]]) -> list[Outcome]:
        if len(items) == 1 or self.jobs == 1:
            return [self._one(it) for it in items]
        with ThreadPoolExecutor(self.jobs) as pool:
            return list(pool.map(self._one, items))


class EmulatorRunner(Runner):
    """The emulated path: the interpreter through the emulator backend, against the oracle."""

    name = "emulator"

    def __init__(self, arch: str = "sm_90a", cases: int = 4):
        super().__init__(arch, cases)
        self.backend = ProgramEmulator(semantics=oracle_mma)
        self.options += ["--cases", str(cases)] + (["--arch", arch] if arch != "sm_90a" else [])

    def info(self) -> dict:
        return {**super().info(), **self.backend.info()}

    def run_kernel(self, prep: _Prepared, order: np.ndarray):
        return self.backend.run(prep.ptx, [Launch(prep.kernel, prep.words, prep.kernel.out_words, order, 1)])[0]

    def check_many(self, items: list[tuple[Program, int]]) -> list[Outcome]:
        out = []
        for p, seed in items:
            prep = self.prepare(p, seed)
            if isinstance(prep, Outcome):
                out.append(prep)
                continue
            order = np.random.default_rng(seed).permutation(self.cases).astype(np.uint32)
            try:
                res = self.run_kernel(prep, order)
            except Exception as exc:  # the interpreter's own bug: a finding, not the end of the run
                out.append(_crashed(p, seed, exc))
                continue
            out.append(_verdict(p, seed, prep, res.out, res.error, self.cases))
        return out


def _refused(p: Program, seed: int, prep: _Prepared, err: str) -> Outcome:
    """ptxas would not build a legal program: it said why (refused), or it crashed or hung (crash)."""
    if "crashed" in err or "timed out" in err:
        return Outcome(p, seed, "fail", "crash", f"ptxas did not finish a legal program: {err}", ptx=prep.ptx)
    return Outcome(p, seed, "fail", "refused", f"ptxas refused a legal program: {first_error(err) or err}", ptx=prep.ptx)


def _crashed(p: Program, seed: int, exc: Exception) -> Outcome:
    tb = traceback.extract_tb(exc.__traceback__)[-1]
    return Outcome(p, seed, "fail", "generator", f"{type(exc).__name__}: {exc} ({Path(tb.filename).name}:{tb.lineno})")


def _verdict(p: Program, seed: int, prep: _Prepared, got, error: str | None, cases: int) -> Outcome:
    if error is not None:
        kind = "illegal" if error.startswith("illegal program") else "fault"
        return Outcome(p, seed, "fail", kind, error, cases, prep.ptx)
    why = compare(prep.kernel, prep.expected, got)
    return Outcome(p, seed, "fail" if why else "pass", "mismatch" if why else "", why or "", cases, prep.ptx)


class GpuRunner(Runner):
    """ptxas builds each program's cubin (a thread each, across the batch); PyCUDA launches it (a fault costs one program)."""

    name = "pycuda"
    RESTART_EVERY = 256  # programs per GPU worker: the worker keeps every module it loaded

    def __init__(self, ptxas: str | None = None, cases: int = 8, jobs: int | None = None):
        from ptxconf.backends import BackendError, get_backend

        exe, max_ptx = resolve_ptxas(ptxas)
        self.exe = exe
        self._get = lambda: get_backend("pycuda", build="jit", use_cache=False)  # loads the cubins built here
        try:
            self.backend = self._get()
            major, minor = self.backend.compute_capability()
        except BackendError as exc:
            raise BackendError(f"pycuda: {exc}") from None
        super().__init__(f"sm_{major}{minor}" + ("a" if major >= 9 else ""), cases, min(max_ptx, self.backend.max_ptx()))
        self.jobs = jobs or os.cpu_count() or 1
        self.launched = 0
        self.options += ["--cases", str(cases)] + (["--ptxas", ptxas] if ptxas else [])

    def info(self) -> dict:
        return {**super().info(), **self.backend.info(), "ptxas": ptxas_info(self.exe)["ptxas"]}  # the release, not the path: artifacts hold no machine paths

    def _build(self, prep: _Prepared) -> tuple[bytes | None, str]:
        return compile_cubin(prep.ptx, self.arch, self.exe, use_cache=False)

    def check_many(self, items: list[tuple[Program, int]]) -> list[Outcome]:
        preps = [self.prepare(p, seed) for p, seed in items]
        todo = [x for x in preps if not isinstance(x, Outcome)]
        with ThreadPoolExecutor(self.jobs) as pool:
            built = dict(zip(map(id, todo), pool.map(self._build, todo)))
        out = []
        for (p, seed), prep in zip(items, preps):
            if isinstance(prep, Outcome):
                out.append(prep)
                continue
            cubin, err = built[id(prep)]
            if cubin is None:
                out.append(_refused(p, seed, prep, err))
                continue
            if self.launched and self.launched % self.RESTART_EVERY == 0:
                self.backend.close()
                self.backend = self._get()
            self.launched += 1
            order = np.random.default_rng(seed).permutation(self.cases).astype(np.uint32)
            res = self.backend.run(cubin, [Launch(prep.kernel, prep.words, prep.kernel.out_words, order, 1)])[0]
            out.append(_verdict(p, seed, prep, res.out, res.error, self.cases))
        return out

    def close(self) -> None:
        self.backend.close()


# --- drawing, shrinking, the loop ----------------------------------------------------------------


def _settings(examples: int, shrinking: bool) -> settings:
    phases = [Phase.generate, Phase.shrink] if shrinking else [Phase.generate]
    return settings(max_examples=examples, database=None, deadline=None, phases=phases,
                    suppress_health_check=list(HealthCheck))


def draw_batch(batch_seed: int, arch: str = "sm_90a", max_ptx: PtxVersion = DEFAULT_MAX_PTX) -> list[Program]:
    """The :data:`BATCH` programs of a batch seed (the same on every machine, for the same specs)."""
    got: list[Program] = []

    def keep(p: Program) -> bool:
        got.append(p)
        return False

    try:
        find(programs(arch, max_ptx), keep, settings=_settings(BATCH, False), random=random.Random(batch_seed))
    except NoSuchExample:
        pass
    return got[:BATCH]


def shrink(runner: Runner, failing: Outcome, known: dict[str, Outcome], seconds: float = 60.0) -> Outcome:
    """The smallest program failing as ``failing`` does (same kind), drawn again from its batch seed.

    ``known`` holds the outcomes already seen (program JSON -> outcome); candidates after ``seconds``
    count as passing, so shrinking ends soon after."""
    end = time.monotonic() + seconds
    known = {**known, failing.program.to_json(): failing}

    def fails(p: Program) -> bool:
        key = p.to_json()
        out = known.get(key)
        if out is None:
            if time.monotonic() > end:
                return False
            out = known[key] = runner.check(p, failing.seed)
        return out.failed and out.kind == failing.kind

    try:
        small = find(programs(runner.arch, runner.max_ptx), fails, settings=_settings(BATCH, True),
                     random=random.Random(failing.seed // BATCH))
    except NoSuchExample:  # not drawn again (another version of the specs or of Hypothesis): shrink from here
        small = failing.program
    while True:  # the last pass: until no single simplification keeps failing
        small_next = next((q for q in simpler(small, runner.max_ptx) if fails(q)), None)
        if small_next is None:
            return known[small.to_json()]
        small = small_next


def replay_command(runner: Runner, seed: int) -> str:
    return shlex.join(["ptxconf", "programs", "replay", str(seed), "--backend", runner.name, *runner.options])


@dataclass
class Finding:
    original: Outcome
    shrunk: Outcome
    replay: str


@dataclass
class FuzzResult:
    programs: int = 0
    cases: int = 0
    seconds: float = 0.0
    shrink_seconds: float = 0.0
    batches: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # step kinds run
    findings: list[Finding] = field(default_factory=list)

    @property
    def programs_per_s(self) -> float:
        return self.programs / self.seconds if self.seconds else 0.0

    @property
    def cases_per_s(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0


def fuzz(runner: Runner, budget_s: float, first_seed: int = 0, shrink_s: float = 60.0, max_findings: int = 5,
         on_batch: Callable[[FuzzResult], None] | None = None) -> FuzzResult:
    """Batches from ``first_seed`` on until ``budget_s`` seconds have passed (shrinking is timed apart)."""
    res = FuzzResult()
    known: dict[str, Outcome] = {}
    t0 = time.monotonic()
    batch = first_seed
    while time.monotonic() - t0 - res.shrink_seconds < budget_s and len(res.findings) < max_findings:
        progs = draw_batch(batch, runner.arch, runner.max_ptx)
        items, seen = [], set()
        for i, p in enumerate(progs):
            key = p.to_json()
            if key not in known and key not in seen:
                seen.add(key)
                items.append((p, batch * BATCH + i))
        outcomes = runner.check_many(items)
        for out in outcomes:
            known[out.program.to_json()] = out
            res.programs += 1
            res.cases += out.cases
            for s in out.program.steps:
                res.kinds[s.kind] = res.kinds.get(s.kind, 0) + 1
        for out in outcomes:
            if out.failed and len(res.findings) < max_findings:
                t1 = time.monotonic()
                small = shrink(runner, out, known, shrink_s)
                res.shrink_seconds += time.monotonic() - t1
                res.findings.append(Finding(out, small, replay_command(runner, out.seed)))
        res.batches += 1
        batch += 1
        res.seconds = time.monotonic() - t0 - res.shrink_seconds
        if on_batch:
            on_batch(res)
    res.seconds = time.monotonic() - t0 - res.shrink_seconds
    return res


def replay(runner: Runner, seed: int, shrink_s: float = 60.0, shrinking: bool = True) -> tuple[Outcome, Outcome | None]:
    """The program of ``seed`` checked again, and shrunk when it fails (None when it passes)."""
    progs = draw_batch(seed // BATCH, runner.arch, runner.max_ptx)
    if seed % BATCH >= len(progs):
        raise ProgramError(f"seed {seed}: its batch has {len(progs)} programs")
    p = progs[seed % BATCH]
    out = runner.check(p, seed)
    if not out.failed:
        return out, None
    if not shrinking:
        return out, out
    # the batch's earlier programs stand for passes: shrinking only needs to reach this one again
    known = {q.to_json(): Outcome(q, seed, "pass") for q in progs[: seed % BATCH]}
    return out, shrink(runner, out, known, shrink_s)
