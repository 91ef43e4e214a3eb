"""One ``ptxconf run`` from start to finish: the directory, the lock, signals, progress, the verdicts.

What a run promises: no verdict made is lost (each is flushed to results.jsonl as it is made);
no partial run reads as complete (summary.json says ``running`` from the first second, then
``complete`` or ``interrupted`` with what was not run); one writer per directory (a lock).
SIGINT/SIGTERM/SIGHUP (:mod:`ptxconf.run.signals`) stop launching new work, finish the module in flight,
write the reports and exit 130/143; a second signal writes the summary and exits at once.  A closed
stdout (``| head -1``) stops the printing, never the run.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptxconf.backends.base import backend_label
from ptxconf.core.family import family_of
from ptxconf.core.verdict import UNDEFINED, labelled

from .devicevalues import CHECK as DEVICE_CHECK
from .devicevalues import drawn_on_device
from .exit import ExitStatus
from .files import RunLock, clear_run, holds_a_run
from .observations import (
    append_device_value,
    has_observation,
    read_device_values,
    read_results_lines,
    read_summary,
    result_record,
)
from .report import Record, RunLog
from .runner import RunRequest, run_variants
from .signals import StopSignals
from .stages import Stages, process_started

__all__ = ["RunSession", "UsageError", "prepare_out_dir", "recorded_done", "take_lock", "say"]

PROGRESS_EVERY_S = 10.0


def say(text: str, stream=None) -> bool:
    """Print a line for people; False (and stdout silenced for good) when its reader is gone (``| head -1``):
    the run goes on and still writes every file."""
    stream = stream or sys.stdout
    try:
        print(text, file=stream, flush=True)
        return True
    except BrokenPipeError:
        if stream is sys.stdout:  # the interpreter's own flush at exit would fail again: point it at /dev/null
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass
        return False


class UsageError(Exception):
    """A usage or environment problem: one line to stderr, exit 2."""


def prepare_out_dir(out: Path, force: bool, resume: bool) -> None:
    """Refuse a directory that holds another run unless asked to clear (--force) or continue (--resume) it."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    if force and resume:
        raise UsageError("--force clears the directory and --resume continues it: give one")
    if out.is_dir() and holds_a_run(out):
        if force:
            holder = RunLock(out).held_by()
            if holder:  # --force must not delete the files of a run that is still writing them
                raise UsageError(holder)
            clear_run(out)
        elif not resume:
            raise UsageError(f"--out {out} holds another run; give --force to replace it or --resume to continue it")


def recorded_done(out: Path, seed: int) -> set[tuple[str, str]]:
    """(variant, check) pairs an earlier run in ``out`` recorded at ``seed`` (a cut last line is skipped).

    A variant's verdicts are written in one piece, so a variant with any recorded verdict is done, unless its
    observation is missing (a kill between the verdicts and the observation written after them): it runs again,
    so that every recorded verdict of the finished run can be replayed."""
    doc, _ = read_summary(out)  # unreadable: no seed to hold the resume to
    recorded_seed = doc.get("seed")
    observations = "--no-observations" not in str(doc.get("command", "")).split()
    on_device = {rec["variant"] for _, rec, _ in read_device_values(out / "observations")
                 if rec is not None and rec.get("seed") == seed} if observations else set()
    if recorded_seed is not None and recorded_seed != seed:
        raise UsageError(f"--resume: {out} was run with --seed {recorded_seed}, not {seed}")
    done = set()
    compared: dict[str, bool] = {}
    path = out / "results.jsonl"
    if path.exists() or path.is_symlink():
        for number, r in read_results_lines(path):  # a line cut by a kill is skipped: that verdict is made again
            r = result_record(r, f"{path}:{number}")  # a line a run never wrote (``[1,2]``): one line, exit 2
            if r.get("seed") == seed and r.get("status") != "skip":
                done.add((r["variant"], r["check"]))
                compared.setdefault(r["variant"], r.get("status") != "error")
    if observations:  # a variant compared (not an error) but with no observation on disk is made again
        missing = {v for v, ok in compared.items() if ok and not has_observation(out / "observations", v, seed)}
        # A value check the device made is kept by its own record (:mod:`ptxconf.run.devicevalues`).
        done = {(v, c) for v, c in done if v not in missing or (_is_value(c) and v in on_device)}
    return done


