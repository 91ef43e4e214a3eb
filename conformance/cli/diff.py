"""``ptxconf diff BASE NEW``: what changed between two recorded runs (statuses, lane maps, D words, header).

Exit status: 0 when nothing changed, 1 when something did, 2 when BASE or NEW
is missing or not a run directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["add_parser"]


def add_parser(sub) -> None:
    p = sub.add_parser("diff", help="compare two recorded runs check by check: statuses, observed lane maps, "
                                    "D words for the same inputs, device/driver/toolchain/spec header")
    p.add_argument("base", metavar="BASE", help="the earlier (reference) run directory")
    p.add_argument("new", metavar="NEW", help="the run to compare with it")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON document")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="list at most N entries per kind of change in text output (0: all)")
    p.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from ptxconf.run.diff import DiffUsageError, diff_runs, render_text

    try:
        doc = diff_runs(Path(args.base), Path(args.new))
    except DiffUsageError as exc:
        print(f"ptxconf diff: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=1) if args.json else render_text(doc, max(0, args.limit)))
    return 1 if doc["changed"] else 0
