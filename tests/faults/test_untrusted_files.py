"""Files from someone else: every reader of core.safe_files either returns what the file holds or raises
UntrustedFileError (one line naming the file), within its bounds, for any bytes at all.

Hand-made hostile files (a 2 GiB zip bomb in 65 KB, /dev/zero behind a symlink, a FIFO with no writer, JSON nested
100,000 deep, results lines that are ``[1,2]`` or hold a dict for a status) and Hypothesis-drawn damage of valid
files: cut, flipped, spliced.
"""

from __future__ import annotations

import io
import json
import os
import threading
import zipfile

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptxconf.core.safe_files import (
    UntrustedFileError,
    expect,
    field,
    iter_jsonl,
    load_json,
    load_npz_bounded,
    loads_json,
    open_regular,
    read_regular,
    zstd_decompress_bounded,
)

MiB = 1 << 20
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _npy_header(shape: tuple[int, ...], dtype: str = "<u1") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text
    return text


# --- file types -------------------------------------------------------------------------------------------------------


def test_a_regular_file_is_read(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert read_regular(tmp_path / "f", root=tmp_path, max_bytes=3) == b"abc"


def test_dev_zero_behind_a_symlink_is_refused_before_reading(tmp_path):
    (tmp_path / "summary.json").symlink_to("/dev/zero")
    with pytest.raises(UntrustedFileError) as err:
        load_json(tmp_path / "summary.json", max_bytes=MiB)
    assert "device" in _one_line(err.value) and "summary.json" in str(err.value)
    with pytest.raises(UntrustedFileError, match="outside"):  # and with a root, refused for leaving it
        load_json(tmp_path / "summary.json", root=tmp_path, max_bytes=MiB)


def test_a_symlink_leaving_the_directory_is_refused(tmp_path):
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").symlink_to(outside)
    with pytest.raises(UntrustedFileError, match="outside"):
        load_json(run / "summary.json", root=run, max_bytes=MiB)
    (run / "inside.json").write_text('{"a": 1}')
    (run / "link.json").symlink_to(run / "inside.json")  # a symlink within the directory is fine
    assert load_json(run / "link.json", root=run, max_bytes=MiB) == {"a": 1}


def test_a_fifo_with_no_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "obs.npz.zst"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            load_npz_bounded(fifo, max_bytes=MiB)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout=60)  # a hang would be a bug: the thread is a daemon, so the suite still ends
    if t.is_alive():
        with open(fifo, "wb"):  # release the reader before failing
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(outcome[0], UntrustedFileError) and "FIFO" in str(outcome[0])


def test_a_directory_and_a_missing_file_are_one_line(tmp_path):
    for path in (tmp_path, tmp_path / "missing.json"):
        with pytest.raises(UntrustedFileError) as err:
            open_regular(path, max_bytes=10)
        _one_line(err.value)


def test_the_size_bound_is_checked_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(3 << 30)  # 3 GiB, sparse: reading it would take the memory
    with pytest.raises(UntrustedFileError, match="at most"):
        load_json(big, max_bytes=MiB)


# --- JSON ------------------------------------------------------------------------------------------------------------


def test_json_nested_100000_deep_is_refused_without_recursion(tmp_path):
    deep = tmp_path / "summary.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UntrustedFileError, match="nests 100000 deep"):
        load_json(deep, max_bytes=MiB)
    braces = '{"a":' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(UntrustedFileError, match="deep"):
        loads_json(braces, name="x.json")


def test_brackets_inside_strings_do_not_count_as_nesting():
    doc = {"text": "[[[[[[{{{{" * 50, "escaped": 'a\\"[[[[', "list": [[1]]}
    assert loads_json(json.dumps(doc), name="x", max_depth=3) == doc


