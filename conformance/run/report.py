"""Reports of a run: JSON lines as verdicts arrive, then JUnit, the summary and observed maps.

``results.jsonl`` is appended and flushed verdict by verdict, so a killed run keeps every
verdict it made.  ``summary.json`` exists from the first moment (``status: running``) and is
rewritten whole (atomically) now and then and at the end, ``complete`` or ``interrupted``.
JUnit and the observed lane maps are written once, at the end (an earlier version rewrote
JUnit after every variant: quadratic in the run's length).

JUnit (:mod:`ptxconf.junit`): ``name`` is ``variant:check:seed=S`` (the id ``--select``
and the pytest plugin use), ``classname`` is ``ptxconf.<label>.<family>`` so Jenkins splits it
into package and class sensibly and names stay unique across recorded runs; GPU, driver,
CUDA and ptxas versions are properties.  A failure's text gives lane, register, row, col,
expected and actual bits, and the command that replays it.  An ``undefined`` record (a check of
inputs the ISA leaves undefined) keeps what was observed as its message: neither a pass nor a
failure, in every report.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import socket
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from ptxconf import __version__
from ptxconf.core.safe_files import FileRefused, UntrustedFileError
from ptxconf.core.verdict import Verdict
from ptxconf.isa.loader import Specs
from ptxconf.junit import JUnitCase, RenderedCase, junit_string, render_case
from ptxconf.revision import git_revision

from .files import atomic_write
from .observations import read_observed_index, read_observed_maps, read_results_lines

__all__ = ["Record", "RunLog", "replay_command", "git_revision", "specs_hash", "relative_file"]


def replay_command(variant: str, check: str, seed: int, backend: str) -> str:
    """The line that runs one check again, alone, into a fresh ``--out ptxconf-replay/<variant>.<check>.seed<S>``:
    pasted anywhere, it never writes into (or asks to --force over) the run that printed it."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", f"{variant}.{check}.seed{seed}")
    return (f"ptxconf run --backend {backend} --select {shlex.quote(variant)} --check {shlex.quote(check)} "
            f"--seed {seed} --out {shlex.quote('ptxconf-replay/' + out)}")


@lru_cache(maxsize=256)  # a run asks once per verdict, of a handful of spec files
def relative_file(path: str) -> str:
    """A spec path as the repository names it (``specs/mma_sync.yaml``), never a machine's absolute path."""
    if not path:
        return ""
    p = Path(path)
    return f"{p.parent.name}/{p.name}" if p.is_absolute() else path


def specs_hash(specs: Specs) -> str:
    """sha256 over the spec files a run used (names and bytes), so two runs can tell whether their specs differ."""
    h = hashlib.sha256()
    for f in sorted(specs.files, key=lambda p: Path(p).name):
        h.update(Path(f).name.encode() + b"\0" + Path(f).read_bytes() + b"\0")
    return h.hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Record:
    variant: str
    family: str
    file: str
    check: str
    seed: int
    status: str
    message: str
    details: str
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.variant}:{self.check}:seed={self.seed}"


