"""Observe wmma.load/wmma.store fragment layouts on a GPU and record them as facts.

The ISA leaves wmma fragments unspecified (§9.7.14.4.1), so what this module
produces are observations about one GPU and driver, not spec: for every form,
the map ``[lane, element] -> (row, col)``, how many slots hold each cell
(fragments may duplicate), and a bit-linear formula where one fits.

    ptxconf wmma-observe [--backend pycuda] [-o DIR] [--seed S] [--figures]
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from ptxconf.backends.base import Backend, Launch
from ptxconf.families.wmma.memory import read_matrix, write_matrix
from ptxconf.families.wmma.probe import WmmaForm, forms, module_source, words_per_lane
from ptxconf.isa.fit import fit_formula
from ptxconf.isa.targets import parse_target

__all__ = ["observe", "infer_load", "infer_store", "tag_digits"]


def tag_digits(count: int, bits: int) -> int:
    """Cases needed to give ``count`` items distinct non-zero tags of ``bits`` bits."""
    radix = min(1 << bits, 1 << 16) - 1
    return max(1, math.ceil(math.log(count + 1, radix + 1)))


def _radix(bits: int) -> int:
    return min(1 << bits, 1 << 16)


def _tags(count: int, bits: int, digit: int) -> np.ndarray:
    """Digit ``digit`` of (index + 1) in base 2**bits (capped at 2**16): never all-zero over the digits."""
    r = _radix(bits)
    return ((np.arange(count) + 1) // r**digit) % r


def _lane_images(words: np.ndarray) -> np.ndarray:
    """``uint32[lane, w]`` -> ``uint8[lane, 4 w]``: each lane's register words as bytes."""
    return np.ascontiguousarray(words, dtype="<u4").view(np.uint8).reshape(len(words), -1).copy()


def build_cases(form: WmmaForm, pad: int) -> tuple[np.ndarray, int]:
    """Input words ``[case, lane, word]`` for every digit case; and the digit count."""
    words = words_per_lane(form, pad)
    rows, cols = form.dims
    if form.op == "load":
        digits = tag_digits(rows * cols, form.bits)
        buf = np.zeros((digits, 32 * words * 4), dtype=np.uint8)
        for d in range(digits):
            tags = _tags(rows * cols, form.bits, d).reshape(rows, cols).astype(np.uint64)
            write_matrix(buf[d], 0, tags, form.layout, form.stride(pad), form.bits)
        return buf.view("<u4").reshape(digits, 32, words).astype(np.uint32), digits
    slots = 32 * form.elements
    digits = tag_digits(slots, form.bits)
    out = np.zeros((digits, 32, words), dtype=np.uint32)
    for d in range(digits):
        per_lane = _tags(slots, form.bits, d).reshape(32, form.elements).astype(np.uint64)
        img = np.zeros((32, 4 * words), dtype=np.uint8)
        for lane in range(32):
            write_matrix(img[lane], 0, per_lane[lane : lane + 1], "row", form.elements, form.bits)
        out[d] = img.view("<u4").reshape(32, words)
    return out, digits


def _combine(parts: list[np.ndarray], bits: int) -> np.ndarray:
    r = _radix(bits)
    return sum(p.astype(np.int64) * r**d for d, p in enumerate(parts)) - 1


def infer_load(form: WmmaForm, pad: int, out: np.ndarray) -> np.ndarray:
    """``[lane, element, 3]`` from the registers a load returned (tags of cells)."""
    rows, cols = form.dims
    parts = []
    for d in range(len(out)):
        img = _lane_images(out[d])
        parts.append(np.stack([read_matrix(img[lane], 0, 1, form.elements, "row", form.elements, form.bits)[0]
                               for lane in range(32)]))
    idx = _combine(parts, form.bits)
    ok = (idx >= 0) & (idx < rows * cols)
    m = np.full((32, form.elements, 3), -1, dtype=np.int64)
    m[ok, 0] = 0
    m[ok, 1], m[ok, 2] = np.divmod(idx[ok], cols)
    return m


def infer_store(form: WmmaForm, pad: int, out: np.ndarray) -> np.ndarray:
    """``[lane, element, 3]`` from the matrix image a store wrote (tags of slots)."""
    rows, cols = form.dims
    r, c = np.divmod(np.arange(rows * cols), cols)
    parts = [read_matrix(np.ascontiguousarray(out[d], dtype="<u4").reshape(-1).view(np.uint8), 0, rows, cols,
                         form.layout, form.stride(pad), form.bits).reshape(-1) for d in range(len(out))]
    slot = _combine(parts, form.bits)
    m = np.full((32 * form.elements, 3), -1, dtype=np.int64)
    ok = (slot >= 0) & (slot < 32 * form.elements)
    m[slot[ok]] = np.stack([np.zeros(ok.sum(), dtype=np.int64), r[ok], c[ok]], axis=-1)
    return m.reshape(32, form.elements, 3)


