"""A matrix program's shape: the steps one kernel runs, as plain data that Hypothesis draws and shrinks.

A program is run by one group of threads per case: one warp, four warps, or a warpgroup (four warps,
required by a wgmma step).  Warp-level steps (mma.sync, mma.sp, ldmatrix, stmatrix) run in every warp
of the group on that warp's own data.  Every step reads its operands from the case's input row and
writes its results to the output row, so that every output word is defined by the specs:

* :class:`MmaStep` -- a chain of mma.sync/mma.sp forms, D of one the C of the next (same C/D fragment);
  the operands may all be loaded first (``hoist``: all live at once), the intermediate D's kept live to
  the kernel's end (``keep``), or the chain ``predicated``: C's registers xor-ed under a lane predicate,
  every mma under a predicate uniform in each warp (read from the case), accumulating in place;
* :class:`LoopStep` -- one form in a loop with a ``bra`` back-edge: each case runs 1..``trips``
  iterations (its count word), each loading fresh A and B and accumulating into D;
* :class:`WgmmaStep` -- ``chain`` wgmma.mma_async into one accumulator, A from registers (values that
  die at the issue) or shared memory, B from shared memory; committed as one group or ``pipelined``
  (a group each, ``wait_group 1`` while the next A loads); ``after_issue`` values are loaded into fresh
  registers between the last issue and ``wait_group 0`` and kept to the end: the register allocator is
  tempted to put them where A was (the legal program never touches A before the wait);
* :class:`PipelineStep` -- ldmatrix -> mma.sync -> stmatrix through shared memory, the forms and row
  addresses found by :func:`ptxconf.families.movement.compare.compose`;
* ``pressure`` -- that many ``.b32`` values loaded at the start, live across every step, stored last.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import Any, ClassVar

from ptxconf.isa.loader import Specs, load_specs
from ptxconf.isa.model import Variant
from ptxconf.isa.targets import PtxVersion, parse_target

__all__ = ["MmaStep", "LoopStep", "WgmmaStep", "PipelineStep", "Program", "Step", "ProgramError", "specs", "variant",
           "STEP_KINDS"]


class ProgramError(ValueError):
    """A program the specs do not define (an unknown form, a chain whose C and D differ, too much shared memory)."""


@cache
def specs() -> Specs:
    """The shipped specs, loaded once per process."""
    return load_specs()


def variant(vid: str) -> Variant:
    try:
        return specs().get(vid)
    except KeyError as exc:
        raise ProgramError(exc.args[0]) from None


@dataclass(frozen=True)
class MmaStep:
    """mma.sync / mma.sp forms chained: D of each is C of the next."""

    kind: ClassVar[str] = "mma"
    chain: tuple[str, ...]
    hoist: bool = False  # every operand loaded before the first mma
    keep: bool = False  # intermediate D's stored at the kernel's end (live across what follows)
    predicated: bool = False  # lane-predicated xor on C; each mma under a warp-uniform predicate, in place

    def forms(self) -> tuple[str, ...]:
        return self.chain


@dataclass(frozen=True)
class LoopStep:
    """One form accumulating in a loop of 1..``trips`` iterations (per case)."""

    kind: ClassVar[str] = "loop"
    variant: str
    trips: int = 1

    def forms(self) -> tuple[str, ...]:
        return (self.variant,)


@dataclass(frozen=True)
class WgmmaStep:
    """``chain`` wgmma.mma_async of one form into one accumulator."""

    kind: ClassVar[str] = "wgmma"
    form: str
    chain: int = 1
    pipelined: bool = False  # commit each wgmma; wait_group 1 before the next A loads
    after_issue: int = 0  # values loaded between the last issue and wait_group 0
    swizzle: str = "none"  # shared-memory layout of every matrix the step reads from shared memory
    imm: tuple[tuple[str, int], ...] = ()  # imm-scale-a/b, imm-trans-a/b

    def forms(self) -> tuple[str, ...]:
        return (self.form,)


@dataclass(frozen=True)
class PipelineStep:
    """A and B by ldmatrix from tiles in shared memory, mma.sync, D by stmatrix (or st.global)."""

    kind: ClassVar[str] = "pipeline"
    variant: str
    b_tile: str = "col-major"  # how B's K x N tile is stored (A's tile is row-major, D's row-major)
    stmatrix: bool = False

    def forms(self) -> tuple[str, ...]:
        return (self.variant,)


Step = MmaStep | LoopStep | WgmmaStep | PipelineStep
STEP_KINDS: dict[str, type] = {cls.kind: cls for cls in (MmaStep, LoopStep, WgmmaStep, PipelineStep)}


@dataclass(frozen=True)
class Program:
    """Steps in order, run by one group of threads per case."""

    steps: tuple[Step, ...]
    warps: int = 1  # warps per case: 1 or 4 (4 whenever a wgmma step is present)
    pressure: int = 0
    arch: str = "sm_90a"

    @property
    def lanes(self) -> int:
        return 128 if self.warps == 4 or any(isinstance(s, WgmmaStep) for s in self.steps) else 32

    def forms(self) -> list[Variant]:
        return [variant(f) for s in self.steps for f in s.forms()]

    def version(self, extra: tuple[Variant, ...] = ()) -> PtxVersion:
        """The lowest ``.version`` every instruction of the program needs on its target."""
        target = parse_target(self.arch)
        return max([target.min_ptx, *(v.min_ptx for v in self.forms()), *(v.min_ptx for v in extra)])

    def as_dict(self) -> dict[str, Any]:
        steps = []
        for s in self.steps:
            d = {"kind": s.kind, **asdict(s)}
            for k, val in d.items():
                if isinstance(val, tuple):
                    d[k] = [list(x) if isinstance(x, tuple) else x for x in val]
            steps.append(d)
        return {"arch": self.arch, "warps": self.warps, "pressure": self.pressure, "steps": steps}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Program:
        steps = []
        for sd in d["steps"]:
            kind = STEP_KINDS.get(sd.get("kind", ""))
            if kind is None:
                raise ProgramError(f"unknown step kind {sd.get('kind')!r}; known: {', '.join(STEP_KINDS)}")
            args = {}
            for f in fields(kind):
                if f.name in sd:
                    val = sd[f.name]
                    args[f.name] = tuple(tuple(x) if isinstance(x, list) else x for x in val) if isinstance(val, list) else val
            steps.append(kind(**args))
        return cls(tuple(steps), int(d.get("warps", 1)), int(d.get("pressure", 0)), d.get("arch", "sm_90a"))

    @classmethod
    def from_json(cls, text: str) -> Program:
        return cls.from_dict(json.loads(text))

    def describe(self) -> str:
        """One line per step, for failure reports."""
        out = [f"program: {self.lanes} lanes per case ({self.arch}), {self.pressure} live filler values"]
        for i, s in enumerate(self.steps):
            extra = ", ".join(f"{f.name}={getattr(s, f.name)}" for f in fields(s) if f.name not in ("chain", "variant", "form"))
            forms = " -> ".join(s.forms()) if isinstance(s, MmaStep) else s.forms()[0]
            if isinstance(s, WgmmaStep):
                forms += f" x{s.chain}"
            out.append(f"  step {i} {s.kind}: {forms}" + (f" ({extra})" if extra else ""))
        return "\n".join(out)
