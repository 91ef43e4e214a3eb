"""The ISA against itself: Table 39 vs the descriptor code tables vs the Syntax sections.

Each finding names the sections that disagree.  ``suspected-erratum`` means two
parts of the ISA cannot both be right; ``gap`` means one part admits what another
never mentions (not necessarily wrong, but a reader cannot tell); ``untranscribed`` means specs/
holds a shape-table row but not the descriptor encoding the ISA gives it elsewhere.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

from ptxconf.families.tcgen05.desc import DescriptorError, IdescFields, UntranscribedDescriptor, encode_idesc
from ptxconf.families.tcgen05.spec import MmaTuple, Tcgen05Spec

__all__ = ["Finding", "selfcheck"]


@dataclass(frozen=True)
class Finding:
    id: str
    severity: str  # "suspected-erratum", "gap" or "untranscribed"
    sections: tuple[str, ...]
    message: str
    count: int = 1
    examples: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)


def _fields(t: MmaTuple) -> IdescFields:
    return IdescFields(t.kind, t.dtype, t.atype, t.btype, t.M, t.N, t.K, t.ws, t.cta_group, t.sparsity == "sparse", scale=t.scale)


def selfcheck(spec: Tcgen05Spec) -> list[Finding]:
    out: list[Finding] = []
    t39, idesc = spec.table39_section, spec.idesc_section

    # 1. Every Table 39 tuple must be encodable in its kind's descriptor.
    failures: dict[str, list[str]] = {}
    reasons: dict[str, list[str]] = {}
    untranscribed: dict[str, list[str]] = {}
    for t in spec.tuples:
        try:
            encode_idesc(spec, _fields(t))
        except UntranscribedDescriptor:
            untranscribed.setdefault(t.kind, []).append(str(t))
        except DescriptorError as exc:
            failures.setdefault(t.kind, []).append(str(t))
            if str(exc) not in reasons.setdefault(t.kind, []):
                reasons[t.kind].append(str(exc))
    for kind, examples in untranscribed.items():
        out.append(Finding(
            f"untranscribed.{kind}", "untranscribed", (t39, idesc),
            f"{len(examples)} .kind::{kind} tuple(s) of rows whose descriptor encoding is not transcribed "
            "(the row's `descriptor` says why)", len(examples), tuple(examples[:3]),
        ))
    for kind, examples in failures.items():
        msg = "; ".join(reasons[kind])
        fmt = spec.format_for(kind)
        out.append(Finding(
            f"unencodable.{kind}", "suspected-erratum", (t39, idesc),
            f"Table 39 allows {len(examples)} .kind::{kind} tuple(s) that {fmt.table} cannot encode: {msg}",
            len(examples), tuple(examples[:3]),
        ))

    # 2. Every (dtype, atype, btype[, scale]) the descriptor can encode must appear in Table 39.
    for kind in spec.kinds:
        fmt = spec.format_for(kind)
        names = {f.name for f in fmt.fields}
        dtypes = list((fmt.field("dtype").codes_for(kind) or {}) if "dtype" in names else ["f32"])
        atypes = list(fmt.field("atype").codes_for(kind) or {})
        btypes = list(fmt.field("btype").codes_for(kind) or {})
        scales = list(fmt.field("scale_type").codes_for(kind) or {}) if "scale_type" in names else [None]
        allowed = {(t.dtype, t.atype, t.btype, t.scale) for t in spec.tuples if t.kind == kind}
        extra = [c for c in itertools.product(dtypes, atypes, btypes, scales) if c not in allowed]
        if extra:
            ex = tuple(f"D.{d} A.{a} B.{b}" + (f" x .{s}" if s else "") for d, a, b, s in extra)
            mixed = all(a != b for _, a, b, _ in extra) and spec.kinds[kind].ab_pairing == "same"
            what = "mixed A/B types (Table 39's atype/btype column does not say whether A and B may differ)" if mixed else "type combinations"
            out.append(Finding(
                f"descriptor-admits.{kind}", "gap", (idesc, t39),
                f"{fmt.table} can encode {len(extra)} .kind::{kind} {what} that Table 39 does not list",
                len(extra), ex[:4],
            ))

    # 3. Shapes fit the descriptor's M and N fields.
    for t in spec.tuples:
        fmt = spec.format_for(t.kind)
        for name, dim in (("m", t.M), ("n", t.N)):
            fld = fmt.field(name)
            if dim % (1 << fld.shift) or dim >> fld.shift >= 1 << fld.width:
                out.append(Finding(f"shape-fit.{t.kind}.{name}", "suspected-erratum", (t39, idesc),
                                   f"{fld.dim} = {dim} of {t} does not fit {fmt.table} {name} ({fld.dim} >> {fld.shift}, {fld.width} bits)"))

    # 4. K must be implied by the variant, or else specifiable (§9.7.16.2.2); rows whose descriptor is not
    #    transcribed say nothing about which field holds K.
    for kind, ws, cg, sp in spec.combos():
        ks = sorted({t.K for r in spec.rows if not r.descriptor for t in spec.row_tuples(r)
                     if (t.kind, t.ws, t.cta_group, t.sparsity) == (kind, ws, cg, sp)})
        if len(ks) > 1 and "k_dim" not in {f.name for f in spec.format_for(kind).fields}:
            out.append(Finding(f"k-unspecifiable.{kind}", "suspected-erratum", (t39, "9.7.16.2.2", idesc),
                               f".kind::{kind} cta_group {cg} {sp} allows K in {ks} but neither syntax nor descriptor can choose K"))

    # 5. Syntax qualifier sets vs Table 39's valid rows.
    for s in spec.syntax:
        sp = "sparse" if s["sparse"] else "dense"
        for kind in spec.kinds:
            for cg in (1, 2):
                in_syntax = kind in s["kinds"] and cg in s["cta_group"]
                in_table = any((t.kind, t.ws, t.cta_group, t.sparsity) == (kind, s["ws"], cg, sp) for t in spec.tuples)
                if in_syntax != in_table:
                    out.append(Finding(
                        f"syntax.{s['form']}.{kind}.{cg}", "suspected-erratum", ("9.7.16.10.9", t39),
                        f"{s['form']} .kind::{kind} .cta_group::{cg}: Syntax {'allows' if in_syntax else 'excludes'} it, "
                        f"Table 39 {'has a valid row' if in_table else 'has none'}",
                    ))

    # 6. .blockN aliases: N = K / (N of .scale_vec::NX) for every K the alias claims.
    for a in spec.scale_aliases:
        for kind in a["kinds"]:
            ks = sorted({t.K for t in spec.tuples if t.kind == kind})
            claimed = ks if a["K"] == "all" else a["K"]
            bad = [k for k in claimed if k // a["vec"] != a["block"]]
            if bad:
                sparse_ks = sorted({t.K for t in spec.tuples if t.kind == kind and t.sparsity == "sparse"})
                out.append(Finding(
                    f"scale-alias.{kind}.block{a['block']}", "suspected-erratum", ("9.7.16.10.9.1", "9.7.16.10.7.1", t39),
                    f".block{a['block']} is said to alias .scale_vec::{a['vec']}X for .kind::{kind} at K = {claimed}, "
                    f"but 'N = K / {a['vec']}' gives {[k // a['vec'] for k in bad]} at K = {bad}"
                    + (f" (sparse K {sparse_ks}: holds only if K means the stored K/2)" if set(bad) & set(sparse_ks) else ""),
                ))

    # 7. Every block-scaled kind has a scale form, and forms name only its scale types.
    for kind, k in spec.kinds.items():
        if k.block_scaled:
            forms = [f for f in spec.scale_forms if kind in f.kinds]
            if not forms:
                out.append(Finding(f"scale-form.{kind}", "suspected-erratum", ("9.7.16.10.7.1",), f".kind::{kind} has no .scale_vectorsize form"))
            types = {s for f in forms for s in f.scale_types}
            fmt = spec.format_for(kind)
            codes = set(fmt.field("scale_type").codes_for(kind) or {})
            if not types <= codes | set(k.scale_types):
                out.append(Finding(f"scale-types.{kind}", "suspected-erratum", ("9.7.16.10.7.1", idesc),
                                   f".kind::{kind} scale forms name {sorted(types)}; {fmt.table} codes {sorted(codes)}"))

    # 8. Transcribed errata the tables cannot show by themselves.
    for e in spec.errata:
        if e["id"] in {"f8f6f4-f16-dtype", "f8f6f4-sparse-k128-code"}:
            continue  # check 1 shows them (the first one resolved by ISA 9.4's code, so nothing to show)
        out.append(Finding(f"erratum.{e['id']}", "suspected-erratum", tuple(e["sections"]), f"{e['problem']} (ISA: {e['isa_text']!r}; taken: {e['taken']})"))
    return out
