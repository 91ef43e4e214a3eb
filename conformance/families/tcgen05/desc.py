"""tcgen05 descriptors as code: encode and decode the instruction and shared-memory descriptors.

Both are driven by the field tables of specs/tcgen05.yaml (§9.7.16.4.1-2), not
by constants here, so a transcription fix changes the codec too.  Encoding
refuses what the ISA forbids and says which rule forbids it; decoding reports
every field and every problem (reserved bits set, codes the table lacks, a
shape Table 39 does not allow).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxconf.isa.targets import PtxVersion, Target, parse_target

from .spec import DescFormat, MmaTuple, Tcgen05Spec, why_not

__all__ = [
    "DescriptorError",
    "UntranscribedDescriptor",
    "IdescFields",
    "encode_idesc",
    "decode_idesc",
    "decode_idesc_any",
    "k_symbol",
    "SmemDesc",
    "encode_smem_desc",
    "decode_smem_desc",
]


class DescriptorError(ValueError):
    """A descriptor the ISA forbids; the message names the rule."""


class UntranscribedDescriptor(DescriptorError):
    """A tuple the shape table allows whose descriptor encoding specs/ does not hold (a coverage gap)."""


@dataclass(frozen=True)
class IdescFields:
    """Everything an instruction descriptor carries, plus the qualifiers that judge it."""

    kind: str
    dtype: str
    atype: str
    btype: str
    M: int
    N: int
    K: int | None = None
    ws: bool = False
    cta_group: int = 1
    sparse: bool = False
    sparsity_selector: int = 0
    saturate: bool = False
    negate_a: bool = False
    negate_b: bool = False
    transpose_a: bool = False
    transpose_b: bool = False
    max_shift: str = "none"
    scale: str | None = None
    scale_a_id: int = 0
    scale_b_id: int = 0
    scale_a_layout: int = 32  # lanes of the A scale factors in Tensor Memory (ISA 9.4: 32 or 128)
    sparsity_version: str | None = None  # mxf4 kinds (ISA 9.4): v0/v1; None: the one the target takes

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _unique_k(spec: Tcgen05Spec, f: IdescFields) -> list[int]:
    sp = "sparse" if f.sparse else "dense"
    return sorted(
        {k for r in spec.rows if not r.invalid and r.covers(f.kind, f.ws, f.cta_group, sp) for k in r.K}
    )


def _tuple(spec: Tcgen05Spec, f: IdescFields) -> MmaTuple:
    ks = _unique_k(spec, f)
    k = f.K if f.K is not None else (ks[0] if len(ks) == 1 else (min(ks) if ks else 0))
    return MmaTuple(f.kind, f.ws, f.cta_group, "sparse" if f.sparse else "dense", f.dtype, f.atype, f.btype, f.M, f.N, k, f.scale)


def _where(spec: Tcgen05Spec, fmt: DescFormat, name: str) -> str:
    return f"§{spec.idesc_section} {fmt.table} {name} ({fmt.field(name).where})"


def _put(spec: Tcgen05Spec, fmt: DescFormat, kind: str, name: str, symbol: str,
         target: Target | None = None, ptx: PtxVersion | None = None) -> int:
    """The field's code for ``symbol``, placed; with a target, the field's Target ISA Note must allow it."""
    fld = fmt.field(name)
    codes = fld.codes_for(kind) or {}
    if symbol not in codes:
        raise DescriptorError(f"{_where(spec, fmt, name)} has no code for {symbol!r} with .kind::{kind}; it takes {', '.join(codes) or 'nothing'}")
    if target is not None and symbol in fld.requires:
        reason = why_not(fld.requires[symbol], target, ptx, f"{_where(spec, fmt, name)} = {symbol}")
        if reason:
            raise DescriptorError(reason)
    return fld.put(codes[symbol])


def k_symbol(sparse: bool, k: int) -> str:
    """The K field's symbol for a K (ISA 9.4 codes K with the sparsity: ``dense_k64``, ``sparse_k128``)."""
    return f"{'sparse' if sparse else 'dense'}_k{k}"


