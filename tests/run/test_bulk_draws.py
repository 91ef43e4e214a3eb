"""The bulk draw's machinery (isa/arrays.py's counter words, tools/bulkdraw.py's operation count, `ptxconf bench
--bulk-draw`): draws are a function of (key, case, column) alone, the counted draw is the draw, and on a GPU a CuPy
draw is the NumPy draw bit for bit (what lets `ptxconf fuzz case` replay a GPU failure on the host)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ptxconf.backends.bulk_device import cuda_devices
from ptxconf.cli.main import main as cli_main
from ptxconf.core.family import family_of, run_variants_of
from ptxconf.isa import load_specs
from ptxconf.isa.arrays import halves, namespace, u16_choices, words32
from ptxconf.isa.targets import PtxVersion
from ptxconf.tools.bulkdraw import NAMESPACE, Counted, counting

SPECS = load_specs()
run_variants_of(SPECS)
_W, _SP = "wgmma.mma_async.sync.aligned.", "wgmma.mma_async.sp.sync.aligned."
FORMS = [_W + "m64n8k16.f32.f16.f16/rs", _W + "m64n24k32.f16.e4m3.e5m2/ss", _W + "m64n16k256.s32.b1.b1.and.popc/rs",
         _W + "m64n256k16.f32.bf16.bf16/ss", _W + "m64n8k32.satfinite.s32.s8.u8/ss", _SP + "m64n16k16.f32.tf32.tf32/ss",
         _SP + "m64n8k64.s32.u8.s8/rs", "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32",
         "wmma.load.a.sync.aligned.row.m8n8k128.b1", "wmma.store.d.sync.aligned.row.m8n8k4.f64",
         "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "ldmatrix.sync.aligned.m8n8.x4.trans.b16"]


def _bulk(vid: str, seed: int = 3):
    v = SPECS.get(vid)
    cc = (9, 0) if v.family.startswith("wgmma") else (12, 0)
    return family_of(v).bulk_cases(v, seed, cc, PtxVersion(9, 2))


def test_counter_words_depend_on_key_case_and_column_alone():
    batch = words32(np, 77, 1000, 6, 50)
    assert np.array_equal(words32(np, 77, 1003, 1, 50)[0], batch[3])  # the same case alone
    assert np.array_equal(words32(np, 77, 1000, 6, 80)[:, :50], batch)  # more columns: the first ones unchanged
    assert not np.array_equal(words32(np, 78, 1000, 6, 50), batch)
    assert all(len(set(row.tolist())) == 50 for row in batch)  # distinct within a case: a bijection of distinct inputs
    h = halves(np, 77, 1000, 6, 99)
    assert h.dtype == np.uint16 and h.shape == (6, 99) and np.array_equal(h[:, :2], batch[:, :1].view(np.uint16))
    big = halves(np, 5, 0, 200, 1000).astype(np.int64)
    assert abs(big.mean() - 32767.5) < 200 and {int(b) for b in np.unique(big >> 12)} == set(range(16))


@pytest.mark.parametrize("n", [2, 7, 81, 129, 256, 65536])
def test_a_16_bit_draw_picks_every_choice_evenly(n):
    counts = np.bincount(u16_choices(n), minlength=n)
    assert len(counts) == n and counts.max() - counts.min() <= 1


def test_the_counted_draw_is_the_draw_and_names_its_stages():
    bc = _bulk(FORMS[0])
    plain = bc.draw(np, 40, 5)
    counted, log = counting(bc.draw, 40, 5)
    assert isinstance(counted.in_words, Counted) and namespace(counted.in_words) is NAMESPACE
    assert np.array_equal(counted.in_words.view(np.ndarray), plain.in_words)
    assert np.array_equal(counted.expected.view(np.ndarray), plain.expected)
    stages = {stage for stage, *_ in log}
    assert {"words32", "_fmix32", "product", "draw"} <= stages and all(b >= 0 and s >= 0 for _, _, b, s, _ in log)
    assert namespace(np.zeros(2)) is np and namespace(np.zeros(2).view(np.memmap)) is np  # other subclasses: NumPy


def test_bench_reports_each_form_s_draw_cost_and_operations(tmp_path, capsys):
    out = tmp_path / "draw.json"
    forms = [FORMS[0], FORMS[5], FORMS[7]]
    rc = cli_main(["bench", "--bulk-draw", "--backend", "emulator", *[x for f in forms for x in ("--select", f)],
                   "--bulk-draw-cases", "16", "-o", str(out)])
    capsys.readouterr()
    assert rc == 0
    doc = json.loads(out.read_text())
    assert doc["module"] == "numpy" and set(forms) <= {r["variant"] for r in doc["forms"]}  # a glob may match more
    for r in doc["forms"]:
        assert r["batch"] == 16 and r["ms_per_1e4_cases"] > 0 and r["cases_per_s"] > 0
        assert r["array_ops_per_batch"] == sum(c for c, _, _ in r["by_stage"].values()) > 10
        assert 0 < r["device_ops_per_batch"] < r["array_ops_per_batch"]  # the counter words' finaliser: one kernel
        assert r["in_and_expected_bytes_per_case"] > 0 and r["bytes_made_per_case"] >= r["in_and_expected_bytes_per_case"]
    assert {"wgmma", "wgmma.sp", "wmma"} <= set(doc["by_family"]) and doc["by_family"]["wgmma"]["ms_per_1e4_cases"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("vid", FORMS)
def test_a_gpu_draw_is_the_host_draw_bit_for_bit(vid):
    count, why = cuda_devices()
    if not count:
        pytest.skip(f"no GPU for CuPy: {why}")
    import cupy

    bc = _bulk(vid)
    host, dev = bc.draw(np, 4096, 64), bc.draw(cupy, 4096, 64)
    assert np.array_equal(dev.in_words.get(), host.in_words) and np.array_equal(dev.expected.get(), host.expected)
    assert np.array_equal(cupy.asnumpy(words32(cupy, 9, 123, 7, 301)), words32(np, 9, 123, 7, 301))
