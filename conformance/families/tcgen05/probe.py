"""Complete tcgen05 probe kernels: alloc, descriptors, mma, commit + mbarrier wait, ld, dealloc.

One probe per qualifier combination (the instruction string is all ptxas sees
of a tcgen05.mma; types and shape sit in the descriptor, emitted as a constant
from the spec's codec).  Many probes share one module, one ``.entry`` each.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ptxconf.families.tcgen05.desc import IdescFields, SmemDesc, encode_idesc, encode_smem_desc
from ptxconf.families.tcgen05.spec import MmaTuple, Tcgen05Spec
from ptxconf.isa.targets import PtxVersion, Target

__all__ = ["MmaProbe", "probes", "module_source"]


@dataclass(frozen=True)
class MmaProbe:
    """One qualifier combination, the tuple whose descriptor it carries, and the spec's verdict."""

    kind: str
    ws: bool
    cta_group: int
    sparsity: str
    scale_form: str | None  # .scale_vectorsize qualifier for block-scaled kinds
    example: MmaTuple | None  # a Table 39 tuple for the descriptor (None: the combination has none)
    table_reason: str | None  # why Table 39 / the Syntax forbid the combination
    collector_b: str | None = None  # a .collector::b::<usage> (ISA 9.4), with .collector::a::discard before it

    @property
    def id(self) -> str:
        ws = ".ws" if self.ws else ""
        sp = ".sp" if self.sparsity == "sparse" else ""
        bs = f".block_scale.{self.scale_form}" if self.scale_form else ""
        cb = f".collector::a::discard.collector::b::{self.collector_b}" if self.collector_b else ""
        return f"tcgen05.mma{ws}{sp}.cta_group::{self.cta_group}.kind::{self.kind}{bs}{cb}"

    @property
    def entry(self) -> str:
        return "k_" + "".join(c if c.isalnum() else "_" for c in self.id)


def probes(spec: Tcgen05Spec) -> list[MmaProbe]:
    out = []
    for kind, ws, cg, sp in spec.combos():
        reason = spec.combo_reason(kind, ws, cg, sp)
        ex = next((t for t in spec.tuples if (t.kind, t.ws, t.cta_group, t.sparsity) == (kind, ws, cg, sp)), None)
        if ex is None:  # an Invalid row: carry a descriptor from the nearest valid row of the kind
            ex = next((t for t in spec.tuples if t.kind == kind and t.sparsity == sp), None)
        forms = [f.qualifier for f in spec.scale_forms if kind in f.kinds] if spec.kinds[kind].block_scaled else [None]
        for form in forms:
            out.append(MmaProbe(kind, ws, cg, sp, form, ex, reason))
    return out + collector_b_probes(spec, out)


def collector_b_probes(spec: Tcgen05Spec, plain: list[MmaProbe]) -> list[MmaProbe]:
    """Every usage of ``.collector::b::*`` on one probe of each (kind, .ws, cta_group, sparsity): the forms
    the document says take it and the ones it says do not (``.ws``).  A block-scaled kind's probe is the one
    with a family-target scale form (.blockN), so that the collector is the only thing in question there."""
    cb = spec.collector_b
    if cb is None:
        return []
    family_forms = {f.qualifier for f in spec.scale_forms if any(r.target.suffix == "f" for r in f.requires)}
    chosen: dict[tuple, MmaProbe] = {}
    for p in plain:
        key = (p.kind, p.ws, p.cta_group, p.sparsity)
        if key not in chosen or (chosen[key].scale_form not in family_forms and p.scale_form in family_forms):
            chosen[key] = p
    return [replace(p, collector_b=u) for p in chosen.values() for u in cb.usages]


def expected(spec: Tcgen05Spec, p: MmaProbe, target: Target, ptx: PtxVersion) -> str | None:
    """Why ptxas must reject the probe for ``target`` at ``.version ptx`` (None: must accept)."""
    if p.table_reason:
        return p.table_reason
    assert p.example is not None
    reason = spec.valid_on(p.example, target, ptx)
    if reason:
        return reason
    if p.collector_b:
        assert spec.collector_b is not None
        form = "tcgen05.mma" + (".ws" if p.ws else "") + (".sp" if p.sparsity == "sparse" else "")
        if form not in spec.collector_b.forms:
            return f".collector::b::* is not a qualifier of {form} ({', '.join(spec.collector_b.forms)} take it)"
        reason = spec.collector_b.valid_on(target, ptx)
        if reason:
            return reason
    if p.scale_form:
        form = next(f for f in spec.scale_forms if f.qualifier == p.scale_form)
        if not any(r.satisfied(target, ptx) for r in form.requires):
            return f".{p.scale_form} needs {', '.join(str(r) for r in form.requires)} (Target ISA notes); {target.name} lacks it"
    return None


