"""Dot products -> mma (or wgmma) cases -> one launch -> D bits.  Dot i of a case sits on the diagonal
(A row i, B column i, C[i, i]); the other D elements are cross dot products, also checkable.

Operand bits are ``A [case, mat, M, K]``, ``B [case, mat, K, N]``, ``C/D [case, mat, M, N]`` for both
families; a wgmma case (one warpgroup) is one matrix (``mat`` = 1, M = 64), its A and B placed
in shared memory (or A in registers) through the wgmma spec's layouts by generators/wgmma.py.
An mma.sp dot is its stored A elements (``K/2``) with their dense positions (``pos``), which become
the row's metadata fields; the rows no dot uses take the first legal pattern.  The f64 forms with a
rounding modifier (``.rn/.rz/.rm/.rp``) are the spec's f64 variants with the modifier in the string."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from ptxconf.backends.base import Backend, Launch, native_build, support_reason
from ptxconf.families.mma.probe import Probe, buffer_layout, module_source
from ptxconf.isa.model import Variant
from ptxconf.isa.packing import pack, unpack
from ptxconf.isa.sparse import is_sparse, sparsity
from ptxconf.isa.targets import PtxVersion, parse_target

from .model import PathParams, Types, dot_bits
from .spec import NumericsSpec

WGMMA_N = 64  # the wgmma width measured: 64 rows x 64 columns, 64 diagonal dots per warpgroup
WGMMA_FAMILIES = ("wgmma", "wgmma.sp")  # one warpgroup per case, operands through shared-memory descriptors
F64_ROUNDING = ("rn", "rz", "rm", "rp")  # PTX ISA 9.2 §9.7.14.5.14: .rnd of the .f64 forms
_SELECTOR = {"selector": 0}  # mma.sp: the quad lanes of selector 0 carry the metadata


def shape_key(v: Variant) -> str:
    """``"m16n8k16"``: the shape the spec's per-shape overrides are keyed by."""
    m, n, k = v.shape
    return f"m{m}n{n}k{k}"


def path_of(spec: NumericsSpec, v: Variant) -> PathParams:
    t = Types.of(v)
    return spec.path_for(t.a, t.d, v.family, shape_key(v))


def rounding_variant(v: Variant, rnd: str) -> Variant:
    """The f64 mma form ``v`` with the rounding modifier ``rnd`` (.rn/.rz/.rm/.rp) before its types."""
    if rnd not in F64_ROUNDING or Types.of(v).a != "f64":
        raise ValueError(f"{v.id}: only .f64 mma forms take a rounding modifier (.rn/.rz/.rm/.rp), not .{rnd}")
    head, types = v.id.split(".f64.f64.f64.f64")[0], ".f64.f64.f64.f64"
    return replace(v, id=f"{head}.{rnd}{types}")


def rounding_variants(specs, cc=(9, 0)) -> list[Variant]:
    """Every runnable dense .f64 mma form with each of .rn/.rz/.rm/.rp."""
    return [rounding_variant(v, r) for v in numeric_variants(specs, cc, ("mma.sync",)) if Types.of(v).a == "f64"
            for r in F64_ROUNDING]


def variant_of(specs, vid: str) -> Variant:
    """A variant by id, the f64 rounding-modifier forms (not spec variants of their own) included."""
    for r in F64_ROUNDING:
        if f".{r}.f64." in vid:
            return rounding_variant(specs.get(vid.replace(f".{r}.f64.", ".f64.")), r)
    return specs.get(vid)


def dims(v: Variant) -> tuple[int, int, int, int]:
    """(matrices, M, K, N) of one case."""
    if v.family in WGMMA_FAMILIES:
        return 1, 64, v.K, v.N  # wgmma.sp: K is the dense K (A holds K/2 columns)
    la, lb = v.operands["A"].layout, v.operands["B"].layout
    return la.matrices, la.rows, lb.rows if is_sparse(v) else la.cols, lb.cols  # mma.sp: A holds K/2 columns


def k_of(v: Variant) -> int:
    return dims(v)[2]


