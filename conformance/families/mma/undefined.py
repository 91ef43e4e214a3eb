"""Sparse inputs the ISA leaves undefined: what to feed, and how to read back what the hardware did.

Shared by the sparse families (``mma.sp`` here, ``wgmma.mma_async.sp``).  Two checks, never in a
run's default set (``ptxconf run --undefined``), whose verdicts are ``undefined`` observations:

``undefined.metadata``
    Every chunk of every row carries an index pair the ISA leaves undefined: equal indices
    (0b0000, 0b0101, 0b1010, 0b1111), non-increasing ones where the form requires increasing
    indices (``mma.sp::ordered_metadata``), and for 1:2 ``.tf32`` anything but 0b0100 / 0b1110.
    The stored A elements carry unique tags (compressed index + 1, in digits over cases) and B
    selects dense columns, so D spells out every dense position of every chunk: which stored
    elements landed there (one, none, or a sum).  :func:`chunk_readback` turns that into one line
    per index pair, named where a plausible reading fits ("as given", "as if sorted", "summed at
    the one position", "second element dropped", ...).

``undefined.selector``
    The sparsity selector is an immediate outside the values the ISA allows for the form.  ptxas
    may refuse it, and one refused kernel would take every probe of its module with it, so each
    such kernel is first assembled alone (:func:`assembled`); a refusal is the observation
    ("refused by ptxas: ...") and the kernel never joins the module.  Otherwise every lane carries
    legal metadata of its own and D is compared with the result under each legal selector.

The emulator has no answer for undefined inputs: for such a case a family's ``emulate`` writes
the marker :data:`NOT_MODELLED` in every D word (:func:`not_modelled` reads it), and the
observation is "not modelled by the emulator".
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from ptxconf.core.verdict import UNDEFINED
from ptxconf.isa.sparse import Sparsity, positions
from ptxconf.isa.targets import PtxVersion

__all__ = ["UNDEFINED_CHECKS", "NOT_MODELLED", "NOT_MODELLED_TEXT", "undefined_pairs", "undefined_chunks",
           "out_of_range", "selector_check", "gpu_arch", "assembled", "assembly_observation",
           "not_modelled", "chunk_readback", "lanes_text"]

UNDEFINED_CHECKS = ("undefined.metadata", "undefined.selector")
NOT_MODELLED = 0xFFFFFFFF  # every D word of a case the emulator does not model
NOT_MODELLED_TEXT = "not modelled by the emulator (it has no answer for inputs the ISA leaves undefined)"
SUM_EXACT = 1024  # tag digits at most this large: the sum of two is exact in every accumulator type


def undefined_pairs(sp: Sparsity, order_required: bool) -> tuple[tuple[int, int], ...]:
    """The (field 0, field 1) index pairs of one chunk whose meaning the ISA leaves undefined."""
    every = list(itertools.product(range(4), repeat=2))
    if sp.nz == 1:  # 1:2: only (0, 1) and (2, 3) mean anything
        return tuple(p for p in every if p not in ((0, 1), (2, 3)))
    return tuple(p for p in every if p[0] == p[1] or (order_required and p[0] > p[1]))


def undefined_chunks(sp: Sparsity, fields: np.ndarray, order_required: bool) -> np.ndarray:
    """``bool[...]`` per chunk of ``fields[..., 2 * chunks]`` (index fields, -1 where none): an undefined pair."""
    idx = np.asarray(fields, dtype=np.int64).reshape(*np.shape(fields)[:-1], -1, 2)
    bad = np.zeros(idx.shape[:-1], dtype=bool)
    for a, b in undefined_pairs(sp, order_required):
        bad |= (idx[..., 0] == a) & (idx[..., 1] == b)
    return bad


def out_of_range(legal: Sequence[int]) -> list[int]:
    """Selector values to try: those of the 2-bit field the form does not allow, else the first past it."""
    inside = [s for s in range(4) if s not in legal]
    return inside or [4]


def selector_check(value: int) -> str:
    return f"undefined.selector[{value}]"


def gpu_arch(cc: tuple[int, int]) -> str:
    """The ``-arch`` a module is built for on a GPU of ``cc`` (its arch-specific target from sm_90 on)."""
    return f"sm_{cc[0]}{cc[1]}" + ("a" if cc[0] >= 9 else "")


def assembled(source: str, version: PtxVersion, cc: tuple[int, int]) -> dict:
    """Does ptxas take ``source`` (a module at ``version`` of the one kernel with the undefined immediate), built
    as the module of a GPU of ``cc`` would be?

    ``{"ptxas": version line, "accepted": bool, "message": first error}``; ``"ptxas": None`` and why,
    where it could not be tried (no ptxas, or a ``.version`` newer than it reads)."""
    from ptxconf.backends.ptxas import PtxasNotFound, assemble, find_ptxas, first_error, ptxas_info

    try:
        exe = find_ptxas()
        info = ptxas_info(exe)
    except PtxasNotFound as exc:
        return {"ptxas": None, "message": str(exc)}
    if version > info["max_ptx"]:
        return {"ptxas": None, "message": f"{info['ptxas']} reads .version up to {info['max_ptx']} only"}
    ok, err = assemble(source, gpu_arch(cc), exe)
    why = re.sub(r"^line \d+;\s*error\s*:\s*", "", first_error(err)) if not ok else ""
    return {"ptxas": info["ptxas"], "accepted": bool(ok), "message": why}


def assembly_observation(meta: dict) -> tuple[str, str] | None:
    """(status, message) decided by the assembler alone: refused, or not tried; None when the kernel ran."""
    asm = meta.get("assembler") or {}
    if asm.get("ptxas") is None:
        why = asm.get("message") or "no ptxas"
        return "skip", (f"not run: an out-of-range immediate is assembled alone first (a refusal would take the "
                        f"module's other probes with it), and {why}")
    if not asm.get("accepted"):
        return UNDEFINED, f"refused by ptxas: {asm.get('message') or 'no message'}"
    return None


def not_modelled(d_words: np.ndarray) -> bool:
    """Whether every D word of every case is the emulator's :data:`NOT_MODELLED` marker."""
    d = np.asarray(d_words)
    return bool(d.size) and bool((d == NOT_MODELLED).all())


