"""The observation writer streams a stored zip of ``.npy`` members into one Zstandard frame, the arrays' own memory
between the headers: the ``.npz`` inside is byte for byte the one ``zipfile`` and ``np.lib.format.write_array`` wrote
(so every reader, and every file a run recorded before, is unchanged), zip64 fields included."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zstandard
from ptxconf.core.safe_files import check_npz_declared, load_npz_bounded
from ptxconf.isa import load_specs
from ptxconf.isa.targets import PtxVersion
from ptxconf.run import files
from ptxconf.run.files import ZSTD_MAGIC, stored_zip, zstd_compress_parts, zstd_decompress
from ptxconf.run.observations import (
    MAX_OBSERVATION,
    load_observation,
    observation_bytes,
    observation_name,
    read_observation,
    write_observation,
)
from ptxconf.run.runner import plan_variant

REPO = Path(__file__).resolve().parents[2]


def _zipfile_npz(arrays: dict[str, np.ndarray]) -> bytes:
    """The ``.npz`` as the writer before this one built it: through ``zipfile`` into memory."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
    return buf.getvalue()


def _observation() -> dict[str, np.ndarray]:
    """What ``write_observation`` passes (uint32 words [case, lane, word], the meta as a 0-d unicode array)."""
    rng = np.random.default_rng(11)
    meta = {"variant": "wgmma.x/ü", "seed": 3, "surroundings": {},
            "checks": [{"check": "map.a", "slice": [0, 5], "params": {}, "meta": {}}]}
    return {"in_words": rng.integers(0, 2**32, size=(5, 128, 37), dtype=np.uint32),
            "out_words": rng.integers(0, 2**32, size=(5, 128, 16), dtype=np.uint32),
            "meta": np.array(json.dumps(meta))}


def _odd_arrays() -> dict[str, np.ndarray]:
    """Every layout the header and the memory view must get right."""
    words = np.arange(2 * 3 * 4, dtype=np.uint32).reshape(2, 3, 4)
    return {"bool": np.arange(30).reshape(5, 6) % 3 == 0,
            "fortran": np.asfortranarray(words),
            "strided": words[:, ::2, 1:],  # neither C nor Fortran contiguous
            "big_endian": words.astype(">u4"),
            "empty": np.zeros((0, 32, 4), np.uint32),
            "scalar": np.float64(2.5),
            "strings": np.array(["a", "bcd"]),
            "ü": np.int8(-3)}


@pytest.fixture(params=["isal", "zlib"])
def crc32(request, monkeypatch):
    """Each CRC-32 the writer may take: ISA-L's where installed, and zlib's (what it falls back to without it)."""
    files._crc32.cache_clear()
    if request.param == "zlib":
        monkeypatch.setitem(sys.modules, "isal.isal_zlib", None)  # as if not installed
    elif importlib.util.find_spec("isal") is None:
        pytest.skip("the isal package is not installed here (the writer uses zlib's CRC-32)")
    yield request.param
    files._crc32.cache_clear()


@pytest.mark.parametrize("arrays", [_observation(), _odd_arrays()], ids=["observation", "odd layouts"])
def test_the_npz_is_the_one_zipfile_wrote(arrays, crc32):
    assert files._crc32().__module__.split(".")[0] == crc32
    data = observation_bytes(**arrays)
    params = zstandard.get_frame_parameters(data)
    npz = zstd_decompress(data)
    assert data[:4] == ZSTD_MAGIC and params.has_checksum and params.content_size == len(npz)
    assert npz == _zipfile_npz(arrays)
    with zipfile.ZipFile(io.BytesIO(npz)) as zf:
        assert zf.testzip() is None
        assert [i.filename for i in zf.infolist()] == [k + ".npy" for k in arrays]
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    with np.load(io.BytesIO(npz), allow_pickle=False) as z:
        for k, v in arrays.items():
            assert z[k].dtype == v.dtype and z[k].shape == np.shape(v) and np.array_equal(z[k], v)
    assert observation_bytes(**arrays) == data  # the same arrays, the same bytes


