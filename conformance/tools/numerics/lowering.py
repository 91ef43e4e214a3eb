"""How ptxas builds each mma.sync form for a target, release by release: the arithmetic of its SASS.

Why: on sm_90 some forms have no tensor-core instruction of their own.  ptxas lowers them to conversions and
other instructions (m8n8k4 with .f16 A/B to FMUL/FFMA/FADD in f32; .e4m3/.e5m2 to f16 conversions and
HMMA.16816), and the sequence changes between releases, so the numerics model of such a form is a model of
one range of releases.  Each form is built by every installed release at -O0 and -O3 and disassembled
(``nvdisasm``, from the pip package nvidia-cuda-nvdisasm; cuobjdump reads no cubin older than its own major
release); the arithmetic instructions (tensor-core, FP32/FP16 arithmetic, conversions) are counted.  Releases
with the same counts build the same arithmetic; a form is software-lowered when its SASS holds arithmetic
besides one tensor-core instruction.  Runs on the CPU: nothing is launched.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ptxconf.isa.model import Variant

SCHEMA = "numerics-lowering/1"
SLOT = 8  # bytes per register slot in the probe's buffers (a .b32 register uses the low half)
MMA_OPS = ("HMMA", "IMMA", "DMMA", "BMMA", "QMMA", "OMMA")
ARITH_OPS = MMA_OPS + ("FFMA", "FADD", "FMUL", "HADD2", "HFMA2", "HMUL2", "F2FP", "F2F", "DFMA", "DADD", "DMUL", "I2F", "F2I")
_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\s*([^;]*);")


@dataclass
class Build:
    """One form built by one release at one optimisation level."""

    release: str
    opt: str
    refused: str | None = None  # ptxas's first error line, when it does not build the form
    ops: Counter = field(default_factory=Counter)
    sass: list[str] = field(default_factory=list)  # the arithmetic lines, in program order

    @property
    def signature(self) -> str:
        if self.refused is not None:
            return f"refused: {self.refused}"
        return " ".join(f"{k}x{v}" for k, v in sorted(self.ops.items()))

    @property
    def lowered(self) -> bool:
        """Arithmetic besides one tensor-core instruction: ptxas emulates the form."""
        mma = sum(n for k, n in self.ops.items() if k.split(".")[0] in MMA_OPS)
        return self.refused is None and (mma != 1 or sum(self.ops.values()) != mma)


def nvdisasm() -> str | None:
    """The nvdisasm binary (PATH, or the pip package nvidia-cuda-nvdisasm), or None."""
    exe = shutil.which("nvdisasm")
    if exe:
        return exe
    try:
        import nvidia  # the namespace package the NVIDIA wheels install into
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for cand in sorted(Path(root).glob("*/bin/nvdisasm")):
            return str(cand)
    return None


def _regs(v: Variant) -> dict[str, tuple[int, str]]:
    return {n: (op.registers, "f64" if op.type.name == "f64" else "b64" if op.fragment.register_bits == 64 else "b32")
            for n, op in v.operands.items()}


def probe_ptx(v: Variant, target: str, version: str) -> str:
    """One ``v`` per warp: lane ``l`` of warp ``w`` reads its input registers from ``in[w][l][*]`` and writes D to
    ``out[w][l][*]`` (8-byte slots)."""
    regs = _regs(v)
    ins = [n for n in regs if n != "D"]
    n_in, n_out = sum(regs[n][0] for n in ins), regs["D"][0]
    lines = [f".version {version}", f".target {target}", ".address_size 64",
             ".visible .entry probe(.param .u64 p_in, .param .u64 p_out) {",
             "  .reg .b64 %pi, %po, %off;", "  .reg .b32 %w, %l, %slot;",
             "  ld.param.u64 %pi, [p_in];", "  ld.param.u64 %po, [p_out];",
             "  cvta.to.global.u64 %pi, %pi;", "  cvta.to.global.u64 %po, %po;",
             "  mov.u32 %w, %ctaid.x;", "  mov.u32 %l, %tid.x;", "  mad.lo.u32 %slot, %w, 32, %l;"]
    for name in regs:
        lines.append(f"  .reg .{regs[name][1]} %{name}<{regs[name][0]}>;")
    lines += [f"  mul.wide.u32 %off, %slot, {n_in * SLOT};", "  add.u64 %pi, %pi, %off;"]
    k = 0
    for name in ins:
        n, kind = regs[name]
        for i in range(n):
            lines.append(f"  ld.global.{kind} %{name}{i}, [%pi+{k * SLOT}];")
            k += 1
    order = ["D", "A", "B", "C"] + [n for n in ins if n not in ("A", "B", "C")]
    lines.append(f"  {v.id} " + ", ".join("{" + ", ".join(f"%{n}{i}" for i in range(regs[n][0])) + "}" for n in order) + ";")
    lines += [f"  mul.wide.u32 %off, %slot, {n_out * SLOT};", "  add.u64 %po, %po, %off;"]
    for i in range(n_out):
        lines.append(f"  st.global.{regs['D'][1]} [%po+{i * SLOT}], %D{i};")
    lines += ["  ret;", "}"]
    return "\n".join(lines) + "\n"


def arithmetic(sass: str) -> tuple[Counter, list[str]]:
    """The arithmetic instructions of a disassembly: counts by opcode, and the lines in order.

    ``HFMA2.MMA Rx, -RZ, RZ, 0, 0`` is how ptxas writes a register move of 0: not arithmetic."""
    ops: Counter = Counter()
    lines = []
    for m in _LINE.finditer(sass):
        op, args = m.group(1), " ".join(m.group(2).split())
        if op.split(".")[0] not in ARITH_OPS or (op == "HFMA2.MMA" and args.endswith("-RZ, RZ, 0, 0")):
            continue
        ops[op] += 1
        lines.append(f"{op} {args}")
    return ops, lines


def build(v: Variant, toolchain, opt: str, target: str, disasm: str, work: Path) -> Build:
    """``v`` built by ``toolchain`` (a release with its ptxas) at ``opt``, its arithmetic read back."""
    out = Build(toolchain.name, opt)
    top = toolchain.max_ptx  # the release's own newest .version: accepted for every target it has
    version = f"{top.major}.{top.minor}"
    src, cubin = work / "probe.ptx", work / "probe.cubin"
    src.write_text(probe_ptx(v, target, version))
    cubin.unlink(missing_ok=True)
    r = subprocess.run([toolchain.exe, f"-arch={target}", opt, str(src), "-o", str(cubin)], capture_output=True, text=True,
                       timeout=120)
    if r.returncode:
        first = next((x for x in (r.stderr or r.stdout).splitlines() if "error" in x or "fatal" in x), r.stderr.strip()[:200])
        out.refused = re.sub(r"^.*?(error|fatal)\s*:\s*", "", first.replace(str(src), "probe.ptx")).strip()
        return out
    d = subprocess.run([disasm, str(cubin)], capture_output=True, text=True, timeout=120)
    if d.returncode:
        raise RuntimeError(f"nvdisasm {cubin}: {d.stderr.strip()}")
    out.ops, out.sass = arithmetic(d.stdout)
    return out


def survey(variants: list[Variant], toolchains: list, target: str = "sm_90", opts: tuple[str, ...] = ("-O0", "-O3"),
           jobs: int = 2, log=print) -> dict:
    """Every form built by every release at every level; per form, the releases grouped by their arithmetic."""
    from concurrent.futures import ThreadPoolExecutor

    disasm = nvdisasm()
    if disasm is None:
        raise RuntimeError("no nvdisasm: pip install nvidia-cuda-nvdisasm")

    def one(job) -> Build:
        v, tc, opt = job
        with tempfile.TemporaryDirectory(prefix="ptxconf-lowering-") as tmp:
            return build(v, tc, opt, target, disasm, Path(tmp))

    forms = []
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for v in variants:
            groups: dict[str, dict] = {}
            for b in pool.map(one, [(v, tc, opt) for tc in toolchains for opt in opts]):
                g = groups.setdefault(b.signature, {"signature": b.signature, "lowered": b.lowered, "refused": b.refused,
                                                    "builds": [], "sass": b.sass})
                g["builds"].append(f"{b.release} {b.opt}")
            built = [g for g in groups.values() if g["refused"] is None]
            forms.append({"variant": v.id, "lowered": any(g["lowered"] for g in built),
                          "differs": len(built) > 1, "groups": list(groups.values())})
            log(f"{v.id}: {len(built)} arithmetic(s) over {sum(len(g['builds']) for g in built)} builds"
                f"{' (software-lowered)' if forms[-1]['lowered'] else ''}", flush=True)
    return {"schema": SCHEMA, "target": target, "opts": list(opts), "releases": [tc.name for tc in toolchains],
            "disassembler": "nvdisasm", "forms": forms}


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def releases_of(group: dict) -> list[str]:
    """The releases (every level) of a group, oldest first."""
    return sorted({b.split()[0] for b in group["builds"]}, key=release_key)


def markdown(doc: dict) -> str:
    lines = [f"# How ptxas builds each form for {doc['target']} (arithmetic of the SASS, {doc['disassembler']})", "",
             f"Releases: {', '.join(doc['releases'])}; levels {', '.join(doc['opts'])}.  Generated by "
             "`ptxconf numerics lowering`.", ""]
    for f in doc["forms"]:
        lines.append(f"## {f['variant']}: {'software-lowered' if f['lowered'] else 'one tensor-core instruction'}"
                     f"{', the arithmetic differs between releases' if f['differs'] else ''}")
        for g in f["groups"]:
            rel = releases_of(g)
            span = f"{rel[0]} to {rel[-1]}" if len(rel) > 1 else rel[0]
            lines.append(f"- {span} ({len(g['builds'])} builds): `{g['signature']}`")
            if g["refused"] is None and f["lowered"]:
                lines += ["", "  ```", *(f"  {x}" for x in g["sass"][:40]), "  ```", ""]
        lines.append("")
    return "\n".join(lines) + "\n"


def holds_for(ptxas: str | None, span: str) -> bool | None:
    """Whether a ptxas release (a version, or ptxas's ``--version`` text) lies in ``span`` (``"12.8.61-"``,
    ``"12.4.99-12.6.85"``); None when the run does not say which ptxas built it."""
    if not ptxas:
        return None
    m = re.search(r"V?(\d+\.\d+\.\d+)\s*$", ptxas.strip()) or re.search(r"(\d+\.\d+\.\d+)", ptxas)
    if m is None:
        return None
    lo, _, hi = span.partition("-")
    have = release_key(m.group(1))
    return release_key(lo) <= have and (not hi or have <= release_key(hi))
