"""The neighbourhood campaign's files: every cell (``cells.csv.gz``, ``words.json``), what disagrees with the ISA
(``findings.json``), a table to read (``summary.md``) and what ran (``summary.json``).

A cell in the CSV is its code, then the index of its words in ``words.json``: ptxas's message for a refusal,
the matrix instructions of the SASS for an accepted cell.  Nothing names the machine.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from ptxconf.isa.targets import PtxVersion
from ptxconf.run.files import atomic_write

from .matrix import NOT_RUN
from .neighbourhood import (
    ACCEPTED,
    CODES,
    CRASHED,
    EMPTIED,
    STEPS,
    UNSPECIFIED,
    WRONGLY_REFUSED,
    Campaign,
    Cell,
    Neighbour,
)
from .report import release_ranges

__all__ = ["FILES", "FINDING_CODES", "findings", "write_outputs", "load_campaign", "without", "overview",
           "prior_codes", "acceptance_history", "history", "history_rows", "MergeError", "merged"]

FILES = ("cells.csv.gz", "words.json", "findings.json", "summary.md", "summary.json")
FINDING_CODES = {UNSPECIFIED: "accepted-but-unspecified", EMPTIED: "accepted-and-emptied",
                 WRONGLY_REFUSED: "refused-but-specified", CRASHED: "ptxas-crashed"}


def _words(camp: Campaign) -> tuple[list[str], dict[tuple[str, str, int], int]]:
    words: dict[str, int] = {}
    ref = {}
    for key in sorted(camp.cells, key=lambda k: (camp.releases.index(k[0]), camp.targets.index(k[1])
                                                 if k[1] in camp.targets else -1, k[2])):
        cell = camp.cells[key]
        text = cell.message or cell.sass
        if text:
            ref[key] = words.setdefault(text, len(words))
    return list(words), ref


def _targets_of(camp: Campaign) -> list[str]:
    """The campaign's targets, then those of target steps, in order of first appearance."""
    seen = dict.fromkeys(camp.targets)
    for (_, t, _) in camp.cells:
        seen.setdefault(t, None)
    return list(seen)


def _csv_gz(camp: Campaign, ref: dict) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["neighbour", "step", "change", "base", "family", "target", *camp.releases])
    by_n: dict[int, set[str]] = defaultdict(set)
    for (_, t, i) in camp.cells:
        by_n[i].add(t)
    order = {t: k for k, t in enumerate(_targets_of(camp))}
    for i, n in enumerate(camp.neighbours):
        for t in sorted(by_n.get(i, ()), key=order.__getitem__):
            row = []
            for r in camp.releases:
                cell = camp.cells.get((r, t, i))
                row.append(NOT_RUN if cell is None else cell.code + (str(ref[r, t, i]) if (r, t, i) in ref else ""))
            w.writerow([n.id, n.step, n.change, n.base, n.family, t, *row])
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(buf.getvalue().encode())
    return raw.getvalue()


def findings(camp: Campaign) -> list[dict]:
    """One per (code, neighbour, target): the releases it holds for and what ptxas said or the SASS held."""
    hits: dict[tuple[str, int, str, str], list[str]] = defaultdict(list)
    for (r, t, i), cell in camp.cells.items():
        if cell.code in FINDING_CODES:
            hits[cell.code, i, t, cell.message or cell.sass].append(r)
    out = []
    for (code, i, t, said), releases in hits.items():
        n = camp.neighbours[i]
        out.append({"kind": FINDING_CODES[code], "neighbour": n.id, "step": n.step, "change": n.change,
                    "base": n.base, "family": n.family, "target": t,
                    "releases": release_ranges(releases, camp.releases),
                    ("sass" if code in (UNSPECIFIED, EMPTIED) else "ptxas"): said})
    out.sort(key=lambda f: (f["kind"], f["family"], f["neighbour"], f["target"]))
    return out


def _pairs_per_kind(found: list[dict]) -> dict[str, set[tuple[str, str]]]:
    """The distinct (neighbour, target) pairs of each finding kind (a pair whose SASS differs between releases is
    several findings, one pair)."""
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for f in found:
        out[f["kind"]].add((f["neighbour"], f["target"]))
    return dict(out)


def _per_release(camp: Campaign) -> list[tuple[list[str], Counter]]:
    """Cells per code per release, consecutive releases with equal counts merged."""
    rows: list[tuple[list[str], Counter]] = []
    per: dict[str, Counter] = defaultdict(Counter)
    for (r, _, _), cell in camp.cells.items():
        per[r][cell.code] += 1
    for r in camp.releases:
        if rows and rows[-1][1] == per[r]:
            rows[-1][0].append(r)
        else:
            rows.append(([r], per[r]))
    return rows


