"""wgmma with ptxas and the register-reuse probe.

* :func:`assemble_forms` assembles every form's probe kernels (the kernels the GPU runs, with the
  first and last immediate sets) for each arch, in modules of many forms; a module ptxas rejects
  is split form by form.  Results are cached by (ptxas, arch, PTX) in the ptxas cache.  Each
  form is expected to assemble for sm_90a at its minimum ``.version`` and to be rejected for
  other archs, and below its minimum ``.version`` (where a .target allows one).
* :func:`run_reuse` runs the register-A forms with A's registers overwritten (zeros) right after
  the wgmma is issued and before ``wgmma.wait_group``: the ISA leaves that undefined; the probe
  reports whether D used A as issued, the overwritten A, or neither.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ptxconf.families.wgmma import probe as wg
from ptxconf.families.wgmma.cases import make_cases
from ptxconf.isa.targets import TARGET_MIN_PTX, PtxVersion, parse_target

CHUNK = 48
PREVIOUS = {PtxVersion(8, 4): PtxVersion(8, 3)}


@dataclass(frozen=True)
class AsmRow:
    exe: str
    arch: str
    form: str
    version: str
    expected: str  # valid / invalid
    actual: str  # assembles / rejected / untestable
    reason: str

    @property
    def agrees(self) -> bool:
        return self.actual == "untestable" or (self.expected == "valid") == (self.actual == "assembles")


def _probes(v):
    sets = wg.immediate_sets(v)
    return [wg.WgProbe(v, tuple(sorted(s.items()))) for s in {json.dumps(x, sort_keys=True): x for x in (sets[0], sets[-1])}.values()]


def _module(forms, version, arch) -> str:
    return wg.module_source([p for v in forms for p in _probes(v)], version, parse_target(arch))


def assemble_forms(forms, arch: str, exe: str, jobs: int | None = None, below_min: bool = True) -> list[AsmRow]:
    from ptxconf.backends.ptxas import assemble, first_error, ptxas_info

    max_ptx = ptxas_info(exe)["max_ptx"]
    t = parse_target(arch)
    tasks = []  # (version, expected, reason, forms)
    by_version: dict[tuple[PtxVersion, str, str], list] = {}
    rows: list[AsmRow] = []
    for v in forms:
        why = v.valid_for(t)
        version = max(v.min_ptx, PtxVersion.parse(TARGET_MIN_PTX.get(arch, "8.0")))
        exp = "invalid" if why else "valid"
        if version > max_ptx:
            rows.append(AsmRow(exe, arch, v.id, str(version), exp, "untestable", f"needs .version {version}; ptxas accepts up to {max_ptx}"))
            continue
        by_version.setdefault((version, exp, why or ""), []).append(v)
        low = PREVIOUS.get(v.min_ptx)
        if below_min and low and not why and low >= t.min_ptx:
            by_version.setdefault((low, "invalid", f"needs .version {v.min_ptx}"), []).append(v)
    for (version, exp, why), vs in by_version.items():
        for i in range(0, len(vs), CHUNK):
            tasks.append((version, exp, why, vs[i : i + CHUNK]))

    def work(task):
        version, exp, why, vs = task
        ok, err = assemble(_module(vs, version, arch), arch, exe)
        if ok or exp == "invalid" and len(vs) == 1:
            return [AsmRow(exe, arch, v.id, str(version), exp, "assembles" if ok else "rejected", "" if ok else first_error(err)) for v in vs]
        out = []
        for v in vs:  # split: which forms does ptxas reject?
            ok1, err1 = assemble(_module([v], version, arch), arch, exe)
            out.append(AsmRow(exe, arch, v.id, str(version), exp, "assembles" if ok1 else "rejected", "" if ok1 else first_error(err1)))
        return out

    with ThreadPoolExecutor(max_workers=jobs or 2) as pool:
        for chunk in pool.map(work, tasks):
            rows.extend(chunk)
    return rows


def _exes(args) -> list[str]:
    if args.ptxas:
        return args.ptxas
    from ptxconf.backends.ptxas import find_pinned_ptxas

    return [e for e in (shutil.which("ptxas"), find_pinned_ptxas()) if e]


def run_assemble(args) -> int:
    from ptxconf.isa.loader import load_specs

    specs = load_specs(args.specs)
    forms = [v for v in specs.documents["wgmma"].variants]
    if args.select:
        chosen = {v.id for v in specs.select(args.select)}
        forms = [v for v in forms if v.id in chosen]
    exes = _exes(args)
    if not exes:
        print("ptxconf wgmma assemble: no ptxas found", file=sys.stderr)
        return 2
    rows = []
    for exe in exes:
        for arch in args.arch.split(","):
            rows += assemble_forms(forms, arch, exe, args.jobs)
    bad = [r for r in rows if not r.agrees]
    if args.json:
        print(json.dumps([r.__dict__ for r in rows]))
    summary: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        s = summary.setdefault((r.exe, r.arch), {})
        key = f"{r.expected}/{r.actual}"
        s[key] = s.get(key, 0) + 1
    for (exe, arch), s in summary.items():
        print(f"{exe} {arch}: " + ", ".join(f"{k} {n}" for k, n in sorted(s.items())), file=sys.stderr)
    for r in bad[:40]:
        print(f"DISAGREE {r.exe} {r.arch} .version {r.version} {r.form}: spec {r.expected}, ptxas {r.actual}: {r.reason}", file=sys.stderr)
    return 1 if bad else 0


REUSE_DEFAULT = [
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16/rs",
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16/rs",
    "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32/rs",
    "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3/rs",
    "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8/rs",
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16/rs",
]


def classify_reuse(v, words: np.ndarray, out: np.ndarray, imm: dict) -> list[str]:
    """Per case: 'issued' (D used A as issued), 'overwritten' (D used the zeros), or 'neither'."""
    nd = v.operands["D"].words
    at_issue = wg.apply(v, words, imm)[:, :, :nd]
    zeroed = words.copy()
    zeroed[:, :, wg.a_off(v) : wg.a_off(v) + v.operands["A"].words] = 0
    at_zero = wg.apply(v, zeroed, imm)[:, :, :nd]
    got = out[:, :, :nd]
    res = []
    for c in range(len(words)):
        if np.array_equal(got[c], at_issue[c]):
            res.append("issued")
        elif np.array_equal(got[c], at_zero[c]):
            res.append("overwritten")
        else:
            res.append("neither")
    return res


def run_reuse(args) -> int:
    from ptxconf.backends import Launch, get_backend
    from ptxconf.backends.base import evidence_label
    from ptxconf.isa.loader import load_specs
    from ptxconf.oracle import mma

    specs = load_specs(args.specs)
    if args.select:
        forms = [v for v in specs.select(args.select) if v.family == "wgmma" and v.a_src == "registers"]
    else:
        forms = [specs.get(i) for i in REUSE_DEFAULT]
    if args.build_cubins:
        return _build_reuse_cubins(forms, args)
    backend = get_backend(args.backend, semantics=mma)
    info = backend.info()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((Path(args.cubins) / "manifest.json").read_text()) if args.cubins else None
    built_by = manifest["ptxas"] if manifest else "CUDA driver PTX JIT"
    report = {"device": info, "built_by": built_by, "forms": []}
    for v in forms:
        cs, imm, probe, module = _reuse_probe(v, args.seed)
        if manifest:  # a cubin assembled elsewhere by the named ptxas, for exactly this PTX
            entry = manifest["forms"].get(v.id)
            if entry is None or entry["ptx_sha256"] != hashlib.sha256(module.encode()).hexdigest():
                raise SystemExit(f"ptxconf wgmma reuse: {args.cubins} has no cubin for today's PTX of {v.id}; rebuild it")
            module = (Path(args.cubins) / entry["cubin"]).read_bytes()
        order = np.arange(cs.cases, dtype=np.uint32)
        (res,) = backend.run(module, [Launch(probe, cs.words, wg.out_words(v), order, 1)])
        if res.error:
            entry = {"form": v.id, "error": res.error}
        else:
            kinds = classify_reuse(v, cs.words, res.out, imm)
            entry = {"form": v.id, "cases": kinds}
            np.savez_compressed(out_dir / (wg_name(v) + ".npz"), in_words=cs.words, out_words=res.out,
                                meta=json.dumps({"variant": v.id, "imm": imm, "reuse": True}))
        report["forms"].append(entry)
        print(f"{v.id}: {entry.get('error') or ', '.join(sorted(set(entry['cases'])))}")
    (out_dir / "reuse.json").write_text(json.dumps(report, indent=1))
    backend.close()
    print(f"register-reuse probe on {evidence_label(info)} -> {out_dir / 'reuse.json'} (issued: A read as issued; "
          "overwritten: the zeros written after issue were read; the ISA leaves it undefined)")
    return 0


def _reuse_probe(v, seed: int):
    """The reuse probe of a register-A form: its cases, immediates, probe and PTX module."""
    cs = make_cases(v, seed, ("value",), 4)[0]
    imm = cs.params["imm"]
    probe = wg.WgProbe(v, tuple(sorted(imm.items())), reuse=True)
    module = wg.module_source([probe], max(v.min_ptx, PtxVersion(8, 0)), parse_target("sm_90a"))
    return cs, imm, probe, module


def _build_reuse_cubins(forms, args) -> int:
    """Assemble each reuse probe with the given ptxas into DIR/*.cubin + manifest.json (to load on a GPU machine)."""
    import subprocess
    import tempfile

    from ptxconf.backends.ptxas import find_ptxas, ptxas_info

    exe = find_ptxas(args.ptxas)
    out = Path(args.build_cubins)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"ptxas": ptxas_info(exe)["ptxas"], "arch": "sm_90a", "forms": {}}
    for v in forms:
        _, _, _, module = _reuse_probe(v, args.seed)
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
            fh.write(module)
        name = wg_name(v) + ".cubin"
        r = subprocess.run([str(exe), "-arch=sm_90a", "-o", str(out / name), fh.name], capture_output=True, text=True)
        Path(fh.name).unlink()
        if r.returncode:
            print(f"{v.id}: ptxas failed: {r.stderr.strip()[:500]}")
            return 1
        manifest["forms"][v.id] = {"cubin": name, "ptx_sha256": hashlib.sha256(module.encode()).hexdigest()}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(forms)} reuse probes assembled by {manifest['ptxas']} -> {out}")
    return 0


def wg_name(v) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]", "_", v.id)
