"""Dot products -> mma (or wgmma) cases -> one launch -> D bits.  Dot i of a case sits on the diagonal
(A row i, B column i, C[i, i]); the other D elements are cross dot products, also checkable.

Operand bits are ``A [case, mat, M, K]``, ``B [case, mat, K, N]``, ``C/D [case, mat, M, N]`` for both
families; a wgmma case (one warpgroup) is one matrix (``mat`` = 1, M = 64), its A and B placed
in shared memory (or A in registers) through the wgmma spec's layouts by generators/wgmma.py."""

from __future__ import annotations

import numpy as np

from conformance.backends.base import Backend, Launch, native_build, support_reason
from conformance.families.mma.probe import Probe, buffer_layout, module_source
from conformance.spec.model import Variant
from conformance.spec.packing import pack, unpack
from conformance.spec.targets import PtxVersion, parse_target

from .model import PathParams, Types, dot_bits
from .spec import NumericsSpec

WGMMA_N = 64  # the wgmma width measured: 64 rows x 64 columns, 64 diagonal dots per warpgroup


def path_of(spec: NumericsSpec, v: Variant) -> PathParams:
    t = Types.of(v)
    return spec.path_for(t.a, t.d, v.family)


def dims(v: Variant) -> tuple[int, int, int, int]:
    """(matrices, M, K, N) of one case."""
    if v.family == "wgmma":
        return 1, 64, v.K, v.N
    la, lb = v.operands["A"].layout, v.operands["B"].layout
    return la.matrices, la.rows, la.cols, lb.cols


def k_of(v: Variant) -> int:
    return dims(v)[2]


def numeric_variants(specs, cc=(9, 0), families=("mma.sync", "wgmma")) -> list[Variant]:
    """Dense mma.sync variants and wgmma forms of N = WGMMA_N that run on ``cc`` and have a numerics path."""
    spec = next(d for d in specs.documents.values() if isinstance(d, NumericsSpec))
    out = []
    for v in specs.variants.values():
        if v.family not in families:
            continue
        if v.family == "wgmma":
            if v.N != WGMMA_N:
                continue
        elif any(n.startswith("scale_") or n == "metadata" for n in v.operands):
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


def place(v: Variant, a: np.ndarray, b: np.ndarray, c: np.ndarray, fill: dict | None = None):
    """Dot-product bits (``a, b [N, K]``, ``c [N]``) -> operand bits of ``ceil(N / capacity)`` cases."""
    mats, m, k, n = dims(v)
    cap = capacity(v)
    count = len(c)
    cases = max(1, -(-count // cap))
    fill = fill or {}
    A = fill.get("A", np.zeros((cases, mats, m, k), dtype=np.uint64)).copy()
    B = fill.get("B", np.zeros((cases, mats, k, n), dtype=np.uint64)).copy()
    C = fill.get("C", np.zeros((cases, mats, m, n), dtype=np.uint64)).copy()
    idx = np.arange(count)
    cs, rest = divmod(idx, cap)
    mat, i = divmod(rest, min(m, n))
    A[cs, mat, i, :] = a
    B[cs, mat, :, i] = b
    C[cs, mat, i, i] = c
    return {"A": A, "B": B, "C": C}, (cs, mat, i)


def diagonal(d: np.ndarray, where) -> np.ndarray:
    cs, mat, i = where
    return d[cs, mat, i, i]


def run_mma(backend: Backend, v: Variant, bits: dict[str, np.ndarray]) -> np.ndarray:
    """One launch of ``v`` over the operand bits; D bits ``[case, mat, M, N]``."""
    if v.family == "wgmma":
        return run_wgmma(backend, v, bits)
    target, ptx = native_build(v, backend)
    probe = Probe(v)
    module = module_source([probe], ptx, parse_target(target.name))
    layout = buffer_layout(v)
    cases = len(bits["A"])
    words = np.zeros((cases, 32, layout.in_words), dtype=np.uint32)
    for name, off in layout.inputs.items():
        op = v.operands[name]
        words[:, :, off : off + op.words] = pack(op, bits[name])
    res = backend.run(module, [Launch(probe, words, layout.out_words, np.arange(cases, dtype=np.uint32), 8)])[0]
    if res.error:
        raise RuntimeError(f"{v.id}: launch failed: {res.error}")
    d = v.operands["D"]
    return unpack(d, res.out[:, :, layout.d_offset : layout.d_offset + d.words])


def wgmma_imm(v) -> dict:
    """Immediates of a plain product: scale 1, K-major (no transpose)."""
    imm = {k: 1 for k in ("scale_a", "scale_b") if k in v.immediates}
    imm.update({k: 0 for k in ("trans_a", "trans_b") if k in v.immediates})
    return imm


def wgmma_words(v, bits: dict[str, np.ndarray]) -> np.ndarray:
    """Operand bits -> wgmma probe input words: K-major, no swizzle, scale-d = 1 (D = A*B + C)."""
    from conformance.families.wgmma import probe as wg
    from conformance.families.wgmma.desc import Desc

    model = wg.model_of(v)
    smem = model.smem
    cases = len(bits["C"])
    words = np.zeros((cases, wg.LANES, wg.in_words(v)), dtype=np.uint32)
    img = np.zeros((cases, wg.image_bytes(v)), dtype=np.uint8)
    mats = {"B": bits["B"][:, 0]}
    if v.a_src == "shared":
        mats["A"] = bits["A"][:, 0]
    else:
        aop = v.operands["A"]
        words[:, :, wg.a_off(v) : wg.a_off(v) + aop.words] = wg.pack(aop, bits["A"])
    for name, mat in mats.items():
        ext, region = (64, 0) if name == "A" else (v.N, wg.b_base(v))
        lbo, sbo = wg.canonical_strides("K", "none", smem.width("none"), v.bits, ext, v.K)
        desc = Desc(region, lbo, sbo, 0, smem.code_of("none"))
        lo, hi = wg._words(model, desc)
        col = 0 if name == "A" else 2
        words[:, :, col], words[:, :, col + 1] = lo, hi
        mn, k = np.meshgrid(np.arange(ext), np.arange(v.K), indexing="ij")
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
    dop = v.operands["D"]
    words[:, :, wg.c_off(v) : wg.c_off(v) + dop.words] = wg.pack(dop, bits["C"])
    wg.put_image(v, words, img)
    return words


def run_wgmma(backend: Backend, v, bits: dict[str, np.ndarray]) -> np.ndarray:
    """One launch of wgmma form ``v`` (one warpgroup per case); D bits ``[case, 1, 64, N]``."""
    from conformance.families.wgmma import probe as wg

    target, ptx = native_build(v, backend)
    probe = wg.WgProbe(v, tuple(sorted(wgmma_imm(v).items())))
    module = wg.module_source([probe], ptx, parse_target(target.name))
    words = wgmma_words(v, bits)
    cases = len(words)
    res = backend.run(module, [Launch(probe, words, wg.out_words(v), np.arange(cases, dtype=np.uint32), 1)])[0]
    if res.error:
        raise RuntimeError(f"{v.id}: launch failed: {res.error}")
    d = v.operands["D"]
    return unpack(d, res.out[:, :, : d.words])


def wgmma_semantics(spec: NumericsSpec):
    """``conformance.families.wgmma.probe.apply`` numerics hook (the emulator): D = A*B (+ C) under the path's model."""

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


def model_dots(p: PathParams, v: Variant, a, b, c) -> np.ndarray:
    return dot_bits(p, Types.of(v), a, b, c)
