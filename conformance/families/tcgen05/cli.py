"""``ptxconf tcgen05``: list Table 39, encode/decode descriptors, self-check the ISA, ptxas matrix.

Exit status: 0 fine; 1 a refused/invalid descriptor, a self-check finding not
pinned, or a ptxas disagreement; 2 usage errors.
"""

from __future__ import annotations

import json
import shutil
import sys

__all__ = ["add_parser"]


def _spec(args):
    from ptxconf.families.tcgen05.spec import load_tcgen05

    return load_tcgen05(args.specs)


def _int(text: str) -> int:
    return int(text, 0)


def cmd_list(args) -> int:
    spec = _spec(args)
    ts = [t for t in spec.tuples if not args.kind or t.kind == args.kind]
    if args.json:
        print(json.dumps({"counts": spec.counts(), "tuples": [t.as_dict() for t in ts] if not args.counts else None}))
        return 0
    if not args.counts:
        for t in ts:
            print(f"{t}  ptx>={spec.min_ptx(t)}  {'|'.join(r.target.name for r in spec.requirements(t))}")
    for k, n in spec.counts().items():
        print(f"{k:10s} {n:6d}", file=sys.stderr if not args.counts else sys.stdout)
    print(f"{'total':10s} {len(spec.tuples):6d}", file=sys.stderr if not args.counts else sys.stdout)
    return 0


def _fields(args):
    from ptxconf.families.tcgen05.desc import IdescFields

    return IdescFields(
        kind=args.kind, dtype=args.dtype, atype=args.atype, btype=args.btype, M=args.m, N=args.n, K=args.k,
        ws=args.ws, cta_group=args.cta_group, sparse=args.sparse, sparsity_selector=args.selector,
        saturate=args.saturate, negate_a=args.negate_a, negate_b=args.negate_b, transpose_a=args.transpose_a,
        transpose_b=args.transpose_b, max_shift=args.max_shift, scale=args.scale, scale_a_id=args.scale_a_id,
        scale_b_id=args.scale_b_id, scale_a_layout=args.scale_a_layout, sparsity_version=args.sparsity_version,
    )


