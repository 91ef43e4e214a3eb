"""``--ptxas VERSION|PATH|all`` to the ptxas binaries a command runs, each with what it accepts."""

from __future__ import annotations

from collections.abc import Iterable

from ptxconf.backends.ptxas import RELEASE_VERSION, PtxasNotFound, find_ptxas, installed_ptxas

from .facts import learn
from .matrix import Toolchain
from .releases import RELEASES, lookup

__all__ = ["resolve", "resolve_all"]


def resolve(spec: str | None) -> list[Toolchain]:
    """``all`` (every known release, each installed), a release (``13.5``, ``13.5.37``), a path to a ptxas,
    or None (the ptxas on PATH).  Raises PtxasNotFound (naming what to install) or ValueError."""
    if spec == "all":
        return [resolve(r.version)[0] for r in RELEASES]
    if spec and RELEASE_VERSION.fullmatch(spec):
        rel = lookup(spec)
        return [Toolchain(rel.version, installed_ptxas(rel.version), rel.max_ptx, rel.targets)]
    exe = find_ptxas(spec)
    facts = learn(exe)
    return [Toolchain(facts.release or exe, exe, facts.max_ptx, facts.targets)]


def resolve_all(specs: Iterable[str] | None) -> list[Toolchain]:
    """Every ``--ptxas`` value (each may be comma-separated), oldest release first, each toolchain once."""
    chosen: dict[str, Toolchain] = {}
    for spec in list(specs or []) or [None]:
        parts = [p.strip() for p in spec.split(",") if p.strip()] if spec else [None]
        for part in parts:
            for tc in resolve(part):
                chosen.setdefault(tc.name, tc)
    if not chosen:
        raise PtxasNotFound("--ptxas names no ptxas")

    def key(tc: Toolchain) -> tuple:
        return tuple(int(x) for x in tc.name.split(".")) if RELEASE_VERSION.fullmatch(tc.name) else (1 << 30,)

    return sorted(chosen.values(), key=key)
