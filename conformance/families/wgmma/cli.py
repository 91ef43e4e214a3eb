"""``ptxconf wgmma``: forms, descriptor encode/decode, figures, ptxas assembly, register-reuse probe.

Exit status: 0 fine; 1 a refused descriptor, a ptxas disagreement or a reuse finding; 2 usage errors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["add_parser"]


def _spec(args):
    from ptxconf.isa.loader import load_specs

    return load_specs(args.specs).documents["wgmma"]


def cmd_list(args) -> int:
    spec = _spec(args)
    vs = [v for v in spec.variants if not args.atype or v.atype == args.atype]
    counts: dict[str, int] = {}
    for v in vs:
        counts[f"{v.atype}/{v.a_src}"] = counts.get(f"{v.atype}/{v.a_src}", 0) + 1
    if args.json:
        print(json.dumps({"counts": counts, "total": len(vs), "forms": None if args.counts else [
            {"id": v.id, "ptx": v.ptx, "N": v.N, "K": v.K, "a": v.a_src, "dtype": v.dtype, "immediates": list(v.immediates),
             "min_ptx": str(v.min_ptx), "targets": [t.name for t in v.requires]} for v in vs]}))
        return 0
    if not args.counts:
        for v in vs:
            print(f"{v.id:72s} ptx>={v.min_ptx}  {'|'.join(t.name for t in v.requires)}  imm: {','.join(v.immediates) or '-'}")
    for k, n in sorted(counts.items()):
        print(f"{k:16s} {n:5d}", file=sys.stderr if not args.counts else sys.stdout)
    print(f"{'total':16s} {len(vs):5d}", file=sys.stderr if not args.counts else sys.stdout)
    return 0


def cmd_desc_encode(args) -> int:
    from ptxconf.families.wgmma.desc import DescriptorError, encode

    spec = _spec(args)
    try:
        x = encode(spec.descriptor, spec.smem, args.start, args.lbo, args.sbo, args.swizzle, args.base_offset)
    except DescriptorError as exc:
        print(f"ptxconf wgmma desc: refused: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"value": f"0x{x:016x}"}) if args.json else f"0x{x:016x}")
    return 0


def cmd_desc_decode(args) -> int:
    from ptxconf.families.wgmma.desc import decode, field_values

    spec = _spec(args)
    d = decode(spec.descriptor, spec.smem, args.value)
    out = {"value": f"0x{args.value:016x}", "fields": field_values(spec.descriptor, args.value),
           "start_address": d.start, "leading_byte_offset": d.lbo, "stride_byte_offset": d.sbo,
           "base_offset": d.base_offset, "swizzle": spec.smem.name_of(d.swizzle), "problems": list(d.problems)}
    if args.json:
        print(json.dumps(out))
    else:
        for k, val in out.items():
            print(f"{k:22s} {val}")
    return 1 if d.problems else 0


def cmd_figures(args) -> int:
    """Fragment ownership through the one figure engine (``T<lane>: a<i>`` / ``d<i>``, like the ISA's);
    the swizzle patterns (byte chunks, no lanes) keep their own small drawing."""
    from ptxconf.families.wgmma.compare import swizzle_svg
    from ptxconf.figures import map_figure

    spec = _spec(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for sw in spec.smem.swizzles:
        (out / f"swizzle-{sw}.svg").write_text(swizzle_svg(spec.smem, sw))
    d = spec.layout("D.m64nN", args.n)
    map_figure(d.map(), out / f"D-m64n{args.n}.svg", f"wgmma D {d.name} (N = {args.n}), 128 lanes of a warpgroup", "d")
    for name in spec.layouts:
        if name.startswith("A."):
            lay = spec.layout(name)
            map_figure(lay.map(), out / f"{name}.svg", f"wgmma register A {name}, 128 lanes of a warpgroup", "a")
    print(f"figures -> {out}")
    return 0


def cmd_assemble(args) -> int:
    from ptxconf.families.wgmma.assemble import run_assemble

    return run_assemble(args)


def cmd_reuse(args) -> int:
    from ptxconf.families.wgmma.assemble import run_reuse

    return run_reuse(args)


def add_parser(commands) -> None:
    sub = commands.group("wgmma", help="wgmma.mma_async: forms, matrix descriptors, figures, ptxas, register reuse")

    def common(sp):
        sp.add_argument("--specs", metavar="DIR", default=None, help="spec directory (default: the tree's specs/)")
        sp.add_argument("--json", action="store_true", help="print JSON")

    s = sub.add_parser("list", help="every wgmma.mma_async form, with counts per A type and source")
    common(s)
    s.add_argument("--atype")
    s.add_argument("--counts", action="store_true")
    s.set_defaults(func=cmd_list)

    desc = sub.group("desc", help="the 64-bit matrix descriptor (§9.7.15.5.1.2.2)")
    e = desc.add_parser("encode", help="fields (bytes) -> descriptor, refusing what the ISA forbids")
    common(e)
    e.add_argument("--start", type=lambda t: int(t, 0), required=True, help="matrix start address (bytes)")
    e.add_argument("--lbo", type=lambda t: int(t, 0), required=True, help="leading dimension byte offset")
    e.add_argument("--sbo", type=lambda t: int(t, 0), required=True, help="stride dimension byte offset")
    e.add_argument("--swizzle", default="none", help="none, 128B, 64B, 32B")
    e.add_argument("--base-offset", type=int, default=0)
    e.set_defaults(func=cmd_desc_encode)
    d = desc.add_parser("decode", help="descriptor -> fields and problems")
    common(d)
    d.add_argument("value", type=lambda t: int(t, 0))
    d.set_defaults(func=cmd_desc_decode)

    f = sub.add_parser("figures", help="SVG: each swizzle pattern, D and register-A ownership across the warpgroup")
    common(f)
    f.add_argument("-o", "--out", default="wgmma-figures")
    f.add_argument("--n", type=int, default=16, help="N of the D figure")
    f.set_defaults(func=cmd_figures)

    a = sub.add_parser("assemble", help="assemble every form's probe for sm_90a (and expected rejections) with ptxas; cached")
    common(a)
    a.add_argument("--ptxas", action="append", help="ptxas executable (repeatable; default: PATH and the pinned newer one)")
    a.add_argument("--select", action="append", metavar="GLOB")
    a.add_argument("--arch", default="sm_90a", help="comma-separated; forms are expected valid on sm_90a only")
    a.add_argument("--jobs", type=int, default=None)
    a.set_defaults(func=cmd_assemble)

    r = sub.add_parser("reuse", help="register-reuse probe: overwrite A's registers right after issuing, before wait_group")
    common(r)
    r.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    r.add_argument("--select", action="append", metavar="GLOB")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", default="wgmma-reuse")
    r.add_argument("--ptxas", metavar="PATH", help="with --build-cubins: the ptxas to assemble with")
    r.add_argument("--build-cubins", metavar="DIR", help="assemble the probes to cubins here (no GPU needed) and stop")
    r.add_argument("--cubins", metavar="DIR", help="load the probes from cubins built by --build-cubins instead of the driver JIT")
    r.set_defaults(func=cmd_reuse)
