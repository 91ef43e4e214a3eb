"""The pytest plugin (``ptxconf.pytest_plugin``) on the emulator, through pytester.

Item ids must be ``ptxconf run``'s JUnit names (in pytest's own ``--junitxml`` too, ``::`` in a variant id
included), counts must follow the verdicts, a spec edited to be wrong must fail with the lane-level text and the
replay command, the plugin must stay inert without a ``--ptxconf-*`` option, and each xdist worker must get one
GPU of the caller's list.  The runs read a specs folder holding only mma_sync.yaml: loading every spec file costs
seconds per run, and these variants need no other.
"""

from __future__ import annotations

import copy
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ptxconf import cli
from ptxconf import pytest_plugin as plugin
from ptxconf.backends.emulator import EmulatorBackend
from ptxconf.isa import load_specs

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
M16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
KIND = "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e2m1.e3m2.f16"  # '::' inside the id
CHECKS = ("value", "map.A", "map.B", "map.C")


@pytest.fixture(scope="module")
def mma_specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("specs")
    shutil.copy(REPO / "specs" / "mma_sync.yaml", d)
    return d


def _args(specs: Path, *variants: str) -> list[str]:
    # (the outer session imported the plugin already: pytest warns it cannot rewrite its asserts)
    # (no:benchmark: it warns when it sees PYTEST_XDIST_WORKER, which these runs inherit under xdist)
    out = ["-p", "ptxconf.pytest_plugin", "-p", "no:cacheprovider", "-p", "no:benchmark",
           "-W", "ignore::pytest.PytestAssertRewriteWarning",
           "--ptxconf-backend", "emulator", "--ptxconf-specs", str(specs)]
    for v in variants:
        out += ["--ptxconf-select", v]
    return out


def _junit(path: Path) -> dict[str, ET.Element]:
    return {tc.get("name"): tc for tc in ET.parse(path).getroot().iter("testcase")}


def test_ids_and_junit_names_match_ptxconf_run(pytester: pytest.Pytester, mma_specs: Path, tmp_path: Path) -> None:
    res = pytester.runpytest(*_args(mma_specs, M16, KIND), "-v", f"--junitxml={tmp_path / 'pytest.xml'}")
    res.assert_outcomes(passed=8)
    want = {f"{v}:{c}:seed=0" for v in (M16, KIND) for c in CHECKS}
    for name in want:
        res.stdout.fnmatch_lines([f"*ptxconf::{name} PASSED*"])
    cases = _junit(tmp_path / "pytest.xml")
    assert set(cases) == want
    assert {tc.get("classname") for tc in cases.values()} == {"ptxconf.mma"}
    # ptxconf run over the same selection names the same tests.
    out = tmp_path / "run"
    argv = ["run", "--backend", "emulator", "--quiet", "--specs", str(mma_specs), "--out", str(out)]
    assert cli.main([*argv, "--select", M16, "--select", KIND, "--no-observations"]) == 0
    assert set(_junit(out / "junit.xml")) == want


def test_seeds_checks_and_keyword_selection(pytester: pytest.Pytester, mma_specs: Path) -> None:
    args = [*_args(mma_specs, M16), "--ptxconf-seed", "0", "--ptxconf-seed", "7", "--ptxconf-check", "value",
            "--ptxconf-check", "map.B"]
    res = pytester.runpytest(*args, "--collect-only", "-q")
    assert res.ret == 0
    ids = [ln for ln in res.stdout.lines if ln.startswith("ptxconf::")]
    assert ids == [f"ptxconf::{M16}:{c}:seed={s}" for s in (0, 7) for c in ("value", "map.B")]
    res.stdout.fnmatch_lines(["4 tests collected*"])
    pytester.runpytest(*args, "-k", "map.B").assert_outcomes(passed=2, deselected=2)


def _real_isa_emulator(specs: Path):
    """EmulatorBackend._run_one executing ``specs`` (the "hardware"), whatever specs the run compares against."""
    real = load_specs(specs).variants
    run_one = EmulatorBackend._run_one

    def _run_one(backend: EmulatorBackend, launch):  # noqa: ANN001 - a backend Launch
        probe = copy.copy(launch.probe)
        object.__setattr__(probe, "variant", real[probe.variant.id])  # (a frozen dataclass)
        launch = copy.copy(launch)
        launch.probe = probe
        return run_one(backend, launch)

    return _run_one


