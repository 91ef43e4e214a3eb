"""The observation file: what ``replay`` and ``diff`` trust of a run, in one module.

Per variant and seed a run records the exact input and output words of every case and what the
comparators need (selector params, tags, surroundings): an ``.npz`` (stored, not deflated) in one
Zstandard frame; older runs wrote a plain ``.npz``.  Whichever process compared a plan writes its file
under a pending name; the run publishes it (a rename) once the verdicts are in results.jsonl, so a run
killed in between leaves no observation whose verdicts it never recorded.

Every read of a run directory's files goes through one function per file kind here
(:func:`open_observation`, :func:`read_summary`, :func:`read_results_bytes`, :func:`read_observed_maps`,
all over :func:`run_file_bytes`), so that bounds on files from someone else are set in one place: regular files
inside the run directory only, a size per file kind, decompression bounded (from the declared sizes, before
decompressing) and JSON nesting bounded (:mod:`ptxconf.core.safe_files`).  A file over a bound raises
:class:`~ptxconf.core.safe_files.FileRefused` (one line, exit 2 from the CLI); damage within the bounds is what each
reader reports as before.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from ptxconf.core.plan import Plan
from ptxconf.core.record import CheckRecord
from ptxconf.core.safe_files import (
    FileRefused,
    UntrustedFileError,
    check_npz_declared,
    expect,
    field,
    load_npz_bounded,
    loads_json,
    read_regular,
    zstd_decompress_bounded,
)
from ptxconf.generators.ptx import Surroundings

from .files import ZSTD_MAGIC, atomic_write, stored_zip, zstd_compress_parts

__all__ = ["DEVICE_VALUES", "append_device_value", "read_device_values", "latest_device_values", "OBSERVATION_SUFFIX", "PENDING", "Observation", "observation_name", "find_observation", "has_observation",
           "observation_files", "observation_stem", "observation_seed", "open_observation", "load_observation",
           "read_observation", "write_observation", "publish_observation", "publish_observation_of", "observation_bytes", "records",
           "recorded_checks", "read_summary", "read_results_bytes", "read_results_lines", "result_record", "read_observed_maps", "read_observed_index",
           "run_file_bytes", "run_root", "why", "MAX_OBSERVATION", "MAX_REPORT", "MAX_SUMMARY"]

OBSERVATION_SUFFIX = ".npz.zst"  # an .npz (stored, not deflated) in one Zstandard frame; older runs wrote .npz
# Zstandard level 1.  The negative (fastest) levels were measured too: on the suite's wgmma, wgmma.sp and mma files
# level -1 took 6-12% less CPU and wrote 12% more bytes; on three variants' files alone, half the CPU.  With the
# streamed writer, on 1/20 of the wgmma and wgmma.sp plans (240 MB of words): level -1 10% less CPU and 28% more
# bytes, level 2 19% more CPU and 0.7% fewer bytes, the frame's checksum 3% of the CPU.  A reader takes any level.
OBSERVATION_LEVEL = 1
PENDING = ".pending"  # an observation written before its verdicts are recorded: no reader takes it
MiB = 1 << 20
# Bounds on what a reader of a run directory pays, far above what a run writes (the largest recorded observation
# file is 5.7 MB, observed_maps.npz 0.6 MB, summary.json a few KB).
MAX_OBSERVATION = 256 * MiB  # an observation file, on disk and decompressed
MAX_REPORT = 256 * MiB  # results.jsonl, junit.xml (decompressed too), observed_maps.npz
MAX_SUMMARY = 16 * MiB  # summary.json, observed_maps.json
_OBSERVATION_SEED = re.compile(r"\.seed(-?\d+)\.npz(?:\.zst)?$")


# --- names ---------------------------------------------------------------------------------------


def observation_name(variant_id: str, seed: int) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", variant_id) + f".seed{seed}{OBSERVATION_SUFFIX}"


def find_observation(directory: Path, variant_id: str, seed: int) -> Path | None:
    """The published observation file of (variant, seed) under ``directory``: this version's, or an older run's
    ``.npz``."""
    name = observation_name(variant_id, seed)
    return next((p for p in (directory / name, directory / name.removesuffix(".zst")) if p.exists()), None)


def has_observation(directory: Path, variant_id: str, seed: int) -> bool:
    return find_observation(directory, variant_id, seed) is not None


def observation_files(directory: Path) -> list[Path]:
    """Every published observation file under ``directory``, in name order: this version's and older runs' ``.npz``."""
    return sorted([*directory.glob("*.npz"), *directory.glob("*" + OBSERVATION_SUFFIX)])


def observation_stem(name: str) -> str:
    """The file name without its seed and suffix (the sanitised variant id)."""
    return _OBSERVATION_SEED.sub("", name)


def observation_seed(name: str) -> int | None:
    m = _OBSERVATION_SEED.search(name)
    return int(m.group(1)) if m else None


# --- the device's value checks -------------------------------------------------------------------

# Beside the observation files: a line per value check the device made (its cases' digests, the words of the first
# that differ: :mod:`ptxconf.run.devicevalues`), appended whole and flushed as it is made.
DEVICE_VALUES = "device_values.jsonl"
_DEVICE_KEYS = ("variant", "seed", "cases", "cc", "max_ptx", "target", "version", "in_digest", "digests")


def append_device_value(directory: Path, record: dict) -> None:
    """One value check's line (a killed run leaves at most its last line cut)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / DEVICE_VALUES, "a") as fh:
        fh.write(json.dumps(record) + "\n")
        fh.flush()


