"""Discovery of wgmma.mma_async.sp register maps (D, the register A of /rs forms, the metadata per selector).

On the emulator, as spec'd, every map agrees and fits a formula in the ISA's words.  With layouts it was not told
(the emulator runs a copy whose D, A and metadata are random permutations of the spec's), discovery must recover
each one: exactly where shared memory fixes the rows (/ss), up to one renumbering of M otherwise (/rs).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.cli import main
from ptxconf.isa import load_specs
from ptxconf.isa.expr import evaluate, parse
from ptxconf.isa.model import TableLayout
from ptxconf.oracle import mma
from ptxconf.tools.discover import discover

SPECS = load_specs()
P = "wgmma.mma_async.sp.sync.aligned."
FORMS = [P + "m64n8k32.f16.f16.f16/rs", P + "m64n16k16.f32.tf32.tf32/ss", P + "m64n8k64.s32.s8.s8/rs",
         P + "m64n24k64.f32.e4m3.e5m2/ss", P + "m64n16k16.f32.tf32.tf32/rs"]
SCHEMA = Path(__file__).resolve().parents[2] / "conformance" / "isa" / "schema.json"


class SelectorTable(TableLayout):
    """A table per selector (the metadata layouts take the parameter)."""

    def __init__(self, base, tables: dict[int, np.ndarray]):
        super().__init__(base, next(iter(tables.values())))
        object.__setattr__(self, "_tables", tables)

    def map(self, params=None):
        return self._tables[(params or {}).get("selector", 0)].copy()

    def held(self, params=None):
        return self.map(params)[..., 0] >= 0


def _permuted(v, rng):
    """``v`` with D, A and metadata permuted: slot by slot (D, A); nibble by nibble, some fields swapped (metadata)."""
    ops = dict(v.operands)
    for name in ("D", "A"):
        if name in ops:
            table = ops[name].layout.map()
            flat = table.reshape(-1, 3)[rng.permutation(table.shape[0] * table.shape[1])]
            ops[name] = dataclasses.replace(ops[name], layout=TableLayout(ops[name].layout, flat.reshape(table.shape)))
    meta = ops["metadata"]
    tables = {}
    for sel in v.selectors:
        table = meta.layout.map({"selector": sel}).reshape(128 * 8, 2, 3)  # (lane, nibble) x field
        table = table[rng.permutation(len(table))]
        if v.nz == 2 and v.a_src == "shared":  # the high field holds slot 0's index in some nibbles
            # (with A in registers that looks the same as A's two stored elements of a chunk swapped)
            flip = rng.random(len(table)) < 0.3
            table[flip] = table[flip][:, ::-1]
        tables[sel] = table.reshape(128, 16, 3)
    ops["metadata"] = dataclasses.replace(meta, layout=SelectorTable(meta.layout, tables))
    return dataclasses.replace(v, operands=ops)


def _hidden_backend(hidden):
    backend = EmulatorBackend(mma, cc=(9, 0))
    run = backend.run
    backend.run = lambda module, launches: run(
        module, [dataclasses.replace(la, probe=dataclasses.replace(la.probe, variant=hidden)) for la in launches])
    return backend


@pytest.mark.parametrize("vid", FORMS)
def test_as_spec_every_map_agrees_and_fits(vid):
    v = SPECS.get(vid)
    disc = discover(EmulatorBackend(mma, cc=(9, 0)), v)
    want = {"D", *(["A"] if v.a_src == "registers" else []), *(f"metadata.sel{s}" for s in v.selectors)}
    assert set(disc.maps) == want and disc.agrees and not disc.unfit, disc.diffs
    layouts = disc.document["layouts"]
    d = next(e for name, e in layouts.items() if name.endswith(".D"))
    assert d["row"] == ("groupID + (%laneid >> 5) * 16 + (i >> 1) * 8" if v.N == 8 else
                        "groupID + (%laneid >> 5) * 16 + ((i >> 1) & 0x1) * 8")
    sel0 = next(e for name, e in layouts.items() if name.endswith(".metadata.sel0"))
    assert sel0.get("where") == ("threadID_in_group >> 1 == 0" if len(v.selectors) == 2 else None)


@pytest.mark.parametrize("vid", FORMS)
def test_layouts_it_was_not_told_are_recovered(vid):
    v = SPECS.get(vid)
    hidden = _permuted(v, np.random.default_rng(abs(hash(vid)) % 2**32))
    disc = discover(_hidden_backend(hidden), v)
    truth = {"D": hidden.operands["D"].layout.map()}
    if "A" in hidden.operands:
        truth["A"] = hidden.operands["A"].layout.map()
    for s in v.selectors:
        truth[f"metadata.sel{s}"] = hidden.operands["metadata"].layout.map({"selector": s})
    assert not disc.agrees
    if v.a_src == "shared":  # shared memory fixes M: every map exactly
        for name, want in truth.items():
            assert np.array_equal(disc.maps[name], want), name
        return
    # registers only: one renumbering of M, the same in every map
    rename: dict[int, int] = {}
    for name, want in truth.items():
        got = disc.maps[name]
        assert np.array_equal(got[..., [0, 2]], want[..., [0, 2]]), name
        for o, t in zip(got[..., 1].ravel(), want[..., 1].ravel()):
            assert rename.setdefault(int(o), int(t)) == int(t), name
    assert len(set(rename.values())) == len(rename)


def _evaluate(entry: dict, bindings: dict) -> np.ndarray:
    lanes, elems = entry["lanes"], entry["elements"]
    env = {"%laneid": np.arange(lanes)[:, None], "i": np.arange(elems)[None, :],
           **{k: parse(text) for k, text in bindings.items()}}
    out = np.stack([np.zeros((lanes, elems), dtype=np.int64)] +
                   [np.broadcast_to(evaluate(parse(entry[k]), env), (lanes, elems)) for k in ("row", "col")], axis=-1)
    if "where" in entry:
        out[~np.broadcast_to(evaluate(parse(entry["where"]), env) != 0, (lanes, elems))] = -1
    return out


def test_cli_writes_spec_format_layouts_whose_formulas_give_the_maps(tmp_path):
    vid = P + "m64n16k32.f32.bf16.bf16/rs"
    assert main(["discover", "--backend", "emulator", "-o", str(tmp_path), vid]) == 0
    (yaml_file,) = tmp_path.glob("*.yaml")
    doc = yaml.safe_load(yaml_file.read_text())
    schema = json.loads(SCHEMA.read_text())
    layout_schema = {"$defs": schema["$defs"], **schema["$defs"]["layout"]}
    with np.load(yaml_file.with_suffix(".npz")) as maps:
        assert set(maps.files) == {"D", "A", "metadata.sel0", "metadata.sel1"}
        for name, entry in doc["layouts"].items():
            jsonschema.validate(entry, layout_schema)
            key = next(k for k in maps.files if name.endswith("." + k))
            assert np.array_equal(_evaluate(entry, doc["bindings"]), maps[key]), name
    row = json.loads((tmp_path / "summary.json").read_text())["variants"][0]
    assert row["status"] == "agrees" and row["differing_slots"] == {"D": 0, "A": 0, "metadata.sel0": 0, "metadata.sel1": 0}


def test_a_form_the_gpu_cannot_run_is_skipped(tmp_path):
    vid = P + "m64n8k32.f16.f16.f16/ss"
    assert main(["discover", "--backend", "emulator", "-o", str(tmp_path), vid]) == 0  # the emulator stands in for sm_90a
    backend = EmulatorBackend(mma, cc=(8, 0))
    backend.cc_for = lambda v: (8, 0)
    with pytest.raises(ValueError, match="sm_90a"):
        discover(backend, SPECS.get(vid))