def _summary_md(camp: Campaign, found: list[dict], doc: dict) -> str:
    codes = [c for c in CODES if c != NOT_RUN]
    out = ["# The neighbourhood of the specs", "", f"`{doc['command']}`", "",
           f"{doc['neighbours']} neighbours of {doc['forms']} spec forms ({doc['forms_note']}); "
           f"{doc['cells']} cells over {len(camp.targets)} targets and {len(camp.releases)} releases "
           f"({doc['ptxas_runs']} ptxas runs, {doc['wall_s']:.0f} s).", "",
           "## Steps", ""]
    out += [f"* `{s}` ({doc['neighbours_per_step'].get(s, 0)}): {what}" for s, what in STEPS.items()]
    out += ["", "## Codes", ""] + [f"* `{c}` {what}" for c, what in CODES.items()]
    out += ["", "## Cells per release", "", "| releases | " + " | ".join(codes) + " |", "|---|" + "---|" * len(codes)]
    for rs, c in _per_release(camp):
        name = rs[0] if len(rs) == 1 else f"{rs[0]}..{rs[-1]}"
        out.append(f"| {name} | " + " | ".join(str(c[k]) for k in codes) + " |")
    out += ["", "## Accepted outside the specs, per step and family", "",
            "Distinct (neighbour, target) pairs accepted by at least one release: `U` (a matrix instruction in the "
            "SASS), `E` (none).", "", "| step | family | U | E | e.g. |", "|---|---|---|---|---|"]
    per: dict[tuple[str, str], dict] = defaultdict(lambda: {"U": set(), "E": set(), "eg": ""})
    for f in found:
        if f["kind"] in ("accepted-but-unspecified", "accepted-and-emptied"):
            row = per[f["step"], f["family"]]
            row["U" if f["kind"] == "accepted-but-unspecified" else "E"].add((f["neighbour"], f["target"]))
            row["eg"] = row["eg"] or f"`{f['neighbour']}` on {f['target']}: {f['sass']}"
    for (step, fam), row in sorted(per.items()):
        out.append(f"| {step} | {fam} | {len(row['U'])} | {len(row['E'])} | {row['eg']} |")
    emptied = [f for f in found if f["kind"] == "accepted-and-emptied"]
    out += ["", f"## Accepted with no matrix instruction in the SASS ({len(emptied)})", ""]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for f in emptied:
        groups[f["family"], f["step"], f["change"], f["releases"]].append(f)
    out += ["| family | step | change | releases | (neighbour, target) pairs | e.g. |", "|---|---|---|---|---|---|"]
    for (fam, step, change, rel), fs in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:60]:
        out.append(f"| {fam} | {step} | {change} | {rel} | {len(fs)} | `{fs[0]['neighbour']}` on {fs[0]['target']} |")
    for kind in ("refused-but-specified", "ptxas-crashed"):
        fs = [f for f in found if f["kind"] == kind]
        out += ["", f"## {kind} ({len(fs)})", ""]
        out += [f"* `{f['neighbour']}` on {f['target']}, {f['releases']}: {f['ptxas']}" for f in fs[:40]]
        if len(fs) > 40:
            out.append(f"* ... {len(fs) - 40} more in findings.json")
    return "\n".join(out).rstrip() + "\n"


def overview(directories: Sequence[Path], *, title: str, root: Path | None = None) -> str:
    """One table over several campaigns' summary.json (a family each): what was tried and what came of it; links
    relative to ``root`` (the folder the table is written into; default: beside the campaigns)."""
    codes = [c for c in CODES if c != NOT_RUN]
    lines = [f"# {title}", "", "| campaign | neighbours | cells | " + " | ".join(codes)
             + " | accepted-but-unspecified | accepted-and-emptied | ptxas-crashed | command |",
             "|---|---|---|" + "---|" * len(codes) + "---|---|---|---|"]
    total: Counter = Counter()
    for d in directories:
        doc = json.loads((d / "summary.json").read_text())
        total.update({k: v for k, v in doc["codes"].items()})
        total.update({"neighbours": doc["neighbours"], "cells": doc["cells"]})
        total.update({f"f:{k}": v for k, v in doc["findings"].items()})
        f = doc["findings"]
        link = d.resolve().relative_to(root.resolve()).as_posix() if root else d.name
        lines.append(f"| [{d.name}]({link}/summary.md) | {doc['neighbours']} | {doc['cells']} | "
                     + " | ".join(str(doc["codes"].get(c, 0)) for c in codes)
                     + f" | {f.get('accepted-but-unspecified', 0)} | {f.get('accepted-and-emptied', 0)} | "
                       f"{f.get('ptxas-crashed', 0)} | `{doc['command']}` |")
    lines.append(f"| all | {total['neighbours']} | {total['cells']} | " + " | ".join(str(total[c]) for c in codes)
                 + f" | {total['f:accepted-but-unspecified']} | {total['f:accepted-and-emptied']} | "
                   f"{total['f:ptxas-crashed']} | |")
    lines += ["", "Cells are (neighbour, target, release); the finding columns count (neighbour, target) pairs.", "",
              "Codes: " + "; ".join(f"`{c}` {what}" for c, what in CODES.items())]
    return "\n".join(lines) + "\n"