def _default_symbol(fmt: DescFormat, kind: str, name: str, target: Target | None, ptx: PtxVersion | None) -> str:
    """The first code of a field whose Target ISA Note ``target`` meets (the first code without a target)."""
    fld = fmt.field(name)
    codes = list(fld.codes_for(kind) or {})
    if target is not None:
        for sym in codes:
            if sym in fld.requires and why_not(fld.requires[sym], target, ptx, name) is None:
                return sym
    return codes[0]


def _yn(b: bool) -> str:
    return "yes" if b else "no"


def encode_idesc(spec: Tcgen05Spec, f: IdescFields, target: Target | str | None = None, ptx: PtxVersion | str | None = None) -> int:
    """The 32-bit instruction descriptor for ``f``; DescriptorError naming the rule otherwise."""
    if f.kind not in spec.kinds:
        raise DescriptorError(f"unknown .kind::{f.kind}; known: {', '.join(spec.kinds)}")
    kind = spec.kinds[f.kind]
    if f.K is not None:
        ks = _unique_k(spec, f)
        if len(ks) == 1 and f.K != ks[0]:
            raise DescriptorError(f"§9.7.16.2.2: K is fixed at {ks[0]} for this variant (Table 39); got K = {f.K}")
    if kind.block_scaled and f.scale is None:
        f = IdescFields(**{**f.as_dict(), "scale": kind.scale_types[0]})
    t = _tuple(spec, f)
    reason = spec.explain(t) if target is None else spec.valid_on(t, target, ptx)
    if reason:
        raise DescriptorError(reason)
    row = spec.row_of(t)
    if row is not None and row.descriptor:
        raise UntranscribedDescriptor(f"{row.descriptor} ({spec.file}:{row.line})")
    fmt = spec.format_for(f.kind)
    names = {fl.name for fl in fmt.fields}
    tgt = parse_target(target) if isinstance(target, str) else target
    ver = PtxVersion.parse(ptx) if isinstance(ptx, str) else ptx
    v = 0
    v |= _put(spec, fmt, f.kind, "sparsity", "sparse" if f.sparse else "dense")
    v |= _put(spec, fmt, f.kind, "dtype", f.dtype) if "dtype" in names else 0
    if "dtype" not in names and f.dtype != "f32":
        raise DescriptorError(f"{fmt.table} has no dtype field: .kind::{f.kind} accumulates in .f32 only")
    v |= _put(spec, fmt, f.kind, "atype", f.atype)
    v |= _put(spec, fmt, f.kind, "btype", f.btype)
    for name, flag in (("negate_a", f.negate_a), ("negate_b", f.negate_b), ("transpose_a", f.transpose_a), ("transpose_b", f.transpose_b)):
        v |= _put(spec, fmt, f.kind, name, _yn(flag))
    if "saturate" in names:
        v |= _put(spec, fmt, f.kind, "saturate", _yn(f.saturate))
    elif f.saturate:
        raise DescriptorError(f"{fmt.table} has no saturate field for .kind::{f.kind}")
    if "sparsity_selector" in names:
        if f.sparsity_selector and not f.sparse:
            raise DescriptorError(f"{_where(spec, fmt, 'sparsity_selector')}: the selector applies only if Sparsity is enabled")
        allowed = fmt.field("sparsity_selector").values_for(f.kind) or ()
        if f.sparsity_selector not in allowed:
            raise DescriptorError(f"{_where(spec, fmt, 'sparsity_selector')} takes {list(allowed)}; got {f.sparsity_selector}")
        v |= fmt.field("sparsity_selector").put(f.sparsity_selector)
    elif f.sparsity_selector:
        raise DescriptorError(f"{fmt.table} has no sparsity selector (bits 0-1 are reserved) for .kind::{f.kind}")
    if "max_shift" in names:
        if f.max_shift != "none" and not f.ws:
            raise DescriptorError(f"{_where(spec, fmt, 'max_shift')}: the B-reuse shift applies only to .ws")
        v |= _put(spec, fmt, f.kind, "max_shift", str(f.max_shift))
    elif f.max_shift != "none":
        raise DescriptorError(f"{fmt.table} has no max-shift field for .kind::{f.kind}")
    for name, val in (("scale_a_id", f.scale_a_id), ("scale_b_id", f.scale_b_id)):
        if name in names:
            allowed = fmt.field(name).values_for(f.kind) or ()
            if val not in allowed:
                raise DescriptorError(f"{_where(spec, fmt, name)} takes {list(allowed)} with .kind::{f.kind}; got {val}")
            v |= fmt.field(name).put(val)
        elif val:
            raise DescriptorError(f"{fmt.table} has no {name} for .kind::{f.kind}")
    if "scale_type" in names:
        v |= _put(spec, fmt, f.kind, "scale_type", f.scale or "")
    if "k_dim" in names:
        v |= _put(spec, fmt, f.kind, "k_dim", k_symbol(f.sparse, t.K), tgt, ver)
    if "scale_a_layout" in names:
        v |= _put(spec, fmt, f.kind, "scale_a_layout", f"lane{f.scale_a_layout}", tgt, ver)
    elif f.scale_a_layout != 32:
        raise DescriptorError(f"{fmt.table} has no scale-A layout field for .kind::{f.kind}")
    if "sparsity_version" in names:
        version = f.sparsity_version or _default_symbol(fmt, f.kind, "sparsity_version", tgt, ver)
        v |= _put(spec, fmt, f.kind, "sparsity_version", version, tgt, ver)
    elif f.sparsity_version:
        raise DescriptorError(f"{fmt.table} has no sparsity-version field for .kind::{f.kind}")
    for name, dim in (("m", f.M), ("n", f.N)):
        fld = fmt.field(name)
        if dim % (1 << fld.shift) or (dim >> fld.shift) >= (1 << fld.width) or dim <= 0:
            raise DescriptorError(f"{_where(spec, fmt, name)} holds {fld.dim} >> {fld.shift} in {fld.width} bits; {fld.dim} = {dim} does not fit")
        v |= fld.put(dim >> fld.shift)
    return v


