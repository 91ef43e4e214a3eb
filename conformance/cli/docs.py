"""``ptxconf doc-diff`` / ``doc-import``: check PTX ISA renderings against specs/, or against each other.

``doc-diff FILE...`` compares each document with specs/ lane map by lane map (each file its own result
line and exit status: one unreadable file never hides the others);
``doc-diff --base OLD NEW...`` compares NEW with an earlier rendering OLD (the
day a new ISA version appears).  Operands a document says nothing of are listed
as coverage, never as differences.  ``doc-examples FILE...`` checks the ISA's own
example instructions against specs/ and ptxas.  Exit status: 0 when nothing
differs (known errata count as explained), 1 when anything does, 2 for
unreadable documents or specs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

__all__ = ["add_parser"]

_SPEC_ORDER = ("same", "changed", "only in doc", "only in specs", "unparseable")


def add_parser(sub) -> None:
    p = sub.add_parser("doc-diff", help="compare PTX ISA sections (markdown, HTML, PDF, plain text) with specs/ "
                                        "lane map by lane map and table by table, or with an earlier rendering "
                                        "(--base); one result line and exit status per file")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--base", metavar="OLD", default=None,
                   help="compare FILE (the new ISA rendering) with OLD instead of specs/: new, removed and changed "
                        "shapes, types, fragment-table rows and lane maps")
    p.add_argument("--specs", metavar="DIR", default=None)
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.add_argument("--all", action="store_true", help="also list the 'same' and 'not covered' findings in text output")
    p.set_defaults(func=cmd_doc_diff)
    p = sub.add_parser("doc-import", help="write draft YAML for what the document has and specs/ lacks")
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--specs", metavar="DIR", default=None)
    p.set_defaults(func=cmd_doc_import)
    p = sub.add_parser("doc-examples", help="check the PTX ISA's example instructions (mma, mma.sp, ldmatrix, stmatrix, "
                                            "movmatrix, wgmma, tcgen05.mma) against specs/ and ptxas; an example that "
                                            "disagrees is an ISA erratum (exit 1 unless specs/ errata already pin it)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--specs", metavar="DIR", default=None)
    p.add_argument("--ptxas", metavar="PATH", default=None, help="ptxas to assemble the examples with (default: PATH)")
    p.add_argument("--no-ptxas", action="store_true", help="check against specs/ only")
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.add_argument("--all", action="store_true", help="also list the 'ok' and 'template' findings in text output")
    p.set_defaults(func=cmd_doc_examples)


def _load(path: str):
    from ptxconf.docs import extract, read_tree

    tree = read_tree(path)
    return extract(tree), tree.line_texts()


def _summary(counts: Counter, differs: int, order: tuple[str, ...]) -> str:
    shown = order + tuple(s for s in ("note", "not covered") if counts.get(s))
    return ", ".join(f"{counts.get(s, 0)} {s}" for s in shown) + f"; {differs} difference(s)"


def _report(args: argparse.Namespace, results: list[tuple[str, list | None, list[str], str | None]],
            order: tuple[str, ...]) -> int:
    """Every file's findings, coverage and result line with its own exit status (0 same, 1 differs, 2
    unreadable: one unreadable file never hides the others' results); the call exits with the worst."""
    per_file = []
    for path, findings, extra, error in results:
        if findings is None:
            per_file.append({"file": path, "exit": 2, "error": error})
            continue
        counts = Counter(f.status for f in findings)
        differs = sum(f.counts_as_difference for f in findings)
        per_file.append({"file": path, "exit": 1 if differs else 0, "summary": dict(counts), "differences": differs,
                         "coverage": extra, "counts": counts})
    code = max((r["exit"] for r in per_file), default=0)
    every = [f for _, fs, _, _ in results for f in fs or ()]
    if args.json:
        total = Counter(f.status for f in every)
        print(json.dumps({"files": args.files, **({"base": args.base} if args.base else {}), "summary": dict(total),
                          "differences": sum(f.counts_as_difference for f in every),
                          "coverage": [x for r in per_file for x in r.get("coverage", ())],
                          "results": [{k: v for k, v in r.items() if k != "counts"} for r in per_file],
                          "findings": [f.to_json() for f in every]}, indent=1))
        return code
    many = len(results) > 1
    for (path, findings, extra, _), r in zip(results, per_file):
        if findings is None:
            print(f"{path}: unreadable: {r['error']} (exit 2)")
            continue
        for f in findings:
            if f.status not in ("same", "not covered") or args.all:
                print(f.text())
        for line in extra:
            print(line)
        line = _summary(r["counts"], r["differences"], order)
        print(f"{path}: {line} (exit {r['exit']})" if many else line)
    if many:
        readable = [r for r in per_file if "counts" in r]
        print(f"{len(results)} files: {sum(r['exit'] == 0 for r in per_file)} without differences, "
              f"{sum(r['exit'] == 1 for r in per_file)} with, {len(per_file) - len(readable)} unreadable (exit {code})")
    return code