def _is_value(check: str) -> bool:
    """``value`` or one of its kernels' checks (``value[...]``): what the device makes with ``--values device``."""
    return check.split("[", 1)[0] == DEVICE_CHECK


def totals(c: Counter) -> str:
    """``N passed, N failed, N errors, N skipped``, then ``, N undefined`` where there are any."""
    text = f"{c.get('pass', 0)} passed, {c.get('fail', 0)} failed, {c.get('error', 0)} errors, {c.get('skip', 0)} skipped"
    return text + (f", {c[UNDEFINED]} undefined" if c.get(UNDEFINED) else "")


class Progress:
    """A tqdm bar on a terminal; otherwise a line every few seconds and at each family change (CI logs)."""

    def __init__(self, total: int, quiet: bool, stream=None):
        self.total, self.done, self.quiet = total, 0, quiet
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.bar = None
        self.t0 = self.last = time.monotonic()
        self.family: str | None = None
        self.counts: Counter = Counter()
        if self.tty and not quiet:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="variant", desc="ptxconf run", file=self.stream)

    def update(self, n: int, family: str, statuses: list[str]) -> None:
        self.done += n
        self.counts.update(statuses)
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if self.quiet or (family == self.family and now - self.last < PROGRESS_EVERY_S and self.done < self.total):
            self.family = family
            return
        self.family, self.last = family, now
        rate = self.done / max(now - self.t0, 1e-9)
        self.quiet = not say(f"ptxconf run: {self.done}/{self.total} variants ({family}), {totals(self.counts)}, "
                             f"{now - self.t0:.0f} s, {rate:.1f} variants/s", self.stream)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@dataclass(repr=False)