def decode_idesc(spec: Tcgen05Spec, value: int, kind: str, *, ws: bool = False, cta_group: int = 1) -> tuple[IdescFields | None, dict, list[str]]:
    """``(fields or None, raw field values, problems)`` of ``value`` read as a ``.kind`` descriptor."""
    if kind not in spec.kinds:
        return None, {}, [f"unknown .kind::{kind}; known: {', '.join(spec.kinds)}"]
    if not 0 <= value < 1 << 32:
        return None, {}, [f"{value:#x} is not a 32-bit value"]
    fmt = spec.format_for(kind)
    raw: dict[str, object] = {}
    problems: list[str] = []
    sym: dict[str, str] = {}
    for fld in fmt.fields:
        x = fld.get(value)
        raw[fld.name] = x
        if fld.reserved:
            if x:
                problems.append(f"{_where(spec, fmt, fld.name)} is reserved and must be 0; it is {x:#x}")
            continue
        codes = fld.codes_for(kind)
        if codes is not None:
            back = {c: s for s, c in reversed(codes.items())}  # a code several symbols share: the first
            if fld.name == "k_dim" and "sparsity" in raw:  # K's symbols share codes across sparsities
                back = {c: s for s, c in reversed(codes.items()) if s.startswith(str(raw["sparsity"]))} or back
            if x not in back:
                problems.append(f"{_where(spec, fmt, fld.name)} = {x} is no code of .kind::{kind} (codes: {codes})")
            else:
                sym[fld.name] = back[x]
                raw[fld.name] = back[x]
        allowed = fld.values_for(kind)
        if allowed is not None and x not in allowed:
            problems.append(f"{_where(spec, fmt, fld.name)} = {x}; .kind::{kind} takes {list(allowed)}")
    m = fmt.field("m").get(value) << fmt.field("m").shift
    n = fmt.field("n").get(value) << fmt.field("n").shift
    raw["M"], raw["N"] = m, n
    if any(k not in sym for k in ("atype", "btype", "sparsity")) or ("dtype" in raw and "dtype" not in sym):
        return None, raw, problems
    sparse = sym["sparsity"] == "sparse"
    k = int(sym["k_dim"].split("_k")[1]) if "k_dim" in sym else None
    f = IdescFields(
        kind=kind,
        dtype=sym.get("dtype", "f32"),
        atype=sym["atype"],
        btype=sym["btype"],
        M=m,
        N=n,
        K=k,
        ws=ws,
        cta_group=cta_group,
        sparse=sparse,
        sparsity_selector=int(raw.get("sparsity_selector", 0)) if "sparsity_selector" in raw else 0,
        saturate=sym.get("saturate") == "yes",
        negate_a=sym.get("negate_a") == "yes",
        negate_b=sym.get("negate_b") == "yes",
        transpose_a=sym.get("transpose_a") == "yes",
        transpose_b=sym.get("transpose_b") == "yes",
        max_shift=sym.get("max_shift", "none"),
        scale=sym.get("scale_type"),
        scale_a_id=int(raw.get("scale_a_id", 0)) if isinstance(raw.get("scale_a_id", 0), int) else 0,
        scale_b_id=int(raw.get("scale_b_id", 0)) if isinstance(raw.get("scale_b_id", 0), int) else 0,
        scale_a_layout=int(sym["scale_a_layout"][4:]) if "scale_a_layout" in sym else 32,
        sparsity_version=sym.get("sparsity_version"),
    )
    t = _tuple(spec, f)
    raw["K"] = t.K
    reason = spec.explain(t)
    if reason:
        problems.append(reason)
    if f.sparsity_selector and not sparse:
        problems.append(f"{_where(spec, fmt, 'sparsity_selector')} is set but Sparsity is not enabled")
    if f.max_shift != "none" and not ws:
        problems.append(f"{_where(spec, fmt, 'max_shift')} is set; it applies only to .ws")
    return f, raw, problems


