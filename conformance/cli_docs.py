"""``ptxconf doc-diff`` / ``doc-import``: check a PTX ISA section against specs/ by meaning.

Exit status of doc-diff: 0 when every formula the document gives maps lanes as
specs/ does (known errata count as explained), 1 when anything differs, 2 for
unreadable documents or specs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

__all__ = ["add_parser"]


def add_parser(sub) -> None:
    p = sub.add_parser("doc-diff", help="compare PTX ISA text (HTML, markdown, plain) with specs/ lane map by lane map")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--specs", metavar="DIR", default=None)
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.add_argument("--all", action="store_true", help="also list the 'same' findings in text output")
    p.set_defaults(func=cmd_doc_diff)
    p = sub.add_parser("doc-import", help="write draft YAML for what the document has and specs/ lacks")
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--specs", metavar="DIR", default=None)
    p.set_defaults(func=cmd_doc_import)


def _load(path: str):
    from conformance.docs import extract, read_doc

    fmt, lines = read_doc(path)
    return extract(lines, path, fmt), {ln.number: ln.text for ln in lines}


def cmd_doc_diff(args: argparse.Namespace) -> int:
    from conformance.docs import DocError
    from conformance.docs.diff import diff
    from conformance.spec import load_specs

    specs = load_specs(args.specs)
    findings = []
    for path in args.files:
        try:
            ex, lines = _load(path)
        except DocError as exc:
            print(f"ptxconf doc-diff: {exc}", file=sys.stderr)
            return 2
        findings += diff(ex, specs, lines)
    counts = Counter(f.status for f in findings)
    differs = sum(f.counts_as_difference for f in findings)
    if args.json:
        print(json.dumps({"files": args.files, "summary": dict(counts), "differences": differs,
                          "findings": [f.to_json() for f in findings]}, indent=1))
    else:
        for f in findings:
            if f.status != "same" or args.all:
                print(f.text())
        print(", ".join(f"{counts.get(s, 0)} {s}" for s in ("same", "changed", "only in doc", "only in specs", "unparseable")
                        + (("note",) if counts.get("note") else ()))
              + f"; {differs} difference(s)")
    return 1 if differs else 0


def cmd_doc_import(args: argparse.Namespace) -> int:
    from conformance.docs import DocError
    from conformance.docs.importer import write_draft
    from conformance.spec import load_specs

    specs = load_specs(args.specs)
    try:
        ex, _ = _load(args.file)
    except DocError as exc:
        print(f"ptxconf doc-import: {exc}", file=sys.stderr)
        return 2
    path = write_draft(ex, specs, args.output)
    print(f"wrote {path}" if path else "nothing to import: specs/ already has every mapped operand the document gives")
    return 0
