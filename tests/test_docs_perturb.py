"""Recall bar: every change made to a real rendering (in memory) is caught, with the right operand named.

Perturbations are generated from what extraction finds in ../shared/isa-renderings/* (never copied
here): a changed constant, swapped element conditions, a permuted row set that is still a bijection
(``groupID`` -> ``7 - groupID``), and a dropped fragment-table row.  The first three must be
``changed`` against specs/ for exactly the perturbed operands; all four must be reported by the
version diff (``doc-diff --base``) against the unperturbed rendering, naming those operands.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from ptxconf.docs import extract, read_tree, tree_from_text
from ptxconf.docs.diff import diff
from ptxconf.docs.fragments import is_fragment_header
from ptxconf.docs.versions import compare_versions, version_map
from ptxconf.isa import load_specs

REAL = Path(__file__).resolve().parents[2] / "shared" / "isa-renderings"
NAMES = ["m8n8k16.txt", "md-m16n8k8-quoted.md"]
pytestmark = pytest.mark.skipif(not (REAL / NAMES[0]).is_file(),
                                reason="../shared/isa-renderings is not here (an installed wheel has no checkout beside it)")


def _expr_span(line: str) -> tuple[int, int]:
    """Where the expression of a ``row =`` / ``col =`` line (or a continuation line) sits."""
    m = re.search(r"(?:\b(?:row|col)\s*=)?\s*", line)
    start = m.end() if m and "=" in m.group(0) else len(line) - len(line.lstrip(" >"))
    stop = re.search(r"\s+(for|if)\s+|\s+otherwise\b", line[start:], re.I)
    return start, start + stop.start() if stop else len(line)


def _edit(raw: list[str], k: int, start: int, stop: int, pattern: str, repl) -> list[str] | None:
    seg = raw[k][start:stop]
    new = re.sub(pattern, repl, seg, count=1)
    if new == seg:
        return None
    out = list(raw)
    out[k] = raw[k][:start] + new + raw[k][stop:]
    return out


def perturbations(path: Path) -> list[tuple[str, frozenset[str], str]]:
    """(what, operands it touches, perturbed text) for each change this rendering allows."""
    raw = path.read_text().split("\n")
    tree = read_tree(path)
    ex = extract(tree)
    out: list[tuple[str, frozenset[str], str]] = []
    for lay in ex.layouts:
        ops = frozenset(lay.operands)
        for f in (lay.row, lay.col):
            if f is None:
                continue
            k = f.line - 1
            start, stop = _expr_span(raw[k])
            const = _edit(raw, k, start, stop, r"(?<![\w.])(\d+)(?![\w.])", lambda m: str(int(m.group(1)) + 1))
            if const:
                out.append((f"constant in {f.field} of {lay.name}", ops, "\n".join(const)))
            perm = (_edit(raw, k, start, stop, r"\bgroupID\b", "(7 - groupID)")
                    or _edit(raw, k, start, stop, r"\bthreadID_in_group\b", "(3 - threadID_in_group)"))
            if perm:
                out.append((f"bijection in {f.field} of {lay.name}", ops, "\n".join(perm)))
            parts = f.isa_text.split(" / ")
            if len(parts) >= 2 and all(" for " in p for p in parts[:2]):
                j = next(n for n in range(k + 1, len(raw)) if parts[1].split(" for ")[0].strip() in raw[n])
                a, b = raw[k].rsplit(" for ", 1), raw[j].rsplit(" for ", 1)
                swapped = list(raw)
                swapped[k], swapped[j] = f"{a[0]} for {b[1]}", f"{b[0]} for {a[1]}"
                out.append((f"swapped conditions in {f.field} of {lay.name}", ops, "\n".join(swapped)))
    blocks = tree.blocks
    for n, b in enumerate(blocks):
        if b.kind != "table" or not is_fragment_header(b.header):
            continue
        nxt = blocks[n + 1].line if n + 1 < len(blocks) else len(raw) + 1
        starts = b.row_lines[1:]
        for r, first in enumerate(starts):
            last = (starts[r + 1] if r + 1 < len(starts) else nxt) - 1
            fr = next(x for x in ex.fragments if x.line == first)
            kept = raw[: first - 1] + raw[last:]
            out.append((f"dropped row {b.body[r][0]} of {'/'.join(fr.operands)}", frozenset(fr.operands), "\n".join(kept)))
    return out


CASES = [(name, *p) for name in NAMES if (REAL / name).is_file() for p in perturbations(REAL / name)]


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def test_every_kind_is_exercised():
    kinds = {what.split(" ")[0] for _, what, _, _ in CASES}
    assert kinds == {"constant", "bijection", "swapped", "dropped"}
    assert len(CASES) >= 20


@pytest.mark.parametrize("name, what, ops, text", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_perturbation_is_caught(name, what, ops, text, specs):
    base = extract(read_tree(REAL / name))
    tree = tree_from_text(text, f"perturbed-{name}")
    new = extract(tree)
    moved = [f for f in compare_versions(base, new) if f.status != "same"]
    assert moved and {f.operand for f in moved} <= ops, [f.text() for f in moved]
    found = diff(new, specs, tree.line_texts())
    assert not [f for f in found if f.status == "unparseable"]
    changed = {f.operand for f in found if f.status == "changed"}
    if what.startswith("dropped"):
        assert not changed  # the layout did not change; the table lost a row (reported above)
        return
    assert changed and changed <= ops, sorted(changed)
    if what.startswith("bijection"):  # still one (row, col) per (lane, element): a permutation, not a typo
        lay = next(x for x in new.layouts if set(x.operands) == set(ops) and x.line in {y.line for y in base.layouts})
        cells = version_map(lay, lay.elements or 1)[..., -2:].reshape(-1, 2)
        assert len(np.unique(cells, axis=0)) == len(cells)