def decode_idesc_any(spec: Tcgen05Spec, value: int) -> dict[str, tuple[IdescFields | None, dict, list[str]]]:
    """``value`` read as every kind's descriptor (its .kind is not in the value)."""
    out = {}
    for kind in spec.kinds:
        best = None
        for ws, cg in ((False, 1), (False, 2), (True, 1)):
            res = decode_idesc(spec, value, kind, ws=ws, cta_group=cg)
            if best is None or len(res[2]) < len(best[2]):
                best = res
        out[kind] = best
    return out


# --- shared-memory descriptor ----------------------------------------------------------------


@dataclass(frozen=True)
class SmemDesc:
    """Byte values (not encoded) of a shared-memory descriptor's fields."""

    start_address: int
    leading_byte_offset: int = 0
    stride_byte_offset: int = 0
    base_offset: int = 0
    lbo_mode: str = "relative"
    swizzle: str = "none"

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def encode_smem_desc(
    spec: Tcgen05Spec,
    d: SmemDesc,
    *,
    target: Target | str | None = None,
    ptx: PtxVersion | str | None = None,
    transpose: bool = False,
) -> int:
    """The 64-bit shared-memory descriptor (§9.7.16.4.1 Table 40); DescriptorError naming the rule otherwise."""
    s = spec.smem
    where = f"§{s.section} {s.table}"
    swz = s.field("swizzle").codes_for(None) or {}
    if d.swizzle not in swz:
        raise DescriptorError(f"{where} swizzle takes {', '.join(swz)}; got {d.swizzle!r} (codes 3, 5, 7 are invalid)")
    modes = s.field("lbo_mode").codes_for(None) or {}
    if d.lbo_mode not in modes:
        raise DescriptorError(f"{where} leading dimension stride mode takes {', '.join(modes)}; got {d.lbo_mode!r}")
    for name in s.aligned16:
        val = getattr(d, name)
        if val % 16:
            raise DescriptorError(f"{where}: {name} must be 16-byte aligned; got {val:#x}")
    for name in ("start_address", "leading_byte_offset", "stride_byte_offset"):
        val = getattr(d, name)
        if not 0 <= val <= s.mask:
            raise DescriptorError(f"{where}: {name} {val:#x} does not survive matrix-descriptor-encode (x & {s.mask:#x}) >> {s.shift}")
    bo = s.field("base_offset")
    if not 0 <= d.base_offset < 1 << bo.width:
        raise DescriptorError(f"{where}: base offset {d.base_offset} does not fit {bo.width} bits")
    if d.lbo_mode == "absolute":
        rule = f"§{spec.smem.absolute_requires and '9.7.16.3.1.2.1'} absolute address mode"
        if target is not None:
            t = parse_target(target) if isinstance(target, str) else target
            p = PtxVersion.parse(ptx) if isinstance(ptx, str) else ptx
            if not any(r.satisfied(t, p) for r in s.absolute_requires):
                names = ", ".join(str(r) for r in s.absolute_requires)
                raise DescriptorError(f"{rule} needs {names}; {t.name} lacks it")
        if d.swizzle not in s.absolute_swizzle:
            raise DescriptorError(f"{rule}: only {', '.join(s.absolute_swizzle)} swizzle is supported; got {d.swizzle}")
        if transpose and not s.absolute_transpose:
            raise DescriptorError(f"{rule}: only K-major (instruction-descriptor transpose bits 0)")
        if d.base_offset != s.absolute_base_offset:
            raise DescriptorError(f"{rule}: the matrix base offset must be {s.absolute_base_offset}")
    v = 0
    for fld in s.fields:
        if fld.reserved:
            continue
        if fld.fixed is not None:
            v |= fld.fixed << fld.lo
        elif fld.encoded:
            v |= ((getattr(d, fld.name) & s.mask) >> s.shift) << fld.lo
        elif fld.name == "base_offset":
            v |= d.base_offset << fld.lo
        elif fld.name == "lbo_mode":
            v |= modes[d.lbo_mode] << fld.lo
        elif fld.name == "swizzle":
            v |= swz[d.swizzle] << fld.lo
    return v


