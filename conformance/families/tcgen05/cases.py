"""Runnable tcgen05.mma probes: one CTA per case, descriptors and tiles from the spec, D read back.

tcgen05.mma names no types or shape in its instruction string, so a run variant
is a Table 39 tuple (``tcgen05.mma.cta_group::1.kind::f16.f32.bf16.bf16.m128n64k16``)
whose instruction and shared-memory descriptors are *data*: encoded on the host
from specs/tcgen05.yaml and carried in the input words.  The kernel assumes no
field position except the start-address field of the shared-memory descriptor
(to add its tile's address); everything else the hardware (or the emulator)
reads from the descriptors.

Buffer contract (the runner's ``[row][lane][word]`` buffers; one case = 4
consecutive rows = the 4 warps of one 128-thread CTA, warps_per_block 4):

* words 0..7 of every lane: ``idesc``, 0, ``adesc`` (lo, hi), ``bdesc`` (lo, hi), 0, 0;
* words 8 .. 8+IMG_W: the case's shared-memory tile image, flat in (row, lane, word)
  order, little-endian: A at byte 0, B at byte ``b_base``; laid out per the
  descriptors (K-major; no swizzle with LBO/SBO, or 32/64/128-byte swizzle);
* words 8+IMG_W .. +N: C row ``32*row + lane`` (one .b32 column per word), stored to
  Tensor Memory with tcgen05.st.32x32b before the mma (enable-input-d is true).

Out: row ``j`` lane ``t`` word ``c`` is Tensor Memory lane ``32j+t`` column ``c``
after the mma (tcgen05.ld.32x32b), i.e. D[32j+t, c].

:func:`decode_case` reads a case back *through the spec*: it decodes the recorded
descriptors with the current spec's field tables and reads A and B out of the
image where those descriptors say they are.  The emulator and the comparator
both use it, so a spec with a moved field reads a recorded run differently and
the diagnosis names the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
from ptxconf.core.plan import variant_rng
from ptxconf.families.tcgen05.desc import (
    IdescFields,
    SmemDesc,
    decode_idesc,
    decode_smem_desc,
    encode_idesc,
    encode_smem_desc,
)
from ptxconf.families.tcgen05.spec import MmaTuple, Tcgen05Spec
from ptxconf.generators.ptx import Surroundings
from ptxconf.generators.ptx import module_source as probe_module_source
from ptxconf.isa.ptxtypes import ptx_type
from ptxconf.isa.targets import PtxVersion, Target

CASE_STREAM = 0x7C05  # variant_rng purpose of the case draws

__all__ = ["FAMILY", "TcVariant", "TcProbe", "run_tuples", "run_variants", "register", "is_tcgen05", "geometry",
           "make_cases", "module_source", "decode_case", "case_fields", "tmem_operands", "d_rows", "pack_d", "CaseView"]

FAMILY = "tcgen05.mma"
HDR = 8
ROWS = 4  # buffer rows (warps) per case
M_RUN = 128
SELECT_SEED = 0x7C05
PER_KIND = 3
# Kinds and forms the run covers (dense, cta_group::1, no .ws, M = 128, 32-bit accumulators,
# elements of 8 bits or more in shared memory; see README "tcgen05 run").
RUN_KINDS = ("f16", "tf32", "f8f6f4", "i8")
ELEM_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
ELEM_BITS = {**{k: 8 * b for k, b in ELEM_BYTES.items()}, "e2m1": 4}
SWIZZLE_BYTES = {"32B": 32, "64B": 64, "128B": 128}
# Sparse and block-scaled run forms (cta_group::1, M = 128, N <= 128; see README "tcgen05 run"):
# kind -> (sparsity, allowed A/B types, [(scale type, scale_vec)] or None, how many).
EXTRA_SEED = 0x7C5B
EXTRA_FORMS = (
    ("f16", "sparse", ("f16", "bf16"), None, 2),
    ("f8f6f4", "sparse", ("e4m3", "e5m2"), None, 2),
    ("i8", "sparse", ("s8", "u8"), None, 2),
    ("mxf8f6f4", "dense", ("e4m3", "e5m2"), (("ue8m0", 1),), 2),
    ("mxf4", "dense", ("e2m1",), (("ue8m0", 2),), 2),
    ("mxf4nvf4", "dense", ("e2m1",), (("ue8m0", 2), ("ue8m0", 4), ("ue4m3", 4)), 3),
)
AUX_W = 16  # Tensor-Memory columns of metadata / scale factors per case, stored at AUX_BASE
AUX_BASE = 128
SFA_COL, SFB_COL, META_COL = 0, 4, 8  # where in the aux columns the probe puts each operand
SCALE_GRID = {"ue8m0": np.array([0.25, 0.5, 1.0, 2.0, 4.0]), "ue4m3": np.array([0.5, 1.0, 1.5, 2.0])}
FLOAT_GRID = np.array([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0])


def is_tcgen05(v) -> bool:
    return getattr(v, "family", None) == FAMILY


@dataclass(frozen=True, eq=False)
class TcVariant:
    """A runnable Table 39 tuple; quacks like :class:`ptxconf.isa.model.Variant` for the runner."""

    id: str
    t: MmaTuple
    doc: Tcgen05Spec
    family: str = FAMILY
    section: str = "9.7.16"
    operands: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    file: str = ""
    line: int | None = None
    vec: int | None = None  # .scale_vec::NX of a block-scaled variant (not in the descriptor)

    @property
    def sparse(self) -> bool:
        return self.t.sparsity == "sparse"

    @property
    def aux(self) -> bool:
        return self.sparse or self.vec is not None

    @property
    def min_ptx(self) -> PtxVersion:
        return self.doc.min_ptx(self.t)

    @property
    def requires(self) -> tuple[Target, ...]:
        return tuple(r.target for r in self.doc.requirements(self.t))

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.t.M, self.t.N, self.t.K

    def valid_for(self, target: Target | str, ptx: PtxVersion | str | None = None) -> str | None:
        return self.doc.valid_on(self.t, target, ptx)


def variant_id(t: MmaTuple, vec: int | None = None) -> str:
    sp = ".sp" if t.sparsity == "sparse" else ""
    bs = f".block_scale.scale_vec::{vec}X.{t.scale}" if vec else ""
    return f"tcgen05.mma{sp}.cta_group::{t.cta_group}.kind::{t.kind}{bs}.{t.dtype}.{t.atype}.{t.btype}.m{t.M}n{t.N}k{t.K}"


def _base_tuples(doc: Tcgen05Spec) -> list[MmaTuple]:
    """The tuples of rows that hold on their kind's own targets and whose descriptor is transcribed: what
    a run on those targets can encode (a row narrowed to other targets, e.g. ISA 9.4's sm_107 K values, is not,
    nor a scale type with targets of its own, ISA 9.4's .ue5m3)."""
    return [t for r in doc.rows if not r.invalid and r.requires is None and not r.descriptor for t in doc.row_tuples(r)
            if t.scale not in doc.kinds[t.kind].scale_requires]


def extra_tuples(doc: Tcgen05Spec, base: list[MmaTuple] | None = None) -> list[tuple[MmaTuple, int | None]]:
    """The sparse and block-scaled handful: seeded, from Table 39 rows alone (``base``: :func:`_base_tuples`, made
    already)."""
    base = _base_tuples(doc) if base is None else base
    rng = np.random.default_rng(EXTRA_SEED)
    out: list[tuple[MmaTuple, int | None]] = []
    for kind, sp, types, scales, count in EXTRA_FORMS:
        cand = [t for t in base if t.kind == kind and not t.ws and t.cta_group == 1 and t.sparsity == sp
                and t.M == M_RUN and t.N <= 128 and t.dtype in ("f32", "s32") and t.atype in types and t.btype in types]
        forms = list(scales or ((None, None),))
        for i in range(count):
            sc, vec = forms[i % len(forms)]
            pool = [t for t in cand if t.scale == sc and (t, vec) not in out]
            if pool:
                out.append((pool[int(rng.integers(len(pool)))], vec))
    return out


def run_tuples(doc: Tcgen05Spec, base: list[MmaTuple] | None = None) -> list[MmaTuple]:
    """A seeded handful per kind, from Table 39 rows alone (descriptor fields never change the choice)."""
    base = _base_tuples(doc) if base is None else base
    rng = np.random.default_rng(SELECT_SEED)
    out: list[MmaTuple] = []
    for kind in RUN_KINDS:
        cand = [t for t in base if t.kind == kind and not t.ws and t.cta_group == 1 and t.sparsity == "dense"
                and t.M == M_RUN and t.dtype in ("f32", "s32") and t.atype in ELEM_BYTES and t.btype in ELEM_BYTES]
        if not cand:
            continue
        types = sorted({(t.atype, t.btype) for t in cand})
        picked: list[MmaTuple] = []
        for i in rng.permutation(len(types)):
            ab = types[int(i)]
            ns = sorted({t.N for t in cand if (t.atype, t.btype) == ab})
            n = ns[int(rng.integers(len(ns)))]
            picked.append(next(t for t in cand if (t.atype, t.btype) == ab and t.N == n))
            if len(picked) == PER_KIND:
                break
        while len(picked) < PER_KIND:  # one type pair: vary N
            t0 = picked[0]
            ns = sorted({t.N for t in cand if (t.atype, t.btype) == (t0.atype, t0.btype)} - {t.N for t in picked})
            if not ns:
                break
            n = ns[int(rng.integers(len(ns)))]
            picked.append(next(t for t in cand if (t.atype, t.btype) == (t0.atype, t0.btype) and t.N == n))
        out += picked
    return out


def run_variants(doc: Tcgen05Spec) -> list[TcVariant]:
    base = _base_tuples(doc)  # every tuple of Table 39 once (it was made for each kind: 0.6 s of every run's start)
    dense = [TcVariant(variant_id(t), t, doc, file=doc.file) for t in run_tuples(doc, base)]
    return dense + [TcVariant(variant_id(t, vec), t, doc, file=doc.file, vec=vec) for t, vec in extra_tuples(doc, base)]


def register(specs) -> list[TcVariant]:
    """Add the run variants of the specs' tcgen05 document to ``specs.variants`` (this Specs object only)."""
    doc = specs.documents.get(FAMILY)
    if doc is None:
        return []
    vs = run_variants(doc)
    for v in vs:
        specs.variants.setdefault(v.id, v)
    return vs


# --- geometry -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    k_bytes: int
    swizzles: tuple[str, ...]
    a_max: int
    b_base: int
    tile: int
    img_w: int
    in_words: int
    out_words: int
    ncols: int


def stored_k_bytes(v: TcVariant) -> tuple[int, int]:
    """Bytes along K of one stored row of A (compressed K/2 when sparse) and of B."""
    t = v.t
    ka = t.K // 2 if v.sparse else t.K
    return ka * ELEM_BITS[t.atype] // 8, t.K * ELEM_BITS[t.btype] // 8


def geometry(v: TcVariant) -> Geometry:
    t = v.t
    k_bytes = max(stored_k_bytes(v))
    swz = ("none", "32B", "64B") + (("128B",) if t.N <= 128 else ())
    s_max = max([k_bytes] + [SWIZZLE_BYTES[s] for s in swz if s in SWIZZLE_BYTES])
    a_max = -(-M_RUN * s_max // 1024) * 1024
    tile = a_max + t.N * s_max
    tile = -(-tile // 512) * 512
    img_w = tile // (ROWS * 32 * 4)
    n_in = HDR + img_w + t.N + (AUX_W if v.aux else 0)
    ncols = 256 if v.aux else max(32, 1 << (t.N - 1).bit_length())
    return Geometry(k_bytes, swz, a_max, a_max, tile, img_w, n_in + n_in % 2, t.N + t.N % 2, ncols)


# --- shared-memory layout (what the descriptor says) -----------------------------------------


def smem_addr(d: SmemDesc, row: np.ndarray, kbyte: np.ndarray) -> np.ndarray:
    """Byte address of (row, byte kbyte along K) of a K-major tile described by ``d``."""
    row = np.asarray(row, dtype=np.int64)
    kbyte = np.asarray(kbyte, dtype=np.int64)
    if d.swizzle == "none":
        a = d.start_address + (row // 8) * d.stride_byte_offset + (kbyte // 16) * d.leading_byte_offset + (row % 8) * 16 + kbyte % 16
        return a
    s = SWIZZLE_BYTES.get(d.swizzle)
    if s is None:
        raise ValueError(f"swizzle {d.swizzle} is not modelled")
    a = d.start_address + (row // 8) * d.stride_byte_offset + (row % 8) * s + (kbyte // s) * 8 * s + kbyte % s
    return a ^ (((a >> 7) & (s // 16 - 1)) << 4)


def _desc_for(rng: np.random.Generator, geo: Geometry, rows: int, base: int) -> SmemDesc:
    swz = geo.swizzles[int(rng.integers(len(geo.swizzles)))]
    if swz == "none":
        if rng.integers(2):  # the two 16-byte K chunks of a core-matrix pair adjacent
            return SmemDesc(base, 128, 256 * (geo.k_bytes // 32), 0, "relative", "none")
        return SmemDesc(base, (rows // 8) * 128, 128, 0, "relative", "none")
    s = SWIZZLE_BYTES[swz]
    return SmemDesc(base, 16, 8 * s, 0, "relative", swz)


def _encode_values(type_name: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    ty = ptx_type(type_name)
    if ty.kind == "float":
        return ty.encode(FLOAT_GRID[rng.integers(len(FLOAT_GRID), size=shape)])
    lo, hi = ty.int_range()
    return ty.encode(rng.integers(lo, hi + 1, size=shape))


def _put(img: np.ndarray, addr: np.ndarray, bits: np.ndarray, nbytes: int) -> None:
    for k in range(nbytes):
        img[(addr + k).ravel()] = ((bits >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.uint8).ravel()


def _get(img: np.ndarray, addr: np.ndarray, nbytes: int) -> np.ndarray:
    out = np.zeros(addr.shape, dtype=np.uint64)
    for k in range(nbytes):
        out |= img[addr + k].astype(np.uint64) << np.uint64(8 * k)
    return out


def _kb(rows: int, k: int, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.repeat(np.arange(rows), k).reshape(rows, k)
    kb = np.tile(np.arange(k) * nbytes, rows).reshape(rows, k)
    return r, kb


def _store_rows(img: np.ndarray, d: SmemDesc, bits: np.ndarray, ty: str) -> None:
    """A K-major tile (rows x K elements) into the image where ``d`` says; 4-bit elements two to a byte, low nibble first."""
    rows, k = bits.shape
    if ELEM_BITS[ty] == 4:
        bits = (bits[:, 0::2] & np.uint64(0xF)) | ((bits[:, 1::2] & np.uint64(0xF)) << np.uint64(4))
        k, nb = k // 2, 1
    else:
        nb = ELEM_BYTES[ty]
    r, kb = _kb(rows, k, nb)
    _put(img, smem_addr(d, r, kb), bits, nb)


def scale_blocks(v: TcVariant) -> int:
    return v.vec or 0


def legal_scale_ids(v: TcVariant, which: str) -> list[int]:
    """IDs the spec's idesc field allows whose bytes (id .. id + blocks - 1) stay inside the 32-bit cell."""
    vals = v.doc.format_for(v.t.kind).field(which).values_for(v.t.kind) or (0,)
    return [i for i in vals if i + scale_blocks(v) <= 4]


def tmem_operands(doc: Tcgen05Spec) -> dict:
    """The placement rules the probe followed (recorded with each case; replay compares them with today's spec)."""
    return {k: {f: x for f, x in body.items() if f not in ("source", "section", "figure_only")}
            for k, body in doc.tmem_operands.items()}


def _sf_cells(doc: Tcgen05Spec, rows: int, blocks: int, sid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lane, column, byte) of scale factor [row, block], ``[replica, row, block]``, per the spec."""
    lay = doc.tmem_operands["scale_factor"]
    per = int(lay["lanes_per_column"])
    reps = int(lay.get("replicas", 1)) if per == 32 else 1
    r = np.arange(rows)[None, :, None]
    j = np.arange(blocks)[None, None, :]
    p = np.arange(reps)[:, None, None]
    lane = 32 * p + r % per + 0 * j
    col = r // per + 0 * j + 0 * p
    byte = sid + j + 0 * r + 0 * p
    return lane, col, byte


def _meta_cells(doc: Tcgen05Spec, rows: int, chunks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """(lane, column, bit) of chunk c of row r's metadata field, ``[row, chunk]``, and the index bit offsets."""
    lay = doc.tmem_operands["sparse_metadata"]
    if lay.get("lane") != "row":
        raise ValueError(f"sparse_metadata lane rule {lay.get('lane')!r} is not modelled")
    w = int(lay["bits_per_chunk"])
    r = np.arange(rows)[:, None] + 0 * np.arange(chunks)[None, :]
    bit = np.arange(chunks)[None, :] * w + 0 * r
    i0, i1 = (int(x) for x in lay["index_bits"])
    return r, bit // 32, bit % 32, (i0, i1)


def case_fields(v: TcVariant) -> IdescFields:
    """What the probe's instruction descriptor carries (scale IDs: the last legal for A, the first for B)."""
    t = v.t
    ids = (0, 0)
    if v.vec:
        ids = (legal_scale_ids(v, "scale_a_id")[-1], legal_scale_ids(v, "scale_b_id")[0])
    return IdescFields(t.kind, t.dtype, t.atype, t.btype, t.M, t.N, t.K, False, 1, v.sparse, scale=t.scale,
                       scale_a_id=ids[0], scale_b_id=ids[1])


def make_cases(v: TcVariant, seed: int, cases: int) -> tuple[np.ndarray, list[dict]]:
    """Input words ``uint32[cases * 4, 32, in_words]`` and per-case metadata (descriptors)."""
    t, geo, doc = v.t, geometry(v), v.doc
    rng = variant_rng(v, seed, CASE_STREAM)
    fields = case_fields(v)
    ids = (fields.scale_a_id, fields.scale_b_id)
    idesc = encode_idesc(doc, fields)
    words = np.zeros((cases * ROWS, 32, geo.in_words), dtype=np.uint32)
    metas = []
    ka = t.K // 2 if v.sparse else t.K
    for c in range(cases):
        da = _desc_for(rng, geo, t.M, 0)
        db = _desc_for(rng, geo, t.N, geo.b_base)
        a = _encode_values(t.atype, rng, (t.M, ka))
        b = _encode_values(t.btype, rng, (t.N, t.K))  # K-major B: row n holds column n of B
        cty = ptx_type(t.dtype)
        if cty.kind == "float":
            cbits = cty.encode(rng.integers(-256, 257, size=(M_RUN, t.N)) / 4.0)
        else:
            cbits = rng.integers(0, 1 << 32, size=(M_RUN, t.N), dtype=np.uint64)
        img = rng.integers(0, 256, size=geo.tile, dtype=np.uint8)  # garbage wherever the tiles are not
        _store_rows(img, da, a, t.atype)
        _store_rows(img, db, b, t.btype)
        ad, bd = encode_smem_desc(doc, da), encode_smem_desc(doc, db)
        rows = words[c * ROWS : (c + 1) * ROWS]
        rows[:, :, 0] = idesc
        rows[:, :, 2], rows[:, :, 3] = ad & 0xFFFFFFFF, ad >> 32
        rows[:, :, 4], rows[:, :, 5] = bd & 0xFFFFFFFF, bd >> 32
        rows[:, :, HDR : HDR + geo.img_w] = np.ascontiguousarray(img).view("<u4").reshape(ROWS, 32, geo.img_w)
        rows[:, :, HDR + geo.img_w : HDR + geo.img_w + t.N] = cbits.reshape(ROWS, 32, t.N).astype(np.uint32)
        meta = {"idesc": f"{idesc:#010x}", "adesc": f"{ad:#018x}", "bdesc": f"{bd:#018x}",
                "a_layout": da.as_dict(), "b_layout": db.as_dict()}
        if v.aux:
            aux = rng.integers(0, 1 << 32, size=(M_RUN, AUX_W), dtype=np.uint64)  # garbage where nothing is placed
            if v.sparse:
                chunks = t.K // 4
                pairs = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)])
                idx = pairs[rng.integers(len(pairs), size=(t.M, chunks))]  # [row, chunk, slot]
                lane, col, bit, (i0, i1) = _meta_cells(doc, t.M, chunks)
                field_w = int(doc.tmem_operands["sparse_metadata"]["bits_per_chunk"])
                mask = np.uint64((1 << field_w) - 1)
                np.bitwise_and.at(aux, (lane, META_COL + col), ~(mask << bit.astype(np.uint64)))
                val = (idx[..., 0].astype(np.uint64) << np.uint64(i0)) | (idx[..., 1].astype(np.uint64) << np.uint64(i1))
                np.bitwise_or.at(aux, (lane, META_COL + col), val << bit.astype(np.uint64))
                meta["metadata"] = idx.tolist()
            if v.vec:
                sty = ptx_type(t.scale)
                for op, rows_, base, sid in (("scale_A", t.M, SFA_COL, ids[0]), ("scale_B", t.N, SFB_COL, ids[1])):
                    grid = SCALE_GRID[t.scale]
                    sf = sty.encode(grid[rng.integers(len(grid), size=(rows_, v.vec))]).astype(np.uint64)
                    lane, col, byte = _sf_cells(doc, rows_, v.vec, sid)
                    sh = (8 * byte).astype(np.uint64)
                    np.bitwise_and.at(aux, (lane, base + col), ~(np.uint64(0xFF) << sh))
                    np.bitwise_or.at(aux, (lane, base + col), np.broadcast_to(sf[None], lane.shape) << sh)
                    meta[op] = sf.tolist()
            aux &= np.uint64(0xFFFFFFFF)
            off = HDR + geo.img_w + t.N
            rows[:, :, off : off + AUX_W] = aux.reshape(ROWS, 32, AUX_W).astype(np.uint32)
            meta["tmem_operands"] = tmem_operands(doc)
        metas.append(meta)
    return words, metas


# --- reading a case back through the spec -----------------------------------------------------


@dataclass
class CaseView:
    idesc: int
    fields: IdescFields | None
    raw: dict
    problems: list[str]
    bits: dict[str, np.ndarray] = field(default_factory=dict)  # A [M', K'], B [N', K'] (K-major), C [128, N]


def decode_case(v: TcVariant, rows: np.ndarray) -> CaseView:
    """One case's 4 input rows, read as the spec says the hardware reads them."""
    doc, geo = v.doc, geometry(v)
    rows = np.asarray(rows, dtype=np.uint32)
    idesc = int(rows[0, 0, 0])
    f, raw, problems = decode_idesc(doc, idesc, v.t.kind, ws=False, cta_group=v.t.cta_group)
    view = CaseView(idesc, f, raw, list(problems))
    view.bits["C"] = rows[:, :, HDR + geo.img_w : HDR + geo.img_w + v.t.N].reshape(M_RUN, v.t.N).astype(np.uint64)
    if f is None:
        return view
    if f.transpose_a or f.transpose_b:
        view.problems.append("MN-major operands (transpose bits set) are not modelled by this emulator")
    if f.dtype not in ("f32", "s32"):
        view.problems.append(f"dtype .{f.dtype}: 16-bit accumulators in Tensor Memory are not modelled")
    for name in ("atype", "btype"):
        if getattr(f, name) not in ELEM_BITS:
            view.problems.append(f"{name} .{getattr(f, name)}: sub-byte shared-memory packing is not modelled")
    if view.problems and any("not modelled" in p for p in view.problems):
        return view
    img = np.ascontiguousarray(rows[:, :, HDR : HDR + geo.img_w]).reshape(-1).view(np.uint8)
    k = raw.get("K") or v.t.K
    for op, dims, word, ty in (("A", f.M, 2, f.atype), ("B", f.N, 4, f.btype)):
        kk = k // 2 if (op == "A" and f.sparse) else k
        dval = int(rows[0, 0, word]) | (int(rows[0, 0, word + 1]) << 32)
        d, _raw, probs = decode_smem_desc(doc, dval)
        if d is None or probs:
            view.problems += [f"{op} descriptor {dval:#018x}: {p}" for p in probs] or [f"{op} descriptor {dval:#018x} does not decode"]
            continue
        if dims <= 0 or kk <= 0:
            view.problems.append(f"{op}: the descriptor reads a {dims}x{kk} tile")
            continue
        four = ELEM_BITS[ty] == 4
        nb = 1 if four else ELEM_BYTES[ty]
        r, kb = _kb(dims, kk // 2 if four else kk, nb)
        try:
            addr = smem_addr(d, r, kb)
        except ValueError as exc:
            view.problems.append(f"{op}: {exc}")
            continue
        if addr.min() < 0 or addr.max() + nb > geo.tile:
            view.problems.append(f"{op} descriptor {dval:#018x} with {dims}x{k} reads bytes {addr.min()}..{addr.max() + nb - 1}, outside the {geo.tile}-byte tile")
            continue
        got = _get(img, addr, nb)
        if four:
            got = np.stack([got & np.uint64(0xF), got >> np.uint64(4)], axis=-1).reshape(dims, kk)
        view.bits[op] = got
    if v.aux:
        _decode_aux(v, f, rows, view, k)
        if (f.sparse and "meta" not in view.bits) or (v.vec and not {"SFA", "SFB"} <= set(view.bits)):
            view.bits.pop("A", None)  # no product without its metadata / scale factors
    return view


def _decode_aux(v: TcVariant, f: IdescFields, rows: np.ndarray, view: CaseView, k: int) -> None:
    """Metadata and scale factors, read from the case's Tensor-Memory columns by today's spec."""
    doc, geo = v.doc, geometry(v)
    off = HDR + geo.img_w + v.t.N
    aux = rows[:, :, off : off + AUX_W].reshape(M_RUN, AUX_W).astype(np.uint64)
    if f.sparse:
        if f.sparsity_selector:
            view.problems.append(f"sparsity_selector {f.sparsity_selector}: only selector 0 is modelled")
        chunks = k // 4
        try:
            lane, col, bit, (i0, i1) = _meta_cells(doc, f.M, chunks)
        except (KeyError, ValueError) as exc:
            view.problems.append(f"sparse_metadata layout: {exc}")
            return
        if col.max() + META_COL >= AUX_W:
            view.problems.append(f"sparse_metadata layout reads column {META_COL + col.max()} beyond the {AUX_W} placed")
            return
        cell = aux[lane, META_COL + col] >> bit.astype(np.uint64)
        view.bits["meta"] = np.stack([(cell >> np.uint64(i0)) & np.uint64(3), (cell >> np.uint64(i1)) & np.uint64(3)], axis=-1).astype(np.int64)
    if v.vec:
        for op, n, base, sid in (("SFA", f.M, SFA_COL, f.scale_a_id), ("SFB", f.N, SFB_COL, f.scale_b_id)):
            lane, col, byte = _sf_cells(doc, n, v.vec, sid)
            if (byte >= 4).any() or col.max() + base >= AUX_W or lane.max() >= M_RUN:
                view.problems.append(f"{op}: scale_factor layout with id {sid} reads outside the placed cells")
                continue
            vals = (aux[lane, base + col] >> (8 * byte).astype(np.uint64)) & np.uint64(0xFF)
            if (vals != vals[:1]).any():
                view.problems.append(f"{op}: the scale_factor replicas disagree under this spec's layout")
            view.bits[op] = vals[0]


def d_rows(v: TcVariant, out_rows: np.ndarray) -> np.ndarray:
    """One case's out rows -> D bits ``uint64[128, N]``."""
    return np.asarray(out_rows)[:, :, : v.t.N].reshape(M_RUN, v.t.N).astype(np.uint64)


def pack_d(v: TcVariant, d: np.ndarray) -> np.ndarray:
    out = np.zeros((ROWS, 32, geometry(v).out_words), dtype=np.uint32)
    out[:, :, : v.t.N] = (np.asarray(d, dtype=np.uint64) & np.uint64(0xFFFFFFFF)).reshape(ROWS, 32, v.t.N).astype(np.uint32)
    return out


# --- kernels --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TcProbe:
    variant: TcVariant
    params: dict = field(default_factory=dict)
    surroundings: Surroundings = Surroundings()

    @property
    def name(self) -> str:
        return "tc05_" + hashlib.sha256(self.variant.id.encode()).hexdigest()[:16]


def kernel_source(p: TcProbe) -> str:
    v = p.variant
    g = geometry(v)
    n = v.t.N
    start_lo = v.doc.smem.field("start_address").lo
    name = p.name
    vr = ", ".join(f"%v{i}" for i in range(8))
    aux_store = ""
    mma = f"    tcgen05.mma.cta_group::1.kind::{v.t.kind} [%r14], %rd10, %rd11, %r18, %p4;"
    if v.aux:
        parts = []
        for h in range(AUX_W // 8):
            parts += [f"    ld.global.b32 %v{i}, [%rd9+{4 * (8 * h + i)}];" for i in range(8)]
            parts.append(f"    add.u32 %r17, %r15, {AUX_BASE + 8 * h};")
            parts.append(f"    tcgen05.st.sync.aligned.32x32b.x8.b32 [%r17], {{{vr}}};")
        aux_store = "\n".join(parts)  # %rd9 has stepped past C (N is a multiple of 8): the aux words
        if v.sparse:
            mma = (f"    add.u32 %r20, %r14, {AUX_BASE + META_COL};\n"
                   f"    tcgen05.mma.sp.cta_group::1.kind::{v.t.kind} [%r14], %rd10, %rd11, [%r20], %r18, %p4;")
        else:
            mma = (f"    add.u32 %r20, %r14, {AUX_BASE + SFA_COL};\n    add.u32 %r21, %r14, {AUX_BASE + SFB_COL};\n"
                   f"    tcgen05.mma.cta_group::1.kind::{v.t.kind}.block_scale.scale_vec::{v.vec}X [%r14], %rd10, %rd11, %r18, [%r20], [%r21], %p4;")
    lds = "\n".join(f"    ld.global.b32 %v{i}, [%rd9+{4 * i}];" for i in range(8))
    sts = "\n".join(f"    st.global.b32 [%rd13+{4 * i}], %v{i};" for i in range(8))
    return f"""
.visible .entry {name}(.param .u64 p_in, .param .u64 p_out, .param .u64 p_order, .param .u32 p_ncases)
{{
    // {v.id}: one CTA (4 warps) per case
    .reg .b32 %r<24>;
    .reg .b32 %v<8>;
    .reg .b64 %rd<16>;
    .reg .pred %p<5>;
    .shared .align 16 .b32 s_taddr;
    .shared .align 8 .b64 s_mbar;
    .shared .align 1024 .b8 s_tile[{g.tile}];
    mov.u32 %r0, %tid.x;
    shr.u32 %r1, %r0, 5;
    and.b32 %r2, %r0, 31;
    mov.u32 %r3, %ctaid.x;
    shl.b32 %r4, %r3, 2;
    add.u32 %r4, %r4, %r1;
    ld.param.u32 %r5, [p_ncases];
    setp.ge.u32 %p0, %r4, %r5;
    @%p0 bra DONE_{name};
    ld.param.u64 %rd0, [p_order];
    mul.wide.u32 %rd1, %r4, 4;
    add.u64 %rd1, %rd0, %rd1;
    ld.global.u32 %r6, [%rd1];
    shl.b32 %r7, %r6, 5;
    add.u32 %r7, %r7, %r2;
    mul.wide.u32 %rd2, %r7, {g.in_words * 4};
    ld.param.u64 %rd3, [p_in];
    add.u64 %rd4, %rd3, %rd2;
    ld.param.u64 %rd5, [p_out];
    mul.wide.u32 %rd6, %r7, {g.out_words * 4};
    add.u64 %rd7, %rd5, %rd6;
    setp.eq.u32 %p1, %r1, 0;
    setp.eq.u32 %p2, %r0, 0;
    @!%p1 bra ALLOCATED_{name};
    mov.u32 %r8, s_taddr;
    tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r8], {g.ncols};
    tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOCATED_{name}:
    mov.u32 %r9, s_mbar;
    @%p2 mbarrier.init.shared::cta.b64 [%r9], 1;
    mov.u32 %r10, s_tile;
    shl.b32 %r11, %r1, 5;
    add.u32 %r11, %r11, %r2;
    mul.lo.u32 %r11, %r11, {g.img_w * 4};
    add.u32 %r11, %r10, %r11;
    add.u64 %rd8, %rd4, {HDR * 4};
    mov.u32 %r12, 0;
COPY_{name}:
    setp.ge.u32 %p3, %r12, {g.img_w};
    @%p3 bra COPIED_{name};
    ld.global.b32 %r13, [%rd8];
    st.shared.b32 [%r11], %r13;
    add.u64 %rd8, %rd8, 4;
    add.u32 %r11, %r11, 4;
    add.u32 %r12, %r12, 1;
    bra COPY_{name};
COPIED_{name}:
    fence.proxy.async.shared::cta;
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    ld.shared.b32 %r14, [s_taddr];
    shl.b32 %r15, %r1, 21;
    add.u32 %r15, %r14, %r15;
    add.u64 %rd9, %rd4, {(HDR + g.img_w) * 4};
    mov.u32 %r16, 0;
STC_{name}:
    setp.ge.u32 %p3, %r16, {n};
    @%p3 bra STORED_{name};
{lds}
    add.u32 %r17, %r15, %r16;
    tcgen05.st.sync.aligned.32x32b.x8.b32 [%r17], {{{vr}}};
    add.u64 %rd9, %rd9, 32;
    add.u32 %r16, %r16, 8;
    bra STC_{name};
STORED_{name}:
{aux_store}
    tcgen05.wait::st.sync.aligned;
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    @!%p2 bra ISSUED_{name};
    ld.global.b32 %r18, [%rd4];
    ld.global.b64 %rd10, [%rd4+8];
    ld.global.b64 %rd11, [%rd4+16];
    shr.u32 %r19, %r10, 4;
    cvt.u64.u32 %rd12, %r19;
    shl.b64 %rd12, %rd12, {start_lo};
    add.u64 %rd10, %rd10, %rd12;
    add.u64 %rd11, %rd11, %rd12;
    setp.ne.u32 %p4, %r0, 1;
{mma}
    tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r9];
ISSUED_{name}:
WAIT_{name}:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r9], 0;
    @!%p3 bra WAIT_{name};
    tcgen05.fence::after_thread_sync;
    mov.u32 %r16, 0;
    mov.u64 %rd13, %rd7;
LDD_{name}:
    setp.ge.u32 %p3, %r16, {n};
    @%p3 bra LOADED_{name};
    add.u32 %r17, %r15, %r16;
    tcgen05.ld.sync.aligned.32x32b.x8.b32 {{{vr}}}, [%r17];
    tcgen05.wait::ld.sync.aligned;
{sts}
    add.u64 %rd13, %rd13, 32;
    add.u32 %r16, %r16, 8;
    bra LDD_{name};
LOADED_{name}:
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    @!%p1 bra DONE_{name};
    tcgen05.fence::after_thread_sync;
    tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r14, {g.ncols};
DONE_{name}:
    ret;
}}
"""


def module_source(probes: list[TcProbe], version: PtxVersion, target: Target) -> str:
    return probe_module_source(probes, version, target, kernel_source)


def pick_build(v: TcVariant, rng: np.random.Generator, targets: list[Target], max_ptx: PtxVersion, versions: list[PtxVersion]) -> tuple[Target, PtxVersion]:
    """A target the GPU loads and a .version at which the spec says the tuple is valid there."""
    options = [(t, p) for t in targets for p in versions if p <= max_ptx and v.valid_for(t, p) is None]
    if not options:  # cannot happen after support_reason; keep the error readable
        raise ValueError(f"{v.id}: no (.target, .version) up to {max_ptx} is valid")
    return options[int(rng.integers(len(options)))]

