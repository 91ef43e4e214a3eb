"""Must-reject forms (``schema: refuse/1``, specs/refuse.yaml): neighbours of spec forms that the ISA forbids,
pinned from a neighbourhood campaign, and the ``refuse`` check that assembles them again.

A case a release refuses is a pinned regression case; one it accepts is a finding, known (``accepted_by``
records the release and target with the matrix instructions its SASS held) or new.  Only steps with an ISA
rule behind them are pinned: a type, shape or qualifier outside the form's table or syntax, a mandatory
qualifier dropped, a target below the Target ISA notes, a ``.version`` below the PTX ISA notes; qualifier
order is not pinned (the ISA writes one order and states no rule against another).  A refusal that blames the
operands is not pinned either: it would stand even if the form were valid.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ptxconf.isa.targets import PtxVersion
from ptxconf.isa.yamlsrc import Source

from .matrix import Toolchain
from .neighbourhood import CRASHED, EMPTIED, REFUSED, UNSPECIFIED, Neighbour, run_campaign

__all__ = ["RefuseCase", "RefuseSpec", "load_document", "refuse_spec", "check", "Outcome", "pin", "RULES",
           "ISA_RULE_MESSAGE"]

_SCHEMA_PATH = Path(__file__).with_name("refuse_schema.json")
# Why the ISA forbids what each step makes (the rule a pinned case stands on).
RULES = {
    "drop": "a qualifier the instruction's syntax makes mandatory, or that selects the form's table, is dropped",
    "add": "a qualifier the form's syntax does not take",
    "sibling": "a qualifier value the form's syntax does not list",
    "type": "a type the form's table does not list for this shape",
    "shape": "a shape the form's table does not list for these types",
    "target": "a target the Target ISA notes do not list",
    "version": "a .version below the one the PTX ISA notes introduce the form in",
}
# ptxas messages that name the form (not the operands) as the reason: the refusals worth pinning.
ISA_RULE_MESSAGE = re.compile(r"modifier|not supported|Unexpected instruction types|Illegal matrix shape|"
                              r"requires|Unknown|unknown|Illegal type|[Ii]nvalid", re.I)
_OPERANDS = re.compile(r"argument|operand|vector|number of", re.I)


@dataclass(frozen=True)
class RefuseCase:
    instruction: str
    base: str
    step: str
    change: str
    targets: tuple[str, ...]
    rule: str
    version: str | None = None
    accepted_by: dict = field(default_factory=dict, hash=False, compare=False)  # "release/target" -> SASS

    def neighbour(self, family: str) -> Neighbour:
        if self.step == "target":
            return Neighbour(f"{self.instruction} @{self.targets[0]}", self.instruction, self.base, "target",
                             self.change, family, target=self.targets[0])
        if self.step == "version":
            return Neighbour(f"{self.instruction} @.version {self.version}", self.instruction, self.base, "version",
                             self.change, family, version=PtxVersion.parse(self.version))
        return Neighbour(self.instruction, self.instruction, self.base, self.step, self.change, family)


@dataclass
class RefuseSpec:
    family: str
    file: str
    source: str
    cases: list[RefuseCase]


def load_document(doc: dict, src: Source) -> RefuseSpec:
    schema = json.loads(_SCHEMA_PATH.read_text())
    import jsonschema  # only where a file is checked

    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc),
                    key=lambda e: src.line(tuple(e.absolute_path)) or 0)
    if errors:
        err = errors[0]
        raise src.error(tuple(err.absolute_path), err.message.replace("Additional properties are not allowed", "unknown key"))
    cases, seen = [], set()
    for i, c in enumerate(doc["cases"]):
        if c["step"] == "version" and "version" not in c:
            raise src.error(("cases", i), "a version step names its .version")
        key = (c["instruction"], c["step"], tuple(c["targets"]), c.get("version"))
        if key in seen:
            raise src.error(("cases", i), f"case {c['instruction']} ({c['step']}) pinned twice")
        seen.add(key)
        cases.append(RefuseCase(c["instruction"], c["base"], c["step"], c["change"], tuple(c["targets"]), c["rule"],
                                c.get("version"), dict(c.get("accepted_by") or {})))
    return RefuseSpec(doc["family"], src.file, doc["source"], cases)


def refuse_spec(specs) -> RefuseSpec:
    """The loaded must-reject document of ``specs``."""
    doc = specs.documents.get("refuse")
    if doc is None:
        raise KeyError("no schema refuse/1 document among the specs")
    return doc


@dataclass(frozen=True)
class Outcome:
    case: RefuseCase
    target: str
    release: str
    status: str  # pinned | known-finding | new-finding | fixed | crashed
    said: str  # ptxas's message, or the SASS's matrix instructions


def check(spec: RefuseSpec, specs, cases: Sequence[RefuseCase], archs: Sequence[str] | None,
          toolchain: Toolchain, *, use_cache: bool = True, jobs: int = 1, sass: bool = False) -> list[Outcome]:
    """Assemble every case on each of its targets (those among ``archs`` where given) with one release; with
    ``sass``, an accepted case says which matrix instruction its SASS holds (a known one's is in ``accepted_by``)."""
    forms = {c.base: specs.variants[c.base] for c in cases if c.base in specs.variants}
    missing = [c.base for c in cases if c.base not in forms]
    if missing:
        raise KeyError(f"{spec.file}: base form {missing[0]} is not in the specs")
    by_targets: dict[tuple[str, ...], list[RefuseCase]] = defaultdict(list)
    for c in cases:
        ts = tuple(t for t in c.targets if archs is None or t in archs)
        if ts:
            by_targets[ts if c.step not in ("target", "version") else ()].append(c)
    out: list[Outcome] = []
    for targets, group in by_targets.items():
        ns = [c.neighbour(forms[c.base].family) for c in group]
        camp = run_campaign(ns, forms, list(targets), [toolchain], jobs=jobs, use_cache=use_cache, sass=sass)
        for (release, target, i), cell in sorted(camp.cells.items(), key=lambda kv: (kv[0][2], kv[0][1])):
            c = group[i]
            key = f"{release}/{target}"
            if cell.code == REFUSED:
                status = "fixed" if key in c.accepted_by else "pinned"
                said = cell.message
            elif cell.code == CRASHED:
                status, said = "crashed", cell.message
            else:
                status = "known-finding" if key in c.accepted_by else "new-finding"
                said = cell.sass or "accepted"
            out.append(Outcome(c, target, release, status, said))
    return out


def _cells(directory: Path) -> tuple[list[dict], list[str], list[str]]:
    words = json.loads((directory / "words.json").read_text())
    with gzip.open(directory / "cells.csv.gz", "rt") as fh:
        rows = list(csv.DictReader(io.StringIO(fh.read())))
    releases = [k for k in rows[0] if k not in ("neighbour", "step", "change", "base", "family", "target")] if rows else []
    return rows, releases, words


def pin(directories: Path | Sequence[Path], *, per_group: int = 6, source: str, keep: Sequence[RefuseCase] = (),
        base_ok: Callable[[str], bool] | None = None) -> str:
    """The YAML of specs/refuse.yaml from a neighbourhood campaign's files: for every (family, step, change class)
    up to ``per_group`` neighbours every release refused for a reason naming the form, and as many a release
    accepted (findings, with the releases and SASS; all of them are in the campaign's findings.json), each with
    its ISA rule.  ``keep``: cases pinned before, written first and never twice (new campaigns add to them);
    ``base_ok``: which base forms may be pinned (e.g. those the CI's ptxas can assemble)."""
    dirs = [directories] if isinstance(directories, Path) else list(directories)
    per: dict[tuple[str, str, str], dict] = {}
    groups: dict[tuple, list[str]] = defaultdict(list)
    for directory in dirs:
        rows, releases, words = _cells(directory)
        _pin_rows([r for r in rows if base_ok is None or base_ok(r["base"])], releases, words, per, groups)
    return _yaml(per, groups, per_group, source, keep)


def _pin_rows(rows: list[dict], releases: list[str], words: list[str], per: dict, groups: dict) -> None:
    for row in rows:
        if row["step"] == "reorder":
            continue
        codes = {r: row[r] for r in releases if row[r] != "-"}
        if not codes:
            continue
        accepted = {r: words[int(c[1:])] if c[1:] else "" for r, c in codes.items() if c[0] in (UNSPECIFIED, EMPTIED)}
        refused_for_form = all(c[0] == REFUSED and c[1:] and ISA_RULE_MESSAGE.search(words[int(c[1:])])
                               and not _OPERANDS.search(words[int(c[1:])]) for c in codes.values())
        if not accepted and not refused_for_form:
            continue
        key = (row["neighbour"], row["step"], row["base"])
        entry = per.setdefault(key, {"instruction": row["neighbour"].split(" @")[0], "base": row["base"],
                                     "step": row["step"], "change": row["change"], "targets": [],
                                     "family": row["family"], "accepted_by": {}})
        if row["step"] == "version":
            entry["version"] = row["change"].split("->")[1]
        entry["targets"].append(row["target"])
        for r, sass in accepted.items():
            entry["accepted_by"][f"{r}/{row['target']}"] = sass
        if not accepted:
            change_class = re.sub(r"[\w:]+->", "", row["change"]) if row["step"] in ("type", "shape") else row["change"]
            groups["refused", row["family"], row["step"], change_class].append(key)


def _case_key(item: dict) -> tuple:
    return item["instruction"], item["step"], tuple(item["targets"]), item.get("version")


def _item(c: RefuseCase) -> dict:
    """A loaded case back in the file's form."""
    item = {"instruction": c.instruction, "base": c.base, "step": c.step, "change": c.change,
            "targets": list(c.targets), "rule": c.rule}
    if c.version is not None:
        item["version"] = c.version
    if c.accepted_by:
        item["accepted_by"] = dict(c.accepted_by)
    return item


def _yaml(per: dict, groups: dict, per_group: int, source: str, keep: Sequence[RefuseCase] = ()) -> str:
    for k, e in per.items():
        if e["accepted_by"]:
            change_class = re.sub(r"[\w:]+->", "", e["change"]) if e["step"] in ("type", "shape") else e["change"]
            groups["accepted", e["family"], e["step"], change_class].append(k)
    keep_new = set()
    for members in groups.values():
        keep_new |= set(sorted(set(members))[:per_group])
    lines = ["# Must-reject forms: neighbours of spec forms (one step from them) that the ISA forbids.",
             "# Pinned by `ptxconf toolchains pin-refusals`; checked by `ptxconf assemble --check refuse` (and CI).",
             "# A case every release refused is a regression case; `accepted_by` lists the releases and targets",
             "# that assemble it (release/target: the matrix instructions in its SASS, `none` when there are none).",
             "schema: refuse/1", "family: refuse",
             'document: "the neighbourhood of specs/, as the ISA\'s syntax and tables forbid it"',
             f"source: {json.dumps(source)}", "cases:"]
    kept = [_item(c) for c in keep]
    seen = {_case_key(item) for item in kept}
    lines += ["  - " + json.dumps(item) for item in kept]
    for k in sorted(keep_new, key=lambda k: (per[k]["family"], per[k]["step"], per[k]["instruction"])):
        e = per[k]
        item = {"instruction": e["instruction"], "base": e["base"], "step": e["step"], "change": e["change"],
                "targets": sorted(set(e["targets"])), "rule": RULES[e["step"]]}
        if "version" in e:
            item["version"] = e["version"]
        if e["accepted_by"]:
            item["accepted_by"] = dict(sorted(e["accepted_by"].items()))
        if _case_key(item) not in seen:
            lines.append("  - " + json.dumps(item))
    return "\n".join(lines) + "\n"
