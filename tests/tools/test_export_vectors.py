"""``export vectors``: recorded numerics cases and observed lane maps as NPZ + a JSON manifest, read back with numpy
alone; the example model script over them; and the dataset committed under results/vectors/ against its sources."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from ptxconf.cli.main import main
from ptxconf.tools.export import example_vectors
from ptxconf.tools.export.vectors import validate
from ptxconf.tools.numerics.harness import path_of, variant_of
from ptxconf.tools.numerics.model import Types, dot_bits

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
SMALL = ("h100-numerics-gpu", "h100-ldmatrix", "h100-wmma")  # fuzz mismatches, run maps, wmma observations


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("vectors")
    assert main(["export", "vectors", *(str(RESULTS / d) for d in SMALL), "-o", str(out)]) == 0
    return out


def _load(directory: Path):
    manifest = json.loads((directory / "manifest.json").read_text())
    return manifest, np.load(directory / manifest["arrays"], allow_pickle=False)


def test_small_export_reads_back_with_numpy(small):
    manifest, arrays = _load(small)
    assert validate(manifest) == []
    files = sorted((RESULTS / "h100-numerics-gpu" / "mismatches").glob("*.json"))
    assert manifest["totals"]["numerics_cases"] == len(files)
    rows = {}
    for e in manifest["numerics"]:
        assert e["source"] == "fuzz" and e["run"] == "h100-numerics-gpu"
        for i, label in enumerate(arrays[f"{e['key']}_case"]):
            rows[str(label)] = [arrays[f"{e['key']}_{x}"][i].tolist() for x in "abcd"]
    for f in files:  # every recorded mismatch, bit for bit
        rec = json.loads(f.read_text())
        assert rows[f.name] == [[int(x, 16) for x in rec["a"]], [int(x, 16) for x in rec["b"]], int(rec["c"], 16),
                                int(rec["observed"], 16)]
    dev = manifest["devices"][manifest["numerics"][0]["device"]]
    assert dev["gpu"] == "NVIDIA H100 80GB HBM3" and dev["driver"] == "not recorded"  # the GPU fuzz kept no driver
    with np.load(RESULTS / "h100-ldmatrix" / "observed_maps.npz") as z:
        run_maps = {k.rpartition("|")[0]: z[k] for k in z.files}
    seen = [m for m in manifest["maps"] if m["run"] == "h100-ldmatrix"]
    assert len(seen) == len(run_maps)
    for m in seen:
        assert np.array_equal(arrays[m["key"]], run_maps[m["variant"]]) and m["agrees_with_spec"] is True
    wmma = [m for m in manifest["maps"] if m["source"] == "wmma-observe"]
    assert len(wmma) == 114 and {m["operand"] for m in wmma} == {"A", "B", "C", "D"}
    assert all(m["agrees_with_spec"] is None for m in wmma)  # the ISA specifies no wmma map


def test_example_script_counts_what_the_model_reproduces(small, capsys):
    """The example's per-path counts equal the model run on the mismatch files directly."""
    from ptxconf.isa import load_specs
    from ptxconf.tools.numerics.spec import numerics_spec

    specs = load_specs()
    spec = numerics_spec(specs)
    want: dict[str, list[int]] = {}
    for f in sorted((RESULTS / "h100-numerics-gpu" / "mismatches").glob("*.json")):
        rec = json.loads(f.read_text())
        v = variant_of(specs, rec["variant"])
        p = path_of(spec, v)
        with np.errstate(all="ignore"):
            got = dot_bits(p, Types.of(v), [[int(x, 16) for x in rec["a"]]], [[int(x, 16) for x in rec["b"]]],
                           [int(rec["c"], 16)])[0]
        row = want.setdefault(p.name, [0, 0])
        row[0] += 1
        row[1] += int(int(got) == int(rec["observed"], 16))
    got = example_vectors.run(small)
    assert {k: [r["cases"], r["agree"]] for k, r in got.items()} == want
    assert example_vectors.main([str(small)]) == 0
    out = capsys.readouterr().out
    assert all(f"{k}: {a} of {n} cases reproduced" in out for k, (n, a) in want.items())


def test_committed_dataset_matches_its_sources():
    directory = RESULTS / "vectors"
    manifest, arrays = _load(directory)
    assert validate(manifest) == []
    assert manifest["totals"]["numerics_cases"] == sum(e["cases"] for e in manifest["numerics"])
    for e in manifest["numerics"]:
        n = len(arrays[f"{e['key']}_d"])
        assert n == e["cases"] and arrays[f"{e['key']}_b"].shape == (n, e["k"])
    per_run: dict[tuple[str, str], int] = {}
    for e in manifest["numerics"]:
        per_run[(e["run"], e["source"])] = per_run.get((e["run"], e["source"]), 0) + e["cases"]
    for (run, source), count in per_run.items():  # every recorded case of every directory named, none more
        d = RESULTS / run
        if source == "fuzz":
            assert count == len(list((d / "mismatches").glob("*.json"))), run
        else:
            with np.load(d / "observations.npz") as z:
                assert count == sum(len(z[k]) for k in z.files if k.startswith("m") and k.endswith("_c")), run
    for m in manifest["maps"]:
        assert list(arrays[m["key"]].shape) == m["shape"]
    missing = {p.parent.name for p in RESULTS.glob("*/observed_maps.npz")} - {m["run"] for m in manifest["maps"]}
    assert not missing, f"runs not in results/vectors: {sorted(missing)}; regenerate it (README, 'Layouts and vectors')"
    assert not any(str(ROOT) in json.dumps(e) for e in manifest["numerics"] + manifest["maps"])


def test_a_path_with_nothing_to_export_is_one_line(capsys, tmp_path):
    assert main(["export", "vectors", str(RESULTS / "numerics-pins"), "-o", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "numerics-pins: holds no numerics cases" in err
