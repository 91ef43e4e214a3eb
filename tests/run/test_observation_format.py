"""An observation file is an ``.npz`` in one Zstandard frame: ``zstd -d`` (or any Zstandard reader) gives back what
``np.load`` reads, and older runs' plain ``.npz`` files still read."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
from ptxconf.run.files import ZSTD_MAGIC, zstd_decompress
from ptxconf.run.observations import (
    OBSERVATION_SUFFIX,
    has_observation,
    observation_bytes,
    observation_files,
    observation_name,
    observation_seed,
    observation_stem,
    open_observation,
)

REPO = Path(__file__).resolve().parents[2]


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {"in_words": rng.integers(0, 2**32, size=(3, 32, 9), dtype=np.uint32),
            "out_words": rng.integers(0, 2**32, size=(3, 32, 4), dtype=np.uint32),
            "meta": np.array(json.dumps({"variant": "v/x", "seed": 7}))}


def test_a_file_is_a_stored_npz_in_one_checked_zstandard_frame(tmp_path):
    data = observation_bytes(**_arrays())
    assert data[:4] == ZSTD_MAGIC
    npz = zstd_decompress(data)
    with zipfile.ZipFile(io.BytesIO(npz)) as zf:
        assert sorted(zf.namelist()) == ["in_words.npy", "meta.npy", "out_words.npy"]
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}
    with np.load(io.BytesIO(npz), allow_pickle=False) as z:
        for k, v in _arrays().items():
            assert np.array_equal(z[k], v) and z[k].dtype == v.dtype
    path = tmp_path / observation_name("v/x", 7)
    path.write_bytes(data)
    with open_observation(path) as z:
        assert np.array_equal(z["out_words"], _arrays()["out_words"])


def test_names_of_both_formats(tmp_path):
    name = observation_name("mma.sync/x", -3)
    assert name == "mma.sync_x.seed-3" + OBSERVATION_SUFFIX
    assert observation_seed(name) == -3 and observation_seed(name.removesuffix(".zst")) == -3
    assert observation_stem(name) == observation_stem(name.removesuffix(".zst")) == "mma.sync_x"
    (tmp_path / name).write_bytes(b"")
    (tmp_path / "old.seed0.npz").write_bytes(b"")
    (tmp_path / "notes.txt").write_bytes(b"")
    (tmp_path / (name + ".pending")).write_bytes(b"")
    assert [p.name for p in observation_files(tmp_path)] == sorted([name, "old.seed0.npz"])
    assert has_observation(tmp_path, "mma.sync/x", -3) and has_observation(tmp_path, "old", 0)
    assert not has_observation(tmp_path, "old", 1)


def test_older_runs_plain_npz_still_opens():
    old = sorted((REPO / "results" / "h100-ldmatrix" / "observations").glob("*.npz"))[0]
    with open_observation(old) as z:
        assert {"meta", "in_words", "out_words"} <= set(z.files)
