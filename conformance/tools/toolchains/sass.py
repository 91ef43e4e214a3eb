"""What a cubin holds: the matrix instructions of each kernel's SASS (``cuobjdump -sass``).

The evidence behind "accepted, and lowered to ...": a form ptxas takes may become a tensor-core instruction
(HMMA, IMMA, DMMA, BMMA, HGMMA/IGMMA/QGMMA/BGMMA, UTC*MMA, OMMA, QMMA), a data-movement one (LDSM, STSM,
MOVM), or nothing of the kind: lowered in software (FMAs) or dropped.  ``HFMA2.MMA`` is an FMA issued on the
MMA pipe, not a matrix instruction.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path

__all__ = ["MATRIX_OPCODE", "SassUnavailable", "find_cuobjdump", "matrix_ops", "kernels_sass", "kernel_ops", "lowered"]

# A matrix instruction's opcode (the part before its first '.').
MATRIX_OPCODE = re.compile(r"^(?:[HIDBQO]MMA|[HIQBO]GMMA|UTC\w*MMA\w*|LDSM|STSM|MOVM)$")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")  # cuobjdump -sass
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+),")  # nvdisasm
_INSTR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)")


class SassUnavailable(RuntimeError):
    """No cuobjdump (or no nvdisasm beside it) to read a cubin with."""


@cache
def find_cuobjdump() -> str:
    """``$PTXCONF_CUOBJDUMP``, else ``cuobjdump`` on PATH, else the one the ``nvidia-cuda-cuobjdump`` wheel installs."""
    given = os.environ.get("PTXCONF_CUOBJDUMP")
    if given:
        return given
    on_path = shutil.which("cuobjdump")
    if on_path:
        return on_path
    for root in map(Path, sys.path):
        for sub in ("nvidia/cu13/bin", "nvidia/cuda_cuobjdump/bin"):
            exe = root / sub / "cuobjdump"
            if exe.is_file():
                return str(exe)
    raise SassUnavailable("no cuobjdump (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm, or set PTXCONF_CUOBJDUMP)")


def kernel_ops(cubin: bytes, *, use_cache: bool = True) -> dict[str, tuple[str, ...]]:
    """``{kernel name: its matrix instructions}``, cached on disk by the cubin's sha256."""
    from ptxconf.backends.ptxas import cache_dir

    key = hashlib.sha256(cubin).hexdigest()
    path = cache_dir().parent / "sass" / key[:2] / f"{key}.json"
    if use_cache:
        try:
            return {k: tuple(v) for k, v in json.loads(path.read_text()).items()}
        except (OSError, ValueError, AttributeError):
            pass
    ops = {name: matrix_ops(text) for name, text in kernels_sass(cubin).items()}
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(ops))
            os.replace(tmp, path)
        except OSError:
            pass
    return ops


def kernels_sass(cubin: bytes) -> dict[str, str]:
    """``{kernel name: its SASS text}``."""
    exe = find_cuobjdump()
    env = dict(os.environ)
    env.setdefault("NVDISASM_PATH", str(Path(exe).parent))
    with tempfile.TemporaryDirectory(prefix="ptxconf-sass-") as tmp:
        path = Path(tmp) / "m.cubin"
        path.write_bytes(cubin)
        proc = subprocess.run([exe, "-sass", str(path)], capture_output=True, text=True, errors="replace",
                              timeout=300, env=env)
        if proc.returncode != 0 and "does not contain device code" in proc.stdout + proc.stderr:
            # cuobjdump 13 does not take the sm_90a cubins of ptxas 12.0-12.3.52 as device code; nvdisasm reads them.
            proc = subprocess.run([str(Path(exe).with_name("nvdisasm")), str(path)], capture_output=True, text=True,
                                  errors="replace", timeout=300, env=env)
            if proc.returncode == 0:
                return _split(proc.stdout, _SECTION)
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().replace(str(path), "<cubin>")
        raise SassUnavailable(f"cuobjdump -sass failed: {said[:300]}")
    return _split(proc.stdout, _FUNCTION)


def _split(text: str, header: re.Pattern) -> dict[str, str]:
    """``{kernel name: its lines}`` of a disassembly whose kernels start at lines matching ``header``."""
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        m = header.match(line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def matrix_ops(sass: str) -> tuple[str, ...]:
    """The distinct matrix instructions of one kernel's SASS with their modifiers (``HMMA.16816.F32``), in order."""
    seen: dict[str, None] = {}
    for line in sass.splitlines():
        m = _INSTR.match(line)
        if m and MATRIX_OPCODE.match(m.group(1)):
            seen.setdefault(m.group(1) + m.group(2), None)
    return tuple(seen)


def lowered(ops: Iterable[str]) -> str:
    """How a cell reads: ``HMMA.1688.F32`` (several joined by ``+``), or ``none``."""
    ops = list(ops)
    return "+".join(ops) if ops else "none"
