"""spcompress / spdecompress (ISA 9.4): the forms the syntax spells, the rules that forbid some, the kernels."""

from __future__ import annotations

import json

import pytest
from ptxconf.cli import main
from ptxconf.families.tcgen05.spec import load_tcgen05
from ptxconf.isa.targets import PtxVersion, parse_target
from ptxconf.tools.toolchains.sp_vectors import kernel

SV = load_tcgen05().sparse_vectors


def test_forms_sizes_and_rules():
    forms = {f.instruction: f for f in SV.forms()}
    assert len(forms) == 2 * 2 * 7 * (1 + 9)  # elemsize x idxsize x num x (spcompress's 2:4, spdecompress's 9 factors)
    assert all(f.invalid is None for f in forms.values() if f.op == "spcompress")
    c = forms["spcompress.b8.b2.sp::2:4.x4"]  # the ISA's example: {mdata_0}, 4 cdata, 8 data
    assert (c.mdata, c.cdata, c.data) == (1, 4, 8)
    d = forms["spdecompress.b8.b2.sp::2:4.x32"]  # the ISA's example: 4 mdata, 16 cdata, 32 data
    assert (d.mdata, d.cdata, d.data, d.invalid) == (4, 16, 32, None)
    assert "cannot reach num_target = 8" in forms["spdecompress.b8.b2.sp::1:8.x4"].invalid
    assert "> 32" in forms["spdecompress.b16.b4.sp::4:8.x1"].invalid
    assert "< 32" in forms["spdecompress.b8.b4.sp::1:2.x1"].invalid
    assert "> 4096" in forms["spdecompress.b16.b4.sp::1:16.x32"].invalid
    assert sum(f.invalid is None for f in forms.values()) == 28 + 143
    assert SV.valid_on(parse_target("sm_107a"), PtxVersion(9, 4)) is None
    assert SV.valid_on(parse_target("sm_107f"), PtxVersion(9, 4)) and SV.valid_on(parse_target("sm_107a"), PtxVersion(9, 3))
    assert SV.spdesc["op"].codes_for(None) == {"max": 0, "maxabs": 1, "min": 2, "minabs": 3}
    assert all(len(s["commit"]) == 40 for s in SV.sources)


def test_a_kernel_loads_its_inputs_and_stores_its_outputs():
    f = next(f for f in SV.forms() if f.instruction == "spcompress.b16.b4.sp::2:4.x8")
    k = kernel(f, "probe_x")
    assert "spcompress.b16.b4.sp::2:4.x8 {%m0, %m1}, {%c0," in k and k.count("ld.global") == 16 + 1
    assert k.count("st.global") == f.mdata + f.cdata


@pytest.mark.ptxas
def test_every_form_through_a_release_that_takes_version_9_4(tmp_path, capsys):
    from ptxconf.backends.ptxas import toolchains_dir

    exe = toolchains_dir() / "13.5.37" / "ptxas"
    if not exe.is_file():
        pytest.skip("needs ptxas 13.5.37 (ptxconf toolchains install 13.5.37); CI's ptxas 13.0 takes .version 9.0 at most")
    assert main(["toolchains", "sp-vectors", "--ptxas", "13.5.37", "--arch", "sm_107a,sm_107f",
                 "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "sp_vectors.json").read_text())
    assert doc["codes"] == {"A": 171, "R": 280 + 109}