def _read_all(paths: list[str], command: str):
    """(path, loaded or None, error or None) for each file: a file that cannot be read says why on stderr."""
    from ptxconf.docs import DocError

    out = []
    for path in paths:
        try:
            out.append((path, _load(path), None))
        except DocError as exc:
            print(f"ptxconf {command}: {exc}", file=sys.stderr)
            out.append((path, None, exc.message if exc.line is None else f"line {exc.line}: {exc.message}"))
    return out


def cmd_doc_diff(args: argparse.Namespace) -> int:
    if args.base:
        from ptxconf.docs.versions import VERSION_STATUSES, compare_versions

        (_, base, error), = _read_all([args.base], "doc-diff")
        if base is None:
            return 2
        results = [(path, None if got is None else compare_versions(base[0], got[0]), [], err)
                   for path, got, err in _read_all(args.files, "doc-diff")]
        return _report(args, results, VERSION_STATUSES)
    from ptxconf.docs.coverage import summary
    from ptxconf.docs.diff import diff
    from ptxconf.isa import load_specs

    specs = load_specs(args.specs)
    results = []
    for path, got, err in _read_all(args.files, "doc-diff"):
        if got is None:
            results.append((path, None, [], err))
            continue
        findings = diff(got[0], specs, got[1])
        results.append((path, findings, summary(findings, specs.variants), None))
    return _report(args, results, _SPEC_ORDER)


def cmd_doc_import(args: argparse.Namespace) -> int:
    from ptxconf.docs import DocError
    from ptxconf.docs.importer import write_draft
    from ptxconf.isa import load_specs

    specs = load_specs(args.specs)
    try:
        ex, _ = _load(args.file)
    except DocError as exc:
        print(f"ptxconf doc-import: {exc}", file=sys.stderr)
        return 2
    path = write_draft(ex, specs, args.output)
    print(f"wrote {path}" if path else "nothing to import: specs/ already has every mapped operand the document gives")
    return 0


def cmd_doc_examples(args: argparse.Namespace) -> int:
    from ptxconf.docs import DocError, read_tree
    from ptxconf.docs.example_check import STATUSES, check_examples, ptxas_check
    from ptxconf.docs.examples import examples_of
    from ptxconf.isa import load_specs

    docs, unreadable = [], []
    for path in args.files:
        try:
            tree = read_tree(path)
            docs.append((path, examples_of(tree), tree.version))
        except DocError as exc:
            print(f"ptxconf doc-examples: {exc}", file=sys.stderr)
            unreadable.append((path, exc))
    specs = load_specs(args.specs)
    exe, note, newest = None, None, None
    if not args.no_ptxas:
        from ptxconf.backends.ptxas import PtxasNotFound, find_ptxas, ptxas_info

        try:
            exe = find_ptxas(args.ptxas)
            info = ptxas_info(exe)
            note, newest = f"ptxas: {info['ptxas']}", info["max_ptx"]
        except PtxasNotFound as exc:
            if args.ptxas:
                print(f"ptxconf doc-examples: {exc}", file=sys.stderr)
                return 2
            note = f"ptxas: not checked ({exc})"
    findings, per_file = [], []
    for path, examples, version in docs:
        fs = check_examples(examples, specs) + (ptxas_check(examples, specs, exe, version, newest) if exe else [])
        findings += fs
        per_file.append((path, fs, version))
    errata = sum(f.status == "erratum" for f in findings)
    code = 2 if unreadable else 1 if errata else 0
    if args.json:
        print(json.dumps({"files": args.files, "ptxas": note, "errata": errata,
                          "summary": dict(Counter(f.status for f in findings)),
                          "unreadable": [{"file": p, "error": str(e)} for p, e in unreadable],
                          "findings": [f.to_json() for f in findings]}, indent=1))
        return code
    for path, fs, version in per_file:
        ex_keys = {(f.section, f.line, f.instruction) for f in fs}
        bad = {(f.section, f.line, f.instruction) for f in fs if f.status == "erratum"}
        known = {(f.section, f.line, f.instruction) for f in fs if f.status == "explained"} - bad
        templates = {(f.section, f.line, f.instruction) for f in fs if f.status == "template"}
        uncovered = {(f.section, f.line, f.instruction) for f in fs if f.status == "uncovered"} - bad
        real = ex_keys - templates
        stated = f" (document: PTX ISA {version})" if version else ""
        print(f"== {path}{stated}: {len(real)} example(s), {len(templates)} syntax line(s); {len(real - uncovered)} "
              f"checked, {len(bad)} with errata, {len(known)} explained by specs/ errata, {len(uncovered)} not in specs/ "
              f"(exit {1 if bad else 0})")
        for f in fs:
            if args.all or f.status not in ("ok", "template"):
                print("  " + f.text())
    for path, exc in unreadable:
        print(f"== {path}: unreadable: {exc.message} (exit 2)")
    counts = Counter(f.status for f in findings)
    if note:
        print(note)
    print(", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES) + f"; {errata} erratum finding(s)")
    return code
