"""Reports: JUnit XML (with junit-xml), a JSON run summary, and JSON lines as results arrive.

JUnit: ``classname`` is the instruction family, ``name`` the variant id plus
check and seed, ``file`` the spec YAML; GPU, compute capability, driver, CUDA
and ptxas versions are testsuite properties.  A failure's text gives lane,
register, row, col, expected and actual bits, and the command that replays it.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from junit_xml import TestCase, TestSuite, to_xml_report_string

from conformance.core.verdict import Verdict
from conformance.spec.loader import Specs

__all__ = ["Record", "RunLog", "replay_command"]


def replay_command(variant: str, check: str, seed: int, backend: str) -> str:
    return f"ptxconf run --backend {backend} --select {shlex.quote(variant)} --check {check} --seed {seed}"


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
    """Collects records; writes JSON lines at once, JUnit and summary on flush."""

    out_dir: Path
    info: dict
    seed: int
    junit_path: Path | None = None
    records: list[Record] = field(default_factory=list)
    observed: dict = field(default_factory=dict)
    observed_index: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._jsonl = (self.out_dir / "results.jsonl").open("a", encoding="utf-8")

    def add(self, rec: Record) -> None:
        self.records.append(rec)
        self._jsonl.write(json.dumps(vars(rec)) + "\n")
        self._jsonl.flush()

    def add_verdict(self, specs: Specs, v: Verdict, seconds: float, backend: str) -> Record:
        variant = specs.variants.get(v.variant)
        details = v.details(variant)
        if v.status in ("fail", "error"):
            details += "\nreplay: " + replay_command(v.variant, v.check, v.seed, backend if backend != "replay" else "auto")
        rec = Record(
            v.variant,
            variant.family if variant else "unknown",
            variant.file if variant else "",
            v.check,
            v.seed,
            v.status,
            v.message,
            details,
            seconds,
        )
        self.add(rec)
        return rec

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
        import numpy as np

        np.savez_compressed(self.out_dir / "observed_maps.npz", **{k.replace("/", "_"): v for k, v in self.observed.items()})
        doc = {
            "device": self.info,
            "seed": self.seed,
            "about": "Observed [lane, element] -> (matrix, row, col) maps of each tagged operand, read back from D "
            "(relative to the spec's D map); arrays in observed_maps.npz under '<variant>|<operand>'.",
            "variants": self.observed_index,
        }
        (self.out_dir / "observed_maps.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def counts(self) -> Counter:
        return Counter(r.status for r in self.records)

    def flush(self, extra: dict | None = None) -> None:
        self.write_junit()
        self.write_observed()
        summary = {
            "seed": self.seed,
            **self.info_block(),
            "counts": dict(self.counts()),
            "failures": [r.name for r in self.records if r.status in ("fail", "error")],
            **(extra or {}),
        }
        (self.out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")

    def info_block(self) -> dict:
        return {"device": self.info}

    def write_junit(self) -> None:
        suites: dict[str, list[TestCase]] = {}
        for r in self.records:
            tc = TestCase(r.name, classname=r.family, elapsed_sec=r.seconds, file=r.file)
            if r.status == "fail":
                tc.add_failure_info(message=r.message, output=r.details)
            elif r.status == "error":
                tc.add_error_info(message=r.message, output=r.details)
            elif r.status == "skip":
                tc.add_skipped_info(message=r.message)
            suites.setdefault(r.family, []).append(tc)
        props = {k: str(v) for k, v in self.info.items()}
        props["seed"] = str(self.seed)
        xml = to_xml_report_string([TestSuite(f"ptx-conformance {fam}", cases, properties=props) for fam, cases in suites.items()])
        path = self.junit_path or (self.out_dir / "junit.xml")
        path.write_text(xml, encoding="utf-8")

    def close(self) -> None:
        self._jsonl.close()
