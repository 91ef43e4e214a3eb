"""Reading files someone else wrote (a run directory you were handed, a shared cache) without trusting them.

Every reader here bounds what it may cost before it pays it:

* file type: regular files only.  A FIFO would block the read forever and ``/dev/zero`` never ends, so the file is
  opened non-blocking and checked with ``fstat`` before a byte is read; with ``root`` given, a path (or a symlink)
  that resolves outside ``root`` is refused too;
* size: the file's size is checked against ``max_bytes`` before reading, and no more than that is read;
* nesting: JSON deeper than ``max_depth`` is refused from a scan of its brackets, before the parser (which recurses)
  sees it;
* decompression: a Zstandard frame stops at ``max_output`` bytes, and an ``.npz`` member's declared shape is read from
  its ``.npy`` header and refused over the bound before anything is decompressed; object arrays are refused (no
  pickle is ever loaded).

What the values mean (a ``status`` that must be a string) is the caller's: :func:`expect` and :func:`field` check a
type and raise the same one-line error.  Imports only the standard library, NumPy and ``zstandard``.
"""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

__all__ = [
    "UntrustedFileError",
    "FileRefused",
    "open_regular",
    "read_regular",
    "load_json",
    "loads_json",
    "iter_jsonl",
    "expect",
    "field",
    "zstd_decompress_bounded",
    "load_npz_bounded",
    "gzip_decompress_bounded",
    "check_npz_declared",
    "ZSTD_MAGIC",
]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_NPY_HEADER_MAX = 1 << 16  # NumPy itself refuses .npy headers longer than this
_NPZ_MEMBERS_MAX = 4096


class UntrustedFileError(ValueError):
    """A file that is not what its reader accepts: one line naming the file and what is wrong."""

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class FileRefused(UntrustedFileError):
    """A file refused before it is read whole: not a regular file, leaving its directory, or over a bound (size,
    nesting, decompressed size).  Damage a reader may report and go on past is the parent class; this one is a file
    nobody should have handed over, and a command stops on it (one line, exit 2)."""


