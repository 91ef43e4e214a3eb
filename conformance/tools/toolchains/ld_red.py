"""tcgen05.ld.red through ptxas: every form of specs/tcgen05.yaml's ``ld_red`` on every target and release asked,
against the spec, with the Tensor-Memory load instruction (LDTM) the SASS holds for each assembled one.

A form is one small kernel: the load-and-reduce from Tensor Memory address 0, ``tcgen05.wait::ld``, and a store
of the reduced value and a register of the load, so that nothing is dead.  Assemble-only: no machine here has
Tensor Memory.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ptxconf.backends.ptxas import compile_cubin
from ptxconf.families.tcgen05 import LdRed, LdRedForm
from ptxconf.isa.targets import PtxVersion, Target, parse_target

from .matrix import (
    ACCEPTED,
    EARLY,
    NOT_RUN,
    REFUSED,
    WRONGLY_REFUSED,
    Toolchain,
    settle,
)
from .sass import SassUnavailable, kernels_sass

__all__ = ["kernel", "module", "Cell", "NamedForm", "check_ld_red"]

_LDTM = re.compile(r"\b(LDTM(?:\.[A-Za-z0-9_]+)*)")


@dataclass(frozen=True)
class NamedForm:
    """A form and the kernel name it is assembled under (what :func:`settle` asks for)."""

    id: str
    form: LdRedForm | object

    @property
    def name(self) -> str:
        return "probe_" + hashlib.sha1(self.id.encode()).hexdigest()[:16]


def kernel(f: LdRedForm, name: str) -> str:
    """One kernel around one tcgen05.ld.red."""
    regs = ", ".join(f"%r{i}" for i in range(f.regs))
    split = ", 16" if f.half_split else ""
    return (f".visible .entry {name}(.param .u64 p_out)\n{{\n"
            f"    .reg .b32 %r<{f.regs + 1}>;\n    .reg .b32 %red;\n    .reg .b32 %ta;\n    .reg .b64 %q;\n"
            f"    mov.u32 %ta, 0;\n"
            f"    {f.instruction} {{{regs}}}, %red, [%ta]{split};\n"
            f"    tcgen05.wait::ld.sync.aligned;\n"
            f"    ld.param.u64 %q, [p_out];\n"
            f"    st.global.v2.b32 [%q], {{%r{f.regs - 1}, %red}};\n"
            f"    ret;\n}}\n")


def module(forms: Sequence[NamedForm], version: PtxVersion, target: Target) -> str:
    return (f".version {version}\n.target {target.name}\n.address_size 64\n\n"
            + "".join(kernel(f.form, f.name) for f in forms))


@dataclass(frozen=True)
class Cell:
    release: str
    target: str
    version: str
    code: str  # the acceptance matrix's codes: A, R, X, F, C, -
    said: str  # ptxas's message, or the LDTM instruction the SASS holds


def check_ld_red(spec: LdRed, targets: Sequence[str], toolchains: Sequence[Toolchain], *,
                 use_cache: bool = True) -> dict[str, list[Cell]]:
    """``{instruction: [Cell per (release, target)]}``: every form at ``.version`` max(8.8, the target's minimum),
    capped at what each release takes."""
    forms = [NamedForm(f.instruction, f) for f in spec.forms()]
    out: dict[str, list[Cell]] = {f.id: [] for f in forms}
    for tc in toolchains:
        for name in targets:
            t = parse_target(name)
            if name not in tc.targets or t.min_ptx > tc.max_ptx:
                for f in forms:
                    out[f.id].append(Cell(tc.name, name, "", NOT_RUN, ""))
                continue
            version = min(max(spec.min_ptx, t.min_ptx), tc.max_ptx)

            def build(text: str, arch: str, exe: str) -> tuple[bool, str]:
                cubin, err = compile_cubin(text, arch, exe, use_cache=use_cache)
                return cubin is not None, err

            got = settle(forms, version, t, tc.exe, {f.id: f for f in forms}, build,
                         render=lambda pending, version=version, t=t: module(pending, version, t))
            accepted = [f for f in forms if got[f.id][0] == "ok"]
            ldtm: dict[str, str] = {}
            if accepted:
                cubin, _ = compile_cubin(module(accepted, version, t), name, tc.exe, use_cache=use_cache)
                try:
                    sass = kernels_sass(cubin) if cubin else {}
                except SassUnavailable:
                    sass = {}
                for f in accepted:
                    ops = list(dict.fromkeys(_LDTM.findall(sass.get(f.name, ""))))
                    ldtm[f.id] = "+".join(ops) if ops else ("none" if f.name in sass else "")
            for f in forms:
                outcome, message = got[f.id]
                spec_ok = spec.valid_on(t, version) is None
                if outcome == "ok":
                    code, said = (ACCEPTED if spec_ok else EARLY), ldtm.get(f.id, "")
                elif outcome == "crashed":
                    code, said = "C", message
                else:
                    code, said = (WRONGLY_REFUSED if spec_ok else REFUSED), message
                out[f.id].append(Cell(tc.name, name, str(version), code, said))
    return out
