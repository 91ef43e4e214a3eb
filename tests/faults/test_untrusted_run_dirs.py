"""A run directory someone handed over, through the CLI: every hostile file is one line and exit 2 (or, for diff,
a named change), never a traceback, a hang or gigabytes of memory.

The cases of the audit: a 65 KB observation that decompresses to 2 GiB (replay), an observed_maps.npz and a
junit.xml.gz that decompress past their bound (diff), summary.json as a symlink to /dev/zero, a FIFO as an
observation or as summary.json, JSON nested 100,000 deep, a results.jsonl status that is an object (diff), a line
``[1,2]`` (``run --resume``), and an observation whose meta was edited (a renamed check, ``variant: ../../x/y``),
which diff reports as a change instead of "no change".
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zstandard
from ptxconf.cli.main import main
from ptxconf.run.observations import observation_bytes, observation_name, open_observation

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "results" / "h100"
VARIANT = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
OBS = observation_name(VARIANT, 0)
GiB = 1 << 30


@pytest.fixture
def run(tmp_path) -> Path:
    """One variant of the recorded H100 run as a run directory (summary, results.jsonl, one observation)."""
    d = tmp_path / "run"
    (d / "observations").mkdir(parents=True)
    summary = json.loads((H100 / "summary.json").read_text())
    (d / "summary.json").write_text(json.dumps({**summary, "status": "complete"}))
    with open_observation(H100 / "observations" / OBS) as z:
        meta = json.loads(str(z["meta"]))
        (d / "observations" / OBS).write_bytes(observation_bytes(**{k: z[k] for k in z.files}))
    (d / "results.jsonl").write_text("".join(
        json.dumps({"variant": VARIANT, "family": "mma.sync", "file": "specs/mma_sync.yaml", "check": c["check"],
                    "seed": 0, "status": "pass", "message": "", "details": "", "seconds": 0.0}) + "\n"
        for c in meta["checks"]))
    return d


@pytest.fixture
def pair(run, tmp_path) -> tuple[Path, Path]:
    new = tmp_path / "new"
    shutil.copytree(run, new)
    return run, new


def _one_line_exit_2(capsys, argv: list[str], *words: str) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _replay(run: Path, tmp_path: Path) -> list[str]:
    return ["replay", str(run), "--out", str(tmp_path / "replayed"), "--quiet"]


def _zstd_zeros(size: int) -> bytes:
    """``size`` zero bytes in one Zstandard frame that declares its size (the 2 GiB case is 65 KB)."""
    co = zstandard.ZstdCompressor(level=1).compressobj(size=size)
    chunk = bytes(64 << 20)
    return b"".join(co.compress(chunk) for _ in range(size // len(chunk))) + co.flush()


def _npz_declaring(nbytes: int) -> bytes:
    """An .npz of one deflated member whose .npy header declares ``nbytes`` of uint8 over 1 MB of zeros."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf, \
            zf.open(f"{VARIANT}|A.npy", "w", force_zip64=True) as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "|u1", "fortran_order": False, "shape": (nbytes,)})
        fh.write(bytes(1 << 20))
    return buf.getvalue()


# --- replay ----------------------------------------------------------------------------------------------------------


def test_replay_refuses_an_observation_that_decompresses_to_2_gib(run, tmp_path, capsys):
    bomb = _zstd_zeros(2 * GiB)
    assert len(bomb) < 100_000
    (run / "observations" / OBS).write_bytes(bomb)
    _one_line_exit_2(capsys, _replay(run, tmp_path), OBS, "at most")


@pytest.mark.parametrize("command", ["replay", "diff"])
def test_summary_as_a_symlink_to_dev_zero(pair, tmp_path, capsys, command):
    base, new = pair
    (new / "summary.json").unlink()
    (new / "summary.json").symlink_to("/dev/zero")
    argv = _replay(new, tmp_path) if command == "replay" else ["diff", str(base), str(new)]
    _one_line_exit_2(capsys, argv, "summary.json", "outside")