def test_the_bounded_readers_take_it(tmp_path):
    arrays = _observation()
    data = observation_bytes(**arrays)
    check_npz_declared(zstd_decompress(data), MAX_OBSERVATION, name="x")
    got = load_npz_bounded(data, max_bytes=MAX_OBSERVATION)
    assert list(got) == list(arrays) and all(np.array_equal(got[k], v) for k, v in arrays.items())
    path = tmp_path / "observations" / observation_name("wgmma.x/ü", 3)
    path.parent.mkdir()
    path.write_bytes(data)
    obs = read_observation(path)
    assert obs.problem is None and obs.meta["seed"] == 3
    assert np.array_equal(obs.in_words, arrays["in_words"]) and np.array_equal(obs.out_words, arrays["out_words"])


def test_recorded_files_are_rewritten_byte_for_byte():
    """Files the writer before this one recorded on the hardware: their arrays give back the very same ``.npz``."""
    recorded = sorted((REPO / "results" / "h100-suite" / "observations").glob("*.npz.zst"))[:3]
    assert recorded
    for path in recorded:
        npz = zstd_decompress(path.read_bytes())
        with np.load(io.BytesIO(npz), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        assert zstd_decompress(observation_bytes(**arrays)) == npz, path.name


def test_one_seed_writes_the_same_file_twice(tmp_path):
    """Two plans of one variant and seed write the same observation bytes (nothing of the time of writing goes in),
    which read back as written."""
    v = next(v for v in sorted(load_specs().variants.values(), key=lambda v: v.id) if v.family == "wgmma")
    written = []
    for run in ("a", "b"):
        plan = plan_variant(v, 2, (9, 0), PtxVersion(9, 0), value_cases=2)
        out = plan.in_words[:, :, :4] ^ np.uint32(0x5A5A5A5A)
        written.append(write_observation(tmp_path / run, plan, out, pending=False))
    assert written[0].read_bytes() == written[1].read_bytes()
    meta, in_words, out_words = load_observation(written[0])
    assert meta["variant"] == v.id and meta["seed"] == 2
    assert np.array_equal(in_words, plan.in_words) and np.array_equal(out_words, out)


def test_zip64_fields_where_sizes_and_offsets_need_them(monkeypatch):
    """Past the zip64 limit (lowered here to 0, in this writer and in zipfile alike, instead of writing 2 GiB) every
    central directory entry holds its sizes and offset in a zip64 field and zip64 end records close the archive:
    still what zipfile writes, and what it and ``np.load`` read."""
    monkeypatch.setattr(files, "_ZIP64_OVER", 0)
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 0)
    arrays = _odd_arrays()
    npz = zstd_decompress(observation_bytes(**arrays))
    assert npz == _zipfile_npz(arrays)
    assert b"PK\x06\x06" in npz and b"PK\x06\x07" in npz
    monkeypatch.undo()
    with zipfile.ZipFile(io.BytesIO(npz)) as zf:
        assert zf.testzip() is None
        offsets = [i.header_offset for i in zf.infolist()]
        assert offsets == sorted(offsets) and offsets[0] == 0 and len(set(offsets)) == len(arrays)
    with np.load(io.BytesIO(npz), allow_pickle=False) as z:
        assert all(np.array_equal(z[k], v) for k, v in arrays.items())


def test_a_member_of_several_buffers():
    """A member's content may come in several buffers: one CRC and one size over all of them."""
    parts = [b"head", np.arange(5, dtype=np.uint16), memoryview(b"tail")]
    npz = zstd_decompress(zstd_compress_parts(stored_zip([("m", parts), ("e", [])])))
    with zipfile.ZipFile(io.BytesIO(npz)) as zf:
        assert zf.testzip() is None
        assert zf.read("m") == b"head" + np.arange(5, dtype=np.uint16).tobytes() + b"tail" and zf.read("e") == b""


def test_object_arrays_are_refused():
    with pytest.raises(ValueError, match="object arrays"):
        observation_bytes(meta=np.array([{"a": 1}], dtype=object))
