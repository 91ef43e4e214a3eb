"""Assemble-only backend: does ``ptxas`` accept what the spec says is valid, and reject the rest?

No GPU needed.  For every (arch, variant) the spec gives an expectation
(:meth:`Variant.valid_for`) and ptxas gives a verdict; a :class:`Row` records
both and whether they agree.

* The ``.version`` of a (variant, arch) is ``max(v.min_ptx, target.min_ptx)``.
  A spec-valid pair whose version exceeds what this ptxas accepts is
  *untestable*.  A spec-invalid pair is emitted at that version capped at the
  ptxas maximum, so that (as far as possible) only the target decides.
* Spec-valid variants of one arch are assembled together, one module per
  ``.version`` (usually one or two); if a module assembles, all its variants do,
  otherwise each is re-assembled alone to find which ones ptxas rejects.
  Spec-invalid variants are assembled one module each.  All modules run on a
  thread pool.
* Results are cached on disk by sha256 of (ptxas ``--version``, arch, PTX text)
  under ``$PTXCONF_CACHE/ptxas/`` or ``~/.cache/ptx-conformance/ptxas/``, as
  entries of :mod:`ptxconf.cache` (checked before use, bounded in size).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from ptxconf import cache as cache_store
from ptxconf.core.family import family_of
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, Target, parse_target

__all__ = [
    "PtxasNotFound",
    "Row",
    "STATUSES",
    "find_ptxas",
    "ptxas_info",
    "max_ptx_for_release",
    "cache_dir",
    "toolchains_dir",
    "installed_toolchains",
    "installed_ptxas",
    "assemble",
    "compile_cubin",
    "assemble_report",
    "module_for",
]

STATUSES = ("agree", "assembles-but-spec-invalid", "rejected-but-spec-valid", "untestable")
DEFAULT_TIMEOUT_S = 300.0
ELF_MAGIC = b"\x7fELF"  # what every cubin starts with

# Highest ``.version`` each CUDA release's ptxas accepts (PTX ISA release notes).
_KNOWN_MAX_PTX: dict[tuple[int, int], str] = {
    (11, 0): "7.0",
    (11, 1): "7.1",
    (11, 2): "7.2",
    (11, 3): "7.3",
    (11, 4): "7.4",
    (11, 5): "7.5",
    (11, 6): "7.6",
    (11, 7): "7.7",
    (11, 8): "7.8",
    (12, 0): "8.0",
    (12, 1): "8.1",
    (12, 2): "8.2",
    (12, 3): "8.3",
    (12, 4): "8.4",
    (12, 5): "8.5",
    (12, 6): "8.5",
    (12, 8): "8.7",
    (12, 9): "8.8",
}


class PtxasNotFound(RuntimeError):
    """No usable ptxas executable."""


RELEASE_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")  # how a ptxas release is named: 13.5 or 13.5.37


def toolchains_dir() -> Path:
    """Where ``ptxconf toolchains install`` unpacks releases, one folder per version holding ``ptxas``:
    ``$PTXCONF_TOOLCHAINS_DIR``, else ``$XDG_CACHE_HOME/ptx-conformance/toolchains``, else under ``~/.cache``."""
    if os.environ.get("PTXCONF_TOOLCHAINS_DIR"):
        return Path(os.environ["PTXCONF_TOOLCHAINS_DIR"])
    base = Path(os.environ["XDG_CACHE_HOME"]) if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "ptx-conformance" / "toolchains"


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def installed_toolchains() -> dict[str, str]:
    """Installed release -> its ptxas, oldest first (a folder without an executable ptxas is not installed)."""
    root = toolchains_dir()
    found = {}
    if root.is_dir():
        for d in root.iterdir():
            exe = d / "ptxas"
            if RELEASE_VERSION.fullmatch(d.name) and exe.is_file() and os.access(exe, os.X_OK):
                found[d.name] = str(exe)
    return dict(sorted(found.items(), key=lambda kv: _release_key(kv[0])))


def installed_ptxas(version: str) -> str:
    """The ptxas of an installed release: ``13.5.37`` exactly, or ``13.5`` as the newest installed 13.5.x."""
    installed = installed_toolchains()
    hits = [v for v in installed if v == version or v.startswith(version + ".")]
    if not hits:
        raise PtxasNotFound(f"ptxas {version} is not installed in {toolchains_dir()} ({len(installed)} releases are; "
                            f"`ptxconf toolchains list` shows them, `ptxconf toolchains install {version}` adds it)")
    return installed[hits[-1]]


def find_ptxas(path: str | os.PathLike | None = None) -> str:
    """The ptxas to use: ``path`` (a release version such as ``13.5`` that ``ptxconf toolchains install`` put in
    :func:`toolchains_dir`, a file, or a directory holding ptxas), else ``$PATH``, else ``$CUDA_HOME/bin``."""
    if path and RELEASE_VERSION.fullmatch(str(path)):
        return installed_ptxas(str(path))
    if path:
        p = Path(path)
        if p.is_dir():
            p = p / "ptxas"
        if p.is_file() and os.access(p, os.X_OK):
            return str(p.resolve())
        found = shutil.which(str(path))
        if found:
            return found
        raise PtxasNotFound(f"ptxas not found at {path} (not an executable file)")
    found = shutil.which("ptxas")
    if found:
        return found
    for env in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(env)
        if root and (Path(root) / "bin" / "ptxas").is_file():
            return str(Path(root) / "bin" / "ptxas")
    raise PtxasNotFound("ptxas not on PATH (install the CUDA toolkit, or pass --ptxas PATH)")


def max_ptx_for_release(release: str) -> tuple[PtxVersion, str | None]:
    """``(max .version, note)`` for a CUDA release such as ``"13.0"``; the note says when it is a guess."""
    major, minor = (int(x) for x in release.split(".")[:2])
    if major == 13:
        return PtxVersion(9, minor), None
    if (major, minor) in _KNOWN_MAX_PTX:
        return PtxVersion.parse(_KNOWN_MAX_PTX[(major, minor)]), None
    # Unknown release: assume the highest version of the nearest known earlier release.
    if major > 13:
        guess = PtxVersion(9, 0)
    else:
        earlier = [k for k in _KNOWN_MAX_PTX if k <= (major, minor)]
        guess = PtxVersion.parse(_KNOWN_MAX_PTX[max(earlier)]) if earlier else PtxVersion(6, 0)
    note = (
        f"CUDA {release} is not in the table of known ptxas releases; "
        f"assuming conservatively that it accepts .version up to {guess}"
    )
    return guess, note


PINNED_NVCC = "nvidia-cuda-nvcc==13.5.37"


def find_pinned_ptxas() -> str | None:
    """The newer ptxas: ``$PTXCONF_PTXAS_NEW``, else the ``nvidia-cuda-nvcc`` wheel's in this Python."""
    env = os.environ.get("PTXCONF_PTXAS_NEW")
    if env:
        return env if Path(env).is_file() else None
    for root in sys.path:
        for hit in sorted(glob.glob(os.path.join(root, "nvidia", "cu*", "bin", "ptxas"))):
            if os.access(hit, os.X_OK):
                return hit
    return None