def lanes_text(lanes: Sequence[int]) -> str:
    """Lanes of the first group of four as the ISA names them (T0, T1)."""
    quad = sorted({int(x) % 4 for x in lanes})
    return ", ".join(f"T{t}" for t in quad) + " of each group of four" if quad else "no lane"


# --- reading chunks back -------------------------------------------------------------------------


def _label(cell: object) -> str:
    if isinstance(cell, frozenset):
        return "+".join(f"s{s}" for s in sorted(cell)) if cell else "."
    return str(cell)


def _signature_text(sig: tuple) -> str:
    return "[" + " ".join(_label(c) for c in sig) + "]"


def _place(width: int, pos: Sequence[int], keep: Sequence[bool]) -> tuple:
    cells: list[set] = [set() for _ in range(width)]
    for s, (p, k) in enumerate(zip(pos, keep)):
        if k and 0 <= p < width:
            cells[p].add(s)
    return tuple(frozenset(c) for c in cells)


def readings(sp: Sparsity, pair: tuple[int, int]) -> dict[str, tuple]:
    """Plausible readings of an undefined index pair: name -> which stored slots each dense position holds."""
    pos = [int(x) for x in positions(sp, np.array(pair))]
    everything = [True] * sp.nz
    out = {"as given": _place(sp.width, pos, everything)}
    if sp.nz == 1:
        out["position from the second index"] = _place(sp.width, [pair[1] // 2], everything)
    elif pair[0] > pair[1]:
        out["as if sorted"] = _place(sp.width, [int(x) for x in positions(sp, np.array(sorted(pair)))], everything)
    elif pair[0] == pair[1]:
        out["summed at the one position"] = out.pop("as given")
        first = [p not in pos[:s] for s, p in enumerate(pos)]  # an earlier slot keeps the position
        last = [p not in pos[s + 1 :] for s, p in enumerate(pos)]  # a later slot overwrites it
        out["second element dropped"] = _place(sp.width, pos, first)
        out["first element dropped"] = _place(sp.width, pos, last)
    out["nothing stored"] = tuple(frozenset() for _ in range(sp.width))
    return out


def chunk_readback(sp: Sparsity, slot_vals: np.ndarray, dense_obs: np.ndarray, fields: np.ndarray) -> tuple[str, list[str]]:
    """What the hardware made of each undefined index pair.

    ``slot_vals[digit, row, chunk, nz]``: the tag digit each stored element carried per case;
    ``dense_obs[digit, row, K]``: the value D showed at each dense position (NaN where no case
    selected it); ``fields[row, chunks, 2]``: the index pair each chunk carried.  Returns the
    observation (one line: the readings that fit, by pair) and one detail line per pair.
    """
    digits, rows, chunks, nz = slot_vals.shape
    subsets = [frozenset(S) for n in range(nz + 1) for S in itertools.combinations(range(nz), n)]
    obs = dense_obs.reshape(digits, rows, chunks, sp.width)
    missing = np.isnan(obs).any(axis=0)  # [row, chunk, position]
    eq = np.stack([np.all(obs == slot_vals[..., sorted(S)].sum(axis=-1)[..., None], axis=0) for S in subsets])
    hits, first = eq.sum(axis=0), eq.argmax(axis=0)  # how many readings fit each position, and the first
    elsewhere = {tuple(slot_vals[:, r, c, s]) for r in range(rows) for c in range(chunks) for s in range(nz)}
    by_pair: dict[tuple[int, int], Counter] = {}
    for r in range(rows):
        for c in range(chunks):
            sig = []
            for p in range(sp.width):
                if missing[r, c, p]:
                    sig.append("?")
                elif hits[r, c, p] == 1:
                    sig.append(subsets[first[r, c, p]])
                elif hits[r, c, p]:
                    sig.append("~")  # two readings give the same values here: not told apart
                else:
                    sig.append("x" if tuple(obs[:, r, c, p]) in elsewhere else "?")
            pair = (int(fields[r, c, 0]), int(fields[r, c, 1]))
            by_pair.setdefault(pair, Counter())[tuple(sig)] += 1
    named: dict[str, list[str]] = {}
    loose: list[str] = []
    lines: list[str] = []
    for pair in sorted(by_pair):
        tally = by_pair[pair]
        clear = Counter({s: n for s, n in tally.items() if "~" not in s}) or tally  # ambiguous chunks do not vote
        sig, n = clear.most_common(1)[0]
        total = sum(clear.values())
        names = [name for name, want in readings(sp, pair).items() if want == sig]
        ptext = f"({pair[0]},{pair[1]})"
        count = "" if n == total else f" in {n} of {total} chunks"
        lines.append(f"{ptext}: {_signature_text(sig)}{' ' + ' = '.join(names) if names else ''},"
                     f"{count or f' all {total} chunks'}" + (f" ({sum(tally.values()) - total} ambiguous)"
                                                            if sum(tally.values()) > total else ""))
        if names and not count:
            named.setdefault(" = ".join(names), []).append(ptext)
        else:
            loose.append(f"{ptext} -> {_signature_text(sig)}{count}")
    parts = [f"{name}: {' '.join(pairs)}" for name, pairs in named.items()] + loose
    legend = ("index pair: what each dense position of the chunk held (sN: stored element N of the chunk, "
              ". nothing, x: an element of another chunk, ?: unexplained)")
    return "; ".join(parts), [legend, *lines]