def test_a_wrong_spec_fails_with_lanes_and_the_replay_command(pytester: pytest.Pytester, mma_specs: Path,
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    text = (mma_specs / "mma_sync.yaml").read_text()
    head, sep, tail = text.partition("\n  m16n8k16.A.b16:\n")
    body, nxt, rest = tail.partition("\n  m16n8k16.")
    old = "else (threadID_in_group * 2) + (i & 0x1) + 8"
    assert sep and body.count(old) == 1
    (wrong / "mma_sync.yaml").write_text(head + sep + body.replace(old, "else (threadID_in_group * 2) + (1 - (i & 0x1)) + 8") + nxt + rest)
    monkeypatch.setattr(EmulatorBackend, "_run_one", _real_isa_emulator(mma_specs))

    res = pytester.runpytest(*_args(wrong, M16), "-rA")
    # A is misplaced: value and map.A fail, and map.B (A is its selection matrix); map.C has zero multiplicands.
    res.assert_outcomes(passed=1, failed=3)
    out = res.stdout.str()
    assert re.search(rf"PASSED \S*ptxconf::{re.escape(M16)}:map.C:seed=0", out)
    for check in ("value", "map.A", "map.B"):
        assert re.search(rf"FAILED \S*ptxconf::{re.escape(M16)}:{check}:seed=0", out)
        assert f"replay: ptxconf run --backend emulator --select {M16} --check {check} --seed 0" in out
    assert re.search(r"lane \d+ register d\d+ .*expected 0x[0-9a-f]+ .* actual 0x[0-9a-f]+", out)
    assert re.search(r"A lane \d+ element \d+ \(register [23]\): spec \(.*\), observed \(.*\)", out)
    assert "Traceback" not in out  # the verdict's text, not a stack


def test_unknown_selection_is_a_usage_error(pytester: pytest.Pytester, mma_specs: Path) -> None:
    res = pytester.runpytest(*_args(mma_specs, "no.such.variant*"))
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--ptxconf-select no.such.variant*: matches no variant*"])


def test_inert_without_ptxconf_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    res = pytester.runpytest("-p", "ptxconf.pytest_plugin", "-p", "no:cacheprovider", "-W",
                             "ignore::pytest.PytestAssertRewriteWarning")
    res.assert_outcomes(passed=1)
    assert "ptxconf::" not in res.stdout.str() and "ptxconf: backend" not in res.stdout.str()


def test_explicit_paths_are_collected_beside_the_suite(pytester: pytest.Pytester, mma_specs: Path) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    pytester.runpytest(*_args(mma_specs, M16), "--ptxconf-check", "value").assert_outcomes(passed=1)
    res = pytester.runpytest(*_args(mma_specs, M16), "--ptxconf-check", "value", "test_plain.py")
    res.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("worker", "visible", "gpus", "want"),
    [
        ("gw0", "0,1", 0, "0"),
        ("gw1", "0,1", 0, "1"),
        ("gw2", "0,1", 0, "0"),  # more workers than GPUs: round robin
        ("gw1", "GPU-aaa, GPU-bbb ,GPU-ccc", 0, "GPU-bbb"),  # UUIDs and spaces as CUDA takes them
        ("gw3", "4,6", 0, "6"),  # entries of the caller's list, not indexes
        ("gw0", "3", 8, None),  # one visible device: nothing to share out
        ("gw0", "", 8, None),  # none visible stays none
        ("gw1", None, 4, "1"),  # no list: every GPU nvidia-smi finds
        ("gw1", None, 1, None),
        (None, "0,1", 0, None),  # not an xdist worker
        ("master", "0,1", 0, None),
    ],
)
def test_worker_device(worker: str | None, visible: str | None, gpus: int, want: str | None) -> None:
    assert plugin.worker_device(worker, visible, lambda: gpus) == want


def test_workers_pin_cuda_visible_devices_before_cuda_starts(pytester: pytest.Pytester, mma_specs: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The configure hook of worker gw1 narrows the caller's list to its own entry (no GPU is touched)."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    pytester.makeconftest(
        "import os\n"
        "def pytest_collection_finish(session):\n"
        "    print('visible=' + os.environ['CUDA_VISIBLE_DEVICES'])\n"
    )
    gpu = [a if a != "emulator" else "pycuda" for a in _args(mma_specs, M16)]  # pinning is for GPU backends; collection starts none
    res = pytester.runpytest(*gpu, "--collect-only", "-s")
    res.stdout.fnmatch_lines(["visible=3"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    res = pytester.runpytest(*_args(mma_specs, M16), "--collect-only", "-s")  # the emulator needs no GPU
    res.stdout.fnmatch_lines(["visible=2,3"])
