"""spcompress / spdecompress through ptxas: every form their ISA 9.4 syntax spells (valid or not, with the rule
that forbids it) on every target and release that takes ``.version 9.4``, against the spec.

A form is one small kernel: its input vectors loaded from global memory, the instruction, its output vectors
stored, so that nothing is dead.  Assemble-only: no machine here is an sm_107a.
"""

from __future__ import annotations

from collections.abc import Sequence

from ptxconf.backends.ptxas import assemble
from ptxconf.families.tcgen05 import SparseVectors, SpVectorForm
from ptxconf.isa.targets import PtxVersion, Target, parse_target

from .ld_red import Cell, NamedForm
from .matrix import ACCEPTED, CRASHED, EARLY, NOT_RUN, REFUSED, WRONGLY_REFUSED, Toolchain, settle

__all__ = ["kernel", "module", "check_sp_vectors"]


def _vec(prefix: str, n: int) -> str:
    return "{" + ", ".join(f"%{prefix}{i}" for i in range(n)) + "}"


def kernel(f: SpVectorForm, name: str) -> str:
    """One kernel around one spcompress/spdecompress: inputs loaded, outputs stored."""
    if f.op == "spcompress":  # spcompress mdata, cdata, data, spdesc
        inputs, outputs = [("d", f.data), ("s", 1)], [("m", f.mdata), ("c", f.cdata)]
        operands = f"{_vec('m', f.mdata)}, {_vec('c', f.cdata)}, {_vec('d', f.data)}, %s0"
    else:  # spdecompress data, mdata, cdata
        inputs, outputs = [("m", f.mdata), ("c", f.cdata)], [("d", f.data)]
        operands = f"{_vec('d', f.data)}, {_vec('m', f.mdata)}, {_vec('c', f.cdata)}"
    lines = [f".visible .entry {name}(.param .u64 p)", "{", "    .reg .b64 %a;"]
    lines += [f"    .reg .b32 %{r}<{n}>;" for r, n in inputs + outputs]
    lines.append("    ld.param.u64 %a, [p];")
    offset = 0
    for r, n in inputs:
        for i in range(n):
            lines.append(f"    ld.global.b32 %{r}{i}, [%a+{offset}];")
            offset += 4
    lines.append(f"    {f.instruction} {operands};")
    for r, n in outputs:
        for i in range(n):
            lines.append(f"    st.global.b32 [%a+{offset}], %{r}{i};")
            offset += 4
    return "\n".join([*lines, "    ret;", "}", ""])


def module(forms: Sequence[NamedForm], version: PtxVersion, target: Target) -> str:
    return (f".version {version}\n.target {target.name}\n.address_size 64\n\n"
            + "".join(kernel(f.form, f.name) for f in forms))


def check_sp_vectors(spec: SparseVectors, targets: Sequence[str], toolchains: Sequence[Toolchain], *,
                     use_cache: bool = True) -> dict[str, list[Cell]]:
    """``{instruction: [Cell per (release, target)]}``: every form at ``.version`` max(9.4, the target's minimum);
    a release whose highest ``.version`` is below that runs none (``-``)."""
    forms = [NamedForm(f.instruction, f) for f in spec.forms()]
    out: dict[str, list[Cell]] = {f.id: [] for f in forms}
    for tc in toolchains:
        for name in targets:
            t = parse_target(name)
            version = max(spec.min_ptx, t.min_ptx)
            if name not in tc.targets or version > tc.max_ptx:
                for f in forms:
                    out[f.id].append(Cell(tc.name, name, "", NOT_RUN, ""))
                continue
            got = settle(forms, version, t, tc.exe, {f.id: f for f in forms},
                         lambda text, arch, exe: assemble(text, arch, exe, use_cache=use_cache),
                         render=lambda pending, version=version, t=t: module(pending, version, t))
            where = spec.valid_on(t, version)
            for f in forms:
                outcome, message = got[f.id]
                spec_ok = f.form.invalid is None and where is None
                if outcome == "ok":
                    code, said = (ACCEPTED if spec_ok else EARLY), f.form.invalid or where or ""
                elif outcome == "crashed":
                    code, said = CRASHED, message
                else:
                    code, said = (WRONGLY_REFUSED if spec_ok else REFUSED), message
                out[f.id].append(Cell(tc.name, name, str(version), code, said))
    return out