@cache
def _version_output(exe: str) -> str:
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PtxasNotFound(f"cannot run {exe} --version: {exc}") from None
    if proc.returncode != 0:
        raise PtxasNotFound(f"{exe} --version exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def ptxas_info(exe: str) -> dict:
    """``{"ptxas": version line, "release": "13.0", "max_ptx": PtxVersion}`` (plus ``"note"`` when guessed)."""
    text = _version_output(exe)
    m = re.search(r"release (\d+)\.(\d+)", text)
    line = next((ln for ln in text.splitlines() if "release" in ln), text.splitlines()[-1] if text else "")
    if not m:
        return {
            "ptxas": line,
            "release": "unknown",
            "max_ptx": PtxVersion(6, 0),
            "note": f"could not read a CUDA release from {exe} --version; assuming .version up to 6.0",
        }
    release = f"{m.group(1)}.{m.group(2)}"
    max_ptx, note = max_ptx_for_release(release)
    info = {"ptxas": line, "release": release, "max_ptx": max_ptx}
    if note:
        info["note"] = note
    return info


def cache_dir() -> Path:
    return cache_store.cache_root() / "ptxas"


_LOCATION = re.compile(r"^ptxas\s+[^,\n]*,\s*(line \d+)", re.M)


def _clean(stderr: str) -> str:
    """Drop ptxas's temporary input file names so results are stable (and cacheable)."""
    return _LOCATION.sub(r"ptxas <input>, \1", stderr).strip()


def first_error(stderr: str) -> str:
    """The first line that says what is wrong."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln and "fatal" not in ln:
            ln = re.sub(r"^ptxas <input>,\s*", "", ln)
            return re.sub(r"\s+", " ", ln)
    return re.sub(r"\s+", " ", lines[0]) if lines else ""


def _run_ptxas(ptx_text: str, arch: str, exe: str, timeout: float) -> tuple[bool, str, bool]:
    """``(ok, stderr, cacheable)``; never raises on a ptxas failure."""
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", prefix="ptxconf-", delete=False) as fh:
        fh.write(ptx_text)
        src = fh.name
    try:
        proc = subprocess.run(
            [exe, f"-arch={arch}", "-o", os.devnull, src],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, f"ptxas timed out after {timeout:g} s", False
    except OSError as exc:
        return False, f"could not run ptxas: {exc}", False
    finally:
        try:
            os.unlink(src)
        except OSError:
            pass
    err = _clean((proc.stderr or "") + (proc.stdout or "")).replace(src, "<input>")
    if proc.returncode < 0:
        return False, f"ptxas crashed (signal {-proc.returncode}){': ' + err if err else ''}", False
    if proc.returncode != 0 and not err:
        err = f"ptxas exited {proc.returncode} with no message"
    return proc.returncode == 0, err, True


def assemble(
    ptx_text: str,
    arch: str,
    exe: str,
    *,
    use_cache: bool = True,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[bool, str]:
    """Does ptxas accept ``ptx_text`` for ``-arch=arch``?  ``(ok, stderr)``; cached on disk.

    Timeouts and crashes are failures whose text says so; they are not cached.
    """
    key = hashlib.sha256("\0".join((_version_output(exe), arch, ptx_text)).encode()).hexdigest()
    if use_cache:
        hit = cache_store.get("ptxas", key)  # None unless intact and written under this user's secret
        try:
            doc = json.loads(hit) if hit is not None else None
            if isinstance(doc, dict) and isinstance(doc.get("ok"), bool) and isinstance(doc.get("stderr"), str):
                return doc["ok"], doc["stderr"]
        except ValueError:
            pass
    ok, err, cacheable = _run_ptxas(ptx_text, arch, exe, timeout)
    if use_cache and cacheable:
        cache_store.put("ptxas", key, json.dumps({"ok": ok, "stderr": err, "arch": arch}).encode())
    return ok, err


_LIVE: set[subprocess.Popen] = set()  # the ptxas processes this process is waiting on (compile_cubin)
_LIVE_LOCK = threading.Lock()


def _build_process(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run`` of one ptxas, registered while it runs so that :func:`cancel_builds` can end it."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def cancel_builds() -> int:
    """Kill every ptxas :func:`compile_cubin` is waiting on; how many.  Why: a run that stops must not wait for
    modules built ahead that it will never launch (the build threads are joined when the interpreter exits)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        with contextlib.suppress(OSError):
            proc.kill()
    return len(live)


def compile_cubin(ptx_text: str, arch: str, exe: str, *, use_cache: bool = True,
                  timeout: float = DEFAULT_TIMEOUT_S, options: Sequence[str] = ()) -> tuple[bytes | None, str]:
    """``(cubin, "")`` or ``(None, stderr)``: ``ptx_text`` built for ``-arch=arch`` (plus ``options`` such as
    ``-O0``), cached on disk by sha256 of (this ptxas's ``--version``, arch, options, PTX), so a warm run
    assembles nothing."""
    key = hashlib.sha256("\0".join((_version_output(exe), arch, *options, ptx_text)).encode()).hexdigest()
    if use_cache:
        data = cache_store.get("cubin", key)  # a truncated entry or another module's cubin is a miss: built again
        if data is not None and data.startswith(ELF_MAGIC):
            return data, ""
    with tempfile.TemporaryDirectory(prefix="ptxconf-") as tmp:
        src, out = Path(tmp) / "m.ptx", Path(tmp) / "m.cubin"
        src.write_text(ptx_text)
        try:
            proc = _build_process([exe, f"-arch={arch}", *options, "-o", str(out), str(src)], timeout)
        except subprocess.TimeoutExpired:
            return None, f"ptxas timed out after {timeout:g} s"
        except OSError as exc:
            return None, f"could not run ptxas: {exc}"
        if proc.returncode != 0 or not out.is_file():
            err = _clean((proc.stderr or "") + (proc.stdout or "")).replace(str(src), "<input>")
            if proc.returncode < 0:  # worded as assemble() words it, so a crash is never read as a refusal
                return None, f"ptxas crashed (signal {-proc.returncode}){': ' + err if err else ''}"
            return None, err or f"ptxas exited {proc.returncode}"
        data = out.read_bytes()
    if not data.startswith(ELF_MAGIC):
        return None, f"ptxas exited 0 but wrote no ELF cubin ({len(data)} bytes starting {data[:8]!r})"
    if use_cache:
        cache_store.put("cubin", key, data)
    return data, ""


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One (arch, variant): what the spec expects, what ptxas did, and whether they agree."""

    arch: str
    variant: str
    version: str  # the .version the module was emitted at ("" when untestable)
    expected: str  # "valid" or "invalid"
    expected_reason: str  # why invalid ("" when valid)
    actual: str  # "assembles", "rejected" or "untestable"
    actual_reason: str  # first ptxas error line, or why untestable
    status: str  # one of STATUSES

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def disagrees(self) -> bool:
        return self.status in ("assembles-but-spec-invalid", "rejected-but-spec-valid")

    def describe(self) -> str:
        if self.status == "assembles-but-spec-invalid":
            return f"assembles (.version {self.version}) but spec says invalid: {self.expected_reason}"
        if self.status == "rejected-but-spec-valid":
            return f"rejected (.version {self.version}) but spec says valid: {self.actual_reason}"
        if self.status == "untestable":
            return f"untestable: {self.actual_reason}"
        return f"agree: {self.expected} and {self.actual}"


def module_for(variants: Sequence[Variant], version: PtxVersion, target: Target, probes: dict | None = None) -> str:
    """One PTX module holding an assemble-only probe kernel for each variant (all of one family)."""
    fam = family_of(variants[0])
    probes = probes if probes is not None else {}
    ps = []
    for v in variants:
        if v.id not in probes:
            probes[v.id] = fam.assembly_probe(v)
        ps.append(probes[v.id])
    return fam.module_source(ps, version, target)


def assemble_report(
    variants: Iterable[Variant],
    archs: Iterable[str | Target],
    exe: str,
    jobs: int | None = None,
    *,
    use_cache: bool = True,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> list[Row]:
    """A :class:`Row` per (arch, variant), archs outer, variants in the given order."""
    variants = list(variants)
    targets = [parse_target(a) if isinstance(a, str) else a for a in archs]
    max_ptx = ptxas_info(exe)["max_ptx"]
    jobs = max(1, jobs or os.cpu_count() or 1)
    probes: dict = {v.id: family_of(v).assembly_probe(v) for v in variants}

    def run(mod_variants: Sequence[Variant], version: PtxVersion, target: Target) -> tuple[bool, str]:
        text = module_for(mod_variants, version, target, probes)
        return assemble(text, target.name, exe, use_cache=use_cache, timeout=timeout)

    rows: dict[tuple[str, str], Row] = {}
    # (target, version) -> spec-valid variants; (target, variant, version, reason) singles for spec-invalid.
    groups: dict[tuple[str, Target, PtxVersion], list[Variant]] = defaultdict(list)
    singles: list[tuple[Target, Variant, PtxVersion, str]] = []
    for t in targets:
        for v in variants:
            natural = max(v.min_ptx, t.min_ptx)
            reason = v.valid_for(t, natural)
            if t.min_ptx > max_ptx:
                why = f".target {t.name} needs .version {t.min_ptx}; this ptxas accepts up to {max_ptx}"
                rows[t.name, v.id] = Row(
                    t.name, v.id, "", "invalid" if reason else "valid", reason or "", "untestable", why, "untestable"
                )
            elif reason is None and natural > max_ptx:
                why = f"needs .version {natural}; this ptxas accepts up to {max_ptx}"
                rows[t.name, v.id] = Row(t.name, v.id, "", "valid", "", "untestable", why, "untestable")
            elif reason is None:
                groups[family_of(v).name, t, natural].append(v)
            else:
                singles.append((t, v, min(natural, max_ptx), reason))

    def record(t: Target, v: Variant, version: PtxVersion, reason: str | None, ok: bool, err: str) -> None:
        expected = "invalid" if reason else "valid"
        if ok:
            status = "agree" if not reason else "assembles-but-spec-invalid"
        else:
            status = "agree" if reason else "rejected-but-spec-valid"
        rows[t.name, v.id] = Row(
            t.name, v.id, str(version), expected, reason or "", "assembles" if ok else "rejected",
            "" if ok else first_error(err), status,
        )

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        group_futs = {key: pool.submit(run, vs, key[2], key[1]) for key, vs in groups.items()}
        single_futs = [(s, pool.submit(run, [s[1]], s[2], s[0])) for s in singles]
        retry = []
        for (fam, t, version), fut in group_futs.items():
            ok, err = fut.result()
            vs = groups[fam, t, version]
            if ok:
                for v in vs:
                    record(t, v, version, None, True, "")
            elif len(vs) == 1:
                record(t, vs[0], version, None, False, err)
            else:
                retry += [((t, v, version), pool.submit(run, [v], version, t)) for v in vs]
        for (t, v, version, reason), fut in single_futs:
            record(t, v, version, reason, *fut.result())
        for (t, v, version), fut in retry:
            record(t, v, version, None, *fut.result())

    return [rows[t.name, v.id] for t in targets for v in variants]
