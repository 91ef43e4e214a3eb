"""Discovery recovers layouts it was not told: emulator runs with permuted layouts.

The emulator executes a copy of the variant whose A, B and C layouts are random
permutations of the spec's (as tables); discovery, given only the spec's D map
for labels, must recover each permuted map exactly, up to a relabeling of K.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.cli import main
from ptxconf.isa import load_specs
from ptxconf.isa.model import TableLayout
from ptxconf.oracle import mma
from ptxconf.tools.discover import discover, fit_formula

SPECS = load_specs()


def _one_per_a_layout() -> list[str]:
    seen, out = set(), []
    for v in SPECS.variants.values():
        if v.family not in ("mma.sync", "mma.sp") or v.instruction.bitop == "xor" or "scale_A" in v.operands:
            continue
        key = (v.family, v.operands["A"].layout.name, v.operands["B"].layout.name, v.operands["C"].layout.name)
        if key not in seen:
            seen.add(key)
            out.append(v.id)
    return out


def _permuted(v, rng):
    ops = dict(v.operands)
    for name in ("A", "B", "C"):
        op = ops[name]
        table = op.layout.map().reshape(-1, 3)
        table = table[rng.permutation(len(table))].reshape(op.layout.map().shape)
        ops[name] = dataclasses.replace(op, layout=TableLayout(op.layout, table))
    return dataclasses.replace(v, operands=ops)


def _same_up_to_k(observed: np.ndarray, truth: np.ndarray, k_axis: int) -> bool:
    """Equal on the matrix and the M/N axes, and equal on K up to one bijection per matrix."""
    other = [a for a in range(3) if a != k_axis]
    if not np.array_equal(observed[..., other], truth[..., other]):
        return False
    pairs = {}
    for (m, ko), kt in zip(zip(observed[..., 0].ravel(), observed[..., k_axis].ravel()), truth[..., k_axis].ravel()):
        if pairs.setdefault((m, ko), kt) != kt:
            return False
    return len({(m, kt) for (m, _), kt in pairs.items()}) == len(pairs)


@pytest.mark.parametrize("vid", _one_per_a_layout())
def test_permuted_layouts_are_recovered(vid):
    v = SPECS.get(vid)
    rng = np.random.default_rng(abs(hash(vid)) % 2**32)
    hidden = _permuted(v, rng)
    backend = EmulatorBackend(mma)
    # The emulator runs the permuted variant; discovery is given the spec's variant.
    original_run = backend.run
    backend.run = lambda module, launches: original_run(
        module, [dataclasses.replace(la, probe=dataclasses.replace(la.probe, variant=hidden)) for la in launches]
    )
    disc = discover(backend, v)
    assert _same_up_to_k(disc.maps["A"], hidden.operands["A"].layout.map(), 2)
    assert _same_up_to_k(disc.maps["B"], hidden.operands["B"].layout.map(), 1)
    assert np.array_equal(disc.maps["C"], hidden.operands["C"].layout.map())
    assert not disc.agrees  # a permutation of a whole tile always moves something
    assert all("spec" in line and "observed" in line for line in disc.diffs["C"])


def test_unpermuted_discovery_agrees_and_fits_isa_formulas():
    v = SPECS.get("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    disc = discover(EmulatorBackend(mma), v)
    assert disc.agrees and not any(disc.diffs.values())
    assert fit_formula(disc.maps["A"][..., 1]) == "groupID + ((i >> 1) & 0x1) * 8"
    assert fit_formula(disc.maps["B"][..., 2]) == "groupID"
    assert fit_formula(disc.maps["C"][..., 2]) == "threadID_in_group * 2 + (i & 0x1)"


def test_fit_formula_refuses_non_linear_maps():
    values = np.arange(32 * 4).reshape(32, 4) ** 2
    assert fit_formula(values) is None


def test_discover_cli_writes_loadable_yaml(tmp_path):
    from ptxconf.isa.loader import Specs, load_file

    vid = "mma.sync.aligned.m8n8k4.col.row.f16.f16.f16.f16"
    assert main(["discover", "--backend", "emulator", "-o", str(tmp_path), vid]) == 0
    (yaml_file,) = tmp_path.glob("*.yaml")
    specs = Specs()
    load_file(yaml_file, specs)
    observed = specs.get(vid)
    for name in ("A", "B", "C", "D"):
        assert np.array_equal(observed.operands[name].layout.map(), SPECS.get(vid).operands[name].layout.map())


def test_xor_forms_are_skipped_with_the_reason(tmp_path, capsys):
    vid = "mma.sync.aligned.m16n8k128.row.col.s32.b1.b1.s32.xor.popc"
    assert main(["discover", "--backend", "emulator", "-o", str(tmp_path), vid]) == 0
    import json

    row = json.loads((tmp_path / "summary.json").read_text())["variants"][0]
    assert row["status"] == "skip" and ".and.popc" in row["reason"]