def read_device_values(directory: Path) -> Iterator[tuple[int, dict | None, str | None]]:
    """(line number, record, what is wrong with it) for each line of ``directory``'s :data:`DEVICE_VALUES`; the last
    line, unterminated (cut by a kill), is left out."""
    path = directory / DEVICE_VALUES
    if not path.exists() and not path.is_symlink():
        return
    lines = run_file_bytes(path).split(b"\n")
    lines.pop()  # "" after the last newline, or a line cut by a kill: never a record
    for n, line in enumerate(lines, 1):
        try:
            rec = loads_json(line, name=f"{path}:{n}")
            missing = [k for k in _DEVICE_KEYS if not isinstance(rec, dict) or k not in rec]
            if missing:
                raise ValueError(f"not a device value record: no {', '.join(missing)}")
            yield n, rec, None
        except (ValueError, UntrustedFileError) as exc:
            yield n, None, f"{path.name}:{n}: {why(exc)}"


def latest_device_values(directory: Path) -> tuple[dict[tuple, tuple[int, dict]], list[str]]:
    """``directory``'s device value records by (variant, check, seed), each the last written (a resumed run may have
    made one again) with its line number; and what is wrong with each line that cannot be read."""
    last: dict[tuple, tuple[int, dict]] = {}
    bad: list[str] = []
    for number, rec, problem in read_device_values(directory):
        if rec is None:
            bad.append(problem or f"{DEVICE_VALUES}:{number}: unreadable")
        else:
            last[(rec["variant"], rec.get("check", "value"), rec["seed"])] = (number, rec)
    return last, bad


# --- writing -------------------------------------------------------------------------------------


def records(plan: Plan, out: np.ndarray) -> list[CheckRecord]:
    """Each check of ``plan`` as a record, against the observed out words ``out`` (rows as ``plan.in_words``)."""
    recs = []
    for cs in plan.case_sets:
        a, b = plan.slices[cs.check]
        recs.append(CheckRecord(plan.variant.id, cs.check, plan.seed, cs.params or {}, cs.meta or {},
                                plan.probe.surroundings, plan.in_words[a:b], out[a:b]))
    return recs


def write_observation(directory: Path, plan: Plan, out: np.ndarray, pending: bool = True) -> Path:
    """Inputs and outputs per lane, and everything needed to re-run the comparators (``pending``: under the name
    :func:`publish_observation` renames)."""
    directory.mkdir(parents=True, exist_ok=True)
    meta = {
        "variant": plan.variant.id,
        "seed": plan.seed,
        "version": str(plan.version),
        "target": plan.target.name,
        "warps_per_block": plan.warps_per_block,
        "surroundings": vars(plan.probe.surroundings),
        "checks": [
            {"check": cs.check, "slice": list(plan.slices[cs.check]), "params": cs.params, "meta": cs.meta}
            for cs in plan.case_sets
        ],
    }
    path = directory / (observation_name(plan.variant.id, plan.seed) + (PENDING if pending else ""))
    # As durable as the verdicts it goes with (results.jsonl: flushed line by line, never synced): a killed run
    # leaves each file whole or absent; a sync per file cost a third of the CPU that saving took.
    atomic_write(path, observation_bytes(in_words=plan.in_words, out_words=out, meta=np.array(json.dumps(meta))),
                 durable=False)
    return path


