"""``ptxconf doc-diff`` / ``doc-import``: check PTX ISA renderings against specs/, or against each other.

``doc-diff FILE...`` compares each document with specs/ lane map by lane map;
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
    p = sub.add_parser("doc-diff", help="compare PTX ISA text (HTML, markdown, plain, pdftotext) with specs/ "
                                        "lane map by lane map, or with an earlier ISA rendering (--base)")
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


def _report(args: argparse.Namespace, findings: list, order: tuple[str, ...], extra: list[str]) -> int:
    counts = Counter(f.status for f in findings)
    differs = sum(f.counts_as_difference for f in findings)
    if args.json:
        print(json.dumps({"files": args.files, **({"base": args.base} if args.base else {}), "summary": dict(counts),
                          "differences": differs, "coverage": extra,
                          "findings": [f.to_json() for f in findings]}, indent=1))
        return 1 if differs else 0
    for f in findings:
        if f.status not in ("same", "not covered") or args.all:
            print(f.text())
    for line in extra:
        print(line)
    shown = order + tuple(s for s in ("note", "not covered") if counts.get(s))
    print(", ".join(f"{counts.get(s, 0)} {s}" for s in shown) + f"; {differs} difference(s)")
    return 1 if differs else 0


def cmd_doc_diff(args: argparse.Namespace) -> int:
    from ptxconf.docs import DocError

    try:
        loaded = [(path, *_load(path)) for path in ([args.base] if args.base else []) + args.files]
    except DocError as exc:
        print(f"ptxconf doc-diff: {exc}", file=sys.stderr)
        return 2
    if args.base:
        from ptxconf.docs.versions import VERSION_STATUSES, compare_versions

        old = loaded[0][1]
        findings = [f for _, ex, _ in loaded[1:] for f in compare_versions(old, ex)]
        return _report(args, findings, VERSION_STATUSES, [])
    from ptxconf.docs.coverage import summary
    from ptxconf.docs.diff import diff
    from ptxconf.spec import load_specs

    specs = load_specs(args.specs)
    findings = [f for _, ex, lines in loaded for f in diff(ex, specs, lines)]
    return _report(args, findings, _SPEC_ORDER, summary(findings, specs.variants))


def cmd_doc_import(args: argparse.Namespace) -> int:
    from ptxconf.docs import DocError
    from ptxconf.docs.importer import write_draft
    from ptxconf.spec import load_specs

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
    from ptxconf.spec import load_specs

    try:
        docs = [(path, examples_of(read_tree(path))) for path in args.files]
    except DocError as exc:
        print(f"ptxconf doc-examples: {exc}", file=sys.stderr)
        return 2
    specs = load_specs(args.specs)
    exe, note = None, None
    if not args.no_ptxas:
        from ptxconf.backends.ptxas import PtxasNotFound, find_ptxas, ptxas_info

        try:
            exe = find_ptxas(args.ptxas)
            note = f"ptxas: {ptxas_info(exe)['ptxas']}"
        except PtxasNotFound as exc:
            if args.ptxas:
                print(f"ptxconf doc-examples: {exc}", file=sys.stderr)
                return 2
            note = f"ptxas: not checked ({exc})"
    findings, per_file = [], []
    for path, examples in docs:
        fs = check_examples(examples, specs) + (ptxas_check(examples, specs, exe) if exe else [])
        findings += fs
        per_file.append((path, fs))
    errata = sum(f.status == "erratum" for f in findings)
    if args.json:
        print(json.dumps({"files": args.files, "ptxas": note, "errata": errata,
                          "summary": dict(Counter(f.status for f in findings)),
                          "findings": [f.to_json() for f in findings]}, indent=1))
        return 1 if errata else 0
    for path, fs in per_file:
        ex_keys = {(f.section, f.line, f.instruction) for f in fs}
        bad = {(f.section, f.line, f.instruction) for f in fs if f.status == "erratum"}
        known = {(f.section, f.line, f.instruction) for f in fs if f.status == "explained"} - bad
        templates = {(f.section, f.line, f.instruction) for f in fs if f.status == "template"}
        uncovered = {(f.section, f.line, f.instruction) for f in fs if f.status == "uncovered"} - bad
        real = ex_keys - templates
        print(f"== {path}: {len(real)} example(s), {len(templates)} syntax line(s); {len(real - uncovered)} checked, "
              f"{len(bad)} with errata, {len(known)} explained by specs/ errata, {len(uncovered)} not in specs/")
        for f in fs:
            if args.all or f.status not in ("ok", "template"):
                print("  " + f.text())
    counts = Counter(f.status for f in findings)
    if note:
        print(note)
    print(", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES) + f"; {errata} erratum finding(s)")
    return 1 if errata else 0