def _idesc(spec: Tcgen05Spec, t: MmaTuple) -> int:
    f = IdescFields(t.kind, t.dtype, t.atype, t.btype, t.M, t.N, t.K, False, t.cta_group, t.sparsity == "sparse", scale=t.scale)
    try:
        return encode_idesc(spec, IdescFields(**{**f.as_dict(), "ws": t.ws}))
    except ValueError:
        return 0


def kernel(spec: Tcgen05Spec, p: MmaProbe) -> str:
    cg = p.cta_group
    idesc = _idesc(spec, p.example) if p.example else 0
    smem = SmemDesc(0, 16, 1024, 0, "relative", "128B")
    sdesc = encode_smem_desc(spec, smem)
    ws = ".ws" if p.ws else ""
    sp = ".sp" if p.sparsity == "sparse" else ""
    meta = " [%r_t], " if sp else " "
    bs = f".block_scale.{p.scale_form}" if p.scale_form else ""
    bs += f".collector::a::discard.collector::b::{p.collector_b}" if p.collector_b else ""
    scales = ", [%r_t], [%r_t]" if p.scale_form else ""
    mma = (
        f"tcgen05.mma{ws}{sp}.cta_group::{cg}.kind::{p.kind}{bs} [%r_t], %rd_a, %rd_b,{meta}"
        .replace(", ,", ",") + f"%r_i{scales}, %p_d;"
    )
    mma = mma.replace("%rd_b, [%r_t], ", "%rd_b, [%r_t], ")
    return f"""
.visible .entry {p.entry}(.param .u64 p_out)
{{
    .reg .b32 %r_t, %r_i, %r_v, %r_s, %r_m, %r_x;
    .reg .b64 %rd_a, %rd_b, %rd_o;
    .reg .pred %p_d, %p_w;
    .shared .align 16 .b32 s_taddr;
    .shared .align 8 .b64 s_mbar;
    .shared .align 1024 .b8 s_ab[4096];
    mov.u32 %r_s, s_taddr;
    tcgen05.alloc.cta_group::{cg}.sync.aligned.shared::cta.b32 [%r_s], 128;
    tcgen05.relinquish_alloc_permit.cta_group::{cg}.sync.aligned;
    ld.shared.b32 %r_t, [s_taddr];
    mov.u32 %r_m, s_mbar;
    mbarrier.init.shared::cta.b64 [%r_m], 1;
    mov.u32 %r_x, s_ab;
    shr.u32 %r_x, %r_x, 4;
    cvt.u64.u32 %rd_a, %r_x;
    or.b64 %rd_a, %rd_a, {sdesc:#x};
    add.u64 %rd_b, %rd_a, 128;
    mov.b32 %r_i, {idesc:#x};
    setp.ne.b32 %p_d, %r_t, 0;
    tcgen05.fence::after_thread_sync;
    {mma}
    tcgen05.commit.cta_group::{cg}.mbarrier::arrive::one.shared::cluster.b64 [%r_m];
WAIT_{p.entry}:
    mbarrier.try_wait.parity.shared::cta.b64 %p_w, [%r_m], 0;
    @!%p_w bra WAIT_{p.entry};
    tcgen05.ld.sync.aligned.32x32b.x1.b32 {{%r_v}}, [%r_t];
    tcgen05.wait::ld.sync.aligned;
    ld.param.u64 %rd_o, [p_out];
    st.global.b32 [%rd_o], %r_v;
    tcgen05.dealloc.cta_group::{cg}.sync.aligned.b32 %r_t, 128;
    ret;
}}
"""


def module_source(spec: Tcgen05Spec, ps: list[MmaProbe], version: PtxVersion, target: Target) -> str:
    head = f".version {version}\n.target {target.name}\n.address_size 64\n"
    return head + "".join(kernel(spec, p) for p in ps)