def publish_observation(directory: Path, plan: Plan) -> None:
    """The pending observation of ``plan`` under its own name: done once its verdicts are in results.jsonl."""
    publish_observation_of(directory, plan.variant.id, plan.seed)


def publish_observation_of(directory: Path, variant_id: str, seed: int) -> None:
    """:func:`publish_observation` by the plan's variant id and seed (a process that never held the plan)."""
    path = directory / observation_name(variant_id, seed)
    os.replace(path.with_name(path.name + PENDING), path)


def observation_bytes(**arrays: np.ndarray) -> bytes:
    """An observation file's bytes: the arrays as an ``.npz`` (what ``np.load`` reads), stored, in one Zstandard
    frame at :data:`OBSERVATION_LEVEL` (``zstd -d`` gives the ``.npz`` back).  Each array's own memory goes to the
    compressor between the zip's and the ``.npy`` headers, never copied into an archive first (6-13% less CPU on the
    suite's plans, a third less on small files); the same arrays give the same bytes (no time stamp of the writing)."""
    return zstd_compress_parts(stored_zip((name + ".npy", _npy_member(arr)) for name, arr in arrays.items()),
                               OBSERVATION_LEVEL)


def _npy_member(arr: np.ndarray) -> tuple[bytes, np.ndarray]:
    """One array as ``np.save`` writes it: its ``.npy`` header, and its own memory (in the header's order) uncopied."""
    arr = np.asarray(arr)
    if arr.dtype.hasobject:
        raise ValueError(f"object arrays ({arr.dtype}) are not written: a reader would have to unpickle them")
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        arr = np.ascontiguousarray(arr)
    header = np.lib.format.header_data_from_array_1_0(arr)
    head = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(head, header)
    except ValueError:  # a header past 64 KiB: format 2.0, as np.save falls back
        head = io.BytesIO()
        np.lib.format.write_array_header_2_0(head, header)
    return head.getvalue(), (arr.T if header["fortran_order"] else arr).reshape(-1).view(np.uint8)


# --- reading -------------------------------------------------------------------------------------


def run_root(path: Path) -> Path:
    """The run directory a file belongs to (an observation's is two levels up): no symlink may leave it."""
    path = Path(path)
    return path.parent.parent if path.parent.name == "observations" else path.parent


def run_file_bytes(path: Path, max_bytes: int = MAX_REPORT) -> bytes:
    """The bytes of one file of a run directory: every reader below starts here.  A regular file inside its run
    directory, of at most ``max_bytes``; else :class:`FileRefused` (a missing file: ``UntrustedFileError``)."""
    return read_regular(path, root=run_root(path), max_bytes=max_bytes)