def load_campaign(directory: Path) -> tuple[Campaign, dict]:
    """A campaign back from its files (cells, words, summary): to write its outputs again."""
    doc = json.loads((directory / "summary.json").read_text())
    words = json.loads((directory / "words.json").read_text())
    with gzip.open(directory / "cells.csv.gz", "rt") as fh:
        rows = list(csv.DictReader(io.StringIO(fh.read())))
    index: dict[str, int] = {}
    neighbours: list[Neighbour] = []
    camp = Campaign(neighbours, list(doc["targets"]), list(doc["releases"]))
    camp.stats.modules = doc.get("ptxas_runs", 0)
    for row in rows:
        if row["neighbour"] not in index:
            target = row["neighbour"].split(" @")[1] if row["step"] == "target" else None
            version = PtxVersion.parse(row["change"].split("->")[1]) if row["step"] == "version" else None
            index[row["neighbour"]] = len(neighbours)
            neighbours.append(Neighbour(row["neighbour"], row["neighbour"].split(" @")[0], row["base"], row["step"],
                                        row["change"], row["family"], target, version))
        i = index[row["neighbour"]]
        for r in camp.releases:
            c = row[r]
            if c == NOT_RUN:
                continue
            text = words[int(c[1:])] if c[1:] else ""
            sass = text if c[0] in (ACCEPTED, UNSPECIFIED, EMPTIED) else ""
            camp.cells[r, row["target"], i] = Cell(c[0], "" if sass else text, sass)
    return camp, doc


def acceptance_history(camp: Campaign) -> list[dict]:
    """Per (neighbour, target) that some release accepted outside the specs (``U`` or ``E``): which releases
    accepted it, which refused it (releases that do not know the target or .version are neither), whether any
    release emptied it, and the distinct SASS the accepting releases made of it."""
    per: dict[tuple[int, str], dict[str, Cell]] = defaultdict(dict)
    for (r, t, i), cell in camp.cells.items():
        per[i, t][r] = cell
    out = []
    for (i, t), cells in per.items():
        took = [r for r in camp.releases if r in cells and cells[r].code in (UNSPECIFIED, EMPTIED)]
        if not took:
            continue
        n = camp.neighbours[i]
        out.append({"neighbour": n.id, "step": n.step, "change": n.change, "family": n.family, "target": t,
                    "accepted_by": release_ranges(took, camp.releases),
                    "refused_by": release_ranges([r for r in camp.releases if r in cells and cells[r].code not in
                                                  (UNSPECIFIED, EMPTIED, ACCEPTED)], camp.releases),
                    "emptied": any(cells[r].code == EMPTIED for r in took),
                    "sass": sorted({cells[r].sass for r in took if cells[r].sass})})
    out.sort(key=lambda h: (h["family"], h["neighbour"], h["target"]))
    return out


def history_rows(directories: Sequence[Path], root: Path | None = None) -> list[dict]:
    """Per campaign, the (neighbour, target) pairs accepted outside the specs grouped by which releases accepted
    and which refused them (first and last accepting release), emptied ones counted apart; ``campaign`` is the
    folder relative to ``root`` (default: its name)."""
    rows = []
    for d in directories:
        camp, _ = load_campaign(d)
        name = d.resolve().relative_to(root.resolve()).as_posix() if root else d.name
        groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for h in acceptance_history(camp):
            groups[h["accepted_by"], h["refused_by"] or "none"].append(h)
        for (took, refused), hs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            eg = hs[0]
            rows.append({"campaign": name, "accepted_by": took, "refused_by": refused, "pairs": len(hs),
                         "emptied": sum(h["emptied"] for h in hs),
                         "example": {"neighbour": eg["neighbour"], "target": eg["target"], "sass": eg["sass"]}})
    return rows


def history(directories: Sequence[Path], root: Path | None = None) -> str:
    """Markdown of :func:`history_rows`."""
    lines = ["| campaign | accepted by | refused by | (neighbour, target) pairs | of them emptied | e.g. |",
             "|---|---|---|---|---|---|"]
    for r in history_rows(directories, root):
        eg = r["example"]
        lines.append(f"| {r['campaign']} | {r['accepted_by']} | {r['refused_by']} | {r['pairs']} | {r['emptied']} | "
                     f"`{eg['neighbour']}` on {eg['target']}: {' / '.join(eg['sass']) or '-'} |")
    return "\n".join(lines) + "\n"


