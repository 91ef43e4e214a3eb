"""``ptxconf programs fuzz|replay``: matrix programs that stress the compiler, drawn and shrunk by Hypothesis.

Exit status: 0 every program passed, 1 a finding (each with its shrunk program's PTX, its seed and the
command that replays it), 2 a usage or environment error.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path


def _runner(args):
    from ptxconf.backends import BackendError
    from ptxconf.backends.ptxas import PtxasNotFound

    try:
        from ptxconf.tools.programs import fuzz as fz
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        raise SystemExit("ptxconf programs: Hypothesis draws the programs: python3 -m pip install hypothesis") from None

    try:
        if args.backend == "ptxas":
            return fz.PtxasRunner(args.arch, args.ptxas, jobs=args.jobs or None)
        if args.backend == "pycuda":
            return fz.GpuRunner(args.ptxas, cases=args.cases or 8, jobs=args.jobs or None)
        if args.ptxas:
            raise SystemExit("ptxconf programs: --ptxas needs --backend ptxas or pycuda (the emulator builds nothing)")
        return fz.EmulatorRunner(args.arch, cases=args.cases or 4)
    except (PtxasNotFound, BackendError, ValueError) as exc:
        raise SystemExit(f"ptxconf programs: --backend {args.backend}: {exc}") from None


def _write_finding(out: Path, f) -> Path:
    from ptxconf.run.files import atomic_write

    d = out / "findings" / f"seed-{f.original.seed}"
    d.mkdir(parents=True, exist_ok=True)
    atomic_write(d / "program.json", json.dumps(f.original.program.as_dict(), indent=1) + "\n")
    atomic_write(d / "shrunk.json", json.dumps(f.shrunk.program.as_dict(), indent=1) + "\n")
    if f.original.ptx:
        atomic_write(d / "program.ptx", f.original.ptx)
    if f.shrunk.ptx:
        atomic_write(d / "shrunk.ptx", f.shrunk.ptx)
    atomic_write(d / "report.txt", _report(f) + "\n")
    return d


def _report(f) -> str:
    return "\n".join([
        f"seed {f.original.seed}: {f.original.kind}: {f.original.message}",
        f.original.program.describe(),
        f"shrunk ({f.shrunk.kind}): {f.shrunk.message}",
        f.shrunk.program.describe(),
        f"replay: {f.replay}",
    ])


def _print_finding(f, where: Path | None) -> None:
    print(f"FAIL seed {f.original.seed} ({f.original.kind}): {f.original.message}")
    print("  shrunk to " + f.shrunk.program.describe().replace("\n", "\n  "))
    if f.shrunk is not f.original:
        print(f"  shrunk failure: {f.shrunk.message}")
    if where is not None:
        print(f"  PTX: {where / 'shrunk.ptx'}")
    print(f"  replay: {f.replay}")


def cmd_fuzz(args) -> int:
    from ptxconf.run.files import atomic_write
    from ptxconf.tools.programs.fuzz import fuzz

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runner = _runner(args)
    info = runner.info()
    print(f"ptxconf programs fuzz: {runner.name} for {runner.arch} (.version up to {runner.max_ptx}), "
          f"{args.budget:g} s from batch {args.seed}", flush=True)
    last = [time.monotonic()]

    def on_batch(res) -> None:
        if time.monotonic() - last[0] >= 5.0:
            last[0] = time.monotonic()
            print(f"  {res.programs} programs, {res.cases} cases, {len(res.findings)} findings, "
                  f"{res.programs_per_s:.1f} programs/s, {res.cases_per_s:.0f} cases/s", flush=True)

    try:
        res = fuzz(runner, args.budget, args.seed, args.shrink_s, args.max_findings, on_batch)
    finally:
        runner.close()
    for f in res.findings:
        _print_finding(f, _write_finding(out, f))
    summary = {
        "command": "ptxconf " + shlex.join(getattr(args, "argv", None) or sys.argv[1:]),
        "backend": {k: str(v) for k, v in info.items()},
        "first_batch": args.seed, "batches": res.batches, "programs": res.programs, "cases": res.cases,
        "seconds": round(res.seconds, 3), "shrink_seconds": round(res.shrink_seconds, 3),
        "programs_per_s": round(res.programs_per_s, 2), "cases_per_s": round(res.cases_per_s, 1),
        "steps": res.kinds,
        "findings": [{"seed": f.original.seed, "kind": f.original.kind, "message": f.original.message,
                      "shrunk": f.shrunk.program.as_dict(), "shrunk_message": f.shrunk.message, "replay": f.replay}
                     for f in res.findings],
    }
    atomic_write(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    print(f"{res.programs} programs ({res.cases} cases) in {res.seconds:.1f} s: {res.programs_per_s:.1f} programs/s, "
          f"{res.cases_per_s:.0f} cases/s; {len(res.findings)} findings -> {out / 'summary.json'}")
    return 1 if res.findings else 0


def cmd_replay(args) -> int:
    from ptxconf.tools.programs.fuzz import Finding, replay, replay_command
    from ptxconf.tools.programs.model import ProgramError

    runner = _runner(args)
    try:
        try:
            first, small = replay(runner, args.seed, args.shrink_s, not args.no_shrink)
        except ProgramError as exc:
            raise SystemExit(f"ptxconf programs replay: {exc}") from None
    finally:
        runner.close()
    print(first.program.describe())
    if small is None:
        print(f"pass: seed {args.seed} ({first.cases} cases)")
        return 0
    f = Finding(first, small, replay_command(runner, args.seed))
    where = _write_finding(Path(args.out), f) if args.out else None
    _print_finding(f, where)
    if where is None and small.ptx:
        print(small.ptx)
    return 1


def add_parser(sub) -> None:
    ps = sub.group("programs", help="matrix programs that stress the compiler: fuzz (Hypothesis-shrunk) and replay")

    def common(s) -> None:
        s.add_argument("--backend", default="emulator", choices=["emulator", "pycuda", "ptxas"],
                       help="emulator: interpreter vs oracle; ptxas: assemble only; pycuda: build with ptxas, run on the GPU")
        s.add_argument("--ptxas", metavar="VERSION|PATH", help="the ptxas to build with (default: the one on PATH)")
        s.add_argument("--arch", default="sm_90a", help="target of the programs (pycuda: the GPU's own)")
        s.add_argument("--cases", type=int, default=None, metavar="N",
                       help="cases (input sets) per program (default: 8 on the GPU, 4 emulated)")
        s.add_argument("--jobs", type=int, default=0, metavar="N", help="ptxas processes at once (default: every core)")
        s.add_argument("--shrink-s", type=float, default=60.0, metavar="S", help="time to shrink each failure")

    f = ps.add_parser("fuzz", help="batches of programs until the budget ends; failures shrunk, with replay commands")
    common(f)
    f.add_argument("--budget", type=float, default=60.0, metavar="S")
    f.add_argument("--seed", type=int, default=0, metavar="N", help="the first batch seed")
    f.add_argument("--max-findings", type=int, default=5, metavar="N")
    f.add_argument("--out", required=True, metavar="DIR", help="summary.json and findings/seed-S/{shrunk.ptx,...}")
    f.set_defaults(func=cmd_fuzz)
    r = ps.add_parser("replay", help="one program again by its seed; shrunk and printed when it fails")
    common(r)
    r.add_argument("seed", type=int, metavar="SEED")
    r.add_argument("--no-shrink", action="store_true")
    r.add_argument("--out", metavar="DIR", help="write the finding there (default: print the shrunk PTX)")
    r.set_defaults(func=cmd_replay)
