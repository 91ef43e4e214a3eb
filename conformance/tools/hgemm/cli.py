"""CLI: ``ptxconf hgemm plan|ptx|emulate|run`` -- GEMM kernels generated from the specs."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _plan(args):
    from ptxconf.isa.loader import load_specs
    from ptxconf.tools.hgemm import kernel as hg

    specs = load_specs(args.specs)
    cfg = hg.Config()
    if getattr(args, "block", None):
        try:
            bm, bn, bk, wm, wn = (int(x) for x in args.block.split("x"))
        except ValueError:
            raise SystemExit(f"ptxconf hgemm: --block {args.block!r}: want BMxBNxBKxWARPS_MxWARPS_N, e.g. 128x128x32x2x4") from None
        cfg = hg.Config(bm, bn, bk, wm, wn)
    try:
        return specs, hg.plan(specs, args.variant, args.a_tile, args.b_tile, cfg)
    except hg.HgemmError as exc:
        raise SystemExit(f"ptxconf hgemm: {exc}") from None


def cmd_hgemm(args) -> int:
    import numpy as np
    from ptxconf.tools.hgemm import kernel as hg

    if args.hgemm_command == "run":
        return _run(args)
    specs, p = _plan(args)
    if args.hgemm_command == "plan":
        d = p.as_dict()
        if args.json:
            print(json.dumps(d, indent=1, default=list))
            return 0
        print(f"{p.name}: {p.variant.id}")
        for n in ("A", "B"):
            print(f"  {n} ({d[n]['tile']} tile): {d[n]['form']}: {d[n]['address']}")
        print(f"  D ({d['D']['layout']}): element 0 at {d['D']['element0']}; deltas {list(d['D']['deltas'])}")
        print(f"  block {p.config.bm}x{p.config.bn}x{p.config.bk}, {p.config.threads} threads, {d['shared_bytes']} bytes shared")
        return 0
    if args.hgemm_command == "ptx":
        text = hg.generate(p, args.arch)
        if args.output:
            Path(args.output).write_text(text)
        else:
            sys.stdout.write(text)
        return 0
    # emulate
    try:
        Mp, Np, Kp = hg.check_shape(p, args.M, args.N, args.K, pad=args.pad)
    except hg.HgemmError as exc:
        print(f"ptxconf hgemm: {exc}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    A = rng.integers(-3, 4, (args.M, args.K)).astype(np.float64)
    B = rng.integers(-3, 4, (args.K, args.N)).astype(np.float64)
    D = hg.emulate(specs, p, hg.pad_to(A, Mp, Kp), hg.pad_to(B, Kp, Np))[: args.M, : args.N]
    ok = np.array_equal(D, A @ B)
    print(f"{p.name} {args.M}x{args.N}x{args.K}" + (f" (padded to {Mp}x{Np}x{Kp})" if (Mp, Np, Kp) != (args.M, args.N, args.K) else "")
          + f": emulated data movement {'reproduces' if ok else 'does NOT reproduce'} A.B exactly")
    return 0 if ok else 1


def _run(args) -> int:
    import importlib.util

    from ptxconf.isa.loader import load_specs
    from ptxconf.tools.hgemm import kernel as hg
    from ptxconf.tools.hgemm import run as hr

    if not args.emulate and importlib.util.find_spec("cupy") is None:  # before any work: the GPU path is CuPy's
        raise SystemExit("ptxconf hgemm run: the GPU run needs CuPy: install cupy-cuda12x (or --emulate for NumPy)")
    specs = load_specs(args.specs)
    variants = list(hg.VARIANTS) if args.variants == "all" else args.variants.split(",")
    try:
        sizes = hr.parse_sizes(args.sizes)
        device = hr.EmulatedDevice(specs) if args.emulate else hr.CupyDevice(Path(args.out))
        Path(args.out).mkdir(parents=True, exist_ok=True)
        res = hr.run(specs, device, variants, sizes, Path(args.out), seed=args.seed, pad=not args.no_pad,
                     time_it=not args.emulate)
    except hg.HgemmError as exc:
        print(f"ptxconf hgemm: {exc}", file=sys.stderr)
        return 2
    print(f"{'all checks pass' if res['ok'] else 'CHECKS FAILED'}; {res['seconds']} s; wrote {Path(args.out) / 'hgemm.json'}")
    return 0 if res["ok"] else 1


def add_parser(sub) -> None:
    from ptxconf.tools.hgemm.kernel import TILES, VARIANTS

    hs = sub.group("hgemm", help="GEMM kernels (cp.async -> ldmatrix -> mma.sync -> global) generated from the specs")
    for name, helptext in (("plan", "the addressing the generator derived (compose + D layout)"),
                           ("ptx", "write the PTX kernel"),
                           ("emulate", "run the plan's data movement in NumPy and compare with A.B")):
        c = hs.add_parser(name, help=helptext)
        c.add_argument("variant", help=f"{', '.join(VARIANTS)} or an mma.sync m16n8k16 variant id")
        c.add_argument("--a-tile", default="row-major", choices=TILES)
        c.add_argument("--b-tile", default="row-major", choices=TILES)
        c.add_argument("--block", metavar="BMxBNxBKxWMxWN", help="block tile and warp grid (default 128x128x32x2x4)")
        c.add_argument("--specs", metavar="DIR")
        c.set_defaults(func=cmd_hgemm)
        if name == "plan":
            c.add_argument("--json", action="store_true")
        if name == "ptx":
            c.add_argument("--arch", default="sm_80")
            c.add_argument("-o", "--output")
        if name == "emulate":
            for d in ("M", "N", "K"):
                c.add_argument(d, type=int)
            c.add_argument("--pad", action="store_true", help="pad sizes that are not block multiples with zeros")
            c.add_argument("--seed", type=int, default=0)
    r = hs.add_parser("run", help="on the GPU (CuPy): exact + error-bound checks vs NumPy, time vs cupy.matmul")
    r.add_argument("--variants", default="all", help=f"comma list of {', '.join(VARIANTS)} or 'all'")
    r.add_argument("--sizes", default="256x256x256,1000x1000x1000,1536x2560x777,4096x4096x4096")
    r.add_argument("--out", default="/tmp/hgemm-run")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--no-pad", action="store_true", help="refuse sizes that are not block multiples")
    r.add_argument("--emulate", action="store_true", help="no GPU: the NumPy emulation stands in (small sizes only)")
    r.add_argument("--specs", metavar="DIR")
    r.set_defaults(func=cmd_hgemm)
