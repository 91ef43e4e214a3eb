"""The matrix's files: every cell (``matrix.csv.gz``, ``messages.json``), the disagreements (``findings.json``),
a table to read (``summary.md``) and what was run (``summary.json``).

Nothing here names the machine: releases by version, ptxas by its ``--version`` line, commands as typed.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from ptxconf.isa.model import Variant
from ptxconf.isa.targets import Target
from ptxconf.run.files import atomic_write

from .matrix import (
    ACCEPTED,
    CODES,
    CRASHED,
    EARLY,
    KINDS,
    NOT_RUN,
    WRONGLY_REFUSED,
    Matrix,
    Stats,
    Toolchain,
    counts,
    derive,
    emitted_version,
    replay_command,
)

__all__ = ["release_ranges", "annotate", "write_outputs", "FILES", "lowering_history", "lowered_doc"]

FILES = ("matrix.csv.gz", "messages.json", "findings.json", "summary.md", "summary.json")


def release_ranges(hits: Sequence[str], order: Sequence[str]) -> str:
    """``12.0.76..12.3.107, 12.8.61``: runs of consecutive releases (in ``order``) written as ranges."""
    pos = {r: i for i, r in enumerate(order)}
    idx = sorted(pos[h] for h in hits)
    runs: list[list[int]] = []
    for i in idx:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(order[r[0]] if len(r) == 1 else f"{order[r[0]]}..{order[r[-1]]}" for r in runs)


def annotate(findings: list[dict], mat: Matrix, forms: Sequence[Variant], targets: Sequence[Target],
             toolchains: Sequence[Toolchain]) -> list[dict]:
    """Each finding with the ``.version`` it was emitted at, what the spec says there, and its replay command."""
    by_form = {v.id: v for v in forms}
    by_target = {t.name: t for t in targets}
    by_tc = {tc.name: tc for tc in toolchains}
    out = []
    for f in findings:
        release = f["releases"][-1] if f["kind"] == "accepted-then-refused" else f["releases"][0]
        v, t, tc = by_form[f["form"]], by_target[f["target"]], by_tc[release]
        version = emitted_version(v, t, tc.max_ptx)
        capped = max(v.min_ptx, t.min_ptx) > tc.max_ptx
        out.append({
            "kind": f["kind"],
            "form": f["form"],
            "family": f["family"],
            "target": f["target"],
            "releases": (" -> ".join(f["releases"]) if f["kind"] == "accepted-then-refused"
                         else release_ranges(f["releases"], mat.releases)),
            "version": str(version),
            "spec": v.valid_for(t, version) or f"valid (needs .version {v.min_ptx}, "
                                                f"targets {', '.join(r.name for r in v.requires)})",
            "ptxas": f["message"],
            "replay": replay_command(f["form"], f["target"], release, capped),
        })
    return out


def _csv_gz(mat: Matrix) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["form", "family", "target", *mat.releases])
    for t in mat.targets:
        for i, (form, fam) in enumerate(zip(mat.forms, mat.families)):
            row = []
            for r in mat.releases:
                c = mat.code(r, t, i)
                k = mat.message_of.get((r, t), {}).get(i)
                row.append(c if k is None else f"{c}{k}")
            w.writerow([form, fam, t, *row])
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as gz:  # mtime 0: same cells, same bytes
        gz.write(buf.getvalue().encode())
    return raw.getvalue()


def _per_target_table(mat: Matrix, target: str) -> list[str]:
    """Rows of releases (consecutive identical rows merged), a column per family: forms assembled, with the
    disagreements beside them."""
    fams = sorted(set(mat.families))
    totals = Counter(mat.families)
    lines = ["| releases | " + " | ".join(f"{f} ({totals[f]})" for f in fams) + " |",
             "|---|" + "---|" * len(fams)]
    rows: list[tuple[list[str], list[str]]] = []
    for r in mat.releases:
        codes = mat.codes[r, target]
        cells = []
        for f in fams:
            c = Counter(code for code, fam in zip(codes, mat.families) if fam == f)
            if c[NOT_RUN] == totals[f]:
                cells.append("-")
                continue
            text = str(c[ACCEPTED] + c[EARLY])
            extra = [f"{code} {c[code]}" for code in (EARLY, WRONGLY_REFUSED, CRASHED) if c[code]]
            cells.append(text + (f" ({', '.join(extra)})" if extra else ""))
        if rows and rows[-1][1] == cells:
            rows[-1][0].append(r)
        else:
            rows.append(([r], cells))
    for rs, cells in rows:
        name = rs[0] if len(rs) == 1 else f"{rs[0]}..{rs[-1]}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def lowering_history(mat: Matrix, target: str, form: int) -> str:
    """``12.0.76..12.3.107: HMMA.16816.F32; 12.4.99..13.5.37: none``: what each release lowered an assembled cell
    to, consecutive releases that agree merged (releases that refused or did not run it left out)."""
    runs: list[tuple[list[str], str]] = []
    for r in mat.releases:
        low = mat.lowered.get((r, target), {}).get(form)
        if low is None:
            continue
        if runs and runs[-1][1] == low and mat.releases.index(runs[-1][0][-1]) == mat.releases.index(r) - 1:
            runs[-1][0].append(r)
        else:
            runs.append(([r], low))
    return "; ".join(f"{rs[0] if len(rs) == 1 else rs[0] + '..' + rs[-1]}: {low}" for rs, low in runs)


def lowered_doc(mat: Matrix) -> dict:
    """``{target: {form: history}}`` for every assembled cell whose SASS was read."""
    out: dict[str, dict[str, str]] = {}
    for t in mat.targets:
        for i, form in enumerate(mat.forms):
            h = lowering_history(mat, t, i)
            if h:
                out.setdefault(t, {})[form] = h
    return out


def _lowered_md(mat: Matrix) -> list[str]:
    """Forms grouped by family and lowering history, per target."""
    lines = ["", "## Accepted, and lowered to", "",
             "The matrix instructions in the SASS of each assembled cell, per release (`none`: no matrix instruction: "
             "lowered in software or dropped); forms with the same history grouped (every form in lowered.json).", "",
             "| target | family | forms | accepted, and lowered to | e.g. |", "|---|---|---|---|---|"]
    for t, per in lowered_doc(mat).items():
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        fam = dict(zip(mat.forms, mat.families))
        for form, h in per.items():
            groups[fam[form], h].append(form)
        for (f, h), forms in sorted(groups.items()):
            lines.append(f"| {t} | {f} | {len(forms)} | {h} | `{forms[0]}` |")
    return lines


def _summary_md(mat: Matrix, findings: list[dict], first: dict[str, dict[str, str]], toolchains: Sequence[Toolchain],
                doc: dict) -> str:
    fam_counts = Counter(mat.families)
    out = ["# ptxas acceptance matrix", "",
           f"`{doc['command']}`", "",
           f"{len(mat.forms)} forms ({', '.join(f'{f} {n}' for f, n in sorted(fam_counts.items()))}) x "
           f"{len(mat.targets)} targets x {len(mat.releases)} releases = {doc['cells']} cells; "
           f"{doc['cells_run']} assembled or refused, the rest for targets a release does not know. "
           f"{doc['ptxas_runs']} ptxas runs in {doc['wall_s']:.0f} s ({doc['ptxas_runs_per_s']:.1f} runs/s, "
           f"{doc['cells_per_s']:.0f} cells/s, {doc['jobs']} at a time).", "",
           "Each form is assembled as `ptxconf assemble` emits it, at the lowest `.version` the spec allows "
           "(the form's and the target's minimum), capped at the release's highest; many kernels share a module, "
           f"and every cell that disagrees with the spec was assembled again alone "
           f"({doc['confirmed_alone']} cells; {doc['context_dependent']} came out otherwise alone, and the verdict "
           "alone is the one recorded).", "",
           "## Codes", ""]
    out += [f"* `{code}` {what}" for code, what in CODES.items()]
    out += ["", "## Releases", "", "| release | highest .version | targets of this matrix it knows |", "|---|---|---|"]
    for tc in toolchains:
        known = [t for t in mat.targets if t in tc.targets]
        out.append(f"| {tc.name} | {tc.max_ptx} | {' '.join(known)} |")
    out += ["", "## Disagreements", ""]
    kinds = Counter(f["kind"] for f in findings)
    out += [f"* {kind}: {kinds[kind]} (form, target) pairs: {what}" for kind, what in KINDS.items()]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for f in findings:
        groups[f["kind"], f["target"], f["family"], f["releases"], f["ptxas"] or f["spec"]].append(f)
    if groups:
        out += ["", "Grouped by kind, target, family, releases and message (largest first; every one, with its "
                "replay command, in findings.json):", "",
                "| kind | target | family | releases | forms | e.g. | ptxas or spec says |", "|---|---|---|---|---|---|---|"]
        for (kind, target, fam, releases, said), fs in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:60]:
            said = said.replace("|", "/")
            out.append(f"| {kind} | {target} | {fam} | {releases} | {len(fs)} | `{fs[0]['form']}` | {said} |")
        if len(groups) > 60:
            out.append(f"\n({len(groups) - 60} smaller groups in findings.json)")
    out += ["", "## The first release that assembles each form", "",
            "Per target and family: how many forms each release is the first to assemble (in findings.json per form).",
            "", "| target | family | first release: forms |", "|---|---|---|"]
    fam_of = dict(zip(mat.forms, mat.families))
    for t in mat.targets:
        per_fam: dict[str, Counter] = defaultdict(Counter)
        for form, per in first.items():
            if t in per:
                per_fam[fam_of[form]][per[t]] += 1
        for fam in sorted(per_fam):
            order = {r: i for i, r in enumerate(mat.releases)}
            cells = ", ".join(f"{r}: {n}" for r, n in sorted(per_fam[fam].items(), key=lambda kv: order[kv[0]]))
            out.append(f"| {t} | {fam} | {cells} |")
    out += ["", "## Forms assembled per release", "",
            "Per target: forms assembled (`A` + `X`), with `X`, `F` and `C` counts beside; `-` the release does not "
            "know the target.", ""]
    for t in mat.targets:
        out += [f"### {t}", ""] + _per_target_table(mat, t) + [""]
    if mat.lowered:
        out += _lowered_md(mat)
    return "\n".join(out).rstrip() + "\n"


def write_outputs(out: Path, mat: Matrix, forms: Sequence[Variant], targets: Sequence[Target],
                  toolchains: Sequence[Toolchain], *, command: str, wall_s: float, stats: Stats, jobs: int) -> dict:
    """Write every file of :data:`FILES` into ``out``; the summary document."""
    ptxas_runs = stats.modules
    out.mkdir(parents=True, exist_ok=True)
    raw, first = derive(mat)
    findings = annotate(raw, mat, forms, targets, toolchains)
    c = counts(mat)
    cells = sum(c.values())
    run = cells - c[NOT_RUN]
    doc = {
        "command": command,
        "releases": [{"release": tc.name, "max_ptx": str(tc.max_ptx)} for tc in toolchains],
        "targets": list(mat.targets),
        "forms": len(mat.forms),
        "forms_per_family": dict(sorted(Counter(mat.families).items())),
        "cells": cells,
        "cells_run": run,
        "codes": {code: c[code] for code in CODES},
        "findings": dict(Counter(f["kind"] for f in findings)),
        "ptxas_runs": ptxas_runs,
        "confirmed_alone": stats.confirmed,
        "context_dependent": len(stats.context),
        "wall_s": round(wall_s, 1),
        "ptxas_runs_per_s": round(ptxas_runs / max(wall_s, 1e-9), 2),
        "cells_per_s": round(run / max(wall_s, 1e-9), 1),
        "jobs": jobs,
    }
    atomic_write(out / "matrix.csv.gz", _csv_gz(mat))
    atomic_write(out / "messages.json", json.dumps(mat.messages, indent=0) + "\n")
    atomic_write(out / "findings.json", json.dumps({
        "kinds": KINDS,
        "counts": doc["findings"],
        "findings": findings,
        "context_dependent": [{"release": r, "target": t, "form": f, "in_a_module": a, "alone": b}
                              for r, t, f, a, b in sorted(stats.context)],
        "first_release": {form: " ".join(f"{t}={r}" for t, r in per.items()) for form, per in first.items()},
    }, indent=1) + "\n")
    atomic_write(out / "summary.md", _summary_md(mat, findings, first, toolchains, doc))
    if mat.lowered:
        atomic_write(out / "lowered.json", json.dumps(lowered_doc(mat), indent=1) + "\n")
        doc["sass_missing"] = sorted(set(stats.sass_missing))
    atomic_write(out / "summary.json", json.dumps(doc, indent=1) + "\n")
    return doc
