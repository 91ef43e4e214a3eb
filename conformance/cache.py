"""Where the suite keeps what it can make again: compiled modules, ptxas verdicts, parsed specs.

Everything under it is keyed by a hash of the inputs that made it (never an absolute path), so a stale entry is never
read; deleting the folder costs only time.  ``$PTXCONF_CACHE`` moves it (a benchmark's cold run points it at an empty
folder).  A cache may be shared (a CI runner's home, an NFS folder), so an entry is data, never code, and is checked
before it is used:

* each entry file holds its kind, its key, its size and an HMAC-SHA256 of all three and the payload, under a secret
  kept outside the cache (``$XDG_CONFIG_HOME/ptx-conformance/cache.key``, made on first use, readable by its owner
  only).  A truncated entry, another key's entry copied over this one, or an entry written by someone without the
  secret is a miss, and is made again;
* the folders of :data:`KINDS` together stay under ``$PTXCONF_CACHE_MAX`` (bytes, or with a K/M/G suffix; default
  2G): when a write passes the bound, the entries used longest ago are deleted (a hit marks an entry used);
* ``ptxconf cache info`` says what is there, ``ptxconf cache clear [KIND]`` deletes it.

Other folders under the root (installed ptxas releases) are neither counted nor evicted.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["cache_root", "KINDS", "get", "put", "info", "clear", "evict", "max_bytes", "CacheUsage", "parse_size"]

KINDS: dict[str, str] = {
    "specs": "parsed spec files",
    "cubin": "modules built by ptxas",
    "ptxas": "ptxas verdicts of `ptxconf assemble`",
}
DEFAULT_MAX = 2 << 30
MAGIC = b"ptxconf-cache/1\n"
_KEY = re.compile(r"[0-9a-f]{32,128}")
_HEADER_MAX = 4096
_SIZE = re.compile(r"(\d+)\s*([KMGT]?)i?B?", re.I)


def cache_root() -> Path:
    root = os.environ.get("PTXCONF_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "ptx-conformance"


def parse_size(text: str) -> int:
    """``"2G"``, ``"512M"``, ``"1048576"`` -> bytes; ValueError otherwise."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size (bytes, or a number with K, M, G or T)")
    return int(m.group(1)) << (10 * "KMGT".find(m.group(2).upper()) + 10 if m.group(2) else 0)


def max_bytes() -> int:
    """The bound on the cache's entries: ``$PTXCONF_CACHE_MAX``, else 2 GiB (an unreadable value: the default)."""
    try:
        return parse_size(os.environ["PTXCONF_CACHE_MAX"])
    except (KeyError, ValueError):
        return DEFAULT_MAX


# --- the secret -----------------------------------------------------------------------------------------------------


def _key_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ptx-conformance" / "cache.key"


@cache
def _secret(path: Path) -> bytes:
    """The HMAC secret in ``path``: made there on first use (mode 0600); one owned by someone else, readable by
    others or not a plain file is not trusted, and this process then keys its entries with a secret of its own
    (nothing it writes is read by another process, and nothing foreign is read by it)."""
    if not path.exists():  # written whole, then linked into place: a reader never sees half a key
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        with contextlib.suppress(OSError):
            tmp.unlink()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read(33)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077 and len(data) == 32:
            return data
    except OSError:
        pass
    return secrets.token_bytes(32)


def _mac(kind: str, key: str, payload: bytes) -> str:
    return hmac.new(_secret(_key_file()), kind.encode() + b"\0" + key.encode() + b"\0" + payload,
                    hashlib.sha256).hexdigest()


# --- entries --------------------------------------------------------------------------------------------------------


def _path(kind: str, key: str) -> Path:
    if kind not in KINDS or not _KEY.fullmatch(key):
        raise ValueError(f"cache entry {kind}/{key}: unknown kind or a key that is not a hex digest")
    return cache_root() / kind / key[:2] / key


def get(kind: str, key: str) -> bytes | None:
    """The payload stored under (kind, key) when the entry is intact and was written with this user's secret,
    else None (a miss).  A hit marks the entry as used now."""
    path = _path(kind, key)
    try:  # O_NONBLOCK and O_NOFOLLOW: a FIFO or a symlink put in the cache is a miss, not a hang
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes() + _HEADER_MAX:
                return None
            data = fh.read(st.st_size + 1)
        except OSError:
            return None
    head, sep, rest = data[len(MAGIC):].partition(b"\n")
    if not data.startswith(MAGIC) or not sep or len(head) > _HEADER_MAX:
        return None
    try:
        header = json.loads(head)
        ok = (isinstance(header, dict) and header.get("kind") == kind and header.get("key") == key
              and header.get("size") == len(rest) and isinstance(header.get("mac"), str)
              and hmac.compare_digest(header["mac"], _mac(kind, key, rest)))
    except (ValueError, RecursionError):
        return None
    if not ok:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # least recently used is evicted first
    return rest


_usage: dict[Path, int] = {}  # per cache root: bytes of entries as this process last counted them, plus its writes


def put(kind: str, key: str, payload: bytes) -> None:
    """Store ``payload`` under (kind, key), atomically; a cache that cannot be written is skipped silently (the
    next run makes the entry again).  Keeps the cache under :func:`max_bytes`."""
    path = _path(kind, key)
    header = json.dumps({"kind": kind, "key": key, "size": len(payload), "mac": _mac(kind, key, payload)})
    tmp = path.with_name(f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + header.encode() + b"\n" + payload)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return
    root = cache_root()
    if root not in _usage:
        _usage[root] = usage().total
    else:
        _usage[root] += len(payload) + len(header) + len(MAGIC) + 1
    bound = max_bytes()
    if _usage[root] > bound:
        evict(bound * 9 // 10, keep=path)
        _usage[root] = usage().total


# --- size, eviction, info -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheUsage:
    root: Path
    bound: int
    kinds: dict[str, tuple[int, int]]  # kind -> (entries, bytes)

    @property
    def total(self) -> int:
        return sum(b for _, b in self.kinds.values())


def _files(kind: str) -> list[tuple[float, int, Path]]:
    """(last use, bytes, path) of every file in a kind's folder (entries, leftovers of older formats, temporaries)."""
    out = []
    top = cache_root() / kind
    for dirpath, _dirs, names in os.walk(top, followlinks=False):
        for name in names:
            p = Path(dirpath) / name
            with contextlib.suppress(OSError):
                st = p.lstat()
                out.append((st.st_mtime, st.st_size, p))
    return out


def usage() -> CacheUsage:
    kinds = {}
    for kind in KINDS:
        files = _files(kind)
        kinds[kind] = (len(files), sum(size for _, size, _ in files))
    return CacheUsage(cache_root(), max_bytes(), kinds)


def evict(target: int, keep: Path | None = None) -> tuple[int, int]:
    """Delete the entries used longest ago until the cache holds at most ``target`` bytes: (files, bytes) deleted."""
    files = sorted(f for kind in KINDS for f in _files(kind))
    total = sum(size for _, size, _ in files)
    gone = freed = 0
    for _, size, path in files:
        if total <= target:
            break
        if path == keep:
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            gone, freed, total = gone + 1, freed + size, total - size
    return gone, freed


def info() -> CacheUsage:
    return usage()


def clear(kind: str | None = None) -> tuple[int, int]:
    """Delete every file of ``kind`` (all kinds when None): (files, bytes) deleted."""
    gone = freed = 0
    for k in [kind] if kind else list(KINDS):
        for _, size, path in _files(k):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                gone, freed = gone + 1, freed + size
    _usage.pop(cache_root(), None)
    return gone, freed
