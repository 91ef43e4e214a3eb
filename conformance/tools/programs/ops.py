"""A program lowered to register-level ops, and where each of its values sits in the case's rows.

:func:`lower` is the one place that decides the kernel: which registers hold what, which ops run in
which order, and the word offsets of every input and output (a :class:`StepLayout` per step).  The
emitter (:mod:`.emit`) turns the ops into PTX one for one; the interpreter (:mod:`.interp`) runs the
same ops in NumPy; inputs and the oracle read only the layouts.

Rows are per lane, ``[case][lane][word]`` as in every probe: ``in`` holds the operands (64-bit
registers at even words, shared-memory images at multiples of four words), ``out`` the results.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import ptxconf.families.movement as mv
import ptxconf.families.wgmma as wg
from ptxconf.families.movement import Composition, compose
from ptxconf.families.wgmma import Desc, encode
from ptxconf.isa.model import Operand, Variant
from ptxconf.isa.targets import parse_target

from .model import LoopStep, MmaStep, PipelineStep, Program, ProgramError, Step, WgmmaStep, specs, variant

__all__ = ["Frag", "Kernel", "StepLayout", "lower", "params_of", "top_bits", "SHARED_LIMIT", "GOLDEN", "lane_predicate"]

SHARED_LIMIT = 48 * 1024  # static shared memory a kernel may declare
GOLDEN = 0x9E3779B1  # filler values: x * GOLDEN + lane
WIDE = ("f64", "b64")


@dataclass(frozen=True)
class Frag:
    """``count`` registers of one type, named ``<name>0 .. <name>{count-1}`` in PTX."""

    name: str
    reg: str  # the fragment's register type (b32, f32, s32, u32, f64, b64)
    count: int

    @property
    def wide(self) -> bool:
        return self.reg in WIDE

    @property
    def words(self) -> int:
        return self.count * (2 if self.wide else 1)

    def regs(self) -> list[str]:
        return [f"{self.name}{i}" for i in range(self.count)]


# --- ops -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """``dst`` from the input row at ``word`` (inside a loop, ``iterated``: plus the iteration's stride)."""

    dst: Frag
    word: int
    iterated: bool = False


@dataclass(frozen=True)
class Mix:
    """Filler: ``x = x * GOLDEN + lane`` (lane within the group)."""

    frag: Frag


@dataclass(frozen=True)
class LanePred:
    """``pred`` = :func:`lane_predicate` of the lane: differs from lane to lane."""

    pred: str


def lane_predicate(lanes: np.ndarray) -> np.ndarray:
    """Bit 1 xor bit 3 of the lane within the group."""
    return (((lanes >> 1) ^ (lanes >> 3)) & 1) != 0


@dataclass(frozen=True)
class WarpPred:
    """``pred`` = bit ``warp`` of the case's mask word: uniform in each warp, as ``.aligned`` requires."""

    pred: str
    word: int


@dataclass(frozen=True)
class ScalePred:
    """``pred`` = the case's word != 0, or (``word`` None) always true: wgmma's scale-d."""

    pred: str
    word: int | None


@dataclass(frozen=True)
class XorIf:
    """Where ``pred``: every register of ``frag`` xor ``pattern``."""

    frag: Frag
    pattern: int
    pred: str


@dataclass(frozen=True)
class Mma:
    """One mma.sync / mma.sp of ``form``: ``operands`` name -> registers (A, B, C and any metadata)."""

    form: str
    d: Frag
    operands: tuple[tuple[str, Frag], ...]
    guard: str | None = None


@dataclass(frozen=True)
class Loop:
    """``body`` run count-word times (at least once): a ``bra`` back-edge; iterated loads advance by ``stride`` words."""

    word: int
    stride: int
    body: tuple[Any, ...]
    label: str


@dataclass(frozen=True)
class Stage:
    """Every lane copies its ``per_lane`` words of the input row at ``word`` into ``array`` (lane by lane), then a barrier."""

    array: str
    word: int
    per_lane: int
    async_proxy: bool  # the async proxy reads it (wgmma): fence.proxy.async first


@dataclass(frozen=True)
class WgFence:
    pass


@dataclass(frozen=True)
class WgCommit:
    pass


@dataclass(frozen=True)
class WgWait:
    n: int


@dataclass(frozen=True)
class Wgmma:
    """One wgmma.mma_async; descriptors are templates relative to ``array`` (the kernel adds its address >> 4)."""

    form: str
    imm: tuple[tuple[str, int], ...]
    d: Frag
    a: Frag | None
    a_desc: int | None
    b_desc: int
    scale: str
    array: str


@dataclass(frozen=True)
class Ldmatrix:
    """``dst`` by the ldmatrix ``form`` from the warp's image in ``array``; the lane's row offset at input ``word``."""

    form: str
    dst: Frag
    array: str
    word: int


@dataclass(frozen=True)
class Stmatrix:
    form: str
    src: Frag
    array: str
    word: int


@dataclass(frozen=True)
class WarpSync:
    pass


@dataclass(frozen=True)
class Store:
    """``src`` to the output row at ``word``."""

    word: int
    src: Frag


@dataclass(frozen=True)
class StoreShared:
    """Every lane copies its ``per_lane`` words of ``array`` back to the output row at ``word``."""

    word: int
    array: str
    per_lane: int


# --- where values sit --------------------------------------------------------------------------


@dataclass
class StepLayout:
    """One step's words: named input and output offsets (the inputs and the oracle read these)."""

    index: int  # the step's index; -1: the filler
    step: Step | None
    inputs: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # words of each named output
    stride: int = 0  # loop: input words per iteration
    descs: dict[str, Desc] = field(default_factory=dict)  # wgmma: "A0", "B0", ... in the step's image
    image_bytes: int = 0
    tiles: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # pipeline: operand -> (byte offset, ld, tile)
    compositions: dict[str, Composition] = field(default_factory=dict)


@dataclass
class Kernel:
    """A lowered program: what the emitter writes and the interpreter runs."""

    program: Program
    name: str
    lanes: int
    ops: tuple[Any, ...]
    in_words: int
    out_words: int
    arrays: dict[str, int]  # shared array -> bytes
    layouts: list[StepLayout]
    frags: list[Frag]
    preds: list[str]
    movement: tuple[Variant, ...] = ()  # ldmatrix/stmatrix forms used (for the .version)

    @property
    def warps(self) -> int:
        return self.lanes // 32

    def output_of(self, word: int) -> tuple[StepLayout, str, int] | None:
        """Which step's named output holds out word ``word``, and the word's index in it."""
        for lay in self.layouts:
            for name, off in lay.outputs.items():
                if off <= word < off + lay.sizes.get(name, 0):
                    return lay, name, word - off
        return None


def params_of(v: Variant) -> dict[str, dict[str, int]]:
    """The selector values every program uses: each operand's first legal combination."""
    return {name: op.param_combinations()[0] for name, op in v.operands.items()}


def top_bits(op: Operand) -> int:
    """A register with the top bit of every element set: xor with it negates floats, moves integers by half their range."""
    frag = op.fragment
    word = 0
    for e in range(frag.per_register):
        word |= 1 << (e * frag.container_bits + frag.value_shift + op.type.bits - 1)
    return word


def c_fits_d(prev: Variant, nxt: Variant) -> bool:
    """``prev``'s D registers can be ``nxt``'s C: same type, fragment and lane map."""
    d, c = prev.operands["D"], nxt.operands["C"]
    if d.type != c.type or d.fragment != c.fragment or d.layout.lanes != c.layout.lanes:
        return False
    dm, cm = d.layout.map(params_of(prev).get("D")), c.layout.map(params_of(nxt).get("C"))
    return dm.shape == cm.shape and bool(np.array_equal(dm, cm))


class _Rows:
    """Word offsets handed out in order, aligned as asked."""

    def __init__(self) -> None:
        self.n = 0

    def take(self, words: int, align: int = 1) -> int:
        self.n = -(-self.n // align) * align
        at = self.n
        self.n += words
        return at


class _Lowering:
    def __init__(self, program: Program):
        self.p = program
        self.target = parse_target(program.arch)
        self.lanes = program.lanes
        self.inp, self.out = _Rows(), _Rows()
        self.frags: list[Frag] = []
        self.preds: list[str] = []
        self.arrays: dict[str, int] = {}
        self.late: list[Store] = []  # stores made at the kernel's end
        self.layouts: list[StepLayout] = []
        self.movement: list[Variant] = []
        self.n = 0

    def frag(self, prefix: str, reg: str, count: int) -> Frag:
        self.n += 1
        f = Frag(f"%{prefix}{self.n}_", reg, count)
        self.frags.append(f)
        return f

    def operand(self, prefix: str, op: Operand) -> Frag:
        return self.frag(prefix, op.fragment.register, op.registers)

    def pred(self) -> str:
        self.n += 1
        name = f"%g{self.n}"
        self.preds.append(name)
        return name

    def take_in(self, f: Frag) -> int:
        return self.inp.take(f.words, 2 if f.wide else 1)

    def take_out(self, lay: StepLayout, name: str, f: Frag, late: bool, ops: list) -> None:
        lay.outputs[name] = self.out.take(f.words, 2 if f.wide else 1)
        lay.sizes[name] = f.words
        (self.late if late else ops).append(Store(lay.outputs[name], f))

    def form(self, vid: str, families: tuple[str, ...]) -> Variant:
        v = variant(vid)
        if v.family not in families:
            raise ProgramError(f"{vid}: a {v.family} form where the step takes {' or '.join(families)}")
        why = v.valid_for(self.target)
        if why:
            raise ProgramError(f"{vid}: {why}")
        if v.instruction.block_scale:
            raise ProgramError(f"{vid}: block-scaled forms are not in programs")
        return v

    # --- steps -------------------------------------------------------------------------------

    def filler(self) -> list:
        lay = StepLayout(-1, None)
        self.layouts.append(lay)
        if not self.p.pressure:
            return []
        x = self.frag("x", "b32", self.p.pressure)
        lay.inputs["filler"] = self.take_in(x)
        ops: list = [Load(x, lay.inputs["filler"]), Mix(x)]
        self.take_out(lay, "filler", x, True, ops)
        return ops

    def mma_operands(self, v: Variant, lay: StepLayout, suffix: str, ops: list, iterated: bool = False,
                     base: _Rows | None = None) -> list[tuple[str, Frag]]:
        """Load every operand of ``v`` but C (A, B, metadata) into fresh registers."""
        out = []
        for name in v.inputs:
            if name == "C":
                continue
            f = self.operand(name[0].lower(), v.operands[name])
            rows = base or self.inp
            lay.inputs[name + suffix] = rows.take(f.words, 2 if f.wide else 1)
            ops.append(Load(f, lay.inputs[name + suffix], iterated))
            out.append((name, f))
        return out

    def step_mma(self, i: int, s: MmaStep) -> list:
        if not s.chain:
            raise ProgramError(f"step {i}: an mma chain needs at least one form")
        vs = [self.form(f, ("mma.sync", "mma.sp")) for f in s.chain]
        for a, b in zip(vs, vs[1:]):
            if not c_fits_d(a, b):
                raise ProgramError(f"step {i}: {a.id}'s D cannot be {b.id}'s C (type, fragment or lane map differ)")
        for v in vs if s.predicated else ():
            if not c_fits_d(v, v):
                raise ProgramError(f"step {i}: a predicated chain accumulates in place: {v.id}'s C and D differ")
        lay = StepLayout(i, s)
        self.layouts.append(lay)
        ops: list = []
        c = self.operand("c", vs[0].operands["C"])
        lay.inputs["C"] = self.take_in(c)
        ops.append(Load(c, lay.inputs["C"]))
        guard = None
        if s.predicated:
            q, guard = self.pred(), self.pred()
            lay.inputs["mask"] = self.inp.take(1)
            ops += [LanePred(q), XorIf(c, top_bits(vs[0].operands["C"]), q), WarpPred(guard, lay.inputs["mask"])]
        loads: list[list] = [[] for _ in vs]
        operands = [self.mma_operands(v, lay, str(j), loads[j]) for j, v in enumerate(vs)]
        if s.hoist:
            ops += [op for block in loads for op in block]
        acc = c
        for j, v in enumerate(vs):
            if not s.hoist:
                ops += loads[j]
            d = acc if s.predicated else self.operand("d", v.operands["D"])
            ops.append(Mma(v.id, d, (*operands[j], ("C", acc)), guard))
            if s.keep and not s.predicated and j < len(vs) - 1:
                self.take_out(lay, f"D{j}", d, True, ops)
            acc = d
        self.take_out(lay, "D", acc, False, ops)
        return ops

    def step_loop(self, i: int, s: LoopStep) -> list:
        v = self.form(s.variant, ("mma.sync", "mma.sp"))
        if not c_fits_d(v, v):
            raise ProgramError(f"step {i}: {v.id} cannot accumulate in a loop (C and D differ)")
        if not 1 <= s.trips <= 16:
            raise ProgramError(f"step {i}: trips {s.trips} outside 1..16")
        lay = StepLayout(i, s)
        self.layouts.append(lay)
        d = self.operand("c", v.operands["C"])
        lay.inputs["C"] = self.take_in(d)
        lay.inputs["count"] = self.inp.take(1)
        body: list = []
        per_iter = _Rows()
        operands = self.mma_operands(v, lay, "", body, iterated=True, base=per_iter)
        lay.stride = -(-per_iter.n // 2) * 2
        base = self.inp.take(lay.stride * s.trips, 2)
        for name in list(lay.inputs):
            if name not in ("C", "count"):
                lay.inputs[name] += base
        body = [Load(op.dst, op.word + base, True) for op in body]
        body.append(Mma(v.id, d, (*operands, ("C", d))))
        self.n += 1
        ops: list = [Load(d, lay.inputs["C"]), Loop(lay.inputs["count"], lay.stride, tuple(body), f"$L_loop{self.n}")]
        self.take_out(lay, "D", d, False, ops)
        return ops

    def step_wgmma(self, i: int, s: WgmmaStep) -> list:
        v = self.form(s.form, ("wgmma",))
        if self.lanes != 128:
            raise ProgramError(f"step {i}: wgmma needs a warpgroup (128 lanes)")
        if not 1 <= s.chain <= 4:
            raise ProgramError(f"step {i}: chain {s.chain} outside 1..4")
        imm = dict(s.imm)
        unknown = [k for k in imm if k not in v.immediates or (k.startswith("trans") and not v.can_transpose(k[-1].upper()))]
        if unknown:
            raise ProgramError(f"step {i}: {v.id} takes no {', '.join(unknown)}")
        model = wg.model_of(v)
        if s.swizzle not in model.smem.swizzles:
            raise ProgramError(f"step {i}: swizzle {s.swizzle!r}; modes: {', '.join(model.smem.swizzles)}")
        lay = StepLayout(i, s)
        self.layouts.append(lay)
        rng = np.random.default_rng([i, *s.form.encode(), s.chain])  # the descriptors' free choices: fixed per step
        region = 0
        for j in range(s.chain):
            if v.a_src == "shared":
                lay.descs[f"A{j}"], _ = wg.layout_choice(v, rng, "A", imm.get("trans_a", 0), s.swizzle, model, region)
                region += wg.A_REGION
            lay.descs[f"B{j}"], _ = wg.layout_choice(v, rng, "B", imm.get("trans_b", 0), s.swizzle, model, region)
            region += wg.b_region(v)
        lay.image_bytes = -(-region // (128 * 16)) * 128 * 16
        array = f"smem{i}"
        self.arrays[array] = lay.image_bytes
        lay.inputs["image"] = self.inp.take(lay.image_bytes // (4 * 128), 4)
        ops: list = [Stage(array, lay.inputs["image"], lay.image_bytes // (4 * 128), True)]
        d = self.operand("d", v.operands["D"])
        lay.inputs["C"] = self.take_in(d)
        lay.inputs["scale"] = self.inp.take(1)
        first, rest = self.pred(), self.pred()
        ops += [Load(d, lay.inputs["C"]), ScalePred(first, lay.inputs["scale"]), ScalePred(rest, None)]

        def desc(key: str) -> int:
            x = lay.descs[key]
            return encode(model.desc, model.smem, x.start, x.lbo, x.sbo, model.smem.name_of(x.swizzle), x.base_offset)

        for j in range(s.chain):
            a = None
            if v.a_src == "registers":
                a = self.operand("a", v.operands["A"])
                lay.inputs[f"A{j}"] = self.take_in(a)
                ops.append(Load(a, lay.inputs[f"A{j}"]))
            ops += [WgFence(), Wgmma(v.id, tuple(sorted(imm.items())), d, a, desc(f"A{j}") if a is None else None,
                                     desc(f"B{j}"), first if j == 0 else rest, array)]
            if s.pipelined:
                ops.append(WgCommit())
                if j:
                    ops.append(WgWait(1))
        if not s.pipelined:
            ops.append(WgCommit())
        if s.after_issue:
            late = self.frag("y", "b32", s.after_issue)
            lay.inputs["late"] = self.take_in(late)
            ops.append(Load(late, lay.inputs["late"]))
            self.take_out(lay, "late", late, True, ops)
        ops.append(WgWait(0))
        self.take_out(lay, "D", d, False, ops)
        return ops

    def step_pipeline(self, i: int, s: PipelineStep) -> list:
        v = self.form(s.variant, ("mma.sync",))
        if s.b_tile not in ("row-major", "col-major"):
            raise ProgramError(f"step {i}: b_tile {s.b_tile!r}: row-major or col-major")
        lay = StepLayout(i, s)
        self.layouts.append(lay)
        wanted = [("A", "row-major"), ("B", s.b_tile)] + ([("D", "row-major")] if s.stmatrix else [])
        for name, tile in wanted:
            comp = compose(specs(), v, name, tile)
            form = variant(comp.form) if comp.form else None
            if form is None or form.valid_for(self.target):
                why = comp.why or (form.valid_for(self.target) if form else "")
                raise ProgramError(f"step {i}: no {'stmatrix' if name == 'D' else 'ldmatrix'} form moves {v.id}'s {name} "
                                   f"({tile} tile): {why}")
            lay.compositions[name] = comp
            self.movement.append(form)
        if any(v.operands[n].fragment.container_bits not in (8, 16) for n in ("A", "B")):
            raise ProgramError(f"step {i}: {v.id}: tiles hold whole bytes (8- or 16-bit elements) only")
        m, n, k = v.shape
        for name, off, rows, cols in (("A", 0, m, k), ("B", 1024, k, n), ("D", 1536, m, n)):
            tile = "row-major" if name != "B" else s.b_tile
            lay.tiles[name] = (off, cols if tile == "row-major" else rows, tile)
        array = f"smem{i}"
        self.arrays[array] = self.lanes // 32 * mv.IMAGE_BYTES
        lay.inputs["image"] = self.inp.take(mv.IMAGE_WORDS, 4)
        for name in lay.compositions:
            lay.inputs[f"addr.{name}"] = self.inp.take(1)
        ops: list = [Stage(array, lay.inputs["image"], mv.IMAGE_WORDS, False)]
        a = self.operand("a", v.operands["A"])
        b = self.operand("b", v.operands["B"])
        ops += [Ldmatrix(lay.compositions["A"].form, a, array, lay.inputs["addr.A"]),
                Ldmatrix(lay.compositions["B"].form, b, array, lay.inputs["addr.B"])]
        c = self.operand("c", v.operands["C"])
        lay.inputs["C"] = self.take_in(c)
        d = self.operand("d", v.operands["D"])
        ops += [Load(c, lay.inputs["C"]), Mma(v.id, d, (("A", a), ("B", b), ("C", c)))]
        if s.stmatrix:
            lay.outputs["image"] = self.out.take(mv.IMAGE_WORDS, 4)
            lay.sizes["image"] = mv.IMAGE_WORDS
            ops += [Stmatrix(lay.compositions["D"].form, d, array, lay.inputs["addr.D"]), WarpSync(),
                    StoreShared(lay.outputs["image"], array, mv.IMAGE_WORDS)]
        else:
            self.take_out(lay, "D", d, False, ops)
        return ops


_STEPS = {MmaStep: _Lowering.step_mma, LoopStep: _Lowering.step_loop, WgmmaStep: _Lowering.step_wgmma,
          PipelineStep: _Lowering.step_pipeline}


def lower(program: Program) -> Kernel:
    """The kernel of ``program``; ProgramError when the specs do not define it."""
    if program.warps not in (1, 4):
        raise ProgramError(f"warps {program.warps}: 1 or 4")
    if not program.steps:
        raise ProgramError("a program needs at least one step")
    if not 0 <= program.pressure <= 512:
        raise ProgramError(f"pressure {program.pressure} outside 0..512")
    lw = _Lowering(program)
    ops = lw.filler()
    for i, s in enumerate(program.steps):
        ops += _STEPS[type(s)](lw, i, s)
    ops += lw.late
    shared = sum(lw.arrays.values())
    if shared > SHARED_LIMIT:
        raise ProgramError(f"{shared} bytes of shared memory; a kernel declares at most {SHARED_LIMIT}")
    name = "prog_" + hashlib.sha256(program.to_json().encode()).hexdigest()[:16]
    in_words = -(-lw.inp.n // 4) * 4 or 4
    out_words = -(-lw.out.n // 4) * 4 or 4
    return Kernel(program, name, lw.lanes, tuple(ops), in_words, out_words, lw.arrays, lw.layouts, lw.frags, lw.preds,
                  tuple({v.id: v for v in lw.movement}.values()))
