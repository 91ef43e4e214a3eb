"""How a run directory is written: every report file is the old whole version or the new whole version.

Reports go to a temporary file beside the target and are renamed over it (rename is atomic
on one filesystem), so a reader, a crash or a full disk never leaves half a summary or half
a JUnit file.  Verdict lines are appended whole and flushed as they are made.  The lock says
one run writes a directory at a time.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import struct
import time
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "zstd_compress_parts", "stored_zip", "zstd_decompress", "ZSTD_MAGIC", "RunLock", "LockHeld", "RUN_FILES", "holds_a_run", "clear_run"]

LOCK_NAME = ".ptxconf.lock"
# What a run writes into its directory (and what --force clears).
RUN_FILES = ("results.jsonl", "summary.json", "junit.xml", "observed_maps.npz", "observed_maps.json", "observations")


def atomic_write(path: Path, data: str | bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` in one step; on any error the old file stays as it was.  ``durable``: on the
    disk before the rename (fsync), so that not even a power loss leaves the new name on a partial file; without
    it a killed process still never leaves one (the rename is atomic, the written bytes are the kernel's)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # the first bytes of a Zstandard frame


@functools.cache
def _crc32():
    """The zip members' CRC-32: ISA-L's (the ``isal`` package, where installed), else zlib's.  The same checksum; on
    240 MB of the suite's words here ISA-L took 0.02 CPU-s against zlib's 0.14 s, a sixth of what saving an
    observation costs besides."""
    try:
        from isal.isal_zlib import crc32
    except ImportError:
        crc32 = zlib.crc32
    return crc32


@functools.cache
def _zstd():
    """Zstandard from the standard library (3.14+) or the ``zstandard`` package: level 1 compresses the run's words
    about five times faster than zlib level 1, and smaller (measured on the suite's observation files).  Looked up once
    per process: the standard library's import, failing before 3.14, cost a twelfth of writing an observation.

    Returns ``compress_parts(parts, size, level)``, one frame of the buffers ``parts`` (``size`` bytes in all, written
    into the frame header) fed in turn, and ``decompress``."""
    try:
        from compression import zstd  # type: ignore[import-not-found]

        def compress_parts(parts, size, level):
            c = zstd.ZstdCompressor(options={zstd.CompressionParameter.compression_level: level,
                                             zstd.CompressionParameter.checksum_flag: 1})
            c.set_pledged_input_size(size)
            return b"".join([*(c.compress(p) for p in parts), c.flush()])

        return compress_parts, zstd.decompress
    except ImportError:
        import zstandard

        def compress_parts(parts, size, level):
            c = zstandard.ZstdCompressor(level=level, write_checksum=True).compressobj(size=size)
            return b"".join([*(c.compress(p) for p in parts), c.flush()])

        return compress_parts, zstandard.ZstdDecompressor().decompress


def zstd_compress_parts(parts: Sequence[Any], level: int = 1) -> bytes:
    """One Zstandard frame (what ``zstd -d`` reads) of the buffers ``parts`` laid end to end, never joined: the
    content size (their total, known before the first byte) in its header and a checksum of the content (damage is
    found, never decoded into other words)."""
    return _zstd()[0](parts, sum(memoryview(p).nbytes for p in parts), level)


def zstd_decompress(data: bytes) -> bytes:
    return _zstd()[1](data)


# --- a stored zip, as ``zipfile`` writes it --------------------------------------------------------------------------

_ZIP64_OVER = (1 << 31) - 1  # zipfile's ZIP64_LIMIT: a size or offset past it goes to a zip64 field
_ZIP_COUNT_OVER = (1 << 16) - 1  # more members than this: zip64 end records
_ZIP64_VERSION = 45  # "version needed to extract" of zip64 (APPNOTE 4.4.3)
_DOS_1980 = (0, (1 << 5) | 1)  # DOS time 00:00:00 and date 1980-01-01, what zipfile.ZipInfo takes by default
_UNIX_RW = 0o600 << 16  # external attributes of a member zipfile.ZipFile.open writes: -rw-------
_STORED = 0  # compression method: none
_UNIX = 3  # "made by" system of the central directory (zipfile's, but on Windows)


def stored_zip(members: Iterable[tuple[str, Sequence[Any]]]) -> list[Any]:
    """The bytes of a zip archive of ``members`` (name, its content as buffers laid end to end), stored (not deflated),
    as a list of buffers: headers between the members' own buffers, never copied (a caller compresses them in turn,
    :func:`zstd_compress_parts`).  Byte for byte what ``zipfile.ZipFile.open(name, "w", force_zip64=True)`` writes into a
    seekable file: each local header holds its sizes in a zip64 field, so a member of any size has the same header; the
    central directory and end records take zip64 fields only where a size, offset or count needs them.  Every time
    stamp is 1980-01-01 00:00 (zipfile's default), so the same members give the same bytes."""
    out: list[Any] = []
    central: list[bytes] = []
    offset = 0
    for name, parts in members:
        raw_name = name.encode("utf-8")
        flags = 0 if name.isascii() else 0x800  # the name is UTF-8
        size = sum(memoryview(p).nbytes for p in parts)
        crc, crc32 = 0, _crc32()
        for p in parts:
            crc = crc32(p, crc)
        zip64_sizes = struct.pack("<HHQQ", 1, 16, size, size)
        local = struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", _ZIP64_VERSION, 0, flags, _STORED, *_DOS_1980,
                            crc, 0xFFFFFFFF, 0xFFFFFFFF, len(raw_name), len(zip64_sizes)) + raw_name + zip64_sizes
        big, far = size > _ZIP64_OVER, offset > _ZIP64_OVER
        zip64 = [size, size] * big + [offset] * far
        extra = struct.pack(f"<HH{len(zip64)}Q", 1, 8 * len(zip64), *zip64) if zip64 else b""
        central.append(struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", _ZIP64_VERSION, _UNIX, _ZIP64_VERSION, 0, flags,
                                   _STORED, *_DOS_1980, crc, *[0xFFFFFFFF if big else size] * 2, len(raw_name),
                                   len(extra), 0, 0, 0, _UNIX_RW, 0xFFFFFFFF if far else offset) + raw_name + extra)
        out += [local, *parts]
        offset += len(local) + size
    directory = b"".join(central)
    count, end = len(central), b""
    if count > _ZIP_COUNT_OVER or offset > _ZIP64_OVER or len(directory) > _ZIP64_OVER:
        end = (struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, _ZIP64_VERSION, _ZIP64_VERSION, 0, 0, count, count,
                           len(directory), offset)
               + struct.pack("<4sLQL", b"PK\x06\x07", 0, offset + len(directory), 1))
    end += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                       min(len(directory), 0xFFFFFFFF), min(offset, 0xFFFFFFFF), 0)
    return [*out, directory + end]


