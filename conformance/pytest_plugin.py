"""pytest plugin: the conformance suite as pytest items, one per (variant, check, seed).

    pytest -p ptxconf.pytest_plugin --ptxconf-select 'mma.sync*' --ptxconf-backend emulator
    pytest --pyargs ptxconf [--ptxconf-...]   (installed: the ``pytest11`` entry point loads this module)

Why: a validation team's CI already speaks pytest (``-k``, ``--lf``, ``--junitxml``, pytest-xdist, ``--tx ssh=...``),
so the suite plugs into it with no runner of its own.  Each item's name is ``ptxconf run``'s JUnit name,
``<variant>:<check>:seed=<seed>``, and pytest's ``--junitxml`` writes that same name (a variant id may hold ``::``,
which pytest's own JUnit naming would split, so the plugin sets the name attribute itself).

Each variant's plan is made and run once (``ptxconf.run.runner.plan_groups`` / ``run_module``, the run loop
of ``ptxconf run``) when its first item runs; without xdist the following selected variants join that module, as in
``ptxconf run``; each item then reports its own check's verdict, with the lane-level explanation and the command that
replays it.  With pytest-xdist every worker pins one GPU (``CUDA_VISIBLE_DEVICES``, set before CUDA starts) and
``-n auto`` starts one worker per visible GPU.

``--ptxconf-undefined`` adds the checks of inputs the ISA leaves undefined (``ptxconf run --undefined``): their
items are skipped with the label "undefined by the ISA: <what the hardware did>", never passed or failed.  A check a
family makes as several verdicts (``value[...]``, one per kernel) is one item, failed if any of them fails.

The plugin does nothing (adds options only) unless a ``--ptxconf-*`` option is given or ``--pyargs ptxconf``
names this package; when active and no test paths are given, only the suite's items are collected.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ptxconf.core.verdict import UNDEFINED, labelled

__all__ = ["worker_device", "visible_devices", "PtxconfItem"]

_OPTIONS = ("ptxconf_select", "ptxconf_backend", "ptxconf_seed", "ptxconf_check", "ptxconf_cases", "ptxconf_specs",
            "ptxconf_undefined")
_PACKAGE = "ptxconf"
_SUITE = pytest.StashKey["_Suite"]()
_BATCH = 128  # variants per module at most (ptxconf run's MODULE_PLANS)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ptxconf", "PTX conformance suite (ptxconf.pytest_plugin)")
    group.addoption("--ptxconf-select", action="append", metavar="GLOB",
                    help="variant id, prefix or glob (repeatable; default: every variant)")
    group.addoption("--ptxconf-backend", choices=["auto", "pycuda", "emulator"], default=None,
                    help="auto (default: PyCUDA when a GPU answers, else the emulator), pycuda or emulator")
    group.addoption("--ptxconf-seed", action="append", type=int, metavar="S", help="seed (repeatable; default 0)")
    group.addoption("--ptxconf-check", action="append", metavar="CHECK",
                    help="value, map.A, map.B, map.C, ... (repeatable; default: each family's checks)")
    group.addoption("--ptxconf-cases", type=int, default=None, metavar="N",
                    help="random cases per variant for the value check (default 8)")
    group.addoption("--ptxconf-specs", metavar="DIR", default=None,
                    help="spec directory (default: the specs shipped with the suite)")
    group.addoption("--ptxconf-undefined", action="store_true", default=None,
                    help="add the checks of inputs the ISA leaves undefined (skipped items that report what was observed)")


def _active(config: pytest.Config) -> bool:
    """True when asked for: a --ptxconf-* option, or ``--pyargs ptxconf``."""
    if any(config.getoption(name, None) is not None for name in _OPTIONS):
        return True
    if config.getoption("pyargs", False):
        return any(a.split("::")[0] == _PACKAGE for a in config.args)
    return False


# --- one GPU per xdist worker ------------------------------------------------------------------------------------


def _nvidia_smi_count() -> int:
    """GPUs ``nvidia-smi -L`` lists (0 without a driver)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU ")) if out.returncode == 0 else 0


def visible_devices(visible: str | None, gpu_count: Callable[[], int] = _nvidia_smi_count) -> list[str]:
    """The caller's devices: its CUDA_VISIBLE_DEVICES entries, else every GPU nvidia-smi finds."""
    if visible is not None:
        return [e.strip() for e in visible.split(",") if e.strip()]
    return [str(i) for i in range(gpu_count())]


