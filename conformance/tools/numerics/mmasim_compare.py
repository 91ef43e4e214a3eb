"""Recorded hardware cases side by side through the project's model and MMA-Sim (PyPI ``mmasim``, optional, needs torch).

Why: MMA-Sim is a public bit-accurate model of NVIDIA tensor cores.  Where it has a form, running the very cases
the H100 answered through both models says, per path, where the two models and the hardware agree or differ,
with the cases.  Offline: every input and every hardware D is recorded.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .harness import shape_key
from .model import Types, dot_bits
from .recorded import RecordedRun

SCHEMA = "numerics-mmasim-compare/1"
ARCH = "Hopper"
EXAMPLES = 3
_BITS = {8: np.uint8, 16: np.int16, 32: np.int32, 64: np.int64}  # torch views unsigned 16/32/64 poorly: signed ints


class MmaSimMissing(RuntimeError):
    pass


def _mmasim():
    try:
        import torch
        from mmasim.nv_ptx import MMA, WGMMA
    except ImportError as exc:
        raise MmaSimMissing(f"MMA-Sim is not installed ({exc}): pip install mmasim (it needs torch)") from None
    return torch, MMA, WGMMA


def mmasim_form(v) -> str | None:
    """MMA-Sim's name of ``v``'s form (``m16n8k16.f32.f16.f16.f32``; wgmma without C), or None where it has no such kind."""
    t = Types.of(v)
    if v.family == "mma.sync" and t.rnd in (None, "rn"):
        return f"{shape_key(v)}.{t.d}.{t.a}.{t.b}.{t.c}"
    if v.family == "wgmma":
        return f"{shape_key(v)}.{t.d}.{t.a}.{t.b}"
    return None


def _operation(name: str, family: str):
    """MMA-Sim's simulator of a form, or None where it refuses the form on Hopper."""
    _, MMA, WGMMA = _mmasim()
    try:
        return (WGMMA if family == "wgmma" else MMA)(ARCH, name)
    except AssertionError:
        return None


def _tensor(torch, type_name: str, bits: np.ndarray):
    from mmasim.nv_ptx.isa_common import nv_torch_dtype
    from ptxconf.isa.ptxtypes import ptx_type

    width = ptx_type("f32" if type_name == "tf32" else type_name).bits
    raw = np.ascontiguousarray(np.asarray(bits, dtype=np.uint64).astype(f"u{width // 8}").view(_BITS[width]))
    return torch.from_numpy(raw).view(nv_torch_dtype[type_name])


def mmasim_dots(op, t: Types, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D bits of N dot products through MMA-Sim's ``dpa``."""
    torch, _, _ = _mmasim()
    d = op.dpa(_tensor(torch, t.a, a), _tensor(torch, t.b, b), _tensor(torch, t.c, c))
    width = d.element_size() * 8
    out = d.contiguous().view({8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width]).numpy()
    return out.view(f"u{width // 8}").astype(np.uint64)


def _batches(run: RecordedRun) -> Iterator[tuple[str, str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]]:
    """(variant, source, a, b, c, hardware D, case keys) of every dense recorded case."""
    for (vid, groups, a, b, c, d), pos in zip(run.designed, run.positions):
        if pos is None:
            yield vid, "designed", a, b, c, d, [f"{g}#{i}" for i, g in enumerate(groups)]
    for r in run.replays:
        if r.pos is None:
            yield (r.variant, "replay", np.array([r.a], dtype=np.uint64), np.array([r.b], dtype=np.uint64),
                   np.array([r.c], dtype=np.uint64), np.array([r.observed], dtype=np.uint64), [r.key])


def compare(runs: list[RecordedRun], log=print) -> dict:
    """Per path and shape: how many recorded cases both models, one of them or neither reproduce, with examples."""
    _mmasim()
    ops: dict[tuple[str, str], object] = {}
    paths: dict[str, dict] = {}
    for run in runs:
        for vid, source, a, b, c, hw, keys in _batches(run):
            v = run.variant(vid)
            p = run.params(vid)
            t = Types.of(v)
            name = mmasim_form(v)
            entry = paths.setdefault(f"{p.name} {shape_key(v)}", {"path": p.name, "shape": shape_key(v), "mmasim_forms": [],
                                                                  "cases": 0, "outcomes": {}, "examples": {}})
            key = (name, v.family) if name else None
            if key and key not in ops:
                ops[key] = _operation(*key)
            op = ops.get(key) if key else None
            ours = dot_bits(p, t, a, b, c)
            theirs = mmasim_dots(op, t, a, b, c) if op is not None else None
            if op is not None and name not in entry["mmasim_forms"]:
                entry["mmasim_forms"].append(name)
            entry["cases"] += len(c)
            for i in range(len(c)):
                m_ok = bool(ours[i] == hw[i])
                if theirs is None:
                    outcome = "model agrees (MMA-Sim has no such form)" if m_ok else "model differs (MMA-Sim has no such form)"
                else:
                    s_ok = bool(theirs[i] == hw[i])
                    outcome = {(True, True): "both agree with the hardware", (True, False): "only the model agrees",
                               (False, True): "only MMA-Sim agrees", (False, False): "neither agrees"}[(m_ok, s_ok)]
                entry["outcomes"][outcome] = entry["outcomes"].get(outcome, 0) + 1
                ex = entry["examples"].setdefault(outcome, [])
                if outcome not in ("both agree with the hardware", "model agrees (MMA-Sim has no such form)") and len(ex) < EXAMPLES:
                    ex.append({"run": run.dir.name, "variant": vid, "source": source, "case": keys[i],
                               "a": [hex(int(x)) for x in a[i]], "b": [hex(int(x)) for x in b[i]], "c": hex(int(c[i])),
                               "hardware": hex(int(hw[i])), "model": hex(int(ours[i])),
                               "mmasim": None if theirs is None else hex(int(theirs[i]))})
        log(f"{run.dir}: compared")
    for e in paths.values():
        e["examples"] = {k: x for k, x in e["examples"].items() if x}
    import mmasim

    return {"schema": SCHEMA, "arch": ARCH, "mmasim": getattr(mmasim, "__version__", _version("mmasim")),
            "runs": [r.dir.name for r in runs], "paths": dict(sorted(paths.items()))}


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def markdown(doc: dict) -> str:
    lines = [f"# Recorded H100 cases through the model and MMA-Sim {doc['mmasim']} ({doc['arch']})", "",
             f"Runs: {', '.join(doc['runs'])}.  Generated by `ptxconf numerics compare RUN... --model mmasim`.", "",
             "| path | shape | MMA-Sim form | cases | outcomes |", "|---|---|---|---|---|"]
    for e in doc["paths"].values():
        out = "; ".join(f"{k}: {n}" for k, n in sorted(e["outcomes"].items(), key=lambda kv: -kv[1]))
        lines.append(f"| {e['path']} | {e['shape']} | {', '.join(e['mmasim_forms']) or 'none'} | {e['cases']} | {out} |")
    lines.append("")
    for name, e in doc["paths"].items():
        for outcome, ex in e["examples"].items():
            lines.append(f"- {name}, {outcome}:")
            for x in ex:
                lines.append(f"  - {x['variant']} {x['source']} {x['case']} ({x['run']}): hardware {x['hardware']}, model "
                             f"{x['model']}, MMA-Sim {x['mmasim']}; a={','.join(x['a'])} b={','.join(x['b'])} c={x['c']}")
    return "\n".join(lines) + "\n"
