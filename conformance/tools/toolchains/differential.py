"""Differential execution: the same probes built by every ptxas release at ``-O0`` and ``-O3`` (and by the
driver's JIT), run with identical inputs; every result must be bit-identical and pass the spec.

``prepare`` (any machine with the releases installed) plans each form at a fixed seed for an sm_90a GPU,
at a ``.version`` every release that knows the form takes, groups plans into modules as a run does and
builds each module with each release and optimisation level.  The bundle (one ``tar.xz``) holds the
manifest, each module's PTX and its cubins, identical cubins stored once; it carries no input words: the
plans are a function of (seed, form), so ``run`` plans them again and checks the PTX hash against the
manifest (specs edited since would be caught, not silently compared).

``run`` (the GPU machine) launches each distinct build through the run loop's own launch path
(:mod:`ptxconf.run.runner`) on the run's backend (PyCUDA in a child process, so a fault is one failed
build of one module, or the emulator), groups the builds of each form by their output words and compares
each distinct output once through the family's comparator.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import re
import shlex
import tarfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ptxconf.backends.base import Backend
from ptxconf.backends.ptxas import compile_cubin
from ptxconf.core.family import family_of
from ptxconf.core.plan import Plan
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, parse_target
from ptxconf.run import runner
from ptxconf.run.files import atomic_write

from .matrix import Toolchain

__all__ = ["ARCH", "CC", "FORMAT", "JIT", "representative", "plan_modules", "prepare", "run_bundle", "build_name",
           "read_bundle"]

FORMAT = 1
ARCH = "sm_90a"  # the GPU the campaign runs on (an H100)
CC = (9, 0)
JIT = "jit"  # the build the driver makes from the PTX itself
MODULE_PLANS = 64  # plans per module, as a run groups them
_SHAPE = re.compile(r"\.m(\d+)n(\d+)k(\d+)")


def build_name(release: str, opt: int) -> str:
    return f"{release}-O{opt}"


def representative(forms: Sequence[Variant]) -> list[Variant]:
    """A subset that keeps every family, shape class and type group: forms that differ only in N (``m64nNk16``:
    wgmma's 32 widths) or only in ``.row``/``.col`` are one group, of which the smallest and the largest N stay."""
    groups: dict[str, list[tuple[int, Variant]]] = defaultdict(list)
    for v in forms:
        m = _SHAPE.search(v.id)
        key = re.sub(r"\.(row|col)\b", ".L", _SHAPE.sub(lambda m: f".m{m.group(1)}n*k{m.group(3)}", v.id))
        groups[key].append((int(m.group(2)) if m else 0, v))
    keep = set()
    for members in groups.values():
        members.sort(key=lambda nv: nv[0])
        keep |= {members[0][1].id, members[-1][1].id if members[-1][0] != members[0][0] else members[0][1].id}
    return [v for v in forms if v.id in keep]


def _max_ptx(v: Variant) -> PtxVersion:
    """The loader maximum a form is planned for: the lowest ``.version`` it allows on sm_90a, so that every
    release that knows the form assembles the very same PTX."""
    return max(v.min_ptx, parse_target(ARCH).min_ptx)


def _plan(v: Variant, seed: int, value_cases: int) -> Plan:
    return runner.plan_variant(v, seed, CC, _max_ptx(v), None, value_cases)


def plan_modules(forms: Sequence[Variant], seed: int, value_cases: int) -> list[list[Plan]]:
    """Plans grouped as a run groups them: one family, ``.version`` and ``.target`` per module, 64 plans at most."""
    groups: dict[tuple[str, str, str], list[Plan]] = defaultdict(list)
    for v in forms:
        plan = _plan(v, seed, value_cases)
        groups[family_of(v).name, str(plan.version), plan.target.name].append(plan)
    return [plans[i : i + MODULE_PLANS] for plans in groups.values() for i in range(0, len(plans), MODULE_PLANS)]


def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644  # no owner, no time: the same builds make the same bundle
    tar.addfile(info, io.BytesIO(data))


def prepare(forms: Sequence[Variant], toolchains: Sequence[Toolchain], opts: Sequence[int], out: Path, *,
            seed: int = 0, value_cases: int = 8, jobs: int = 2, command: str = "", specs_hash: str = "",
            use_cache: bool = True, on_progress: Callable[[int, int], None] | None = None) -> dict:
    """Build every module with every release that knows sm_90a and takes its ``.version``, at each ``-O``
    level; write the bundle ``out`` (``.tar.xz``) and return its manifest."""
    modules = plan_modules(forms, seed, value_cases)
    usable = [tc for tc in toolchains if ARCH in tc.targets]
    texts = [runner.module_of(plans) for plans in modules]
    jobs_list = [(m, tc, opt) for m, plans in enumerate(modules) for tc in usable
                 if tc.max_ptx >= plans[0].version for opt in opts]
    done = [0]

    def build(job) -> tuple[bytes | None, str]:
        m, tc, opt = job
        got = compile_cubin(texts[m], ARCH, tc.exe, use_cache=use_cache, options=(f"-O{opt}",))
        done[0] += 1
        if on_progress:
            on_progress(done[0], len(jobs_list))
        return got

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        built = list(pool.map(build, jobs_list))
    manifest_modules = []
    cubins: dict[int, dict[str, bytes]] = defaultdict(dict)
    builds: dict[int, dict[str, str | dict]] = defaultdict(dict)
    for (m, tc, opt), (cubin, err) in zip(jobs_list, built):
        if cubin is None:
            builds[m][build_name(tc.name, opt)] = {"error": err.strip().splitlines()[0][:300] if err else "no cubin"}
            continue
        sha = _sha(cubin)
        cubins[m][sha] = cubin
        builds[m][build_name(tc.name, opt)] = sha
    for m, plans in enumerate(modules):
        first = plans[0]
        manifest_modules.append({
            "key": f"m{m:03d}", "family": family_of(first.variant).name, "version": str(first.version),
            "target": first.target.name, "max_ptx": str(_max_ptx(first.variant)),
            "variants": [p.variant.id for p in plans], "ptx_sha256": _sha(texts[m]), "builds": builds[m],
        })
    manifest = {
        "format": FORMAT, "arch": ARCH, "cc": list(CC), "seed": seed, "value_cases": value_cases,
        "command": command, "specs_hash": specs_hash, "opts": list(opts),
        "toolchains": [{"release": tc.name, "max_ptx": str(tc.max_ptx)} for tc in usable],
        "forms": sum(len(p) for p in modules), "modules": manifest_modules,
        "cubins": sum(len(c) for c in cubins.values()),
        "cubin_bytes": sum(len(b) for c in cubins.values() for b in c.values()),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", preset=9) as tar:
        _add(tar, "manifest.json", json.dumps(manifest, indent=1).encode())
        for m, entry in enumerate(manifest_modules):  # a module's PTX, then its cubins: similar bytes close together
            _add(tar, f"{entry['key']}/module.ptx", texts[m].encode())
            for sha, cubin in cubins[m].items():
                _add(tar, f"{entry['key']}/{sha}.cubin", cubin)
    atomic_write(out, buf.getvalue())
    return manifest


def read_bundle(path: Path) -> Iterator[tuple[dict, dict | None, str, dict[str, bytes]]]:
    """``(manifest, module entry, PTX, {sha: cubin})`` per module, streamed in bundle order (the first item has
    entry None: the manifest alone)."""
    try:
        yield from _members(path)
    except (tarfile.TarError, lzma.LZMAError, EOFError, KeyError) as exc:  # not a bundle, or cut short
        raise ValueError(f"not a whole bundle ({type(exc).__name__}: {exc})") from None


def _members(path: Path) -> Iterator[tuple[dict, dict | None, str, dict[str, bytes]]]:
    with tarfile.open(path, mode="r:xz") as tar:
        manifest: dict | None = None
        entries: dict[str, dict] = {}
        current: str | None = None
        ptx, cubins = "", {}
        for member in tar:
            data = tar.extractfile(member).read() if member.isfile() else b""
            if member.name == "manifest.json":
                manifest = json.loads(data)
                if manifest.get("format") != FORMAT:
                    raise ValueError(f"{path}: bundle format {manifest.get('format')}, this code reads {FORMAT}")
                entries = {e["key"]: e for e in manifest["modules"]}
                yield manifest, None, "", {}
                continue
            if manifest is None:
                raise ValueError(f"{path}: the manifest is not the bundle's first member")
            key, _, name = member.name.partition("/")
            if key != current:
                if current is not None:
                    yield manifest, entries[current], ptx, cubins
                current, ptx, cubins = key, "", {}
            if name == "module.ptx":
                ptx = data.decode()
            elif name.endswith(".cubin"):
                cubins[name[: -len(".cubin")]] = data
        if current is not None:
            yield manifest, entries[current], ptx, cubins


@dataclass
class _Output:
    """One distinct output of one form: the builds that produced it and its verdicts."""

    words: np.ndarray
    builds: list[str]
    verdicts: list


def _launch(backend: Backend, plans: list[Plan], image: str | bytes) -> list[tuple[np.ndarray, list[str]]]:
    """The run loop's own launch path (one backend call per module; a fault fails its launches, not the run):
    per plan, its out words and why launches failed (an error is a message, or the cases and the message)."""
    return [(words, [e if isinstance(e, str) else e[-1] for e in errs])
            for words, errs in runner.launch_module(backend, plans, image)]


def _first_difference(plan: Plan, a: np.ndarray, b: np.ndarray) -> str:
    row, lane, word = (int(x[0]) for x in np.nonzero(a != b))
    check = next((c for c, (lo, hi) in plan.slices.items() if lo <= row < hi), "?")
    return (f"{int((a != b).sum())} words differ; first: check {check}, case {row - plan.slices.get(check, (0, 0))[0]}, "
            f"lane {lane}, word {word}: {int(a[row, lane, word]):#010x} vs {int(b[row, lane, word]):#010x}")


def _replay(bundle: str, form: str, builds: Sequence[str]) -> str:
    picks = " ".join(f"--build {shlex.quote(b)}" for b in builds)
    return (f"ptxconf toolchains differential run {shlex.quote(bundle)} --select {shlex.quote(form)} {picks} "
            "--out differential-replay")


def run_bundle(path: Path, backend: Backend, specs, out: Path, *, select: Sequence[str] | None = None,
               builds: Sequence[str] | None = None, bundle_name: str | None = None,
               on_module: Callable[[int, int], None] | None = None) -> dict:
    """Run every selected form of the bundle with every selected build (``jit`` and ``<release>-O<n>``); write
    ``differential.json`` and each finding's minimal PTX into ``out``; the summary document."""
    t0 = time.monotonic()
    bundle_name = bundle_name or str(path)
    wanted = set(v.id for v in specs.select(select)) if select else None
    findings: list[dict] = []
    rows: list[dict] = []
    launches = 0
    stale: list[str] = []
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {}
    seen_modules = 0
    strikes: Counter[str] = Counter()
    skipped: dict[str, str] = {}  # builds whose images failed to load in two modules: not tried again
    for manifest, entry, ptx, cubins in read_bundle(path):
        if entry is None:
            continue
        seen_modules += 1
        if on_module:
            on_module(seen_modules, len(manifest["modules"]))
        ids = [vid for vid in entry["variants"] if wanted is None or vid in wanted]
        if not ids:
            continue
        plans = [_plan(specs.get(vid), manifest["seed"], manifest["value_cases"]) for vid in entry["variants"]]
        if _sha(runner.module_of(plans)) != entry["ptx_sha256"] or _sha(ptx) != entry["ptx_sha256"]:
            # The specs or generators changed since prepare: these cubins are not these plans' kernels.
            stale.append(entry["key"])
            findings.append({"kind": "stale-module", "module": entry["key"], "forms": ids,
                             "message": "planned again here, the module's PTX differs from the bundle's: "
                                        "prepare the bundle again from this tree"})
            continue
        # Distinct images: the JIT's PTX, then each distinct cubin; a build that failed to assemble is a finding.
        images: dict[str, str | bytes] = {}
        names: dict[str, list[str]] = defaultdict(list)
        if builds is None or JIT in builds:
            images[JIT] = ptx
            names[JIT].append(JIT)
        for name, got in entry["builds"].items():
            if (builds is not None and name not in builds) or name in skipped:
                continue
            if isinstance(got, dict):
                findings.append({"kind": "build-failed", "module": entry["key"], "build": name, "message": got["error"],
                                 "forms": ids})
                continue
            images.setdefault(got, cubins[got])
            names[got].append(name)
        outputs: dict[str, dict[bytes, _Output]] = {vid: {} for vid in ids}
        for key, image in images.items():
            launched = _launch(backend, plans, image)
            launches += sum(len(p.launches) for p in plans)
            if all(errs for _, errs in launched):  # nothing ran: the image did not load (a second time: stop asking)
                for name in names[key]:
                    strikes[name] += 1
                    if strikes[name] >= 2 and name != JIT:
                        skipped[name] = launched[0][1][0][:300]
            for plan, (words, errs) in zip(plans, launched):
                vid = plan.variant.id
                if vid not in outputs:
                    continue
                if errs:
                    findings.append({"kind": "launch-error", "form": vid, "builds": names[key], "message": errs[0][:500],
                                     "replay": _replay(bundle_name, vid, names[key][:1])})
                    continue
                digest = words.tobytes()
                if digest not in outputs[vid]:
                    outputs[vid][digest] = _Output(words, [], runner.compare_plan(plan, words))
                outputs[vid][digest].builds += names[key]
        for plan in plans:
            vid = plan.variant.id
            if vid not in outputs:
                continue
            groups = sorted(outputs[vid].values(), key=lambda o: -len(o.builds))
            rows.append({"form": vid, "module": entry["key"], "outputs": len(groups),
                         "builds": sum(len(o.builds) for o in groups),
                         "verdicts": sorted({f"{v.check}:{v.status}" for o in groups for v in o.verdicts})})
            minimal = runner.module_of([plan])
            ptx_file = None
            for o in groups[1:]:
                ptx_file = ptx_file or _write_ptx(out, vid, minimal)
                findings.append({"kind": "results-differ", "form": vid, "builds": [groups[0].builds[0], o.builds[0]],
                                 "majority": groups[0].builds, "minority": o.builds,
                                 "difference": _first_difference(plan, groups[0].words, o.words), "ptx": ptx_file,
                                 "replay": _replay(bundle_name, vid, [groups[0].builds[0], o.builds[0]])})
            for o in groups:
                for v in o.verdicts:
                    if v.status in ("fail", "error"):
                        ptx_file = ptx_file or _write_ptx(out, vid, minimal)
                        findings.append({"kind": f"spec-{v.status}", "form": vid, "check": v.check, "builds": o.builds,
                                         "message": v.message[:500], "ptx": ptx_file,
                                         "replay": _replay(bundle_name, vid, o.builds[:1])})
    info = backend.info()
    doc = {
        "bundle": bundle_name, "device": {k: info.get(k) for k in ("backend", "gpu", "compute_capability", "driver",
                                                                   "cuda_driver_api") if info.get(k) is not None},
        "arch": manifest.get("arch"), "seed": manifest.get("seed"), "toolchains": manifest.get("toolchains"),
        "prepared_with": manifest.get("command"), "forms": len(rows),
        "builds_per_form": max((r["builds"] for r in rows), default=0), "launches": launches,
        "forms_with_one_output": sum(r["outputs"] == 1 for r in rows), "stale_modules": stale,
        "builds_skipped": skipped,
        "findings": _count(findings), "wall_s": round(time.monotonic() - t0, 1),
    }
    atomic_write(out / "differential.json", json.dumps({**doc, "finding_list": findings, "forms_run": rows},
                                                       indent=1) + "\n")
    return doc


def _count(findings: list[dict]) -> dict[str, int]:
    c: dict[str, int] = {}
    for f in findings:
        c[f["kind"]] = c.get(f["kind"], 0) + 1
    return c


def _write_ptx(out: Path, vid: str, text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", vid) + ".ptx"
    (out / "ptx").mkdir(parents=True, exist_ok=True)
    atomic_write(out / "ptx" / name, text)
    return f"ptx/{name}"
