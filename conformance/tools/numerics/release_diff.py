"""The numerics mode of the differential campaign: random, non-exact operands through every release's build of a form.

Why: the layout campaign (tools/toolchains/differential.py) feeds exact grids, on which every correct lowering
agrees; a form ptxas builds in software (lowering.py) rounds where the sequence rounds, so two releases that
order it differently give different D only on inputs whose sums are not exact.  ``prepare`` (any machine with
the releases): each form's probe kernel (one MMA per warp, every register read from and written to global
memory) built by each release at each level, with the arithmetic of its SASS; ``run`` (the GPU): the same
random register words into every build, and the builds grouped by the D words they return.  Two groups of a
form are two arithmetics; each is reported with its releases, its SASS and the first words that differ.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
from ptxconf.isa.model import Variant
from ptxconf.isa.ptxtypes import ptx_type

from .fuzz import _values
from .lowering import arithmetic, nvdisasm, probe_ptx

SCHEMA = "numerics-differential/1"


def prepare(variants: list[Variant], toolchains: list, out: Path, target: str = "sm_90", opts=("-O0", "-O3"), log=print) -> dict:
    """Every form built by every release at every level (cubins under ``out``, one file per distinct cubin) and the
    manifest: per form, its builds with the cubin's hash and the SASS arithmetic."""
    import subprocess

    disasm = nvdisasm()
    if disasm is None:
        raise RuntimeError("no nvdisasm: pip install nvidia-cuda-nvdisasm")
    (out / "cubins").mkdir(parents=True, exist_ok=True)
    forms = []
    with tempfile.TemporaryDirectory(prefix="ptxconf-numdiff-") as tmp:
        src, cubin = Path(tmp) / "probe.ptx", Path(tmp) / "probe.cubin"
        for v in variants:
            builds = []
            for tc in toolchains:
                top = tc.max_ptx
                src.write_text(probe_ptx(v, target, f"{top.major}.{top.minor}"))
                for opt in opts:
                    cubin.unlink(missing_ok=True)
                    r = subprocess.run([tc.exe, f"-arch={target}", opt, str(src), "-o", str(cubin)], capture_output=True,
                                       text=True, timeout=120)
                    if r.returncode:
                        continue  # a release that does not build the form has no D to compare
                    data = cubin.read_bytes()
                    sha = hashlib.sha256(data).hexdigest()[:16]
                    (out / "cubins" / f"{sha}.cubin").write_bytes(data)
                    d = subprocess.run([disasm, str(cubin)], capture_output=True, text=True, timeout=120)
                    ops, sass = arithmetic(d.stdout)
                    builds.append({"build": f"{tc.name} {opt}", "cubin": sha, "sass": sass,
                                   "ops": " ".join(f"{k}x{n}" for k, n in sorted(ops.items()))})
            forms.append({"variant": v.id, "builds": builds})
            log(f"{v.id}: {len(builds)} builds, {len({b['cubin'] for b in builds})} distinct cubins")
    doc = {"schema": SCHEMA, "target": target, "releases": [tc.name for tc in toolchains], "opts": list(opts), "forms": forms}
    (out / "manifest.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def register_words(v: Variant, cases: int, seed: int) -> np.ndarray:
    """``uint64[cases, 32, inputs]``: every input register of every lane, packed from random finite elements with
    random significands within a few binades (sums that are not exact), C too."""
    rng = np.random.default_rng(seed)
    cols = []
    for name, op in v.operands.items():
        if name == "D":
            continue
        t = op.type.name
        per, bits = op.fragment.per_register, ptx_type("f32" if t == "tf32" else t).bits
        el = _values(rng, t, (cases, 32, op.registers, per), 6, 0.0, 0.0).astype(np.uint64)
        el &= np.uint64((1 << bits) - 1)
        words = np.zeros((cases, 32, op.registers), dtype=np.uint64)
        for j in range(per):
            words |= el[..., j] << np.uint64(j * bits)
        cols.append(words)
    return np.concatenate(cols, axis=-1)


def group_outputs(outputs: dict[str, np.ndarray]) -> list[dict]:
    """Builds grouped by identical D words: ``[{builds, words}]``, the largest group first."""
    by: dict[bytes, list[str]] = {}
    for name, words in outputs.items():
        by.setdefault(np.ascontiguousarray(words).tobytes(), []).append(name)
    groups = [{"builds": names, "words": outputs[names[0]]} for names in by.values()]
    return sorted(groups, key=lambda g: -len(g["builds"]))


def compare_groups(groups: list[dict], limit: int = 8) -> list[dict]:
    """Each group after the first against the first: how many D words differ and the first few (case, lane, register)."""
    out = []
    base = groups[0]["words"]
    for g in groups[1:]:
        diff = np.argwhere(g["words"] != base)
        out.append({"builds": g["builds"], "against": groups[0]["builds"], "words_differ": int(len(diff)),
                    "words": int(base.size), "examples": [{"case": int(c), "lane": int(ln), "register": int(r),
                                                           "d": hex(int(g["words"][c, ln, r])), "against": hex(int(base[c, ln, r]))}
                                                          for c, ln, r in diff[:limit]]})
    return out


def run(bundle: Path, specs, out: Path, cases: int = 4096, seed: int = 0, select=None, log=print) -> dict:
    """On the GPU (CuPy): the same words into every build of every form; the builds grouped by D."""
    from . import gpu

    cp = gpu.cupy()
    manifest = json.loads((bundle / "manifest.json").read_text())
    forms = []
    for f in manifest["forms"]:
        if select and not any(f["variant"].startswith(s) or fnmatch.fnmatchcase(f["variant"], s) for s in select):
            continue
        v = specs.get(f["variant"])
        words = register_words(v, cases, seed)
        n_out = v.operands["D"].registers
        d_in = cp.asarray(words)
        outputs, seen = {}, {}
        for b in f["builds"]:
            if b["cubin"] not in seen:
                fn = cp.RawModule(path=str(bundle / "cubins" / f"{b['cubin']}.cubin")).get_function("probe")
                d_out = cp.zeros((cases, 32, n_out), dtype=cp.uint64)
                fn((cases,), (32,), (d_in, d_out))
                seen[b["cubin"]] = cp.asnumpy(d_out)
            outputs[b["build"]] = seen[b["cubin"]]
        groups = group_outputs(outputs)
        sass = {b["build"]: b["sass"] for b in f["builds"]}
        ops = {b["build"]: b["ops"] for b in f["builds"]}
        forms.append({"variant": f["variant"], "groups": [{"builds": g["builds"], "ops": ops[g["builds"][0]],
                                                           "sass": sass[g["builds"][0]]} for g in groups],
                      "differences": compare_groups(groups)})
        log(f"{f['variant']}: {len(f['builds'])} builds, {len(groups)} distinct D"
            + "".join(f"; {d['words_differ']} of {d['words']} words differ between {d['builds'][0]} and {d['against'][0]}"
                      for d in forms[-1]["differences"]))
    from .gpu_fuzz import device_info

    doc = {"schema": SCHEMA, "bundle": bundle.name, "device": device_info(), "cases": cases, "seed": seed,
           "releases": manifest["releases"], "opts": manifest["opts"], "forms": forms}
    out.mkdir(parents=True, exist_ok=True)
    (out / "differential-numerics.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "differential-numerics.md").write_text(markdown(doc))
    return doc


def markdown(doc: dict) -> str:
    lines = [f"# Releases that compute different D (random operands, {doc['cases']} MMAs per form, seed {doc['seed']})", "",
             f"Device: {doc['device'].get('device', '?')}; releases {', '.join(doc['releases'])} at {', '.join(doc['opts'])}.", ""]
    for f in doc["forms"]:
        lines.append(f"## {f['variant']}: {len(f['groups'])} distinct D")
        for g in f["groups"]:
            lines += [f"- {', '.join(g['builds'])}: `{g['ops']}`", "", "  ```", *(f"  {x}" for x in g["sass"][:40]), "  ```", ""]
        for d in f["differences"]:
            lines.append(f"{d['words_differ']} of {d['words']} D words differ ({d['builds'][0]} against {d['against'][0]}), e.g. "
                         + "; ".join(f"case {e['case']} lane {e['lane']} reg {e['register']}: {e['d']} vs {e['against']}"
                                     for e in d["examples"][:3]))
        lines.append("")
    return "\n".join(lines) + "\n"
