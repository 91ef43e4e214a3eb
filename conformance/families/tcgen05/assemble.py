"""ptxas validity matrix for tcgen05 probes: where ptxas agrees with the spec and where not.

Probes are batched one module per (target, .version, expected verdict); a module
that fails is split per probe.  Results go through the on-disk cache of
conformance/backends/ptxas.py.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

from ptxconf.backends.ptxas import Row, assemble, first_error, ptxas_info
from ptxconf.families.tcgen05.probe import MmaProbe, expected, module_source, probes
from ptxconf.families.tcgen05.spec import Tcgen05Spec
from ptxconf.isa.targets import PtxVersion, parse_target

__all__ = ["DEFAULT_ARCHS", "matrix", "summary"]

DEFAULT_ARCHS = "sm_100a,sm_100f,sm_103a,sm_107a,sm_107f,sm_110a,sm_120a,sm_90a"
def matrix(spec: Tcgen05Spec, archs: list[str], exe: str, *, jobs: int | None = None, use_cache: bool = True) -> list[Row]:
    """A :class:`Row` per (arch, probe)."""
    max_ptx = ptxas_info(exe)["max_ptx"]
    ps = probes(spec)
    rows: dict[tuple[str, str], Row] = {}
    groups: dict[tuple[str, PtxVersion, bool], list[tuple[MmaProbe, str | None]]] = defaultdict(list)
    for a in archs:
        t = parse_target(a)
        for p in ps:
            natural = max(spec.min_ptx(p.example) if p.example else PtxVersion(8, 6), t.min_ptx)
            if p.collector_b and spec.collector_b:
                natural = max(natural, spec.collector_b.min_ptx)
            reason = expected(spec, p, t, natural)
            if t.min_ptx > max_ptx or (reason is None and natural > max_ptx):
                why = f"needs .version {max(natural, t.min_ptx)}; this ptxas accepts up to {max_ptx}"
                rows[a, p.id] = Row(a, p.id, "", "invalid" if reason else "valid", reason or "", "untestable", why, "untestable")
                continue
            version = min(natural, max_ptx)
            groups[a, version, reason is None].append((p, reason))

    def run(a: str, version: PtxVersion, items: list[tuple[MmaProbe, str | None]]):
        return assemble(module_source(spec, [p for p, _ in items], version, parse_target(a)), a, exe, use_cache=use_cache)

    def record(a: str, version: PtxVersion, p: MmaProbe, reason: str | None, ok: bool, err: str) -> None:
        if ok:
            status = "agree" if not reason else "assembles-but-spec-invalid"
        else:
            status = "agree" if reason else "rejected-but-spec-valid"
        rows[a, p.id] = Row(a, p.id, str(version), "invalid" if reason else "valid", reason or "",
                            "assembles" if ok else "rejected", "" if ok else first_error(err), status)

    with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1)) as pool:
        futs = {key: pool.submit(run, key[0], key[1], items) for key, items in groups.items()}
        retry = []
        for (a, version, _valid), fut in futs.items():
            ok, err = fut.result()
            items = groups[a, version, _valid]
            if ok:
                for p, reason in items:
                    record(a, version, p, reason, True, "")
            elif len(items) == 1:
                record(a, version, *items[0], False, err)
            else:
                retry += [((a, version, p, reason), pool.submit(run, a, version, [(p, reason)])) for p, reason in items]
        for (a, version, p, reason), fut in retry:
            record(a, version, p, reason, *fut.result())
    return [rows[a, p.id] for a in archs for p in ps]


def summary(rows: list[Row]) -> dict[str, dict[str, int]]:
    """Per arch: counts of each status."""
    out: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        out[r.arch][r.status] += 1
    return {a: dict(c) for a, c in out.items()}