def _inside(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def open_regular(path: str | os.PathLike, *, root: str | os.PathLike | None = None, max_bytes: int) -> BinaryIO:
    """``path`` opened for binary reading, once it is known to be a regular file of at most ``max_bytes``
    (inside ``root``, symlinks resolved, when ``root`` is given).  The caller closes it."""
    path = Path(path)
    if root is not None and not _inside(path, Path(root)):
        raise FileRefused(path, f"resolves outside {root} (a symlink leaving the directory)")
    try:  # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        reason = "no such file" if exc.errno == errno.ENOENT else (exc.strerror or str(exc)).lower()
        raise UntrustedFileError(path, f"cannot open: {reason}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                    or stat.S_ISBLK(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else "a socket"
                    if stat.S_ISSOCK(st.st_mode) else "not a file")
            raise FileRefused(path, f"is {kind}, not a regular file")
        if st.st_size > max_bytes:
            raise FileRefused(path, f"is {st.st_size} bytes; at most {max_bytes} are read")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, *, root: str | os.PathLike | None = None, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (one that grows while read is refused too)."""
    with open_regular(path, root=root, max_bytes=max_bytes) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileRefused(path, f"grew past {max_bytes} bytes while it was read")
    return data


# --- JSON ---------------------------------------------------------------------------------------------------------

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def _depth(data: bytes) -> int:
    """How deep the brackets of a JSON text nest (strings, which may hold brackets, left out): no recursion."""
    bare = _JSON_STRING.sub(b"", data)
    if not bare:
        return 0
    steps = _OPEN[np.frombuffer(bare, dtype=np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def loads_json(data: bytes | str, *, name: str | os.PathLike, max_depth: int = 64) -> Any:
    """A JSON text, refused (naming ``name``) when it is not UTF-8 JSON or nests deeper than ``max_depth``."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    depth = _depth(raw)
    if depth > max_depth:
        raise FileRefused(name, f"JSON nests {depth} deep; at most {max_depth} is read")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(name, f"not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise UntrustedFileError(name, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:  # unreachable under max_depth; kept so no traceback can ever come out
        raise UntrustedFileError(name, "JSON nests too deep") from None


def load_json(path: str | os.PathLike, *, root: str | os.PathLike | None = None, max_bytes: int,
              max_depth: int = 64) -> Any:
    """A JSON file read within the bounds above."""
    return loads_json(read_regular(path, root=root, max_bytes=max_bytes), name=path, max_depth=max_depth)


def iter_jsonl(path: str | os.PathLike, *, root: str | os.PathLike | None = None, max_bytes: int,
               max_depth: int = 64, torn_tail: bool = True) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON-lines file.  A bad line raises, naming
    ``file:line``; with ``torn_tail`` a last line without its newline (a writer stopped mid-line) is dropped when it
    does not parse."""
    data = read_regular(path, root=root, max_bytes=max_bytes)
    lines = data.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, loads_json(line, name=f"{path}:{number}", max_depth=max_depth)
        except UntrustedFileError:
            if torn_tail and number == len(lines):  # the last piece had no newline after it
                return
            raise


def expect(value: Any, types: type | tuple[type, ...], *, name: str | os.PathLike, where: str) -> Any:
    """``value`` when it is of ``types`` (a bool is not taken for an int), else the one-line error."""
    allowed = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in allowed:
        ok = False
    else:
        ok = isinstance(value, allowed)
    if not ok:
        wanted = " or ".join(_JSON_NAMES.get(t, t.__name__) for t in allowed)
        raise UntrustedFileError(name, f"{where}: expected {wanted}, found {_JSON_NAMES.get(type(value), type(value).__name__)}")
    return value


def field(doc: Any, key: str, types: type | tuple[type, ...], *, name: str | os.PathLike, where: str = "") -> Any:
    """``doc[key]`` of ``types``, where ``doc`` must be a JSON object; a missing key or a wrong type is the error."""
    expect(doc, dict, name=name, where=where or "top level")
    if key not in doc:
        raise UntrustedFileError(name, f"{where + '.' if where else ''}{key}: missing")
    return expect(doc[key], types, name=name, where=f"{where + '.' if where else ''}{key}")


_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number",
               bool: "true/false", type(None): "null"}


# --- compressed -----------------------------------------------------------------------------------------------------


def zstd_decompress_bounded(data: bytes, max_output: int, *, name: str | os.PathLike = "<zstd>") -> bytes:
    """One Zstandard stream, refused when its header declares more than ``max_output`` bytes or it decompresses to
    more; never holds more than ``max_output + 1`` bytes of output."""
    import zstandard

    if not data.startswith(ZSTD_MAGIC):
        raise UntrustedFileError(name, "not a Zstandard frame")
    try:
        declared = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise UntrustedFileError(name, f"damaged Zstandard frame: {exc}") from None
    if declared > max_output:
        raise FileRefused(name, f"declares {declared} bytes decompressed; at most {max_output} are read")
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            out = reader.read(max_output + 1)
            while len(out) <= max_output:  # stream_reader may return short reads
                more = reader.read(max_output + 1 - len(out))
                if not more:
                    break
                out += more
    except zstandard.ZstdError as exc:
        raise UntrustedFileError(name, f"damaged Zstandard frame: {exc}") from None
    if len(out) > max_output:
        raise FileRefused(name, f"decompresses to more than {max_output} bytes")
    return out


# What a damaged archive may raise from zipfile, zlib or NumPy's header parser (never let one out as a traceback).
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, struct.error, ValueError, OSError, EOFError, SyntaxError,
                   TypeError, OverflowError, NotImplementedError, RuntimeError)


def _npy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int, name: str) -> np.ndarray:
    """One ``.npy`` member: its header read first, the declared size checked against ``budget``, then exactly that
    many bytes decompressed."""
    where = f"member {info.filename}"
    try:
        with zf.open(info) as fh:
            major, _minor = np.lib.format.read_magic(fh)
            read_header = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0}.get(major)
            if read_header is None:
                raise ValueError(f"unsupported .npy format version {major}")
            shape, fortran, dtype = read_header(fh, max_header_size=_NPY_HEADER_MAX)
            if dtype.hasobject:
                raise UntrustedFileError(name, f"{where}: object arrays are not read (they would unpickle)")
            if not all(isinstance(d, int) and d >= 0 for d in shape):
                raise UntrustedFileError(name, f"{where}: bad shape {shape}")
            count = 1
            for d in shape:
                count *= d
            nbytes = count * dtype.itemsize
            if nbytes > budget:
                raise FileRefused(name, f"{where}: declares shape {shape} of {dtype} ({nbytes} bytes); "
                                               f"at most {budget} more are read")
            raw = fh.read(nbytes)
    except UntrustedFileError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise UntrustedFileError(name, f"{where}: damaged ({type(exc).__name__}: {exc})".replace("\n", " ")) from None
    if len(raw) != nbytes:
        raise UntrustedFileError(name, f"{where}: {len(raw)} bytes of the {nbytes} its header declares")
    try:
        arr = np.frombuffer(raw, dtype=dtype, count=count)
        return arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
    except ValueError as exc:  # e.g. a zero-sized shape too big for NumPy's index type
        raise UntrustedFileError(name, f"{where}: bad shape {shape} ({exc})") from None


def load_npz_bounded(source: str | os.PathLike | bytes, *, max_bytes: int, root: str | os.PathLike | None = None,
                     name: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` (or of an ``.npz`` in one Zstandard frame, as observation files are), by member
    name without ``.npy``: at most ``max_bytes`` of file and ``max_bytes`` of arrays in all, checked from the declared
    shapes before decompressing; no object arrays."""
    label = str(name if name is not None else source if not isinstance(source, bytes) else "<npz>")
    data = source if isinstance(source, bytes) else read_regular(source, root=root, max_bytes=max_bytes)
    if len(data) > max_bytes:
        raise FileRefused(label, f"is {len(data)} bytes; at most {max_bytes} are read")
    if data.startswith(ZSTD_MAGIC):  # the archive's own bytes are bounded as the arrays are
        data = zstd_decompress_bounded(data, max_bytes + _NPY_HEADER_MAX * 4, name=label)
    if not data.startswith(b"PK"):
        raise UntrustedFileError(label, "not an .npz archive")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except _ARCHIVE_ERRORS as exc:
        raise UntrustedFileError(label, f"not an .npz archive ({exc})") from None
    out: dict[str, np.ndarray] = {}
    budget = max_bytes
    with zf:
        members = zf.infolist()
        if len(members) > _NPZ_MEMBERS_MAX:
            raise FileRefused(label, f"{len(members)} members; at most {_NPZ_MEMBERS_MAX} are read")
        for info in members:
            key = info.filename.removesuffix(".npy")
            if key in out:
                raise UntrustedFileError(label, f"member {info.filename} appears twice")
            arr = _npy_member(zf, info, budget, label)
            budget -= arr.nbytes
            out[key] = arr
    return out


def gzip_decompress_bounded(data: bytes, max_output: int, *, name: str | os.PathLike = "<gzip>") -> bytes:
    """A gzip stream (members concatenated), refused once it decompresses past ``max_output`` bytes; never holds more
    than ``max_output + 1`` bytes of output."""
    out = bytearray()
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += d.decompress(rest, max_output + 1 - len(out))
            if len(out) > max_output:
                raise FileRefused(name, f"decompresses to more than {max_output} bytes")
            if not d.eof:
                raise UntrustedFileError(name, "damaged gzip stream: cut short")
            rest = d.unused_data
    except zlib.error as exc:
        raise UntrustedFileError(name, f"damaged gzip stream: {exc}") from None
    return bytes(out)


def check_npz_declared(data: bytes, max_bytes: int, *, name: str | os.PathLike) -> None:
    """Refuse an ``.npz`` whose members declare (in the zip directory or their ``.npy`` headers) more than
    ``max_bytes`` in all, before a reader such as ``np.load`` decompresses one.  Damage is left to that reader (this
    only bounds what it may cost): an archive or a header that cannot be read is passed over here."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except _ARCHIVE_ERRORS:
        return
    with zf:
        members = zf.infolist()
        if len(members) > _NPZ_MEMBERS_MAX:
            raise FileRefused(name, f"{len(members)} members; at most {_NPZ_MEMBERS_MAX} are read")
        declared = sum(info.file_size for info in members)
        if declared > max_bytes + _NPY_HEADER_MAX * len(members):
            raise FileRefused(name, f"declares {declared} bytes decompressed; at most {max_bytes} are read")
        budget = max_bytes
        for info in members:
            try:
                with zf.open(info) as fh:
                    major, _minor = np.lib.format.read_magic(fh)
                    read_header = {1: np.lib.format.read_array_header_1_0,
                                   2: np.lib.format.read_array_header_2_0}.get(major)
                    if read_header is None:
                        continue
                    shape, _fortran, dtype = read_header(fh, max_header_size=_NPY_HEADER_MAX)
            except _ARCHIVE_ERRORS:
                continue
            count = 1
            for d in shape:
                count *= d if isinstance(d, int) and d >= 0 else 0
            budget -= count * dtype.itemsize
            if budget < 0:
                raise FileRefused(name, f"member {info.filename} declares shape {shape} of {dtype}; the arrays "
                                        f"declare more than {max_bytes} bytes in all")
