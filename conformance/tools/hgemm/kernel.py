"""HGEMM kernels generated from the specs: global -> shared (cp.async) -> ldmatrix -> mma.sync -> global.

Nothing about where a lane reads or writes is written here by hand:

* the ldmatrix form and the lane -> (tile row, tile col) of every row address come from
  :func:`ptxconf.families.movement.compare.compose` (which derives them from the mma operand layout and
  the ldmatrix fragment / row-address layouts of the specs);
* the fragment -> C coordinates of the epilogue come from the mma variant's D layout map;
* both are fitted to ``base + sum(weight_b * lane_bit_b)`` (:class:`LaneAffine`) and emitted as
  ``bfe`` / ``mad`` on ``%laneid`` bits, so a different spec layout gives different PTX.

Kernel shape (C = A . B, A M x K, B K x N, D M x N of the mma's D type): one CTA per
``bm x bn`` block of D, ``warps_m x warps_n`` warps each owning a ``wm x wn`` warp tile of
``m16n8`` mma tiles, K in ``bk`` steps through a two-stage cp.async pipeline into padded shared
tiles, ldmatrix per 16x16 (A) / 16x8 (B) fragment, D stored straight from the accumulators.
Sizes must be multiples of the block tile: :func:`check_shape` refuses (or gives the padded
shape) with a message that says so.

:func:`emulate` runs the plan's data movement in NumPy (cp.async chunk tables, ldmatrix through
the ldmatrix spec's fragment map, mma through the mma spec's A/B/D maps, stores through the D
plan), so the addressing is checked on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import ptxconf.families.movement as mv
from ptxconf.families.movement import compose
from ptxconf.isa.loader import Specs
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, parse_target

VARIANTS = {
    "f16.f16": "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
    "f16.f32": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "bf16.f32": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
}
TILES = ("row-major", "col-major")
CHUNK = 16  # bytes per cp.async


class HgemmError(ValueError):
    """A plan the generator cannot build (a layout it cannot address, a bad shape)."""


@dataclass(frozen=True)
class Config:
    bm: int = 128
    bn: int = 128
    bk: int = 32
    warps_m: int = 2
    warps_n: int = 4
    pad: int = 8  # elements of padding per shared row (keeps ldmatrix rows on distinct banks)

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def wm(self) -> int:
        return self.bm // self.warps_m

    @property
    def wn(self) -> int:
        return self.bn // self.warps_n


@dataclass(frozen=True)
class LaneAffine:
    """``lane -> (row, col) = base + sum over lane bits b of weights[b] * bit_b(lane)``."""

    base: tuple[int, int]
    weights: tuple[tuple[int, int], ...]  # per lane bit 0..4
    lanes: tuple[int, ...]  # the lanes the fit was made (and checked) on

    @classmethod
    def fit(cls, table: dict[int, tuple[int, int]], what: str) -> LaneAffine:
        if 0 not in table:
            raise HgemmError(f"{what}: lane 0 has no entry; cannot fit an address formula")
        b0 = tuple(int(x) for x in table[0])
        w = []
        for b in range(5):
            v = table.get(1 << b)
            w.append((0, 0) if v is None else (int(v[0]) - b0[0], int(v[1]) - b0[1]))
        res = cls(b0, tuple(w), tuple(sorted(table)))
        for lane, v in table.items():
            if res.at(lane) != tuple(int(x) for x in v):
                raise HgemmError(f"{what}: lane {lane} -> {tuple(v)} is not base + lane-bit terms "
                                 f"(the fit predicts {res.at(lane)}); this generator needs an affine lane map")
        return res

    def at(self, lane: int) -> tuple[int, int]:
        r, c = self.base
        for b, (wr, wc) in enumerate(self.weights):
            if (lane >> b) & 1:
                r, c = r + wr, c + wc
        return r, c

    def table(self) -> np.ndarray:
        return np.array([self.at(ln) for ln in range(32)], dtype=np.int64)

    def describe(self, name: str = "lane") -> str:
        def one(k: int) -> str:
            terms = [f"{w[k]}*bit{b}({name})" for b, w in enumerate(self.weights) if w[k]]
            return " + ".join([str(self.base[k])] * bool(self.base[k] or not terms) + terms)
        return f"row = {one(0)}, col = {one(1)}"


@dataclass
class OperandPlan:
    name: str  # A or B
    tile: str  # row-major | col-major (of the global matrix and of the shared tile)
    form: str  # ldmatrix variant id
    formula: str  # compose's formula, for people
    lanes: LaneAffine  # lane -> (tile row, tile col) of the row it addresses
    registers: int
    rows: int  # block-tile shape in operand coordinates (A: bm x bk, B: bk x bn)
    cols: int
    step: tuple[int, int]  # operand-coordinate size of one mma fragment (A 16x16, B 16x8)

    @property
    def storage(self) -> tuple[int, int]:
        """(rows, cols) of the block tile as stored (row-major storage of the transpose if col-major)."""
        return (self.rows, self.cols) if self.tile == "row-major" else (self.cols, self.rows)

    def strides(self, ld: int) -> tuple[int, int]:
        """Element strides of (operand row, operand col) in a storage of leading dimension ``ld``."""
        return (ld, 1) if self.tile == "row-major" else (1, ld)

    @property
    def ldmatrix(self) -> str:
        head, typ = self.form.rsplit(".", 1)
        return f"{head}.shared.{typ}"


@dataclass
class Store:
    registers: tuple[int, ...]  # fragment registers stored by one instruction
    elements: tuple[int, ...]
    delta: tuple[int, int]  # (row, col) of the first element relative to element 0
    vec: int  # elements per store


@dataclass
class DPlan:
    layout: str
    lanes: LaneAffine  # lane -> (row, col) of element 0
    deltas: tuple[tuple[int, int], ...]  # element e: (row, col) - element 0's, same for every lane
    stores: list[Store]
    register_type: str
    per_register: int
    type: str


@dataclass
class Plan:
    variant: Variant
    config: Config
    a: OperandPlan
    b: OperandPlan
    d: DPlan
    name: str = "hgemm"
    notes: list[str] = field(default_factory=list)

    @property
    def in_type(self) -> str:
        return self.variant.operands["A"].type.name

    @property
    def out_type(self) -> str:
        return self.d.type

    @property
    def in_bytes(self) -> int:
        return self.variant.operands["A"].type.bits // 8

    @property
    def out_bytes(self) -> int:
        return self.variant.operands["D"].type.bits // 8

    def smem_ld(self, op: OperandPlan) -> int:
        return op.storage[1] + self.config.pad

    def smem_bytes(self, op: OperandPlan) -> int:
        return op.storage[0] * self.smem_ld(op) * self.in_bytes

    @property
    def stage_bytes(self) -> int:
        return self.smem_bytes(self.a) + self.smem_bytes(self.b)

    def as_dict(self) -> dict:
        def op(o: OperandPlan) -> dict:
            return {"tile": o.tile, "form": o.form, "formula": o.formula, "address": o.lanes.describe(),
                    "lanes": o.lanes.table()[: max(o.lanes.lanes) + 1].tolist()}
        return {"variant": self.variant.id, "config": self.config.__dict__, "A": op(self.a), "B": op(self.b),
                "D": {"layout": self.d.layout, "element0": self.d.lanes.describe(), "deltas": self.d.deltas,
                      "stores": [(s.elements, s.vec) for s in self.d.stores]},
                "shared_bytes": 2 * self.stage_bytes, "notes": self.notes}


# --- planning --------------------------------------------------------------------------------


def _check_config(cfg: Config) -> None:
    if cfg.bm % cfg.warps_m or cfg.bn % cfg.warps_n or cfg.wm % 16 or cfg.wn % 8 or cfg.bk % 16:
        raise HgemmError(f"block {cfg.bm}x{cfg.bn}x{cfg.bk} with {cfg.warps_m}x{cfg.warps_n} warps: "
                         "warp tiles must be multiples of 16x8 and bk of 16")


def _operand(specs: Specs, v: Variant, name: str, tile: str, rows: int, cols: int) -> OperandPlan:
    c = compose(specs, v, name, tile)
    if not c.form:
        raise HgemmError(f"no ldmatrix form loads {v.id} operand {name} from a {tile} tile: {c.why}")
    lanes = LaneAffine.fit(dict(c.lanes), f"{name} ({c.form}) row addresses")
    op = v.operands[name]
    return OperandPlan(name, tile, c.form, c.formula, lanes, op.registers, rows, cols,
                       (op.layout.rows, op.layout.cols))


def _dplan(v: Variant) -> DPlan:
    op = v.operands["D"]
    m = op.layout.map(op.param_combinations()[0])
    if (m[..., 0] != 0).any():
        raise HgemmError(f"{v.id} D: layout {op.layout.name} has more than one matrix or empty slots")
    E = op.layout.elements
    lanes = LaneAffine.fit({ln: (m[ln, 0, 1], m[ln, 0, 2]) for ln in range(32)}, f"D layout {op.layout.name}")
    deltas = []
    for e in range(E):
        d = m[:, e, 1:] - m[:, 0, 1:]
        if (d != d[0]).any():
            raise HgemmError(f"D layout {op.layout.name}: element {e} is not a fixed offset from element 0")
        deltas.append((int(d[0, 0]), int(d[0, 1])))
    per = op.fragment.per_register
    stores, e = [], 0
    while e < E:
        # widest run of consecutive elements in one row, consecutive columns, aligned, within 8 bytes
        n = 1
        maxvec = max(1, 8 // (op.type.bits // 8))
        while (e + n < E and n < maxvec and deltas[e + n] == (deltas[e][0], deltas[e][1] + n)):
            n += 1
        while n > 1 and ((lanes.table()[:, 1] + deltas[e][1]) % n).any():
            n //= 2
        if per > 1 and (n % per or e % per):  # packed registers: store whole registers or single halves
            n = 1 if n < per or e % per else n - n % per
        regs = tuple(sorted({k // per for k in range(e, e + n)}))
        stores.append(Store(regs, tuple(range(e, e + n)), deltas[e], n))
        e += n
    return DPlan(op.layout.name, lanes, tuple(deltas), stores, op.fragment.register, per, op.type.name)


def plan(specs: Specs, variant: str, a_tile: str = "row-major", b_tile: str = "row-major",
         config: Config | None = None) -> Plan:
    """Build the addressing plan for ``variant`` (a key of :data:`VARIANTS` or an mma variant id)."""
    cfg = config or Config()
    _check_config(cfg)
    vid = VARIANTS.get(variant, variant)
    try:
        v = specs.get(vid)
    except KeyError as exc:
        raise HgemmError(str(exc.args[0])) from None
    if v.shape != (16, 8, 16) or v.family != "mma.sync":
        raise HgemmError(f"{v.id}: this generator emits mma.sync m16n8k16 kernels only")
    if v.operands["A"].type.bits != 16:
        raise HgemmError(f"{v.id}: 16-bit inputs only (A is .{v.operands['A'].type.name})")
    a = _operand(specs, v, "A", a_tile, cfg.bm, cfg.bk)
    b = _operand(specs, v, "B", b_tile, cfg.bk, cfg.bn)
    p = Plan(v, cfg, a, b, _dplan(v))
    p.name = "hgemm_" + "_".join([v.operands["A"].type.name, p.out_type, a_tile[0], b_tile[0]])
    for o in (a, b):
        sr, sc = o.storage
        cpr = sc * p.in_bytes // CHUNK
        if (sr * cpr) % cfg.threads or cfg.threads % cpr:
            raise HgemmError(f"{o.name} block tile {sr}x{sc} does not split into {cfg.threads} threads x 16-byte chunks")
    if 2 * p.stage_bytes > 48 * 1024:
        raise HgemmError(f"two stages need {2 * p.stage_bytes} bytes of shared memory; static limit is 49152")
    return p


def check_shape(p: Plan, M: int, N: int, K: int, pad: bool = False) -> tuple[int, int, int]:
    """The shape the kernel runs: (M, N, K) itself, or padded up to block multiples if ``pad``."""
    cfg = p.config
    need = {"M": (M, cfg.bm), "N": (N, cfg.bn), "K": (K, cfg.bk)}
    for k, (x, _) in need.items():
        if x < 1:
            raise HgemmError(f"{k}={x}: sizes must be positive")
    up = {k: -(-x // t) * t for k, (x, t) in need.items()}
    bad = [f"{k}={x} is not a multiple of {t}" for k, (x, t) in need.items() if x % t]
    if bad and not pad:
        raise HgemmError(f"{p.name} needs M, N, K multiples of its block tile {cfg.bm}x{cfg.bn}x{cfg.bk}: "
                         + "; ".join(bad)
                         + f". Pad with zeros to {up['M']}x{up['N']}x{up['K']} (--pad) or pick another --block.")
    return up["M"], up["N"], up["K"]


def pad_to(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    if x.shape == (rows, cols):
        return x
    out = np.zeros((rows, cols), dtype=x.dtype)
    out[: x.shape[0], : x.shape[1]] = x
    return out


# --- PTX ------------------------------------------------------------------------------------


def ptx_version(p: Plan, arch: str) -> str:
    t = parse_target(arch)
    return str(max(p.variant.min_ptx, t.min_ptx, PtxVersion.parse("7.0"), key=lambda x: (x.major, x.minor)))


class _Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, s: str) -> None:
        self.lines.append(("" if s.endswith(":") else "\t") + s)


def _affine(e: _Emitter, dst: str, base: int, terms: list[tuple[str, int]]) -> None:
    e(f"mov.s32 {dst}, {base};")
    for reg, w in terms:
        if w:
            e(f"mad.lo.s32 {dst}, {reg}, {w}, {dst};")


def _copy_tables(p: Plan, o: OperandPlan) -> tuple[int, int, int]:
    """(chunks per storage row, chunks per thread, storage rows per pass)."""
    sr, sc = o.storage
    cpr = sc * p.in_bytes // CHUNK
    return cpr, sr * cpr // p.config.threads, p.config.threads // cpr


def generate(p: Plan, arch: str = "sm_80") -> str:
    """The PTX module (one ``.entry``) for plan ``p``."""
    cfg, v = p.config, p.variant
    eb, ob = p.in_bytes, p.out_bytes
    e = _Emitter()
    dreg = p.d.register_type
    nd = v.operands["D"].registers
    mt, nt, ks = cfg.wm // 16, cfg.wn // 8, cfg.bk // 16
    e.lines += [
        f"// {p.name}: generated by ptxconf.tools.hgemm.kernel from the specs (do not edit)",
        f"// mma: {v.id}",
        f"// A ({p.a.tile}): {p.a.ldmatrix}; {p.a.lanes.describe()}",
        f"// B ({p.b.tile}): {p.b.ldmatrix}; {p.b.lanes.describe()}",
        f"// D ({p.d.layout}): element 0 at {p.d.lanes.describe()}; element deltas {list(p.d.deltas)}",
        f"// block {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.warps_m}x{cfg.warps_n} warps of {cfg.wm}x{cfg.wn}",
        f".version {ptx_version(p, arch)}",
        f".target {arch}",
        ".address_size 64",
        "",
        f".visible .entry {p.name}(",
        "\t.param .u64 pA, .param .u64 pB, .param .u64 pD,",
        "\t.param .u32 pM, .param .u32 pN, .param .u32 pK",
        f") .reqntid {cfg.threads}",
        "{",
        f"\t.shared .align 128 .b8 smem[{2 * p.stage_bytes}];",
        "\t.reg .pred %p<4>;",
        "\t.reg .b32 %r<64>;",
        "\t.reg .b64 %rd<32>;",
        f"\t.reg .b32 %fa<{mt * p.a.registers}>;",
        f"\t.reg .b32 %fb<{nt * p.b.registers}>;",
        f"\t.reg .{dreg} %acc<{mt * nt * nd}>;",
        "\t.reg .b32 %lb<5>;",
        "\t.reg .b64 %ga<4>, %gb<4>;",
        "\t.reg .b32 %sa, %sb, %la, %lbo, %stage, %kt, %ktiles;",
    ]
    # --- indices
    e("ld.param.u64 %rd0, [pA];")
    e("ld.param.u64 %rd1, [pB];")
    e("ld.param.u64 %rd2, [pD];")
    e("cvta.to.global.u64 %rd0, %rd0;")
    e("cvta.to.global.u64 %rd1, %rd1;")
    e("cvta.to.global.u64 %rd2, %rd2;")
    e("ld.param.u32 %r0, [pM];")
    e("ld.param.u32 %r1, [pN];")
    e("ld.param.u32 %r2, [pK];")
    e("mov.u32 %r3, %tid.x;")
    e("mov.u32 %r4, %laneid;")
    e("shr.u32 %r5, %r3, 5;  // warp")
    e(f"div.u32 %r6, %r5, {cfg.warps_n};  // warp row")
    e(f"rem.u32 %r7, %r5, {cfg.warps_n};  // warp col")
    e("mov.u32 %r8, %ctaid.y;")
    e("mov.u32 %r9, %ctaid.x;")
    e(f"mul.lo.u32 %r8, %r8, {cfg.bm};  // block row")
    e(f"mul.lo.u32 %r9, %r9, {cfg.bn};  // block col")
    for b in range(5):
        e(f"bfe.u32 %lb{b}, %r4, {b}, 1;")
    e(f"div.u32 %ktiles, %r2, {cfg.bk};")
    e("mov.u32 %r10, smem;")

    # --- global -> shared copy tables (per thread): storage row/col of its first chunk
    lds = {"A": ("%r2" if p.a.tile == "row-major" else "%r0"), "B": ("%r1" if p.b.tile == "row-major" else "%r2")}
    for o, base, greg, sreg, soff in ((p.a, "%rd0", "%ga", "%sa", 0), (p.b, "%rd1", "%gb", "%sb", p.smem_bytes(p.a))):
        cpr, per, rpp = _copy_tables(p, o)
        ld = lds[o.name]
        # block origin in operand coordinates: A (block row, 0), B (0, block col)
        org = ("%r8", None) if o.name == "A" else (None, "%r9")
        srow0, scol0 = org if o.tile == "row-major" else org[::-1]
        e(f"// {o.name}: {per} x 16-byte cp.async per thread, {rpp} storage rows per pass")
        e(f"div.u32 %r11, %r3, {cpr};")
        e(f"rem.u32 %r12, %r3, {cpr};")
        e(f"mul.lo.u32 %r12, %r12, {CHUNK // eb};")
        e(f"mad.lo.u32 %r13, %r11, {p.smem_ld(o) * eb}, {soff};")
        e(f"mad.lo.u32 {sreg}, %r12, {eb}, %r13;")
        e(f"add.u32 {sreg}, {sreg}, %r10;")
        if srow0:
            e(f"add.u32 %r11, %r11, {srow0};")
        if scol0:
            e(f"add.u32 %r12, %r12, {scol0};")
        e(f"mul.wide.u32 %rd3, %r11, {ld};")
        e("cvt.u64.u32 %rd4, %r12;")
        e("add.u64 %rd3, %rd3, %rd4;")
        e(f"mad.lo.u64 {greg}0, %rd3, {eb}, {base};")
        e(f"mul.wide.u32 {greg}1, {ld}, {rpp * eb};  // bytes per pass")
        if (o.name == "A") == (o.tile == "row-major"):  # K runs along storage columns
            e(f"mov.u64 {greg}2, {cfg.bk * eb};  // bytes per k tile")
        else:
            e(f"mul.wide.u32 {greg}2, {ld}, {cfg.bk * eb};  // bytes per k tile")

    # --- ldmatrix lane offsets (bytes within a stage), from the composition
    for o, dst, wreg, wsize, sbase in ((p.a, "%la", "%r6", cfg.wm, 0), (p.b, "%lbo", "%r7", cfg.wn, p.smem_bytes(p.a))):
        rs, cs = o.strides(p.smem_ld(o))
        lr, lc = o.lanes.base, o.lanes.weights
        e(f"// {o.name} ldmatrix row address: {o.lanes.describe()} (from compose: {o.form})")
        _affine(e, "%r14", lr[0], [(f"%lb{b}", w[0]) for b, w in enumerate(lc)])
        _affine(e, "%r15", lr[1], [(f"%lb{b}", w[1]) for b, w in enumerate(lc)])
        if o.name == "A":
            e(f"mad.lo.s32 %r14, {wreg}, {wsize}, %r14;")
        else:
            e(f"mad.lo.s32 %r15, {wreg}, {wsize}, %r15;")
        e(f"mul.lo.s32 %r14, %r14, {rs * eb};")
        e(f"mad.lo.s32 %r14, %r15, {cs * eb}, %r14;")
        e(f"add.s32 {dst}, %r14, {sbase};")
        e(f"add.s32 {dst}, {dst}, %r10;")

    for i in range(mt * nt * nd):
        e(f"mov.{dreg} %acc{i}, 0{'f00000000' if dreg == 'f32' else ''};")

    def issue(kt_reg_is_next: bool) -> None:
        for o, greg, sreg in ((p.a, "%ga", "%sa"), (p.b, "%gb", "%sb")):
            cpr, per, rpp = _copy_tables(p, o)
            e(f"add.u32 %r16, {sreg}, %stage;")
            e(f"mov.u64 %rd5, {greg}0;")
            for j in range(per):
                e(f"cp.async.cg.shared.global [%r16+{j * rpp * p.smem_ld(o) * eb}], [%rd5], 16;")
                if j + 1 < per:
                    e(f"add.u64 %rd5, %rd5, {greg}1;")
            e(f"add.u64 {greg}0, {greg}0, {greg}2;")
        e("cp.async.commit_group;")

    # prologue: k tile 0 -> stage 0
    e("mov.u32 %stage, 0;")
    issue(False)
    e("mov.u32 %kt, 0;")
    e("LOOP:")
    e("add.u32 %r17, %kt, 1;")
    e("setp.lt.u32 %p0, %r17, %ktiles;")
    e("@!%p0 bra NOLOAD;")
    e("and.b32 %r18, %r17, 1;")
    e(f"mul.lo.u32 %stage, %r18, {p.stage_bytes};")
    issue(True)
    e("cp.async.wait_group 1;")
    e("bra.uni COMPUTE;")
    e("NOLOAD:")
    e("cp.async.wait_group 0;")
    e("COMPUTE:")
    e("bar.sync 0;")
    e("and.b32 %r18, %kt, 1;")
    e(f"mul.lo.u32 %r19, %r18, {p.stage_bytes};")
    e("add.u32 %r20, %la, %r19;")
    e("add.u32 %r21, %lbo, %r19;")
    ar, br = p.a.registers, p.b.registers
    for k in range(ks):
        for mi in range(mt):
            rs, cs = p.a.strides(p.smem_ld(p.a))
            off = (mi * 16 * rs + k * 16 * cs) * eb
            regs = ", ".join(f"%fa{mi * ar + j}" for j in range(ar))
            e(f"{p.a.ldmatrix} {{{regs}}}, [%r20+{off}];")
        for ni in range(nt):
            rs, cs = p.b.strides(p.smem_ld(p.b))
            off = (k * 16 * rs + ni * 8 * cs) * eb
            regs = ", ".join(f"%fb{ni * br + j}" for j in range(br))
            e(f"{p.b.ldmatrix} {{{regs}}}, [%r21+{off}];")
        for mi in range(mt):
            for ni in range(nt):
                acc = ", ".join(f"%acc{(mi * nt + ni) * nd + j}" for j in range(nd))
                a = ", ".join(f"%fa{mi * ar + j}" for j in range(ar))
                b = ", ".join(f"%fb{ni * br + j}" for j in range(br))
                e(f"{v.id} {{{acc}}}, {{{a}}}, {{{b}}}, {{{acc}}};")
    e("bar.sync 0;")
    e("add.u32 %kt, %kt, 1;")
    e("setp.lt.u32 %p1, %kt, %ktiles;")
    e("@%p1 bra LOOP;")

    # --- epilogue: D fragment -> global, coordinates from the D layout map
    d = p.d
    e(f"// D store: element 0 at {d.lanes.describe()}, element deltas {list(d.deltas)}")
    _affine(e, "%r22", d.lanes.base[0], [(f"%lb{b}", w[0]) for b, w in enumerate(d.lanes.weights)])
    _affine(e, "%r23", d.lanes.base[1], [(f"%lb{b}", w[1]) for b, w in enumerate(d.lanes.weights)])
    e(f"mad.lo.u32 %r22, %r6, {cfg.wm}, %r22;")
    e("add.u32 %r22, %r22, %r8;")
    e(f"mad.lo.u32 %r23, %r7, {cfg.wn}, %r23;")
    e("add.u32 %r23, %r23, %r9;")
    e("mul.wide.u32 %rd6, %r22, %r1;")
    e("cvt.u64.u32 %rd7, %r23;")
    e("add.u64 %rd6, %rd6, %rd7;")
    e(f"mad.lo.u64 %rd6, %rd6, {ob}, %rd2;  // &D[row0][col0]")
    e(f"mul.wide.u32 %rd8, %r1, {ob};  // bytes per D row")
    rows = sorted({mi * 16 + s.delta[0] for mi in range(mt) for s in d.stores})
    for i, r in enumerate(rows):
        e(f"mul.lo.u64 %rd{10 + i}, %rd8, {r};")
        e(f"add.u64 %rd{10 + i}, %rd{10 + i}, %rd6;")
    suffix = {"f16": "b16", "f32": "f32"}[d.type]
    for mi in range(mt):
        for ni in range(nt):
            base = (mi * nt + ni) * nd
            for s in d.stores:
                rr = f"%rd{10 + rows.index(mi * 16 + s.delta[0])}"
                off = (ni * 8 + s.delta[1]) * ob
                if d.per_register == 1:
                    regs = [f"%acc{base + k}" for k in s.registers]
                    if s.vec == 1:
                        e(f"st.global.f32 [{rr}+{off}], {regs[0]};")
                    else:
                        e(f"st.global.v{s.vec}.f32 [{rr}+{off}], {{{', '.join(regs)}}};")
                elif s.vec >= d.per_register:
                    regs = [f"%acc{base + k}" for k in s.registers]
                    if len(regs) == 1:
                        e(f"st.global.b32 [{rr}+{off}], {regs[0]};")
                    else:
                        e(f"st.global.v{len(regs)}.b32 [{rr}+{off}], {{{', '.join(regs)}}};")
                else:  # one packed half
                    k = s.elements[0]
                    e(f"shr.b32 %r24, %acc{base + k // d.per_register}, {16 * (k % d.per_register)};")
                    e("cvt.u16.u32 %rs0, %r24;")
                    e(f"st.global.{suffix} [{rr}+{off}], %rs0;")
    e("ret;")
    e.lines.append("}")
    text = "\n".join(e.lines) + "\n"
    if "%rs0" in text:
        text = text.replace("\t.reg .b32 %lb<5>;", "\t.reg .b32 %lb<5>;\n\t.reg .b16 %rs0;", 1)
    return text


# --- CPU emulation of the plan --------------------------------------------------------------


def _ldmatrix(specs: Specs, form: str, image: np.ndarray, row_addr: np.ndarray, eb: int) -> np.ndarray:
    """Registers ``[lane, element]`` an ldmatrix form gives, per the ldmatrix spec's maps."""
    f = specs.get(form)
    fm = f.operands["fragment"].layout.map()
    rl = mv.row_lanes(f)
    out = np.zeros(fm.shape[:2], dtype=image.dtype)
    for lane in range(32):
        for el in range(fm.shape[1]):
            m, r, c = fm[lane, el]
            out[lane, el] = image[row_addr[rl[m, r]] // eb + c]
    return out


def _gather(op, frag: np.ndarray) -> np.ndarray:
    m = op.layout.map(op.param_combinations()[0])
    out = np.zeros((op.layout.rows, op.layout.cols), dtype=np.float64)
    out[m[..., 1], m[..., 2]] = frag
    return out


def emulate(specs: Specs, p: Plan, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Run the plan's data movement on A (M x K) and B (K x N) in float64; returns D (M x N).

    Global -> shared follows the per-thread cp.async chunk tables, ldmatrix reads rows at the
    lane addresses the plan computed (through the ldmatrix form's own fragment map), mma
    combines fragments through the mma spec's A/B/D maps, and D is stored at the addresses the
    plan's D stores compute.  Shapes must be block multiples (see :func:`check_shape`).
    """
    cfg, v = p.config, p.variant
    M, K = A.shape
    N = B.shape[1]
    check_shape(p, M, N, K)
    eb, T = p.in_bytes, cfg.threads
    G = {"A": A if p.a.tile == "row-major" else A.T, "B": B if p.b.tile == "row-major" else B.T}
    G = {k: np.ascontiguousarray(x, dtype=np.float64).ravel() for k, x in G.items()}
    lds = {"A": K if p.a.tile == "row-major" else M, "B": N if p.b.tile == "row-major" else K}
    D = np.full((M, N), np.nan)
    nd = v.operands["D"].registers
    hw = specs.get(v.id)  # the "hardware": the mma maps of ``specs``, which may not be the plan's
    opA, opB, opD = (hw.operands[n] for n in "ABD")
    dmap = opD.layout.map(opD.param_combinations()[0])
    lane = np.arange(32)
    tid = np.arange(T)
    for bm in range(0, M, cfg.bm):
        for bn in range(0, N, cfg.bn):
            acc = np.zeros((cfg.warps_m * cfg.warps_n, cfg.wm // 16, cfg.wn // 8, 32, opD.layout.elements))
            for kt in range(K // cfg.bk):
                smem = {}
                for o in (p.a, p.b):
                    cpr, per, rpp = _copy_tables(p, o)
                    org = (bm, kt * cfg.bk) if o.name == "A" else (kt * cfg.bk, bn)
                    sorg = org if o.tile == "row-major" else org[::-1]
                    img = np.full(o.storage[0] * p.smem_ld(o), np.nan)
                    for j in range(per):
                        srow, scol = tid // cpr + j * rpp, (tid % cpr) * (CHUNK // eb)
                        for x in range(CHUNK // eb):
                            g = (sorg[0] + srow) * lds[o.name] + sorg[1] + scol + x
                            img[srow * p.smem_ld(o) + scol + x] = G[o.name][g]
                    smem[o.name] = img
                for w in range(cfg.warps_m * cfg.warps_n):
                    wr, wc = divmod(w, cfg.warps_n)
                    for k in range(cfg.bk // 16):
                        fa, fb = [], []
                        for mi in range(cfg.wm // 16):
                            rc = p.a.lanes.table() + (wr * cfg.wm + mi * 16, k * 16)
                            rs, cs = p.a.strides(p.smem_ld(p.a))
                            fa.append(_ldmatrix(specs, p.a.form, smem["A"], (rc[:, 0] * rs + rc[:, 1] * cs) * eb, eb))
                        for ni in range(cfg.wn // 8):
                            rc = p.b.lanes.table() + (k * 16, wc * cfg.wn + ni * 8)
                            rs, cs = p.b.strides(p.smem_ld(p.b))
                            fb.append(_ldmatrix(specs, p.b.form, smem["B"], (rc[:, 0] * rs + rc[:, 1] * cs) * eb, eb))
                        for mi, a in enumerate(fa):
                            for ni, b in enumerate(fb):
                                prod = _gather(opA, a) @ _gather(opB, b)
                                acc[w, mi, ni] += prod[dmap[..., 1], dmap[..., 2]]
            for w in range(cfg.warps_m * cfg.warps_n):
                wr, wc = divmod(w, cfg.warps_n)
                rc0 = p.d.lanes.table() + (bm + wr * cfg.wm, bn + wc * cfg.wn)
                for mi in range(cfg.wm // 16):
                    for ni in range(cfg.wn // 8):
                        for s in p.d.stores:
                            for x, el in enumerate(s.elements):
                                assert p.d.deltas[el] == (s.delta[0], s.delta[1] + x)
                                D[rc0[:, 0] + mi * 16 + s.delta[0], rc0[:, 1] + ni * 8 + s.delta[1] + x] = \
                                    acc[w, mi, ni][lane, el]
    assert nd * p.d.per_register == opD.layout.elements
    return D