def numeric_variants(specs, cc=(9, 0), families=("mma.sync", "wgmma"), wgmma_n=(WGMMA_N,)) -> list[Variant]:
    """mma.sync (and mma.sp, when in ``families``) variants without block scaling, and wgmma (and wgmma.sp) forms of
    N in ``wgmma_n``, that run on ``cc`` and have a numerics path."""
    spec = next(d for d in specs.documents.values() if isinstance(d, NumericsSpec))
    out = []
    for v in specs.variants.values():
        if v.family not in families:
            continue
        if v.family in WGMMA_FAMILIES:
            if v.N not in wgmma_n:
                continue
        elif any(n.startswith("scale_") for n in v.operands) or (is_sparse(v) and v.family != "mma.sp"):
            continue
        if support_reason(v, cc, PtxVersion(9, 9)):
            continue
        try:
            path_of(spec, v)
        except KeyError:
            continue
        out.append(v)
    return out


def capacity(v: Variant) -> int:
    mats, m, _, n = dims(v)
    return mats * min(m, n)


def place(v: Variant, a: np.ndarray, b: np.ndarray, c: np.ndarray, fill: dict | None = None, pos: np.ndarray | None = None):
    """Dot-product bits (``a, b [N, K]``, ``c [N]``) -> operand bits of ``ceil(N / capacity)`` cases.

    mma.sp: ``a [N, K/2]`` are the stored elements and ``pos [N, K/2]`` their dense columns."""
    mats, m, k, n = dims(v)
    cap = capacity(v)
    count = len(c)
    cases = max(1, -(-count // cap))
    fill = fill or {}
    sparse = is_sparse(v)
    ka = v.operands["A"].layout.cols if sparse else k
    A = fill.get("A", np.zeros((cases, mats, m, ka), dtype=np.uint64)).copy()
    B = fill.get("B", np.zeros((cases, mats, k, n), dtype=np.uint64)).copy()
    C = fill.get("C", np.zeros((cases, mats, m, n), dtype=np.uint64)).copy()
    idx = np.arange(count)
    cs, rest = divmod(idx, cap)
    mat, i = divmod(rest, min(m, n))
    A[cs, mat, i, :] = a
    B[cs, mat, :, i] = b
    C[cs, mat, i, i] = c
    out = {"A": A, "B": B, "C": C}
    if sparse:
        if pos is None:
            raise ValueError(f"{v.id}: a sparse dot needs the dense positions of its stored A elements")
        meta = fill.get("metadata", np.broadcast_to(metadata_fields(v, first_positions(v)), (cases, 1, m, 2 * sparsity(v).chunks))).copy()
        meta[cs, 0, i, :] = metadata_fields(v, np.asarray(pos, dtype=np.int64))
        out["metadata"] = meta
    return out, (cs, mat, i)


def first_positions(v: Variant) -> np.ndarray:
    """The dense positions of the first legal pattern in every chunk (``[K/2]``)."""
    sp = sparsity(v)
    base = {1: [0], 2: [0, 1], 4: [0, 1, 2, 3]}[sp.nz]
    return np.array([ch * sp.width + x for ch in range(sp.chunks) for x in base], dtype=np.int64)


def metadata_fields(v: Variant, pos: np.ndarray) -> np.ndarray:
    """Dense positions of the stored elements ``[..., K/2]`` -> the metadata fields ``[..., 2 * chunks]`` naming them
    (the inverse of :func:`ptxconf.isa.sparse.positions`); refuses positions no legal pattern gives."""
    sp = sparsity(v)
    pos = np.asarray(pos, dtype=np.int64)
    local = pos.reshape(*pos.shape[:-1], sp.chunks, sp.nz) - (np.arange(sp.chunks) * sp.width)[:, None]
    if sp.nz == 1:
        fields = np.concatenate([2 * local, 2 * local + 1], axis=-1)
    elif sp.nz == 2:
        fields = local
    else:  # 4:8 in pairs: slots (0, 1) and (2, 3) are two-element sub-chunks
        fields = local[..., ::2] // 2
        if np.any(local[..., 1::2] != local[..., ::2] + 1) or np.any(local[..., ::2] % 2):
            raise ValueError(f"{v.id}: positions {pos.tolist()} are not pairs of a 4:8 pattern")
    pats = set(sp.patterns)
    flat = fields.reshape(-1, 2)
    bad = [tuple(int(x) for x in f) for f in flat if tuple(int(x) for x in f) not in pats]
    if bad or np.any(local < 0) or np.any(local >= sp.width):
        raise ValueError(f"{v.id}: positions {pos.tolist()} need metadata {bad[:1]} no legal pattern has")
    return fields.reshape(*pos.shape[:-1], 2 * sp.chunks).astype(np.uint64)


def diagonal(d: np.ndarray, where) -> np.ndarray:
    cs, mat, i = where
    return d[cs, mat, i, i]


def probe_module(backend: Backend, v: Variant) -> tuple[object, str]:
    """(the probe, its module's source) that runs ``v`` on ``backend``: what :func:`run_mma` launches, and what a
    caller may hand ``backend.prefetch`` to have it built ahead."""
    target, ptx = native_build(v, backend)
    if v.family in WGMMA_FAMILIES:
        fam, _, _, _, probe_class = _wgmma_buffers(v)
        probe = probe_class(v, tuple(sorted(wgmma_imm(v).items())))
        return probe, fam.module_source([probe], ptx, parse_target(target.name))
    probe = Probe(v, {"metadata": dict(_SELECTOR)} if is_sparse(v) else {})
    return probe, module_source([probe], ptx, parse_target(target.name))


def run_mma(backend: Backend, v: Variant, bits: dict[str, np.ndarray]) -> np.ndarray:
    """One launch of ``v`` over the operand bits; D bits ``[case, mat, M, N]``."""
    if v.family in WGMMA_FAMILIES:
        return run_wgmma(backend, v, bits)
    probe, module = probe_module(backend, v)
    params = probe.params
    layout = buffer_layout(v)
    cases = len(bits["A"])
    words = np.zeros((cases, 32, layout.in_words), dtype=np.uint32)
    for name, off in layout.inputs.items():
        op = v.operands[name]
        words[:, :, off : off + op.words] = pack(op, bits[name], params.get(name))
    res = backend.run(module, [Launch(probe, words, layout.out_words, np.arange(cases, dtype=np.uint32), 8)])[0]
    if res.error:
        raise RuntimeError(f"{v.id}: launch failed: {res.error}")
    d = v.operands["D"]
    return unpack(d, res.out[:, :, layout.d_offset : layout.d_offset + d.words])


def wgmma_imm(v) -> dict:
    """Immediates of a plain product: scale 1, K-major (no transpose); wgmma.sp: sparsity selector 0."""
    imm = {k: 1 for k in ("scale_a", "scale_b") if k in v.immediates}
    imm.update({k: 0 for k in ("trans_a", "trans_b") if k in v.immediates})
    if v.family == "wgmma.sp":
        imm["sel"] = 0
    return imm


def _wgmma_buffers(v):
    """(family package or probe module, in words, image bytes, out words, probe class) of the dense or the sparse
    wgmma family: both put their operands in the same buffer contract."""
    if v.family == "wgmma.sp":
        from ptxconf.families import wgmma_sp as wsp

        return wsp, wsp.in_words(v), wsp.image_bytes(v), wsp.out_words(v), wsp.SpProbe
    from ptxconf.families.wgmma import probe as wg

    return wg, wg.in_words(v), wg.image_bytes(v), wg.out_words(v), wg.WgProbe


def wgmma_words(v, bits: dict[str, np.ndarray]) -> np.ndarray:
    """Operand bits -> wgmma (or wgmma.sp) probe input words: K-major, no swizzle, scale-d = 1 (D = A*B + C).

    wgmma.sp: ``bits["A"]`` is the compressed A ``[case, 1, 64, K/2]`` and ``bits["metadata"]`` its index fields."""
    from ptxconf.families.wgmma import canonical_strides
    from ptxconf.families.wgmma import probe as wg
    from ptxconf.families.wgmma.desc import Desc

    fam, nwords, nimg, _, _ = _wgmma_buffers(v)
    sparse = v.family == "wgmma.sp"
    model = wg.model_of(v)
    smem = model.smem
    cases = len(bits["C"])
    words = np.zeros((cases, wg.LANES, nwords), dtype=np.uint32)
    img = np.zeros((cases, nimg), dtype=np.uint8)
    mats = {"B": bits["B"][:, 0]}
    if v.a_src == "shared":
        mats["A"] = bits["A"][:, 0]
    else:
        aop = v.operands["A"]
        words[:, :, wg.a_off(v) : wg.a_off(v) + aop.words] = wg.pack(aop, bits["A"])
    for name, mat in mats.items():
        view = v.a_view if sparse and name == "A" else v  # the compressed A: a 64 x K/2 tile
        ext, region = (64, 0) if name == "A" else (v.N, wg.b_base(v))
        lbo, sbo = canonical_strides("K", "none", smem.width("none"), v.bits, ext, view.K)
        desc = Desc(region, lbo, sbo, 0, smem.code_of("none"))
        lo, hi = wg._words(model, desc)
        col = 0 if name == "A" else 2
        words[:, :, col], words[:, :, col + 1] = lo, hi
        mn, k = np.meshgrid(np.arange(ext), np.arange(view.K), indexing="ij")
        addr = smem.addresses("K", "none", desc.start, mn, k, v.bits, desc.lbo, desc.sbo).ravel()
        vals = (mat if name == "A" else np.swapaxes(mat, 1, 2)).reshape(cases, -1)
        if v.bits >= 8:
            for b in range(v.bits // 8):
                img[:, addr + b] = ((vals >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.uint8)
        else:  # b1: 8 consecutive k per byte
            kb = k.ravel() * v.bits % 8
            for bit in range(8):  # addresses are distinct within one bit position
                sel = kb == bit
                img[:, addr[sel]] |= ((vals[:, sel] & np.uint64(1)) << np.uint64(bit)).astype(np.uint8)
    words[:, :, 4] = 1
    if sparse:
        # the selector's lanes hold the fields; the others random legal metadata (seeded by the operands: replayable)
        rng = np.random.default_rng(int(np.asarray(bits["C"]).ravel()[:64].sum()) & 0xFFFFFFFF)
        words[:, :, fam.META_WORD] = fam.meta_words(v, rng, bits["metadata"][:, 0].astype(np.int64), wgmma_imm(v)["sel"])
    dop = v.operands["D"]
    words[:, :, wg.c_off(v) : wg.c_off(v) + dop.words] = wg.pack(dop, bits["C"])
    fam.put_image(v, words, img)
    return words


def run_wgmma(backend: Backend, v, bits: dict[str, np.ndarray]) -> np.ndarray:
    """One launch of wgmma (or wgmma.sp) form ``v`` (one warpgroup per case); D bits ``[case, 1, 64, N]``."""
    nout = _wgmma_buffers(v)[3]
    probe, module = probe_module(backend, v)
    words = wgmma_words(v, bits)
    cases = len(words)
    res = backend.run(module, [Launch(probe, words, nout, np.arange(cases, dtype=np.uint32), 1)])[0]
    if res.error:
        raise RuntimeError(f"{v.id}: launch failed: {res.error}")
    d = v.operands["D"]
    return unpack(d, res.out[:, :, : d.words])


def wgmma_semantics(spec: NumericsSpec):
    """``ptxconf.families.wgmma.probe.apply`` numerics hook (the emulator): D = A*B (+ C) under the path's model."""

    def numerics(v, a_bits, b_bits, c_bits, scale_d: bool, imm: dict) -> np.ndarray:
        m, n = a_bits.shape[0], b_bits.shape[1]
        c = c_bits if scale_d else np.zeros_like(c_bits)
        ad = np.repeat(a_bits, n, axis=0)
        bd = np.tile(np.asarray(b_bits).T, (m, 1))
        return dot_bits(path_of(spec, v), Types.of(v), ad, bd, np.asarray(c).reshape(-1)).reshape(m, n)

    return numerics


def model_mma(p: PathParams, v: Variant, bits: dict[str, np.ndarray]) -> np.ndarray:
    from .model import mma_semantics

    return mma_semantics(lambda _v: p)(v, bits)


def model_dots(p: PathParams, v: Variant, a, b, c, pos=None) -> np.ndarray:
    return dot_bits(p, Types.of(v), a, b, c, sparse_pos=pos)


def alternatives(spec: NumericsSpec, v: Variant) -> dict[str, PathParams]:
    """Every path of ``v``'s A and D types whatever its family (its shape's parameters): what the sparse
    ``sp.path`` group tries when more than one path shares the types."""
    t = Types.of(v)
    return {name: q.for_shape(shape_key(v)) for name, q in spec.paths.items() if t.a in q.a_types and t.d in q.d_types}