def why(exc: BaseException) -> str:
    """An exception as one short line (its type and first line)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _archive(raw: bytes, name: Path | str = "<observation>") -> np.lib.npyio.NpzFile:
    """An observation file's bytes as ``np.load``'s lazy archive: the one place they are decompressed, within
    :data:`MAX_OBSERVATION` (the frame's output and every member's declared shape checked first)."""
    data = zstd_decompress_bounded(raw, MAX_OBSERVATION, name=name) if raw[:4] == ZSTD_MAGIC else raw
    check_npz_declared(data, MAX_OBSERVATION, name=name)
    return np.load(io.BytesIO(data), allow_pickle=False)


def open_observation(path: Path) -> np.lib.npyio.NpzFile:
    """The arrays of an observation file (``np.load``'s lazy archive), compressed or not; raises on damage."""
    return _archive(run_file_bytes(path, MAX_OBSERVATION), path)


def load_observation(path: Path) -> tuple[dict, np.ndarray, np.ndarray]:
    """Meta, input and output words of one observation file; raises on any damage (see ``read_observation``)."""
    with open_observation(path) as z:
        return loads_json(str(z["meta"]), name=f"{path}: meta"), z["in_words"], z["out_words"]


@dataclass
class Observation:
    """What could be read of one observation file.

    ``meta`` is None when the checks cannot be read; ``problem`` says what is wrong with the
    file as a whole (None when the words are whole and consistent).
    """

    path: Path
    meta: dict | None
    in_words: np.ndarray | None
    out_words: np.ndarray | None
    problem: str | None

    @property
    def seed(self) -> int | None:
        if self.meta is not None:
            return self.meta["seed"]
        return observation_seed(self.path.name)


def _meta_problem(meta: Any) -> str | None:
    """What is wrong with a decoded meta document, or None; checked so no reader trips on a KeyError."""
    if not isinstance(meta, dict):
        return f"meta is a JSON {type(meta).__name__}, not an object"
    missing = [k for k in ("variant", "seed", "checks", "surroundings") if k not in meta]
    if missing:
        return f"meta lacks {', '.join(missing)}"
    if not isinstance(meta["variant"], str) or not isinstance(meta["seed"], int):
        return "meta variant or seed has the wrong type"
    if not isinstance(meta["checks"], list) or not isinstance(meta["surroundings"], dict):
        return "meta checks or surroundings has the wrong type"
    for i, chk in enumerate(meta["checks"]):
        if not isinstance(chk, dict) or not isinstance(chk.get("check"), str):
            return f"meta checks[{i}] has no check name"
    return None


def _name_problem(path: Path, meta: dict) -> str | None:
    """A meta whose variant and seed are not the file's own (``variant: ../../x/y`` in a renamed copy), or None."""
    own = {observation_name(meta["variant"], meta["seed"]), observation_name(meta["variant"], meta["seed"]).removesuffix(".zst")}
    if path.name not in own:
        return f"meta names variant {meta['variant']!r} seed {meta['seed']}, not this file's"
    return None


def _slice_problem(chk: dict, cases: int) -> str | None:
    s = chk.get("slice")
    if not (isinstance(s, list) and len(s) == 2 and all(isinstance(x, int) for x in s)):
        return f"check {chk['check']}: slice {s!r} is not [start, stop]"
    if not 0 <= s[0] < s[1] <= cases:
        return f"check {chk['check']}: cases {s[0]}..{s[1]} outside the {cases} recorded"
    if not isinstance(chk.get("params", {}), dict):
        return f"check {chk['check']}: params is not an object"
    return None


def read_observation(path: Path) -> Observation:
    """Read one observation file: damage is described in ``problem``; a file over a bound (not a regular file, too
    big, a decompression bomb, meta nested too deep) raises :class:`FileRefused`."""
    try:
        raw = run_file_bytes(path, MAX_OBSERVATION)
    except FileRefused:
        raise
    except UntrustedFileError as exc:
        return Observation(path, None, None, None, f"cannot be read ({exc.reason})")
    head = raw[:4]
    if head not in (b"PK\x03\x04", ZSTD_MAGIC):  # np.load would call foreign bytes "pickled data"
        return Observation(path, None, None, None, "empty file" if not head else f"not an .npz archive (starts {head!r})")
    try:
        z = _archive(raw, path)
    except FileRefused:
        raise
    except Exception as exc:  # BadZipFile, a damaged frame, EOFError, pickled or foreign data, OSError, ...
        return Observation(path, None, None, None, f"not a readable .npz archive ({why(exc)})")
    problems: list[str] = []
    meta = None
    arrays: dict[str, np.ndarray] = {}
    with z:
        if "meta" not in z.files:
            problems.append("no 'meta' array")
        else:
            try:
                meta = loads_json(str(z["meta"]), name=f"{path}: meta")
            except FileRefused:
                raise
            except Exception as exc:
                problems.append(f"meta is not valid JSON ({why(exc)})")
            else:
                bad = _meta_problem(meta) or _name_problem(path, meta)
                if bad:
                    problems.append(bad)
                    meta = None
        for name in ("in_words", "out_words"):
            if name not in z.files:
                problems.append(f"no '{name}' array")
                continue
            try:
                arrays[name] = z[name]
            except Exception as exc:  # a truncated or corrupt member: zlib.error, BadZipFile, ValueError
                problems.append(f"'{name}' unreadable ({why(exc)})")
    iw, ow = arrays.get("in_words"), arrays.get("out_words")
    if iw is not None and ow is not None and not problems:
        if iw.ndim != 3 or ow.ndim != 3:
            problems.append(f"in_words {iw.shape} and out_words {ow.shape} must be [case, lane, word]")
        elif iw.shape[:2] != ow.shape[:2]:
            problems.append(f"in_words {iw.shape} and out_words {ow.shape} differ in cases or lanes")
        elif not (np.issubdtype(iw.dtype, np.integer) and np.issubdtype(ow.dtype, np.integer)):
            problems.append(f"words are {iw.dtype}/{ow.dtype}, not integers")
    return Observation(path, meta, iw, ow, "; ".join(problems) or None)


def recorded_checks(obs: Observation) -> Iterator[tuple[str, CheckRecord | None, str | None]]:
    """Each recorded check of a whole observation (``obs.meta`` read, no ``problem``): its name and its record,
    or its name and what is wrong with it."""
    assert obs.meta is not None and obs.in_words is not None and obs.out_words is not None
    meta = obs.meta
    try:
        sur = Surroundings(**meta["surroundings"])
    except TypeError as exc:
        for chk in meta["checks"]:
            yield chk["check"], None, f"surroundings unreadable ({why(exc)})"
        return
    for chk in meta["checks"]:
        bad = _slice_problem(chk, obs.in_words.shape[0])
        if bad:
            yield chk["check"], None, bad
            continue
        a, b = chk["slice"]
        yield chk["check"], CheckRecord(meta["variant"], chk["check"], meta["seed"], chk.get("params") or {},
                                        chk.get("meta") or {}, sur, obs.in_words[a:b], obs.out_words[a:b]), None


def read_summary(directory: Path) -> tuple[dict, str | None]:
    """summary.json of a run (empty when absent) and a problem with it, if it cannot be read; over a bound (a
    FIFO, /dev/zero behind a symlink, JSON nested too deep): :class:`FileRefused`."""
    path = Path(directory) / "summary.json"
    if not path.exists() and not path.is_symlink():
        return {}, None
    try:
        doc = loads_json(run_file_bytes(path, MAX_SUMMARY), name=path)
    except FileRefused:
        raise
    except UntrustedFileError as exc:
        return {}, f"{path} cannot be read ({exc.reason})"
    if not isinstance(doc, dict):
        return {}, f"{path} is not a JSON object"
    return doc, None


def read_results_bytes(path: Path) -> bytes:
    """results.jsonl (or another line-per-record report) of a run, as bytes: its reader splits the lines."""
    return run_file_bytes(path, MAX_REPORT)


def read_results_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each parsed line of results.jsonl; a line that does not parse (a kill cut it)
    is skipped, a value nested too deep is :class:`FileRefused`.  What a value must hold is the caller's."""
    raw = read_results_bytes(path)
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            yield number, loads_json(line, name=f"{path}:{number}")
        except FileRefused:
            raise
        except UntrustedFileError:
            continue


def result_record(rec: Any, where: str) -> dict:
    """A parsed results.jsonl line as a record, its fields of the types a run writes; else the one-line error."""
    expect(rec, dict, name=where, where="top level")
    for key, types in (("variant", str), ("check", str), ("seed", int), ("status", str)):
        field(rec, key, types, name=where)
    if rec.get("message") is not None:
        expect(rec["message"], str, name=where, where="message")
    return rec


def read_observed_maps(path: Path) -> dict[str, np.ndarray]:
    """observed_maps.npz of a run: key -> observed lane map; raises on damage (:class:`UntrustedFileError`), and
    :class:`FileRefused` over its bound (checked from the declared shapes, before decompressing)."""
    return load_npz_bounded(path, max_bytes=MAX_REPORT, root=run_root(path))


def read_observed_index(path: Path) -> dict:
    """observed_maps.json of a run: its ``variants`` index (empty when it has none)."""
    doc = loads_json(run_file_bytes(path, MAX_SUMMARY), name=path)
    return expect(doc, dict, name=path, where="top level").get("variants", {})
