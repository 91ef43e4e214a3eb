"""Arguments checked before any work: ranges, paths that must be writable, optional packages, installed ptxas.

Commands share option names (``--seed``, ``--cases``, ``--jobs``, ``--budget``, ``--select``, ``--out``, ``--backend``,
``--ptxas``), so the checks are made here once, by name, for every command, its families' verbs included.  A failed
check is one line naming the command and the option, and exit status 2, before a spec is loaded or a file written.
A ``--ptxas VERSION`` that names an installed release becomes that release's executable here, so every command that
takes one sees a path (``toolchains`` commands check and keep the versions they name themselves).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import resource
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["preflight", "leaf_parser", "MAX_CASES", "MAX_JOBS", "OPTIONAL_PACKAGES", "needs_package", "writable"]

MAX_SEED = 2**63 - 1
MAX_CASES = {"ptxconf run": 100_000}  # about 2 KB of host memory per run case (10**7 asked for 19.1 GiB)
MAX_CASES_DEFAULT = 1_000_000
MAX_JOBS = 256
MAX_BATCH = 1 << 24
# Import name -> what to install (one line: "install X").
OPTIONAL_PACKAGES = {
    "pycuda": "pycuda",
    "cupy": "cupy-cuda12x (or the CuPy wheel for your CUDA)",
    "matplotlib": "matplotlib",
    "cuda": "cuda-python",
}


class Usage(SystemExit):
    """A usage error: its text is the one line printed."""


def leaf_parser(root: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command that ``args`` came from: followed from the root by each subcommand's name."""
    parser = root
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or name not in sub.choices:
            return parser
        parser = sub.choices[name]


def needs_package(module: str, prog: str, why: str = "") -> None:
    """Refuse, in one line, when the optional package ``module`` is not installed."""
    if importlib.util.find_spec(module) is None:
        raise Usage(f"{prog}: {why or 'this command'} needs {module}: install {OPTIONAL_PACKAGES.get(module, module)}")


def writable(path: Path) -> str | None:
    """None when files can be written at ``path`` (an existing folder or file, or a path whose nearest existing
    ancestor is a folder that takes a new file), else why not.  Probes by writing, since permission bits do not
    tell (root, read-only mounts)."""
    probe_dir = path
    if path.exists() and not path.is_dir():
        try:
            with open(path, "ab"):
                return None
        except OSError as exc:
            return exc.strerror or str(exc)
    while not probe_dir.exists():
        if probe_dir.is_symlink():
            return f"{probe_dir} is a dangling symlink"
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        return f"{probe_dir} is not a folder"
    try:
        fd, name = tempfile.mkstemp(dir=probe_dir, prefix=".ptxconf-probe-")
    except OSError as exc:
        return f"{probe_dir}: {(exc.strerror or str(exc)).lower()}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return None


def _option(parser: argparse.ArgumentParser, dest: str) -> str:
    for a in parser._actions:
        if a.dest == dest:
            return max(a.option_strings, key=len) if a.option_strings else dest.upper()
    return f"--{dest.replace('_', '-')}"


def _int_range(lo: int, hi: int | Callable[[str], int]) -> Callable[[str, str, Any], None]:
    def check(prog: str, opt: str, value: Any) -> None:
        top = hi(prog) if callable(hi) else hi
        if isinstance(value, int) and not isinstance(value, bool) and not lo <= value <= top:
            bound = f"at least {lo}" if value < lo else f"at most {top}"
            raise Usage(f"{prog}: {opt} must be {bound}, not {value}")

    return check


def _positive_seconds(prog: str, opt: str, value: Any) -> None:
    if isinstance(value, float) and not (math.isfinite(value) and value > 0):
        raise Usage(f"{prog}: {opt} must be a positive number of seconds, not {value:g}")


def _jobs(prog: str, opt: str, value: Any) -> None:
    _int_range(1, MAX_JOBS)(prog, opt, value)
    if isinstance(value, int):
        soft, _hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if soft != resource.RLIM_INFINITY and 2 * value + 16 > soft:  # planning and comparing workers, and room
            raise Usage(f"{prog}: {opt} must be at most {max(1, (soft - 16) // 2)} under this process limit "
                        f"(ulimit -u {soft}), not {value}")


def _select(prog: str, opt: str, value: Any) -> None:
    for pattern in [value] if isinstance(value, str) else (value or []):
        if isinstance(pattern, str) and not pattern.strip():
            raise Usage(f"{prog}: {opt} '{pattern}': an empty pattern; give a variant id, prefix or glob")


def _path(prog: str, opt: str, value: Any) -> None:
    if isinstance(value, str):
        if not value.strip():
            raise Usage(f"{prog}: {opt} '': an empty path")
        why = writable(Path(value))
        if why:
            raise Usage(f"{prog}: {opt} {value}: cannot write here ({why})")


def _backend(prog: str, opt: str, value: Any) -> None:
    if value == "pycuda":
        needs_package("pycuda", prog, "--backend pycuda")


_PTXAS_WORDS = {"all", "path", "pinned"}


def _ptxas(args: argparse.Namespace, prog: str, opt: str) -> None:
    from ptxconf.backends.ptxas import PtxasNotFound, find_ptxas

    given = args.ptxas
    values = [given] if isinstance(given, str) else list(given or [])
    resolved = []
    for value in values:
        if value in _PTXAS_WORDS:
            resolved.append(value)
            continue
        try:
            resolved.append(find_ptxas(value))
        except PtxasNotFound as exc:
            raise Usage(f"{prog}: {opt}: {exc}") from None
    args.ptxas = resolved[0] if isinstance(given, str) else resolved


CHECKS: dict[str, Callable[[str, str, Any], None]] = {
    "seed": _int_range(0, MAX_SEED),
    "cases": _int_range(1, lambda prog: MAX_CASES.get(prog, MAX_CASES_DEFAULT)),
    "case": _int_range(0, MAX_SEED),
    "jobs": _jobs,
    "budget": _positive_seconds,
    "shrink_s": _positive_seconds,
    "bulk": _positive_seconds,
    "batch": _int_range(1, MAX_BATCH),
    "device_cases": _int_range(1, MAX_CASES_DEFAULT),
    "device_workers": _int_range(1, MAX_JOBS),
    "limit": _int_range(0, MAX_SEED),
    "max_findings": _int_range(1, MAX_SEED),
    "baseline_variants": _int_range(1, 100_000),
    "n": _int_range(1, 100_000_000),
    "select": _select,
    "out": _path,
    "output": _path,
    "junit": _path,
    "backend": _backend,
}


_ALWAYS = {"out", "output", "junit", "backend"}  # a default value is checked too (a default --out may be unwritable)


def preflight(root: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check every option of the command ``args`` came from; raises :class:`Usage` with its one line."""
    leaf = leaf_parser(root, args)
    prog = leaf.prog
    dests = {a.dest for a in leaf._actions}
    for dest, check in CHECKS.items():
        value = getattr(args, dest, None)
        if dest in dests and value is not None and (value != leaf.get_default(dest) or dest in _ALWAYS):
            check(prog, _option(leaf, dest), value)
    if getattr(args, "values", None) == "device" and getattr(args, "backend", None) == "pycuda":
        needs_package("cupy", prog, "--values device on a GPU")
    if "ptxas" in dests and getattr(args, "ptxas", None) and not prog.startswith("ptxconf toolchains"):
        # (toolchains name releases by version in what they write, and check them against the known releases)
        _ptxas(args, prog, _option(leaf, "ptxas"))
