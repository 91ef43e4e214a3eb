"""``ptxconf bench``: every figure it reports comes from the run's own path, cold and warm, in one invocation.

Speeds are never asserted (they are measured, not tested); the structure and the verdicts behind them are.
"""

from __future__ import annotations

import json

import pytest
from ptxconf.cli.main import main

M16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def test_bench_times_the_run_cold_and_warm_and_the_model(tmp_path, capsys, monkeypatch):
    import ptxconf.tools.bench as bench

    real = bench.suite
    monkeypatch.setattr(bench, "suite", lambda name, select, seed, devices=None, values="host": real(name, [M16], seed, devices, values))  # the whole suite: minutes
    out = tmp_path / "bench.json"
    rc = main(["bench", "--backend", "emulator", "--select", M16, "--suite", "--baseline-variants", "1",
               "--numerics-dots", "2000", "-o", str(out)])
    capsys.readouterr()
    assert rc == 0
    b = json.loads(out.read_text())
    cold, warm, bare = b["suite"]["cold"], b["suite"]["warm"], b["suite"]["warm_no_observations"]
    for r in (cold, warm, bare):  # the whole `ptxconf run`, in its own process, every check passing
        assert r["exit"] == 0 and r["counts"] == {"pass": 4} and r["run_wall_s"] > 0
        assert {"plan", "launch", "compare", "report"} <= set(r["stages_s"])
        assert r["cpu_s"] > 0 and 0 < r["cores_busy"] and r["cores"] >= 1
        host = r["host"]  # the host's CPU seconds per stage, and per case
        assert host["ms_per_case"] > 0 and host["cpu_total_s"] == round(sum(host["cpu_s"].values()), 3)
        assert set(host["cpu_s"]) == ({"plan", "compare"} if r is bare else {"plan", "compare", "save"})
        assert set(host["ms_per_case_by_stage"]) == set(host["cpu_s"])
        assert abs(sum(host["ms_per_case_by_stage"].values()) - host["ms_per_case"]) < 0.01
    assert b["suite"]["command"] == f"ptxconf run --backend emulator --select '{M16}'"
    assert b["batched_all_variants"]["non_passing_checks"] == 0 and b["baseline_one_case_per_launch"]["launches"] > 0
    paths = {p["variant"]: p for p in b["numerics"]["paths"]}
    assert M16 in paths and paths[M16]["host_dots_per_s"] > 0
    assert isinstance(b["numerics"]["gpu"], str)  # the device's name, or why there is no GPU model here
    cpu = b["numerics"]["cpu"]["paths"]  # per path kind: the NumPy model, and the compiled one where numba is
    assert {r["kind"] for r in cpu} == {"float", "f64", "int", "b1"} and all(r["numpy_dots_per_s"] > 0 for r in cpu)
    assert all(r.get("equal_bit_for_bit", True) for r in cpu)


def test_bench_suite_only_times_just_the_suite_and_keeps_each_section_as_it_ends(tmp_path, capsys, monkeypatch):
    import ptxconf.tools.bench as bench

    seen = []

    def suite(name, select, seed, devices=None, values="host"):  # the file holds what ended before the suite began
        seen.append(json.loads(out.read_text()) if out.exists() else None)
        return {"command": f"ptxconf run --backend {name}"}

    monkeypatch.setattr(bench, "suite", suite)
    monkeypatch.setattr(bench, "bench", lambda *a, **k: pytest.fail("the in-process comparison ran"))
    monkeypatch.setattr(bench, "numerics_rates", lambda *a, **k: pytest.fail("the numerics model ran"))
    monkeypatch.setattr(bench, "bulk_rate", lambda name, budget, seed: {"seen": json.loads(out.read_text())})
    out = tmp_path / "bench.json"
    rc = main(["bench", "--backend", "emulator", "--suite-only", "--bulk", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 0 and seen == [None]  # no batched comparison, no numerics: the suite first
    b = json.loads(out.read_text())
    assert set(b) == {"suite", "bulk_fuzz"} and b["suite"]["command"] == "ptxconf run --backend emulator"
    assert b["bulk_fuzz"]["seen"] == {"suite": b["suite"]}  # written when the suite ended, before the bulk fuzzer
    assert "ptxconf bench: suite done in" in err and "ptxconf bench: bulk_fuzz done in" in err


def test_bench_records_the_bulk_fuzzer_rate_from_its_own_process(tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = main(["bench", "--backend", "emulator", "--select", M16, "--baseline-variants", "1", "--bulk", "2",
               "--numerics-dots", "2000", "-o", str(out)])
    capsys.readouterr()
    assert rc == 0
    bulk = json.loads(out.read_text())["bulk_fuzz"]
    assert bulk["exit"] == 0 and bulk["cases"] > 0 and bulk["failed_variant_seeds"] == 0
    assert set(bulk["stages_s"]) == {"build", "draw", "launch", "compare"}
    assert bulk["command"].startswith("ptxconf fuzz layouts --bulk --backend emulator --budget 2")


def test_scaling_bound_reads_a_recorded_two_gpu_run():
    """What bounds a run comes from its own summary: host CPU-seconds per stage against the GPUs' seconds."""
    from pathlib import Path

    from ptxconf.tools.bench import HOST_STAGES, _bound

    summary = json.loads((Path(__file__).resolve().parents[2] / "results/h200x2-suite/summary.json").read_text())
    entry = {"stages_s": summary["stages_s"], "backend_stats": summary["backend_stats"], "run_wall_s": summary["wall_s"]}
    b = _bound(entry)
    assert set(b["host_cpu_s"]) == set(HOST_STAGES)
    assert b["host_cpu_total_s"] == round(sum(summary["stages_s"][k] for k in HOST_STAGES), 1)
    steps = summary["backend_stats"]["launch_steps_s"]
    assert b["gpu_worker_s"] == round(sum(steps.values()), 3) and b["host_cpu_total_s"] > 10 * b["gpu_worker_s"]


def test_bench_numerics_only_times_the_model_per_path_without_a_backend(tmp_path, capsys):
    """`--numerics-only`: the per-path CPU table alone (no backend, no GPU), NumPy and, where numba is, compiled."""
    from ptxconf.tools.bench import CPU_PATH_VARIANTS
    from ptxconf.tools.numerics import compiled

    out = tmp_path / "numerics.json"
    assert main(["bench", "--numerics-only", "--numerics-dots", "300", "-o", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert [r["variant"] for r in doc["paths"]] == list(CPU_PATH_VARIANTS)
    for r in doc["paths"]:
        assert r["numpy_dots"] == 300 and r["numpy_dots_per_s"] > 0 and r["numpy_dots_per_cpu_s"] > 0
        if compiled.available()[0]:
            assert r["equal_bit_for_bit"] and r["compiled_dots"] == 300 and r["compiled_dots_per_s"] > 0
            assert r["compiled_1_thread_dots_per_cpu_s"] > 0 and isinstance(r["meets_target"], bool)
        else:
            assert "compiled_dots_per_s" not in r