def prior_codes(directories: Sequence[Path]) -> dict[str, set[str]]:
    """``{neighbour id: every code its cells got}`` over earlier campaigns' ``cells.csv.gz`` (to narrow a new one)."""
    out: dict[str, set[str]] = defaultdict(set)
    for d in directories:
        with gzip.open(d / "cells.csv.gz", "rt") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            first = header.index("target") + 1
            for row in reader:
                out[row[0]].update(c[:1] for c in row[first:])
    return dict(out)


class MergeError(ValueError):
    """Two campaigns disagree about one cell: they are not runs of one question."""


def _release_key(name: str) -> tuple:
    """Releases in version order (``12.9.86`` before ``13.0.48``); a path sorts after every version."""
    parts = name.split(".")
    return (0, tuple(int(p) for p in parts)) if all(p.isdigit() for p in parts) else (1, name)


def merged(campaigns: Sequence[Campaign]) -> Campaign:
    """One campaign from several that asked other releases (or other neighbours) of one family: the releases in
    version order, every neighbour once.  A cell two of them hold must carry one code (each release was asked
    the same module text, so anything else is a run gone wrong); a cell none holds stays ``-``."""
    releases = sorted({r for c in campaigns for r in c.releases}, key=_release_key)
    targets = list(dict.fromkeys(t for c in campaigns for t in c.targets))
    index: dict[str, int] = {}
    neighbours: list[Neighbour] = []
    out = Campaign(neighbours, targets, releases)
    for camp in campaigns:
        for (r, t, i), cell in camp.cells.items():
            n = camp.neighbours[i]
            if n.id not in index:
                index[n.id] = len(neighbours)
                neighbours.append(n)
            key = (r, t, index[n.id])
            have = out.cells.get(key)
            if have is not None and have.code != cell.code:
                raise MergeError(f"{n.id} on {t} with {r}: {have.code} in one campaign, {cell.code} in another")
            out.cells.setdefault(key, cell)
        for n in camp.neighbours:  # a neighbour with no cell at all (no release knew its target) is kept too
            if n.id not in index:
                index[n.id] = len(neighbours)
                neighbours.append(n)
        out.stats.modules += camp.stats.modules
        out.sass_missing += camp.sass_missing
    return out


def without(camp: Campaign, drop: set[str]) -> Campaign:
    """The campaign less the string neighbours whose instruction is in ``drop`` (spec forms found late)."""
    keep = [i for i, n in enumerate(camp.neighbours) if n.step in ("target", "version") or n.opcode not in drop]
    new_index = {old: k for k, old in enumerate(keep)}
    out = Campaign([camp.neighbours[i] for i in keep], camp.targets, camp.releases, stats=camp.stats)
    out.cells = {(r, t, new_index[i]): c for (r, t, i), c in camp.cells.items() if i in new_index}
    return out


def write_outputs(out: Path, camp: Campaign, *, command: str, wall_s: float, forms: int, forms_note: str) -> dict:
    """Write every file of :data:`FILES` into ``out``; the summary document."""
    out.mkdir(parents=True, exist_ok=True)
    words, ref = _words(camp)
    found = findings(camp)
    codes = Counter(cell.code for cell in camp.cells.values())
    doc = {
        "command": command,
        "releases": camp.releases,
        "targets": camp.targets,
        "forms": forms,
        "forms_note": forms_note,
        "neighbours": len(camp.neighbours),
        "neighbours_per_step": dict(Counter(n.step for n in camp.neighbours)),
        "cells": sum(codes.values()),
        "codes": {c: codes[c] for c in CODES if c != NOT_RUN},
        "per_release": {r: dict(c) for rs, c in _per_release(camp) for r in rs},
        "findings": {k: len(v) for k, v in _pairs_per_kind(found).items()},
        "sass_missing": sorted(set(camp.sass_missing)),
        "ptxas_runs": camp.stats.modules,
        "wall_s": round(wall_s, 1),
    }
    atomic_write(out / "cells.csv.gz", _csv_gz(camp, ref))
    atomic_write(out / "words.json", json.dumps(words, indent=0) + "\n")
    atomic_write(out / "findings.json", json.dumps({"codes": CODES, "steps": STEPS, "counts": doc["findings"],
                                                    "findings": found}, indent=1) + "\n")
    atomic_write(out / "summary.md", _summary_md(camp, found, doc))
    atomic_write(out / "summary.json", json.dumps(doc, indent=1) + "\n")
    return doc