def decode_smem_desc(spec: Tcgen05Spec, value: int) -> tuple[SmemDesc | None, dict, list[str]]:
    """``(descriptor or None, raw fields, problems)``."""
    s = spec.smem
    where = f"§{s.section} {s.table}"
    if not 0 <= value < 1 << 64:
        return None, {}, [f"{value:#x} is not a 64-bit value"]
    raw: dict[str, object] = {}
    problems = []
    vals: dict[str, object] = {}
    for fld in s.fields:
        x = fld.get(value)
        raw[fld.name] = x
        if fld.reserved and x:
            problems.append(f"{where} bits {fld.lo}-{fld.hi} are not part of any field and must be 0; they are {x:#x}")
        elif fld.fixed is not None and x != fld.fixed:
            problems.append(f"{where} bits {fld.lo}-{fld.hi} are the fixed constant {fld.fixed:#b}; got {x:#b}")
        elif fld.encoded:
            vals[fld.name] = x << s.shift
        elif fld.codes:
            codes = fld.codes_for(None) or {}
            back = {c: n for n, c in codes.items()}
            if x not in back:
                problems.append(f"{where} {fld.name} = {x} is no valid code ({codes})")
            else:
                vals[fld.name] = back[x]
                raw[fld.name] = back[x]
        elif fld.name == "base_offset":
            vals[fld.name] = x
    if any(n not in vals for n in ("swizzle", "lbo_mode")):
        return None, raw, problems
    d = SmemDesc(**{k: vals[k] for k in ("start_address", "leading_byte_offset", "stride_byte_offset", "base_offset", "lbo_mode", "swizzle")})
    if d.lbo_mode == "absolute":
        if d.swizzle not in s.absolute_swizzle:
            problems.append(f"§9.7.16.3.1.2.1 absolute address mode: only {', '.join(s.absolute_swizzle)} swizzle; got {d.swizzle}")
        if d.base_offset != s.absolute_base_offset:
            problems.append(f"§9.7.16.3.1.2.1 absolute address mode: base offset must be {s.absolute_base_offset}")
    return d, raw, problems