def test_results_lines_of_the_wrong_shape_are_one_line_errors(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text('{"variant": "v", "status": "pass"}\n[1,2]\n{"variant": "w", "status": {"a": 1}}\n')
    rows = list(iter_jsonl(results, max_bytes=MiB))
    assert [n for n, _ in rows] == [1, 2, 3]
    with pytest.raises(UntrustedFileError, match=r"results.jsonl:2: top level: expected an object, found an array"):
        for n, rec in rows:
            expect(rec, dict, name=f"{results}:{n}", where="top level")
    with pytest.raises(UntrustedFileError, match=r"results.jsonl:3: status: expected a string, found an object"):
        field(rows[2][1], "status", str, name=f"{results}:3")
    with pytest.raises(UntrustedFileError, match="missing"):
        field({}, "status", str, name="r")
    with pytest.raises(UntrustedFileError, match="true/false"):
        expect(True, int, name="r", where="cases")  # a bool is no count


def test_a_torn_last_line_is_dropped_and_a_torn_middle_line_is_an_error(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text('{"a": 1}\n{"a": 2')
    assert [rec for _, rec in iter_jsonl(results, max_bytes=MiB)] == [{"a": 1}]
    results.write_text('{"a": 1}\n{"a": 2\n{"a": 3}\n')
    with pytest.raises(UntrustedFileError, match=r"results.jsonl:2: not JSON"):
        list(iter_jsonl(results, max_bytes=MiB))


@FUZZ
@given(data=st.binary(max_size=2000))
def test_any_bytes_as_json_give_a_value_or_one_line(data):
    try:
        loads_json(data, name="f.json", max_depth=8)
    except UntrustedFileError as exc:
        _one_line(exc)


@FUZZ
@given(doc=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                        max_leaves=30),
       cut=st.integers(min_value=0, max_value=400))
def test_json_cut_anywhere_gives_the_document_or_one_line(doc, cut):
    text = json.dumps(doc)
    try:
        assert loads_json(text[:cut], name="f.json") == doc
    except UntrustedFileError as exc:
        _one_line(exc)
        assert cut < len(text)


# --- compressed --------------------------------------------------------------------------------------------------------


def _bomb() -> bytes:
    """2 GiB of zeros in one Zstandard frame that declares its size: 65,558 bytes."""
    cobj = zstandard.ZstdCompressor(level=3).compressobj(size=2 << 30)
    zeros = bytes(64 * MiB)
    return b"".join([*(cobj.compress(zeros) for _ in range(32)), cobj.flush()])


def test_a_zip_bomb_of_2_gib_zeros_in_65_kb_is_refused_before_decompressing():
    bomb = _bomb()
    assert len(bomb) < 66_000
    with pytest.raises(UntrustedFileError, match="declares 2147483648 bytes"):
        load_npz_bounded(bomb, max_bytes=64 * MiB, name="obs.npz.zst")
    with pytest.raises(UntrustedFileError, match="declares"):
        zstd_decompress_bounded(bomb, 16 * MiB)


def test_a_zstd_frame_that_declares_no_size_stops_at_the_bound():
    cobj = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    frame = cobj.compress(bytes(256 * MiB)) + cobj.flush()
    with pytest.raises(UntrustedFileError, match="more than"):
        zstd_decompress_bounded(frame, 16 * MiB)


def test_an_npz_member_declaring_2_gib_is_refused_from_its_npy_header():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("in_words.npy", _npy_header((2 << 30,)) + bytes(MiB))
    with pytest.raises(UntrustedFileError, match="declares shape"):
        load_npz_bounded(buf.getvalue(), max_bytes=64 * MiB, name="obs.npz")


def test_an_npz_and_its_zstd_frame_read_back_exactly():
    arrays = {"in_words": np.arange(12, dtype=np.uint32).reshape(3, 4), "meta": np.array('{"v": 1}'),
              "f": np.asfortranarray(np.arange(6.0).reshape(2, 3))}
    raw = _npz(**arrays)
    for blob in (raw, zstandard.ZstdCompressor().compress(raw)):
        got = load_npz_bounded(blob, max_bytes=MiB)
        assert got.keys() == arrays.keys()
        for k, v in arrays.items():
            assert got[k].dtype == v.dtype and np.array_equal(got[k], v)


def test_object_arrays_are_refused_and_nothing_unpickles():
    raw = _npz(x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(UntrustedFileError, match="object arrays"):
        load_npz_bounded(raw, max_bytes=MiB)


def test_a_member_shorter_than_its_header_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a.npy", _npy_header((100,)) + bytes(10))
    with pytest.raises(UntrustedFileError, match="10 bytes of the 100"):
        load_npz_bounded(buf.getvalue(), max_bytes=MiB)


@FUZZ
@given(data=st.data())
def test_damaged_observation_files_give_arrays_or_one_line(data):
    raw = _npz(in_words=np.arange(64, dtype=np.uint32), out_words=np.ones((4, 4), np.uint16), meta=np.array("{}"))
    blob = data.draw(st.sampled_from([raw, zstandard.ZstdCompressor().compress(raw)]))
    how = data.draw(st.sampled_from(["cut", "flip", "splice"]))
    at = data.draw(st.integers(min_value=0, max_value=len(blob) - 1))
    if how == "cut":
        blob = blob[:at]
    elif how == "flip":
        blob = blob[:at] + bytes([blob[at] ^ data.draw(st.integers(1, 255))]) + blob[at + 1:]
    else:
        blob = blob[:at] + data.draw(st.binary(min_size=1, max_size=64)) + blob[at:]
    try:
        got = load_npz_bounded(blob, max_bytes=4096)
    except UntrustedFileError as exc:
        _one_line(exc)
    else:
        assert sum(a.nbytes for a in got.values()) <= 4096
        assert all(not a.dtype.hasobject for a in got.values())


@FUZZ
@given(shape=st.lists(st.integers(min_value=0, max_value=1 << 40), min_size=0, max_size=4),
       dtype=st.sampled_from(["<u1", "<u4", "<f8", "|b1", "<c16"]))
def test_any_declared_shape_is_refused_or_read_within_the_bound(shape, dtype):
    header = _npy_header(tuple(shape), dtype)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.npy", header + bytes(min(4096, 1 << 12)))
    try:
        got = load_npz_bounded(buf.getvalue(), max_bytes=4096)
    except UntrustedFileError as exc:
        _one_line(exc)
    else:
        assert got["a"].nbytes <= 4096