def summarize(form: WmmaForm, m: np.ndarray) -> dict:
    rows, cols = form.dims
    held = m[..., 0] >= 0
    counts = np.bincount((m[held, 1] * cols + m[held, 2]), minlength=rows * cols)
    fits = {axis: fit_formula(np.where(held, m[..., k], 0)) if held.all() else None for k, axis in ((1, "row"), (2, "col"))}
    return {
        "form": form.id,
        "registers": form.registers,
        "elements_per_lane": form.elements,
        "tile": [rows, cols],
        "copies": sorted({int(x) for x in counts}),
        "cells_unheld": int((counts == 0).sum()),
        "row": fits["row"],
        "col": fits["col"],
        "map": [[int(lane), int(e), int(m[lane, e, 1]), int(m[lane, e, 2])] for lane, e in zip(*np.nonzero(held))],
    }


def observe(backend: Backend, seed: int = 0, select: list[WmmaForm] | None = None, target: str = "sm_80") -> list[tuple[WmmaForm, int, np.ndarray | None, str | None]]:
    """Run every form (one module); (form, pad, map or None, error)."""
    rng = np.random.default_rng(seed)
    todo = select or forms()
    pads = [(f, int(rng.integers(0, 3)) * f.pad_unit()) for f in todo]
    version = max([parse_target(target).min_ptx] + [f.variant.min_ptx for f in todo])
    module = module_source(pads, str(version), target)
    results = []
    for form, pad in pads:
        in_words, digits = build_cases(form, pad)
        words = in_words.shape[-1]
        probe = SimpleNamespace(name=form.kernel_name(pad))
        launch = Launch(probe, in_words, words, np.arange(digits, dtype=np.uint32), 1)
        res = backend.run(module, [launch])[0]
        if res.error:
            results.append((form, pad, None, res.error))
            continue
        m = infer_load(form, pad, res.out) if form.op == "load" else infer_store(form, pad, res.out)
        results.append((form, pad, m, None))
    return results


def compare_observations(before: dict, now: dict) -> dict[str, list[str]]:
    """Forms whose observed map is the same, changed, new or no longer observed, between two recorded runs.

    The distribution is a fact about one GPU and driver that may change: a change is reported, not failed."""
    old = {f["form"]: f for f in before.get("forms", []) if "map" in f}
    new = {f["form"]: f for f in now.get("forms", []) if "map" in f}
    out: dict[str, list[str]] = {"same": [], "changed": [], "new": [], "missing": []}
    for form, entry in new.items():
        if form not in old:
            out["new"].append(form)
        else:
            out["same" if sorted(map(tuple, old[form]["map"])) == sorted(map(tuple, entry["map"])) else "changed"].append(form)
    out["missing"] = sorted(set(old) - set(new))
    return out


def main(args) -> int:
    from ptxconf.backends import get_backend
    from ptxconf.figures import map_figure

    backend = get_backend(args.backend)
    if backend.name != "pycuda":
        print("ptxconf wmma-observe: needs a GPU (the ISA specifies no wmma layout for an emulator to follow)")
        return 2
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        info = backend.info()
        results = observe(backend, args.seed, target=args.target)
    finally:
        backend.close()
    doc = {"device": info, "seed": args.seed, "wall_s": round(time.perf_counter() - t0, 3), "forms": []}
    arrays = {}
    for form, pad, m, err in results:
        if m is None:
            doc["forms"].append({"form": form.id, "error": err})
            continue
        entry = summarize(form, m) | {"stride_padding_elements": pad}
        doc["forms"].append(entry)
        arrays[form.id] = m
        if args.figures:
            letter = {"a": "a", "b": "b", "c": "c", "d": "d"}[form.frag]
            map_figure(m, out / f"{form.id}.svg", f"{form.id}\nobserved on {info.get('gpu')} (driver {info.get('driver')})",
                       letter, form.per_register)
        print(f"{form.id:60s} copies {entry['copies']}  row = {entry['row']}  col = {entry['col']}")
    if args.compare:
        before = json.loads(Path(args.compare).read_text())
        diff = compare_observations(before, doc)
        doc["compared_with"] = {"file": str(args.compare), "device": before.get("device"),
                                **{k: v for k, v in diff.items() if k != "same"}, "same": len(diff["same"])}
        was = before.get("device", {})
        print(f"against {args.compare} ({was.get('gpu')}, driver {was.get('driver')}): {len(diff['same'])} same, "
              f"{len(diff['changed'])} changed, {len(diff['new'])} new, {len(diff['missing'])} no longer observed")
        for form in diff["changed"]:
            print(f"  changed: {form}")
    (out / "observed_wmma.json").write_text(json.dumps(doc, indent=1) + "\n")
    np.savez_compressed(out / "observed_wmma.npz", **arrays)
    errors = [f for f in doc["forms"] if "error" in f]
    print(f"{len(doc['forms']) - len(errors)} forms observed, {len(errors)} failed -> {out}")
    return 1 if errors else 0


def add_parser(sub) -> None:
    p = sub.add_parser("wmma-observe", help="observe wmma.load/store fragment layouts on the GPU (unspecified by the ISA)")
    p.add_argument("--backend", default="auto", choices=["auto", "pycuda"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--figures", action="store_true")
    p.add_argument("--target", default="sm_80", help="the .target of the probe module (default sm_80)")
    p.add_argument("--compare", metavar="JSON", help="a recorded observed_wmma.json: report forms whose distribution changed")
    p.add_argument("-o", "--output", default="ptxconf-wmma", metavar="DIR")
    p.set_defaults(func=main)