@dataclass
class RunLog:
    """Collects records; appends JSON lines at once; JUnit, observed maps and the final summary at the end."""

    out_dir: Path
    info: dict
    seed: int
    junit_path: Path | None = None
    label: str | None = None
    flavor: str = "jenkins"
    header: dict = field(default_factory=dict)  # run facts for summary.json (command, spec hash, ...)
    records: list[Record] = field(default_factory=list)
    observed: dict = field(default_factory=dict)
    observed_index: dict = field(default_factory=dict)
    started: str = field(default_factory=_now)

    def __post_init__(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.label = self.label or self.out_dir.resolve().name
        self._jsonl = (self.out_dir / "results.jsonl").open("a", encoding="utf-8")
        self._rendered: list[tuple[Record, RenderedCase]] = []  # the records' testcases, made as they come

    def load_recorded(self, keep: set[tuple[str, str]]) -> int:
        """A resumed run: the verdicts already made (``keep``: (variant, check)) count as this run's; the rest
        (skips, cut lines) are dropped from results.jsonl, since they are made again."""
        path = self.out_dir / "results.jsonl"
        kept = []
        if path.exists():
            for _number, doc in read_results_lines(path):  # a line cut by a kill is skipped: made again
                try:
                    rec = Record(**doc)
                except TypeError:  # not an object of a record's fields (recorded_done refused foreign lines)
                    continue
                if (rec.variant, rec.check) in keep and rec.status != "skip":
                    kept.append(rec)
        self._jsonl.close()
        atomic_write(path, "".join(json.dumps(vars(r)) + "\n" for r in kept))
        self._jsonl = path.open("a", encoding="utf-8")
        self.records.extend(kept)
        n = len(kept)
        maps = self.out_dir / "observed_maps.npz"
        index = self.out_dir / "observed_maps.json"
        if maps.exists() and index.exists():
            try:
                self.observed.update(read_observed_maps(maps))
                self.observed_index.update(read_observed_index(index))
            except FileRefused:
                raise
            except (UntrustedFileError, AttributeError):  # damaged: the resumed run records its maps again
                pass
        return n

    def add(self, rec: Record) -> None:
        rec.file = relative_file(rec.file)
        self._jsonl.write(json.dumps(vars(rec)) + "\n")
        self._jsonl.flush()
        self.records.append(rec)  # after the write: a summary never counts a verdict results.jsonl lacks
        self._render()

    def add_verdicts(self, specs: Specs, verdicts: list[Verdict], seconds: float, backend: str) -> None:
        """One variant's verdicts in one write: a resumed run finds all of them or, after a kill, a cut line."""
        recs = [self._record(specs, v, seconds, backend) for v in verdicts]
        for rec in recs:
            rec.file = relative_file(rec.file)
        self._jsonl.write("".join(json.dumps(vars(r)) + "\n" for r in recs))
        self._jsonl.flush()
        self.records.extend(recs)  # after the write (a full disk): a summary never counts what results.jsonl lacks
        self._render()

    def add_verdict(self, specs: Specs, v: Verdict, seconds: float, backend: str) -> Record:
        rec = self._record(specs, v, seconds, backend)
        self.add(rec)
        return rec

    def _record(self, specs: Specs, v: Verdict, seconds: float, backend: str) -> Record:
        variant = specs.variants.get(v.variant)
        details = v.details(variant)
        if v.status in ("fail", "error"):
            details += "\nreplay: " + (v.replay or replay_command(v.variant, v.check, v.seed,
                                                               backend if backend != "replay" else "auto"))
        return Record(v.variant, variant.family if variant else "unknown", variant.file if variant else "", v.check,
                      v.seed, v.status, v.message, details, seconds)

    def add_observed(self, variant: str, operand: str, layout: str, observed, spec) -> None:
        """Keep an observed lane map (from a map check) for observed_maps.npz/json."""
        self.observed[f"{variant}|{operand}"] = observed
        differ = int((observed != spec).any(axis=-1).sum())
        self.observed_index.setdefault(variant, {})[operand] = {
            "layout": layout,
            "agrees_with_spec": differ == 0,
            "slots_differing": differ,
        }

    def write_observed(self) -> None:
        if not self.observed:
            return
        import io

        import numpy as np

        buf = io.BytesIO()
        np.savez_compressed(buf, **{k.replace("/", "_"): v for k, v in self.observed.items()})
        atomic_write(self.out_dir / "observed_maps.npz", buf.getvalue())
        doc = {
            "device": self.info,
            "seed": self.seed,
            "about": "Observed [lane, element] -> (matrix, row, col) maps of each tagged operand, read back from D "
            "(relative to the spec's D map); arrays in observed_maps.npz under '<variant>|<operand>'.",
            "variants": self.observed_index,
        }
        atomic_write(self.out_dir / "observed_maps.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def counts(self) -> Counter:
        return Counter(r.status for r in self.records)

    def write_summary(self, status: str, extra: dict | None = None) -> None:
        """summary.json, whole: ``running`` while the run goes on, ``complete`` or ``interrupted`` at the end."""
        summary = {
            "status": status,
            "seed": self.seed,
            "label": self.label,
            "started": self.started,
            "updated": _now(),
            "tool_version": __version__,
            "hostname": socket.gethostname(),
            "device": self.info,
            **self.header,
            "counts": dict(self.counts()),
            "failures": [r.name for r in self.records if r.status in ("fail", "error")],
            **(extra or {}),
        }
        atomic_write(self.out_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")

    def flush(self, extra: dict | None = None, status: str = "complete") -> None:
        """The end of a run: JUnit, observed maps, then the summary (last, so ``complete`` means all is written)."""
        self.write_junit()
        self.write_observed()
        self.write_summary(status, extra)

    def info_block(self) -> dict:
        return {"device": self.info}

    def junit_cases(self) -> list[JUnitCase]:
        return [self._junit_case(r) for r in self.records]

    def _junit_case(self, r: Record) -> JUnitCase:
        return JUnitCase(r.name, f"ptxconf.{self.label}.{r.family.replace('.', '_').replace(':', '_')}", r.seconds,
                         r.status, r.message, r.details, r.file)

    def _render(self, whole: bool = False) -> None:
        """The testcases of the records added since the last call: made while a run goes on, so that the JUnit at
        its end only joins them (a whole suite's 16,302 took a fifth of a second to build there).  ``whole``: every
        record checked to be the one rendered (the records are appended to; where anything else changed them, they
        are made again from there), else only the last."""
        done, records = self._rendered, self.records
        same = min(len(done), len(records))
        if whole:
            same = next((i for i in range(same) if records[i] is not done[i][0]), same)
        elif same and records[same - 1] is not done[same - 1][0]:
            same = 0
        del done[same:]
        done.extend((r, render_case(self._junit_case(r), self.flavor)) for r in records[same:])  # type: ignore[arg-type]

    def write_junit(self) -> None:
        props = {k: str(v) for k, v in self.info.items()}
        props["seed"] = str(self.seed)
        props.update({k: str(v) for k, v in self.header.items() if v is not None})
        self._render(whole=True)
        xml = junit_string(f"ptx-conformance {self.label}", [rendered for _, rendered in self._rendered], props,
                           self.started, socket.gethostname(), self.flavor)
        atomic_write(self.junit_path or (self.out_dir / "junit.xml"), xml)

    def close(self) -> None:
        self._jsonl.close()

    def close_quietly(self) -> None:
        """Close results.jsonl where a write already failed (a full disk): its unwritten tail is dropped, not raised."""
        try:
            self._jsonl.close()
        except OSError:
            pass