def holds_a_run(directory: Path) -> bool:
    return any((Path(directory) / name).exists() for name in RUN_FILES)


def clear_run(directory: Path) -> None:
    """Remove what an earlier run wrote (only the run's own files: nothing else of the user's)."""
    for name in RUN_FILES:
        p = Path(directory) / name
        if p.is_symlink():  # the link goes, never what it points at (is_dir() would follow it)
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


class LockHeld(RuntimeError):
    """Another live run writes this directory."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """``DIR/.ptxconf.lock`` holding the writer's pid, host and start time, taken before anything is written."""

    def __init__(self, directory: Path):
        self.path = Path(directory) / LOCK_NAME
        self.held = False
        self.warning: str | None = None

    def acquire(self) -> RunLock:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder.get("host") == me["host"] and isinstance(holder.get("pid"), int) and not _alive(holder["pid"]):
                    self.warning = (f"took over the lock of a run that is gone (pid {holder['pid']}, "
                                    f"started {holder.get('started', '?')})")
                    self.path.unlink(missing_ok=True)
                    continue
                if not holder:  # unreadable: a writer between create and write, or damage
                    raise LockHeld(f"{self.path} exists and cannot be read; remove it if no run writes here") from None
                raise LockHeld(f"another run writes {self.path.parent}: pid {holder.get('pid')} on "
                               f"{holder.get('host')}, started {holder.get('started')}") from None
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            self.held = True
            return self
        raise LockHeld(f"could not take {self.path}")

    def held_by(self) -> str | None:
        """A line naming the live run that holds this lock, or None (no lock, or one left by a dead process)."""
        if not self.path.exists():
            return None
        holder = self._holder()
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int) and not _alive(holder["pid"]):
            return None
        return (f"another run writes {self.path.parent}: pid {holder.get('pid')} on {holder.get('host')}, "
                f"started {holder.get('started')}")

    def _holder(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False
