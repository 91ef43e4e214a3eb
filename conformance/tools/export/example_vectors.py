"""Run a numerics model over an exported vectors dataset and count where it reproduces the hardware.

    python -m ptxconf.tools.export.example_vectors results/vectors

The dataset is read with numpy and json alone (the manifest and the NPZ are the whole interface);
the model is this project's (``ptxconf.tools.numerics.model.dot_bits``) with the parameters the
manifest records for each group.  To test another model or emulator, replace :func:`model`: it
gets one group's manifest entry, its model parameters and the input bits, and returns D bits.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np


def model(entry: dict, params: dict, a: np.ndarray, b: np.ndarray, c: np.ndarray, pos: np.ndarray | None) -> np.ndarray:
    """D bits of each case under this project's model of the entry's path."""
    from ptxconf.tools.numerics.model import PathParams, Types, dot_bits

    p = PathParams(name=params["path"], **{k: v for k, v in params.items() if k != "path"})
    return dot_bits(p, Types(**entry["types"]), a, b, c, sparse_pos=pos)


def run(directory: Path, limit: int = 3) -> dict[str, dict]:
    """Per path: cases, how many the model reproduces bit for bit, and the first few it does not."""
    manifest = json.loads((directory / "manifest.json").read_text())
    arrays = np.load(directory / manifest["arrays"], allow_pickle=False)
    out: dict[str, dict] = defaultdict(lambda: {"cases": 0, "agree": 0, "differ": []})
    for entry in manifest["numerics"]:
        key = entry["key"]
        a, b, c, d = (arrays[f"{key}_{x}"].astype(np.uint64) for x in "abcd")
        pos = arrays[f"{key}_pos"].astype(np.int64) if entry["sparse"] else None
        params = manifest["models"][entry["model"]]
        with np.errstate(all="ignore"):  # NaN and infinity inputs are cases too
            got = model(entry, params, a, b, c, pos)
        row = out[params["path"]]
        row["cases"] += len(d)
        row["agree"] += int((got == d).sum())
        for i in np.nonzero(got != d)[0][: max(0, limit - len(row["differ"]))]:
            row["differ"].append(f"{entry['variant']} {entry['run']} {entry['source']} case {arrays[f'{key}_case'][i]}: "
                                 f"hardware {int(d[i]):#x}, model {int(got[i]):#x}")
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--limit", type=int, default=3, help="disagreements to list per path")
    args = ap.parse_args(argv)
    for path, row in sorted(run(args.directory, args.limit).items()):
        print(f"{path}: {row['agree']} of {row['cases']} cases reproduced")
        for line in row["differ"]:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
