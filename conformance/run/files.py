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
import time
from pathlib import Path

__all__ = ["atomic_write", "zstd_compress", "zstd_decompress", "ZSTD_MAGIC", "RunLock", "LockHeld", "RUN_FILES", "holds_a_run", "clear_run"]

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
def _zstd():
    """Zstandard from the standard library (3.14+) or the ``zstandard`` package: level 1 compresses the run's words
    about five times faster than zlib level 1, and smaller (measured on the suite's observation files).  Looked up once
    per process: the standard library's import, failing before 3.14, cost a twelfth of writing an observation."""
    try:
        from compression import zstd  # type: ignore[import-not-found]

        def compress(data, level):
            return zstd.compress(data, options={zstd.CompressionParameter.compression_level: level,
                                                zstd.CompressionParameter.checksum_flag: 1})

        return compress, zstd.decompress
    except ImportError:
        import zstandard

        return (lambda data, level: zstandard.ZstdCompressor(level=level, write_checksum=True).compress(data),
                zstandard.ZstdDecompressor().decompress)


def zstd_compress(data: bytes, level: int = 1) -> bytes:
    """One Zstandard frame (what ``zstd -d`` reads), with the content size in its header and a checksum of the
    content (damage is found, never decoded into other words)."""
    return _zstd()[0](data, level)


def zstd_decompress(data: bytes) -> bytes:
    return _zstd()[1](data)


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