@pytest.mark.parametrize("command", ["replay", "diff"])
@pytest.mark.parametrize("victim", ["summary.json", f"observations/{OBS}"])
def test_a_fifo_does_not_hang(pair, tmp_path, capsys, command, victim):
    base, new = pair
    (new / victim).unlink()
    os.mkfifo(new / victim)  # no writer: a blocking open or read would wait forever
    argv = _replay(new, tmp_path) if command == "replay" else ["diff", str(base), str(new)]
    _one_line_exit_2(capsys, argv, Path(victim).name, "FIFO")


@pytest.mark.parametrize("command", ["replay", "diff"])
def test_a_summary_nested_100000_deep(pair, tmp_path, capsys, command):
    base, new = pair
    (new / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    argv = _replay(new, tmp_path) if command == "replay" else ["diff", str(base), str(new)]
    _one_line_exit_2(capsys, argv, "summary.json", "nests 100000 deep")


# --- diff ------------------------------------------------------------------------------------------------------------


def test_diff_refuses_an_observed_maps_bomb(pair, capsys):
    base, new = pair
    (new / "observed_maps.npz").write_bytes(_npz_declaring(2 * GiB))
    assert (new / "observed_maps.npz").stat().st_size < 2 << 20
    _one_line_exit_2(capsys, ["diff", str(base), str(new)], "observed_maps.npz", "at most")


def test_diff_refuses_a_junit_gz_bomb(pair, capsys):
    base, new = pair
    (new / "results.jsonl").unlink()
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", compresslevel=1) as fh:
        chunk = bytes(16 << 20)
        for _ in range(20):  # 320 MiB of zeros, 0.3 MB compressed: past the 256 MiB bound
            fh.write(chunk)
    (new / "junit.xml.gz").write_bytes(gz.getvalue())
    _one_line_exit_2(capsys, ["diff", str(base), str(new)], "junit.xml.gz", "decompresses to more than")


def test_diff_refuses_a_status_that_is_an_object(pair, capsys):
    base, new = pair
    lines = (new / "results.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    rec["status"] = {"a": 1}
    lines[1] = json.dumps(rec)
    (new / "results.jsonl").write_text("\n".join(lines) + "\n")
    _one_line_exit_2(capsys, ["diff", str(base), str(new)], "results.jsonl:2", "status", "found an object")


def _edit_meta(path: Path, edit) -> None:
    with open_observation(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    edit(meta)
    arrays["meta"] = np.array(json.dumps(meta))
    path.write_bytes(observation_bytes(**arrays))


def test_diff_sees_a_renamed_check(pair, capsys):
    base, new = pair
    _edit_meta(new / "observations" / OBS, lambda m: m["checks"][0].update(check="renamed"))
    assert main(["diff", str(base), str(new), "--limit", "0"]) == 1
    out = capsys.readouterr().out
    assert "checks differ" in out and "renamed" in out and out.rstrip().endswith("changed")


def test_diff_sees_a_variant_that_is_not_the_files(pair, tmp_path, capsys):
    base, new = pair
    _edit_meta(new / "observations" / OBS, lambda m: m.update(variant="../../x/y"))
    assert main(["diff", str(base), str(new), "--limit", "0"]) == 1
    out = capsys.readouterr().out
    assert "damaged" in out and "'../../x/y'" in out and "not this file's" in out
    assert main(_replay(new, tmp_path)) == 1  # replay says the same: an error verdict naming the file
    errors = [json.loads(line) for line in (tmp_path / "replayed" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in errors] == ["error"] and "not this file's" in errors[0]["message"]


# --- run --resume ----------------------------------------------------------------------------------------------------


def test_resume_refuses_a_line_that_is_not_a_record(run, capsys):
    with (run / "results.jsonl").open("a") as fh:
        fh.write("[1,2]\n")
    argv = ["run", "--backend", "emulator", "--select", VARIANT, "--seed", "0", "--out", str(run), "--resume", "--quiet"]
    _one_line_exit_2(capsys, argv, "results.jsonl:", "expected an object, found an array")