class RunSession:
    """Everything one run needs besides the backend: where it writes, what it selected, how it stops."""

    specs: object
    variants: list
    out_dir: Path
    log: RunLog
    seed: int
    checks: tuple[str, ...] | None
    cases: int
    save_observations: bool = True
    quiet: bool = False
    verbose: bool = False
    skip_done: set = field(default_factory=set)
    signals: StopSignals | None = None  # the CLI's, installed before anything else; None: the session's own
    variants_done: set = field(default_factory=set)
    cases_run: int = 0
    jobs: int = 1  # processes that plan (1: in this one)
    t0: float = field(default_factory=time.monotonic)
    backend_stats: dict = field(default_factory=dict)
    stages: Stages = field(default_factory=Stages)  # seconds per stage of this run (summary.json ``stages_s``)
    # ``--values device``: makes the workers of the value checks the device draws (given those variants), else None.
    device_values: Callable[[list], Any] | None = None
    _done_variants: set | None = None

    def __repr__(self) -> str:  # never the specs and variants (a signal or a fork once formatted them: seconds)
        return f"RunSession({self.out_dir}, {len(self.variants)} variants, seed {self.seed})"

    def stop_requested(self) -> bool:
        return self.signals is not None and self.signals.requested

    @property
    def signal_seen(self) -> int | None:
        return self.signals.seen if self.signals is not None else None

    def _write_summary(self, status: str) -> None:
        not_run = [v.id for v in self.variants if v.id not in self.variants_done]
        extra = {"variants_selected": len(self.variants), "variants_done": len(self.variants_done), "cases": self.cases_run,
                 "wall_s": round(time.monotonic() - self.t0, 3)}
        if status != "complete":
            extra["variants_not_run"] = not_run
        if self.backend_stats:
            extra["backend_stats"] = self.backend_stats
        extra["stages_s"] = self.stages.rounded()
        marks = self.stages.marks()
        if "start" in marks:
            extra["timeline_s"] = self.stages.timeline(marks["start"])
        self.log.write_summary(status, extra)

    def run(self, backend) -> int:
        """Run every selected variant; the exit status.  A file that cannot be written (a full disk) stops the
        run with one line (UsageError, exit 2); summary.json then says ``interrupted`` or keeps ``running``."""
        own = self.signals is None
        if own:  # a session started without the CLI (a test, a library caller) takes the signals itself
            self.signals = StopSignals().install()
        try:
            return self._run(backend)
        except OSError as exc:
            self.log.close_quietly()
            raise UsageError(f"the run stopped: cannot write its files: {exc}; summary.json does not say complete, "
                             "results.jsonl keeps the verdicts recorded") from None
        finally:
            if own:
                self.signals.release()

    def _run(self, backend) -> int:
        assert self.signals is not None
        self.signals.writing()  # the directory is the run's now: a signal is a request it finishes cleanly
        self.stages = Stages()
        self.stages.mark("start")
        began = process_started()
        if began is not None:  # what the process spent before the run's first step (imports, specs, the GPU's start)
            self.stages.mark("process_start", began)
        self._write_summary("running")
        self.signals.on_second(lambda: self._write_summary("interrupted"))
        if self.signals.requested:  # a signal during start-up: nothing runs, the summary says so
            self._finish("interrupted")
            return self.signals.exit_status
        progress = Progress(len(self.variants), self.quiet)
        last_summary = [time.monotonic()]
        on_device = self.device_values is not None
        elsewhere = frozenset(v.id for v in self.variants if drawn_on_device(v)) if on_device else frozenset()
        request = RunRequest(self.seed, self.checks, self.cases, jobs=self.jobs,
                             observations=self.out_dir / "observations" if self.save_observations else None,
                             words_done_after_outcome=True, values_elsewhere=elsewhere)
        # What is left of each variant: its checks planned here, and its value check where the device makes it.
        parts: dict[str, int] = {}
        todo, device_todo = [], []
        value_done = {vid for vid, c in self.skip_done if _is_value(c)}  # a resumed run's, recorded
        host_done = {vid for vid, c in self.skip_done if not _is_value(c)}
        for v in self.variants:
            here = not on_device or bool(family_of(v).checks_of(v, request.checks_for(v)))
            there = v.id in elsewhere and any(_is_value(c) for c in family_of(v).checks_of(v, self.checks))
            if here and not (v.id in host_done if on_device else self._all_done(v)):
                todo.append(v)
                parts[v.id] = parts.get(v.id, 0) + 1
            if there and v.id not in value_done:
                device_todo.append(v)
                parts[v.id] = parts.get(v.id, 0) + 1
        self.variants_done |= {v.id for v in self.variants if v.id not in parts}
        progress.update(len(self.variants) - len(parts), "resumed", [])

        def part_done(v, statuses: list[str]) -> None:
            parts[v.id] -= 1
            if not parts[v.id]:
                self.variants_done.add(v.id)
            progress.update(0 if parts[v.id] else 1, family_of(v).name, statuses)  # a variant counts once it is done
            if time.monotonic() - last_summary[0] > PROGRESS_EVERY_S:
                self._write_summary("running")
                last_summary[0] = time.monotonic()

        def on_outcome(outcome) -> None:
            with self.stages("report"):
                record(outcome)
                if device is not None:
                    for results in device.ready():
                        record_device(results)

        def record(outcome) -> None:
            v = outcome.variant
            per = outcome.seconds / max(1, len(outcome.verdicts))
            self.log.add_verdicts(self.specs, outcome.verdicts, per, backend.name)
            for verdict in outcome.verdicts:
                if verdict.observed is not None:
                    target = verdict.check.split(".", 1)[1]
                    op = v.operands[target]
                    self.log.add_observed(verdict.variant, target, op.layout.name, verdict.observed, op.layout.map())
            self.cases_run += outcome.cases
            part_done(v, [vd.status for vd in outcome.verdicts])

        def record_device(results: list) -> None:
            """A variant's value checks that the device made: their records (what a replay checks) first, then their
            verdicts, in one write."""
            for r in results:
                if r.record is not None and request.observations is not None:
                    append_device_value(request.observations, r.record)
            per = sum(r.seconds for r in results) / len(results)
            self.log.add_verdicts(self.specs, [r.verdict for r in results], per, backend.name)
            self.cases_run += sum(r.cases for r in results)
            self.stages.add("device_values_cpu", sum(r.cpu for r in results))
            part_done(self.specs.variants[results[0].verdict.variant], [r.verdict.status for r in results])

        def on_skip(v, why) -> None:
            checks = family_of(v).checks_of(v, request.checks_for(v))  # a value check made elsewhere says its own
            for check in checks:
                self.log.add(Record(v.id, v.family, v.file, check, self.seed, "skip", why, why))
            part_done(v, ["skip"] * len(checks))

        device = None
        try:
            if device_todo and self.device_values is not None:  # forked before the pipeline's workers and threads
                device = self.device_values(device_todo).start()
            backend.set_stop(self.stop_requested)
            run_variants(backend, todo, request, on_outcome, on_skip, stop=self.stop_requested, stages=self.stages)
            if device is not None:
                with self.stages("device_values_wait"):
                    for results in device.ready(wait_all=True, stop=self.stop_requested):
                        record_device(results)
                self.stages.mark("device_values_done")
        except BaseException:  # killed from inside (KeyboardInterrupt, a crash): keep what was done, say so
            try:
                self._finish("interrupted")
            except OSError:  # the disk that stopped the run may refuse the reports too: the first error is the one
                pass
            raise
        finally:
            progress.close()
            if device is not None:
                device.close()
        self.stages.mark("ran")
        self.backend_stats = backend.stats()
        if device is not None:
            self.backend_stats["device_values"] = {"workers": len(device.slots), "restarts": device.restarts,
                                                   "devices": device.info[:1]}
        everything = len(self.variants_done) == len(self.variants)
        self._finish("complete" if everything or not self.signals.requested else "interrupted")
        return self.signals.exit_status if self.signals.requested else self.exit_status()

    def _finish(self, status: str) -> None:
        """JUnit and observed maps, then the summary last: ``complete`` only once everything is written."""
        self.log.write_junit()
        self.log.write_observed()
        self.stages.mark("reported")
        self._write_summary(status)

    def _all_done(self, v) -> bool:
        if not self.skip_done:
            return False
        if self._done_variants is None:
            self._done_variants = {vid for vid, _ in self.skip_done}
        return v.id in self._done_variants

    def exit_status(self) -> ExitStatus:
        c = self.log.counts()
        if c.get("fail") or c.get("error"):
            return ExitStatus.FAIL
        if not c.get("pass") and not c.get(UNDEFINED):  # an undefined observation ran: something did
            return ExitStatus.NOTHING_RAN
        return ExitStatus.OK

    def print_outcome(self, wall: float) -> None:
        """Failure details first, the one-line total last (what a CI log shows at its end); a reader that is gone
        (``| head -1``) ends the printing, nothing else."""
        c = self.log.counts()
        lines: list[str] = []
        shown = 0
        for r in self.log.records:
            if r.status in ("fail", "error"):
                if self.verbose or shown < 20:
                    lines.append(f"\n{r.status.upper()} {r.name}\n{r.details}")
                shown += 1
        if shown > 20 and not self.verbose:
            lines.append(f"\n... and {shown - 20} more failures (all in {self.out_dir / 'results.jsonl'}; -v lists them here)")
        undefined = [r for r in self.log.records if r.status == UNDEFINED]
        if undefined:
            lines.append("")
        for r in undefined[: None if self.verbose else 20]:
            lines.append(f"{r.name}: {labelled(r.status, r.message)}")
        if len(undefined) > 20 and not self.verbose:
            lines.append(f"... and {len(undefined) - 20} more undefined observations (-v lists them here)")
        not_run = len(self.variants) - len(self.variants_done)
        state = "" if self.signal_seen is None or not not_run else " (interrupted: summary.json lists what was not run)"
        lines += ["", f"{totals(c)} in {wall:.1f} s ({self.cases_run} cases) on {backend_label(self.log.info)} -> "
                      f"{self.out_dir}{state}"]
        say("\n".join(lines))


def take_lock(out: Path) -> RunLock:
    lock = RunLock(out)
    try:
        lock.acquire()
    except Exception as exc:
        raise UsageError(str(exc)) from None
    if lock.warning:
        print(f"ptxconf run: {lock.warning}", file=sys.stderr)
    return lock