def cmd_idesc_encode(args) -> int:
    from ptxconf.families.tcgen05.desc import DescriptorError, encode_idesc

    try:
        v = encode_idesc(_spec(args), _fields(args), args.target, args.ptx)
    except DescriptorError as exc:
        print(f"ptxconf tcgen05 idesc: refused: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"idesc": f"{v:#010x}"}) if args.json else f"{v:#010x}")
    return 0


def cmd_idesc_decode(args) -> int:
    from ptxconf.families.tcgen05.desc import decode_idesc, decode_idesc_any

    spec = _spec(args)
    res = {args.kind: decode_idesc(spec, args.value, args.kind, ws=args.ws, cta_group=args.cta_group)} if args.kind else decode_idesc_any(spec, args.value)
    doc = {k: {"fields": raw, "problems": probs, "valid": not probs} for k, (_f, raw, probs) in res.items()}
    if args.json:
        print(json.dumps(doc))
    else:
        for k, d in doc.items():
            print(f".kind::{k}: {'valid' if d['valid'] else 'INVALID'}")
            print("  " + ", ".join(f"{n}={v}" for n, v in d["fields"].items() if not n.startswith("reserved")))
            for p in d["problems"]:
                print(f"  problem: {p}")
    return 0 if any(d["valid"] for d in doc.values()) else 1


def cmd_smem_encode(args) -> int:
    from ptxconf.families.tcgen05.desc import DescriptorError, SmemDesc, encode_smem_desc

    d = SmemDesc(args.address, args.lbo, args.sbo, args.base_offset, args.mode, args.swizzle)
    try:
        v = encode_smem_desc(_spec(args), d, target=args.target, ptx=args.ptx, transpose=args.transpose)
    except DescriptorError as exc:
        print(f"ptxconf tcgen05 smem-desc: refused: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"smem_desc": f"{v:#018x}"}) if args.json else f"{v:#018x}")
    return 0


def cmd_smem_decode(args) -> int:
    from ptxconf.families.tcgen05.desc import decode_smem_desc

    d, raw, probs = decode_smem_desc(_spec(args), args.value)
    doc = {"fields": d.as_dict() if d else raw, "problems": probs, "valid": not probs}
    if args.json:
        print(json.dumps(doc))
    else:
        print(", ".join(f"{k}={v}" for k, v in doc["fields"].items()))
        for p in probs:
            print(f"problem: {p}")
    return 0 if not probs else 1


def cmd_selfcheck(args) -> int:
    from ptxconf.families.tcgen05.selfcheck import selfcheck

    findings = selfcheck(_spec(args))
    if args.json:
        print(json.dumps([f.as_dict() for f in findings], indent=1))
    else:
        for f in findings:
            print(f"[{f.severity}] {f.id} (§{', §'.join(f.sections)}): {f.message}")
            for e in f.examples:
                print(f"    e.g. {e}")
        print(f"{len(findings)} finding(s)", file=sys.stderr)
    return 0


def cmd_assemble(args) -> int:
    from ptxconf.backends.ptxas import PtxasNotFound, find_pinned_ptxas, find_ptxas, ptxas_info
    from ptxconf.families.tcgen05.assemble import matrix, summary

    exes = []
    for which in args.ptxas or ["path", "pinned"]:
        exe = find_pinned_ptxas() if which == "pinned" else (shutil.which("ptxas") if which == "path" else which)
        if exe is None:
            print(f"ptxconf tcgen05 assemble: no {which} ptxas; skipped", file=sys.stderr)
            continue
        try:
            exes.append(find_ptxas(exe))
        except PtxasNotFound as exc:
            print(f"ptxconf tcgen05 assemble: error: {exc}", file=sys.stderr)
            return 2
    if not exes:
        print("ptxconf tcgen05 assemble: error: no ptxas at all", file=sys.stderr)
        return 2
    spec = _spec(args)
    out, bad = [], 0
    for exe in exes:
        info = ptxas_info(exe)
        rows = matrix(spec, args.arch.split(","), exe, jobs=args.jobs, use_cache=not args.no_cache)
        bad += sum(r.disagrees for r in rows)
        out.append({"ptxas": exe, "release": info["release"], "summary": summary(rows), "rows": [r.as_dict() for r in rows]})
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for o in out:
            print(f"ptxas {o['release']} ({o['ptxas']})")
            for a, c in o["summary"].items():
                print(f"  {a:8s} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
            for r in o["rows"]:
                if r["status"] in ("assembles-but-spec-invalid", "rejected-but-spec-valid"):
                    why = r["expected_reason"] if r["status"].startswith("assembles") else r["actual_reason"]
                    print(f"    {r['arch']:8s} {r['variant']}: {r['status']}: {why}")
    return 1 if bad else 0


def add_parser(commands) -> None:
    sub = commands.group("tcgen05", help="tcgen05 (Blackwell): Table 39, descriptors, ISA self-check, ptxas matrix")

    def common(sp):
        sp.add_argument("--specs", metavar="DIR", default=None, help="spec directory (default: the tree's specs/)")
        sp.add_argument("--json", action="store_true", help="print JSON")

    s = sub.add_parser("list", help="every valid Table 39 tuple, with counts per kind")
    common(s)
    s.add_argument("--kind", help="only this .kind (f16, tf32, f8f6f4, i8, mxf8f6f4, mxf4, mxf4nvf4, ti16)")
    s.add_argument("--counts", action="store_true", help="counts per kind only")
    s.set_defaults(func=cmd_list)

    idesc = sub.group("idesc", help="instruction descriptor (§9.7.16.4.2)")
    e = idesc.add_parser("encode", help="fields -> 32-bit value, refusing what the ISA forbids")
    common(e)
    e.add_argument("--kind", required=True)
    e.add_argument("--dtype", default="f32")
    e.add_argument("--atype", required=True)
    e.add_argument("--btype", required=True)
    e.add_argument("--m", type=int, required=True)
    e.add_argument("--n", type=int, required=True)
    e.add_argument("--k", type=int, default=None, help="only where Table 39 allows more than one K")
    e.add_argument("--ws", action="store_true")
    e.add_argument("--cta-group", type=int, default=1, choices=(1, 2))
    e.add_argument("--sparse", action="store_true")
    e.add_argument("--selector", type=int, default=0, help="sparsity selector")
    e.add_argument("--saturate", action="store_true")
    e.add_argument("--negate-a", action="store_true")
    e.add_argument("--negate-b", action="store_true")
    e.add_argument("--transpose-a", action="store_true")
    e.add_argument("--transpose-b", action="store_true")
    e.add_argument("--max-shift", default="none", choices=("none", "8", "16", "32"))
    e.add_argument("--scale", default=None, help="scale-factor type (ue8m0, ue4m3, ue5m3) for block-scaled kinds")
    e.add_argument("--scale-a-layout", type=int, default=32, choices=(32, 128),
                   help="lanes of the A scale factors (ISA 9.4; 128 needs sm_107f)")
    e.add_argument("--sparsity-version", default=None, choices=("v0", "v1"),
                   help="mxf4 kinds (ISA 9.4): default the one --target takes (v1 on sm_107a), else v0")
    e.add_argument("--scale-a-id", type=int, default=0)
    e.add_argument("--scale-b-id", type=int, default=0)
    e.add_argument("--target", default=None, help="also check the Target ISA notes for this target")
    e.add_argument("--ptx", default=None, help=".version for --target")
    e.set_defaults(func=cmd_idesc_encode)
    d = idesc.add_parser("decode", help="32-bit value -> fields and problems")
    common(d)
    d.add_argument("value", type=_int)
    d.add_argument("--kind", default=None, help="the .kind of the instruction (default: try every kind)")
    d.add_argument("--ws", action="store_true")
    d.add_argument("--cta-group", type=int, default=1, choices=(1, 2))
    d.set_defaults(func=cmd_idesc_decode)

    smem = sub.group("smem-desc", help="shared-memory descriptor (§9.7.16.4.1)")
    e = smem.add_parser("encode", help="byte values -> 64-bit value")
    common(e)
    e.add_argument("--address", type=_int, required=True, help="matrix start address (bytes)")
    e.add_argument("--lbo", type=_int, default=0, help="leading dimension byte offset, or address in absolute mode")
    e.add_argument("--sbo", type=_int, default=0, help="stride dimension byte offset")
    e.add_argument("--base-offset", type=int, default=0)
    e.add_argument("--mode", default="relative", choices=("relative", "absolute"))
    e.add_argument("--swizzle", default="none", help="none, 128B_base32B, 128B, 64B, 32B")
    e.add_argument("--transpose", action="store_true", help="the instruction descriptor transposes A or B")
    e.add_argument("--target", default=None)
    e.add_argument("--ptx", default=None)
    e.set_defaults(func=cmd_smem_encode)
    d = smem.add_parser("decode", help="64-bit value -> fields and problems")
    common(d)
    d.add_argument("value", type=_int)
    d.set_defaults(func=cmd_smem_decode)

    s = sub.add_parser("selfcheck", help="cross-check Table 39, the descriptor tables and the Syntax sections")
    common(s)
    s.set_defaults(func=cmd_selfcheck)

    from ptxconf.families.tcgen05.assemble import DEFAULT_ARCHS

    s = sub.add_parser("assemble", help="ptxas validity matrix of the tcgen05 probes")
    common(s)
    s.add_argument("--arch", default=DEFAULT_ARCHS)
    s.add_argument("--ptxas", action="append", metavar="path|pinned|EXE", help="which ptxas (repeatable; default: path and pinned)")
    s.add_argument("--jobs", type=int, default=None)
    s.add_argument("--no-cache", action="store_true")
    s.set_defaults(func=cmd_assemble)
