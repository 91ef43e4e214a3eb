"""Evidence says what produced it, and how a run was named is provenance, not a change.

The final line of a run names its backend; a replay line printed with a failure writes into a fresh
``ptxconf-replay/...`` directory wherever it is pasted; ``diff`` takes ``--backend emulator`` against auto choosing
the emulator, and one GPU against two of the same model, as provenance; ``--force`` over a symlinked run file removes
the link, never what it points at.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from ptxconf.backends.base import backend_label, evidence_label
from ptxconf.cli.main import main
from ptxconf.run.files import clear_run
from ptxconf.run.report import replay_command

V = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


@pytest.fixture(scope="module")
def emulator_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "run"
    assert main(["run", "--backend", "emulator", "--quiet", "--select", V, "--out", str(out)]) == 0
    return out


def test_the_final_line_of_a_run_names_its_backend(tmp_path, capsys):
    assert main(["run", "--backend", "emulator", "--quiet", "--select", V, "--out", str(tmp_path / "r")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert " on the emulator -> " in last and last.startswith("4 passed")


def test_labels_name_a_gpu_and_its_backend():
    info = {"backend": "pycuda", "gpu": "NVIDIA H100 80GB HBM3"}
    assert backend_label(info) == evidence_label(info) == "pycuda (NVIDIA H100 80GB HBM3)"
    assert backend_label({"backend": "emulator"}) == "the emulator"
    assert "no hardware observed" in evidence_label({"backend": "emulator"})


def test_a_replay_line_round_trips_through_the_shell():
    vid, check = "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16/rs", "value[sa+1,sb+1,tb0]"
    words = shlex.split(replay_command(vid, check, 3, "pycuda"))
    assert words[words.index("--select") + 1] == vid and words[words.index("--check") + 1] == check
    out = words[words.index("--out") + 1]
    assert out.startswith("ptxconf-replay/") and out.count("/") == 1 and out.endswith(".seed3")


def test_a_pasted_replay_line_never_touches_the_run_that_printed_it(emulator_run, tmp_path, monkeypatch, capsys):
    user = tmp_path / "user"
    shutil.copytree(emulator_run, user)
    before = {p.name: p.read_bytes() for p in user.iterdir() if p.is_file()}
    monkeypatch.chdir(user)  # pasted in the directory of the run, as the README's walk does
    words = shlex.split(replay_command(V, "value", 0, "emulator"))
    assert words[:2] == ["ptxconf", "run"]
    assert main(words[1:]) == 0
    fresh = user / words[words.index("--out") + 1]
    records = [json.loads(line) for line in (fresh / "results.jsonl").read_text().splitlines()]
    assert [(r["variant"], r["check"], r["status"]) for r in records] == [(V, "value", "pass")]
    assert {p.name: p.read_bytes() for p in user.iterdir() if p.is_file()} == before


def _edit_device(run: Path, **changes) -> None:
    doc = json.loads((run / "summary.json").read_text())
    for k, v in changes.items():
        if v is None:
            doc["device"].pop(k, None)
        else:
            doc["device"][k] = v
    (run / "summary.json").write_text(json.dumps(doc))


@pytest.fixture
def pair(emulator_run, tmp_path) -> tuple[Path, Path]:
    """Two copies of one emulator run: BASE and NEW."""
    return tuple(Path(shutil.copytree(emulator_run, tmp_path / name)) for name in ("base", "new"))  # type: ignore[return-value]


def _diff(base: Path, new: Path, capsys) -> tuple[int, str]:
    rc = main(["diff", str(base), str(new)])
    return rc, capsys.readouterr().out


def test_naming_the_backend_or_letting_auto_choose_it_is_provenance(pair, capsys):
    base, new = pair
    _edit_device(new, auto="PyCUDA not importable (ModuleNotFoundError); using the NumPy emulator")
    rc, out = _diff(base, new, capsys)
    assert rc == 0 and out.rstrip().endswith("no change")
    assert "~ backend chosen by: not recorded -> PyCUDA not importable" in out


def test_one_gpu_and_two_of_the_same_model_is_provenance(pair, capsys):
    base, new = pair
    _edit_device(base, backend="pycuda", gpu="NVIDIA H200", device=0)
    _edit_device(new, backend="pycuda", gpu="NVIDIA H200",
                 devices=[{"device": 0, "gpu": "NVIDIA H200"}, {"device": 1, "gpu": "NVIDIA H200"}])
    rc, out = _diff(base, new, capsys)
    assert rc == 0 and "~ GPUs: 1 x NVIDIA H200 -> 2 x NVIDIA H200" in out
    _edit_device(new, devices=[{"device": 0, "gpu": "NVIDIA H200"}, {"device": 1, "gpu": "NVIDIA H100 80GB HBM3"}])
    rc, out = _diff(base, new, capsys)
    assert rc == 1 and "* GPUs: 1 x NVIDIA H200 -> 1 x NVIDIA H200, 1 x NVIDIA H100 80GB HBM3" in out


def test_clearing_a_run_unlinks_a_symlinked_folder_and_keeps_its_target(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.npz.zst").write_bytes(b"mine")
    run = tmp_path / "run"
    run.mkdir()
    (run / "observations").symlink_to(elsewhere, target_is_directory=True)
    (run / "summary.json").write_text("{}")
    clear_run(run)
    assert not (run / "observations").is_symlink() and not (run / "summary.json").exists()
    assert (elsewhere / "keep.npz.zst").read_bytes() == b"mine"