def worker_device(worker: str | None, visible: str | None, gpu_count: Callable[[], int] = _nvidia_smi_count) -> str | None:
    """CUDA_VISIBLE_DEVICES for xdist worker ``gw<N>``: entry N (mod their count) of the caller's devices.

    None (leave it alone) outside xdist or when there are fewer than two devices to share out.
    """
    m = re.fullmatch(r"gw(\d+)", worker or "")
    if not m:
        return None
    devices = visible_devices(visible, gpu_count)
    if len(devices) < 2:
        return None
    return devices[int(m[1]) % len(devices)]


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` on a GPU backend: one worker per visible GPU (the emulator keeps xdist's CPU count)."""
    if not _active(config) or config.getoption("ptxconf_backend") == "emulator":
        return None
    return len(visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"))) or None


# --- configuration and collection --------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if not _active(config):
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER") or getattr(config, "workerinput", {}).get("workerid")
    if config.getoption("ptxconf_backend") != "emulator":
        device = worker_device(worker, os.environ.get("CUDA_VISIBLE_DEVICES"))
        if device is not None:  # before any backend exists: CUDA reads it once, when it starts
            os.environ["CUDA_VISIBLE_DEVICES"] = device
    config.stash[_SUITE] = _Suite(config, in_xdist_worker=worker is not None)
    config.pluginmanager.register(_JUnitNames(config), "ptxconf-junit-names")


def pytest_unconfigure(config: pytest.Config) -> None:
    suite = config.stash.get(_SUITE, None)
    if suite is not None:
        suite.close()


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    suite = config.stash.get(_SUITE, None)
    if suite is None:
        return None
    checks = " ".join(suite.requested or ("default",)) + (" + undefined" if suite.undefined else "")
    return [f"ptxconf: backend {suite.backend_name}, seeds {suite.seeds}, checks {checks}, "
            f"specs {suite.specs_dir or 'shipped'}"]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With no test paths given (or ``--pyargs ptxconf``), collect the suite's items only."""
    if config.stash.get(_SUITE, None) is None:
        return None
    if getattr(config, "args_source", None) != pytest.Config.ArgsSource.ARGS:
        return True
    package = Path(__file__).resolve().parent
    return True if collection_path.resolve().is_relative_to(package) else None


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so they apply to the suite's items too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    suite = config.stash.get(_SUITE, None)
    if suite is None:
        return
    collector = PtxconfCollector.from_parent(session, name="ptxconf", nodeid="ptxconf")
    ours = list(collector.collect())
    # Reported as collected, so "collected N items" and --collect-only count them.
    config.hook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, ours))
    items[:0] = ours


class _JUnitNames:
    """Keeps the JUnit name whole: pytest's --junitxml splits a node id at ``::`` (``kind::f8f6f4``)."""

    def __init__(self, config: pytest.Config):
        self.config = config

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        outcome = yield
        if isinstance(item, PtxconfItem):  # a plain attribute: it travels with the report from an xdist worker
            outcome.get_result().ptxconf_junit = [item.name, item.classname]

    @pytest.hookimpl(tryfirst=True)  # before junitxml's own, which keeps attributes set earlier
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        names = getattr(report, "ptxconf_junit", None)
        if not names:
            return
        try:
            from _pytest.junitxml import xml_key
        except ImportError:  # pytest moved it: such names are then split in --junitxml
            return
        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            reporter = xml.node_reporter(report)
            reporter.add_attribute("name", names[0])
            reporter.add_attribute("classname", names[1])


class PtxconfCollector(pytest.Collector):
    """The suite's items, in spec order: variant, then seed, then check."""

    def collect(self) -> Iterator[PtxconfItem]:
        suite = self.config.stash[_SUITE]
        for v in suite.variants():
            fam = suite.family_of(v)
            for seed in suite.seeds:
                for check in fam.checks_of(v, suite.checks):
                    yield PtxconfItem.from_parent(self, name=f"{v.id}:{check}:seed={seed}", variant=v, check=check,
                                                  seed=seed, family=fam.name)


class PtxconfCheckFailed(Exception):
    """A check's verdict was fail or error; the text is the lane-level explanation and the replay command."""


class PtxconfItem(pytest.Item):
    """One check of one variant at one seed; the variant's plan runs when its first item needs it."""

    def __init__(self, *, variant: Any, check: str, seed: int, family: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.variant, self.check, self.seed, self.family = variant, check, seed, family
        self.classname = "ptxconf." + re.sub(r"[.:]", "_", family)  # as ptxconf run's, less the run label

    def runtest(self) -> None:
        suite = self.config.stash[_SUITE]
        result = suite.verdict(self)
        if isinstance(result, str):
            pytest.skip(result)
        if result.status in ("fail", "error"):
            raise PtxconfCheckFailed(suite.failure_text(result))
        if result.status == "skip":
            pytest.skip(result.message or "skipped")
        if result.status == UNDEFINED:  # an observation: neither a pass nor a failure
            pytest.skip(labelled(result.status, result.message))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, PtxconfCheckFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        line = getattr(self.variant, "line", None)
        # Not the bare name: pytest would print its dots as "::" (it takes a domain ending the node id for Class.method).
        return Path(self.variant.file or "specs"), (line - 1 if line else None), f"ptxconf {self.name}"


# --- the run -----------------------------------------------------------------------------------------------------


def _combined(verdicts: list[Any]) -> Any:
    """One item's verdict from its check's several (``check[...]``): the worst status, every message that says why."""
    from dataclasses import replace

    rank = {s: i for i, s in enumerate(("pass", "skip", UNDEFINED, "error", "fail"))}
    worst = max(verdicts, key=lambda vd: rank.get(vd.status, len(rank)))
    same = [vd for vd in verdicts if vd.status == worst.status]
    message = "; ".join(f"{vd.check}: {vd.message}" for vd in same if vd.message)
    return replace(worst, message=message, map_diff=[ln for vd in same for ln in vd.map_diff])


class _Suite:
    """Per session (per xdist worker): the specs, one backend, and the verdicts made so far."""

    def __init__(self, config: pytest.Config, in_xdist_worker: bool):
        self.config = config
        self.select = config.getoption("ptxconf_select")
        self.backend_name = config.getoption("ptxconf_backend") or "auto"
        self.seeds = config.getoption("ptxconf_seed") or [0]
        self.requested = tuple(config.getoption("ptxconf_check") or ()) or None
        self.undefined = bool(config.getoption("ptxconf_undefined"))
        self.checks: tuple[str, ...] | None = None  # resolved with the specs (names and globs)
        self.cases = config.getoption("ptxconf_cases") or 8
        self.specs_dir = config.getoption("ptxconf_specs")
        self.batch = 1 if in_xdist_worker else _BATCH  # a worker runs only what it is handed
        self._specs: Any = None
        self._backend: Any = None
        self._verdicts: dict[tuple[str, str, int], Any] = {}
        self._skipped: dict[tuple[str, int], str] = {}
        self._order: dict[str, int] | None = None

    # specs and families
    def specs(self) -> Any:
        if self._specs is None:
            from ptxconf.core.family import run_variants_of, select_checks
            from ptxconf.isa import SpecError, load_specs

            try:
                self.checks = select_checks(self.requested, self.undefined)
            except ValueError as exc:
                raise pytest.UsageError(f"--ptxconf-check {exc}") from None
            try:
                self._specs = load_specs(self.specs_dir)
            except SpecError as exc:
                raise pytest.UsageError(f"ptxconf: {exc}") from None
            run_variants_of(self._specs)
        return self._specs

    def variants(self) -> list[Any]:
        specs = self.specs()
        chosen = specs.select(self.select) if self.select else list(specs.variants.values())
        if not chosen:
            raise pytest.UsageError(f"--ptxconf-select {' '.join(self.select or [])}: matches no variant")
        return chosen

    @staticmethod
    def family_of(v: Any) -> Any:
        from ptxconf.core.family import family_of

        return family_of(v)

    def backend(self) -> Any:
        if self._backend is None:
            from ptxconf.backends import BackendError, get_backend
            from ptxconf.oracle import mma

            try:
                self._backend = get_backend(self.backend_name, semantics=mma)
            except BackendError as exc:
                raise pytest.UsageError(f"ptxconf: backend {self.backend_name}: {exc}") from None
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    # verdicts
    def verdict(self, item: PtxconfItem) -> Any:
        """The item's Verdict, or the reason its variant cannot run here (a str)."""
        key = (item.variant.id, item.check, item.seed)
        if key not in self._verdicts and (item.variant.id, item.seed) not in self._skipped:
            self._run([item.variant, *self._ahead(item)], item.seed)
        why = self._skipped.get((item.variant.id, item.seed))
        if why is not None:
            return why
        mine = [vd for (vid, check, seed), vd in self._verdicts.items()
                if vid == item.variant.id and seed == item.seed and check.split("[")[0] == item.check]
        if not mine:
            raise AssertionError(f"ptxconf: the run of {item.variant.id} made no {item.check} verdict")
        return mine[0] if len(mine) == 1 else _combined(mine)

    def _ahead(self, item: PtxconfItem) -> list[Any]:
        """Later selected variants of the same family and seed, to share this module (none in an xdist worker)."""
        if self.batch <= 1:
            return []
        items = item.session.items
        if self._order is None:
            self._order = {it.nodeid: i for i, it in enumerate(items)}
        out: dict[str, Any] = {}
        for it in items[self._order.get(item.nodeid, len(items)) + 1:]:
            if len(out) >= self.batch - 1:
                break
            if not isinstance(it, PtxconfItem) or it.seed != item.seed or it.family != item.family:
                continue
            vid = it.variant.id
            if vid != item.variant.id and (vid, it.seed) not in self._skipped and (vid, it.check, it.seed) not in self._verdicts:
                out.setdefault(vid, it.variant)
        return list(out.values())

    def _run(self, variants: list[Any], seed: int) -> None:
        from ptxconf.run.runner import plan_groups, run_module

        def skipped(v: Any, why: str) -> None:
            self._skipped[(v.id, seed)] = why

        backend = self.backend()
        for plans in plan_groups(backend, variants, seed, self.checks, self.cases, on_skip=skipped).values():
            for outcome in run_module(backend, plans):
                for vd in outcome.verdicts:
                    self._verdicts[(vd.variant, vd.check, vd.seed)] = vd

    def failure_text(self, verdict: Any) -> str:
        """What ``ptxconf run`` prints for a failure: lanes, registers, expected/actual bits, the replay command."""
        from ptxconf.run.report import replay_command

        variant = self.specs().variants.get(verdict.variant)
        head = "ERROR " if verdict.status == "error" else ""
        return (f"{head}{verdict.details(variant)}\n"
                f"replay: {replay_command(verdict.variant, verdict.check, verdict.seed, self.backend().name)}")
