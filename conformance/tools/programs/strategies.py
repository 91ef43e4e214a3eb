"""Hypothesis strategies over program shapes: what the fuzzer draws, and what a failure shrinks along.

Every choice is a Hypothesis draw, ordered so that shrinking simplifies: fewer steps, one warp, no
filler, the first (simplest) form of each list, shorter chains and loops, flags off.  Every drawn
program lowers (:func:`fits`): forms valid for the target at the ``.version`` the assembler takes,
chains whose C and D agree, shared memory under the static limit.

Hypothesis's shrinker can stop at a list of steps none of which it deletes alone (a step's choices
read differently once an earlier one is gone); :func:`simpler` names the same simplifications on the
program itself, for a last pass that ends at a program no single one of them keeps failing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache

import ptxconf.families.wgmma as wg
from hypothesis import strategies as st
from ptxconf.families.movement import compose
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, parse_target

from .model import LoopStep, MmaStep, PipelineStep, Program, ProgramError, Step, WgmmaStep, specs, variant
from .ops import c_fits_d, lower

__all__ = ["programs", "fits", "simpler", "Pools", "pools", "DEFAULT_MAX_PTX"]

DEFAULT_MAX_PTX = PtxVersion(9, 0)  # what ptxas 13.0 takes
WGMMA_MAX_N = 64  # larger N only grows D (and the time ptxas takes), not what a program stresses
PRESSURE = (0, 16, 64, 160)
AFTER_ISSUE = (0, 4, 16, 64)


@dataclass(frozen=True)
class Pools:
    """The forms each step may use on one target, simplest first."""

    mma: tuple[str, ...]
    chain_next: dict[str, tuple[str, ...]]
    loop: tuple[str, ...]
    wgmma: tuple[str, ...]
    pipeline: tuple[tuple[str, tuple[str, ...], bool], ...]  # (form, B tiles, stmatrix possible)


def _simplicity(v: Variant) -> tuple:
    return ("metadata" in v.operands, sum(op.registers for op in v.operands.values()), v.id)


@cache
def pools(arch: str, max_ptx: PtxVersion = DEFAULT_MAX_PTX) -> Pools:
    target = parse_target(arch)
    every = specs().variants.values()

    def ok(v: Variant) -> bool:
        return v.valid_for(target, max(v.min_ptx, target.min_ptx)) is None and max(v.min_ptx, target.min_ptx) <= max_ptx

    mma = sorted((v for v in every if v.family in ("mma.sync", "mma.sp") and not v.instruction.block_scale and ok(v)),
                 key=_simplicity)
    chain_next = {u.id: tuple(v.id for v in mma if c_fits_d(u, v)) for u in mma}
    loop = tuple(v.id for v in mma if v.id in chain_next[v.id])
    wgmma = sorted((v for v in every if v.family == "wgmma" and v.N <= WGMMA_MAX_N and ok(v)),
                   key=lambda v: (v.N, v.a_src == "shared", v.id))
    pipeline = []
    for v in mma:
        if v.family != "mma.sync" or not compose(specs(), v, "A", "row-major").form:
            continue
        if any(v.operands[n].fragment.container_bits not in (8, 16) for n in ("A", "B")):
            continue  # tiles of whole bytes only: packed sub-byte rows are another memory format
        tiles = tuple(t for t in ("col-major", "row-major") if _movable(v, "B", t, target, max_ptx))
        if tiles:
            pipeline.append((v.id, tiles, _movable(v, "D", "row-major", target, max_ptx)))
    return Pools(tuple(v.id for v in mma), chain_next, loop, tuple(v.id for v in wgmma), tuple(pipeline))


def _movable(v: Variant, operand: str, tile: str, target, max_ptx: PtxVersion) -> bool:
    form = compose(specs(), v, operand, tile).form
    if not form:
        return False
    f = variant(form)
    return f.valid_for(target) is None and f.min_ptx <= max_ptx


def fits(p: Program) -> bool:
    """Does the program lower (every rule of :func:`ptxconf.tools.programs.ops.lower` kept)?"""
    try:
        lower(p)
    except ProgramError:
        return False
    return True


def _mma_step(pool: Pools):
    @st.composite
    def draw(draw) -> MmaStep:
        chain = [draw(st.sampled_from(pool.mma))]
        # a predicated chain accumulates in place: every form's C and D registers are one fragment
        predicated = draw(st.booleans()) if chain[0] in pool.loop else False
        for _ in range(draw(st.integers(0, 2))):
            nxt = [v for v in pool.chain_next[chain[-1]] if not predicated or v in pool.loop]
            if not nxt:
                break
            chain.append(draw(st.sampled_from(nxt)))
        return MmaStep(tuple(chain), hoist=draw(st.booleans()), keep=draw(st.booleans()), predicated=predicated)

    return draw()


def _loop_step(pool: Pools):
    return st.builds(LoopStep, variant=st.sampled_from(pool.loop), trips=st.integers(1, 4))


def _wgmma_step(pool: Pools):
    @st.composite
    def draw(draw) -> WgmmaStep:
        form = draw(st.sampled_from(pool.wgmma))
        v = variant(form)
        imm = draw(st.sampled_from(wg.immediate_sets(v)))
        return WgmmaStep(form, chain=draw(st.integers(1, 3)), pipelined=draw(st.booleans()),
                         after_issue=draw(st.sampled_from(AFTER_ISSUE)),
                         swizzle=draw(st.sampled_from(list(wg.model_of(v).smem.swizzles))),
                         imm=tuple(sorted(imm.items())))

    return draw()


def _pipeline_step(pool: Pools):
    @st.composite
    def draw(draw) -> PipelineStep:
        form, tiles, st_ok = draw(st.sampled_from(pool.pipeline))
        return PipelineStep(form, draw(st.sampled_from(tiles)), draw(st.booleans()) if st_ok else False)

    return draw()


def programs(arch: str = "sm_90a", max_ptx: PtxVersion = DEFAULT_MAX_PTX, max_steps: int = 4):
    """Programs for ``arch`` whose forms need at most ``max_ptx``; failures shrink to few, simple steps."""
    pool = pools(arch, max_ptx)
    warp_kinds = [s for s, ok in ((_mma_step, pool.mma), (_loop_step, pool.loop), (_pipeline_step, pool.pipeline)) if ok]
    if not warp_kinds:
        raise ProgramError(f"no mma form runs on {arch} at .version {max_ptx} or lower")
    warp_steps = st.one_of(*(k(pool) for k in warp_kinds))
    # in a warpgroup, wgmma half the time (the asynchronous instruction is what the allocator gets wrong)
    group_steps = st.one_of(warp_steps, *[_wgmma_step(pool)] * len(warp_kinds)) if pool.wgmma else warp_steps

    @st.composite
    def draw(draw) -> Program:
        warps = draw(st.sampled_from((1, 4)))
        steps = draw(st.lists(warp_steps if warps == 1 else group_steps, min_size=1, max_size=max_steps))
        return Program(tuple(steps), warps, draw(st.sampled_from(PRESSURE)), arch)

    return draw().filter(fits)


def _simpler_step(s: Step, pool: Pools) -> Iterator[Step]:
    """The step with one thing simpler, as its strategy orders things."""
    if isinstance(s, MmaStep):
        if len(s.chain) > 1:
            yield replace(s, chain=s.chain[:-1])
        for flag in ("predicated", "hoist", "keep"):
            if getattr(s, flag):
                yield replace(s, **{flag: False})
        if s.chain[0] != pool.mma[0]:
            yield replace(s, chain=(pool.mma[0],))
    elif isinstance(s, LoopStep):
        if s.trips > 1:
            yield replace(s, trips=1)
        if s.variant != pool.loop[0]:
            yield replace(s, variant=pool.loop[0])
    elif isinstance(s, WgmmaStep):
        for name, simple in (("chain", 1), ("pipelined", False), ("after_issue", 0), ("swizzle", "none")):
            if getattr(s, name) != simple:
                yield replace(s, **{name: simple})
        first = tuple(sorted(wg.immediate_sets(variant(s.form))[0].items()))
        if s.imm != first:
            yield replace(s, imm=first)
        if s.form != pool.wgmma[0]:
            yield replace(s, form=pool.wgmma[0], imm=tuple(sorted(wg.immediate_sets(variant(pool.wgmma[0]))[0].items())))
    elif isinstance(s, PipelineStep):
        if s.stmatrix:
            yield replace(s, stmatrix=False)
        form, tiles, _ = pool.pipeline[0]
        if (s.variant, s.b_tile) != (form, tiles[0]):
            yield PipelineStep(form, tiles[0])


def simpler(p: Program, max_ptx: PtxVersion = DEFAULT_MAX_PTX) -> Iterator[Program]:
    """Programs one simplification away from ``p`` (each lowers), simplest kinds first: a step fewer,
    one warp, no filler, then one step made simpler."""
    pool = pools(p.arch, max_ptx)
    out: list[Program] = []
    if len(p.steps) > 1:
        out += [replace(p, steps=p.steps[:i] + p.steps[i + 1 :]) for i in range(len(p.steps))]
    if p.warps != 1:
        out.append(replace(p, warps=1))
    if p.pressure:
        out.append(replace(p, pressure=0))
    for i, s in enumerate(p.steps):
        out += [replace(p, steps=p.steps[:i] + (t,) + p.steps[i + 1 :]) for t in _simpler_step(s, pool)]
    return (q for q in out if fits(q))
