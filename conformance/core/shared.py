"""Words shared between the processes of a run: arrays in memory-mapped files that pickle as a file name.

A run's words (every plan's input words, every launch's output words: gigabytes for the whole suite) used to
travel pickled through pipes, plan worker -> run -> GPU worker -> run -> comparing worker, several copies each,
all through the run's one process.  Inside an :func:`arena`, :func:`share` puts a large array in a file of a
memory-backed directory (``/dev/shm`` where it has room); the array pickles as (file, offset, shape, dtype) and
the receiving process maps the same pages.  Without an arena, with a small array or when the directory refuses
the space, arrays stay ordinary and pickle by value: sharing changes speed, never results.

Each run's directory is named by a random token, and the run holds a lock (``flock``) on a file in it for as
long as it lives (its forked workers inherit the lock).  A directory whose lock nobody holds is a dead run's and
is removed; one whose lock is held is never touched, whatever its name says, also when its run lives in another
PID namespace sharing this ``/dev/shm`` (where no pid can be checked).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import mmap
import os
import resource
import secrets
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np

__all__ = ["SharedArray", "SharedRef", "arena", "share", "share_together", "zeros", "zeros_parts", "is_shared", "release", "MIN_BYTES"]

MIN_BYTES = 256 << 10  # below this, pickling by value costs less than a file and a mapping
_PREFIX = "ptxconf-words-"
_OWNER = ".owner"  # locked by the run that made the directory, while it lives
_state: dict[str, object] = {"dir": None}
_count = itertools.count()


class SharedArray(np.ndarray):
    """An ndarray whose memory is a mapped file; a C-contiguous view of it pickles as a reference to that file."""

    _file: str | None
    _base_addr: int
    _map_size: int

    def __array_finalize__(self, obj) -> None:
        self._file = getattr(obj, "_file", None)
        self._base_addr = getattr(obj, "_base_addr", 0)
        self._map_size = getattr(obj, "_map_size", 0)

    def _offset(self) -> int | None:
        """Where this array's memory starts in its file: None for memory outside the mapping (a copy)."""
        if self._file is None or not self.flags.c_contiguous:
            return None
        offset = self.__array_interface__["data"][0] - self._base_addr
        return offset if 0 <= offset and offset + self.nbytes <= self._map_size else None

    def __reduce__(self):
        offset = self._offset()
        if offset is None:
            return np.asarray(self).copy().__reduce__()  # a copy or a strided view: by value
        return _attach, (self._file, offset, self.shape, self.dtype.str)

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        # Results of ufuncs are new memory: plain arrays, so they pickle by value.
        out = np.asarray(obj)
        return out[()] if return_scalar else out


def _attach(path: str, offset: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The receiving side of a pickled :class:`SharedArray`: the same file, mapped here (once per process while any
    array of it lives: a plan's words share one file)."""
    n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if n == 0:
        return np.zeros(shape, dtype=dtype)
    flat = _mapped.get(path)
    if flat is None:
        with open(path, "r+b") as fh:
            mm = mmap.mmap(fh.fileno(), 0)
        flat = _mapped[path] = _wrap(mm, path)
    return flat[offset : offset + n].view(dtype).reshape(shape).view(SharedArray)


class SharedRef:
    """A shared array that this process passes on without reading its words: the file reference a
    :class:`SharedArray` pickles as, kept as such, mapped only when something reads the words.

    Why: the run's process takes every plan and hands its words to the GPU worker and its comparison, each of which
    maps the file itself; mapping each plan's file here too (an open and an ``mmap`` per plan) cost the run's one
    thread 1.2 s of a 15 s warm suite on the H200 host.  Its shape, dtype and length are known without the words;
    anything else (a slice, an array operation) maps the file then and reads the array."""

    __slots__ = ("_file", "_at", "shape", "dtype", "_array")

    def __init__(self, path: str, offset: int, shape: tuple[int, ...], dtype: str):
        self._file, self._at, self.shape, self.dtype = path, offset, tuple(shape), np.dtype(dtype)
        self._array: np.ndarray | None = None

    def __reduce__(self):
        return _attach, (self._file, self._at, self.shape, self.dtype.str)

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def mapped(self) -> np.ndarray:
        """The words (the file mapped here, once)."""
        if self._array is None:
            self._array = _attach(self._file, self._at, self.shape, self.dtype.str)
        return self._array

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        arr = self.mapped()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __getitem__(self, key):
        return self.mapped()[key]

    def __getattr__(self, name: str):
        return getattr(self.mapped(), name)


# The mapping of each file this process attached, while an array of it lives (a view keeps its file's flat array).
_mapped: weakref.WeakValueDictionary[str, SharedArray] = weakref.WeakValueDictionary()


def _wrap(mm: mmap.mmap, path: str) -> SharedArray:
    flat = np.frombuffer(mm, dtype=np.uint8).view(SharedArray)
    flat._file = path
    flat._base_addr = flat.__array_interface__["data"][0]
    flat._map_size = len(mm)
    return flat


def _directory() -> Path:
    """``/dev/shm`` where it is a writable directory, else the temporary directory (the page cache then)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return Path(tempfile.gettempdir())


def _stale(base: Path) -> None:
    """Remove the directories of runs that are gone (killed before they could clean up): those whose owner lock
    nobody holds.  A directory without the lock file (one being made, or an older version's) is left alone."""
    for d in base.glob(_PREFIX + "*"):
        try:
            fd = os.open(d / _OWNER, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a live run's
            continue
        else:
            shutil.rmtree(d, ignore_errors=True)
        finally:
            os.close(fd)


def _own(d: Path) -> int:
    """The owner lock of a new run directory, held (by this process and its forked workers) until closed."""
    fd = os.open(d / _OWNER, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


@contextlib.contextmanager
def arena(enabled: bool = True) -> Iterator[Path | None]:
    """Share words inside this block (forked workers inherit it); everything it made is removed at the end."""
    if not enabled or _state["dir"] is not None:
        yield _state["dir"]  # type: ignore[misc]
        return
    base = _directory()
    _stale(base)
    try:
        d = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{secrets.token_hex(8)}-", dir=base))
    except OSError:
        yield None
        return
    try:
        owner = _own(d)
    except OSError:
        shutil.rmtree(d, ignore_errors=True)
        yield None
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # every mapping keeps a descriptor open (Python's mmap duplicates it)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    _state["dir"] = d
    try:
        yield d
    finally:
        _state["dir"] = None
        _remove(d)
        os.close(owner)


def _remove(d: Path) -> None:
    """The arena's files unlinked by several threads at once, then the directory.  Why: unlinking a file gives its
    pages back to the kernel, which takes time by the gigabyte; one unlink after another was a third of a second at
    each lane's end of a whole-suite run (sampled on one H200 host), and an unlink waits in the kernel with the GIL
    released."""
    files = [Path(top, name) for top, _dirs, names in os.walk(d) for name in names]
    if len(files) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(8, len(files))) as pool:
            for _ in pool.map(_unlink, files):
                pass
    shutil.rmtree(d, ignore_errors=True)


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):  # what is left, rmtree removes or leaves as it always did
        path.unlink()


def directory() -> Path | None:
    """The arena of this process (inherited by forked workers), or None."""
    return _state["dir"]  # type: ignore[return-value]


_RECYCLED = "r-"  # the name of a file whose space goes back to the arena when released (:func:`release`)
_FREE = "free"  # the arena's folder of released space, each file named ``<bytes>-<pid>-<n>``
FREE_BYTES = 4 << 30  # released space the arena keeps for reuse at most; past it a released file is removed
FREE_SLACK = 2  # a released file serves a request of at least 1/FREE_SLACK of its size


def _new(nbytes: int, where: Path | None, recycle: bool = False, zeroed: bool = False) -> tuple[mmap.mmap, str] | None:
    """A mapped file of ``nbytes`` in the arena (or ``where``).  ``recycle``: in space released earlier where some
    fits (its old bytes still in it), this file's space able to go back to the arena when released (:func:`release`).
    Why: a new file's pages are allocated and zeroed by the kernel, the plan workers' system time (0.75 ms per MB on
    the 2-core host; 8.5 of the plan workers' 57 CPU-s in a warm suite on the H100 host); a released file's pages are
    there already, mapped at once (``MAP_POPULATE``), a third of the cost.  ``zeroed``: the file reads as zeros (a new
    one does; released space is cleared, still a fraction of the kernel's cost)."""
    where = where or directory()
    if where is None or nbytes < MIN_BYTES:
        return None
    path = str(where / f"{_RECYCLED if recycle else ''}{os.getpid()}-{next(_count)}")
    if recycle and (claimed := _claim(where, nbytes, path)) is not None:
        if zeroed:
            np.frombuffer(claimed, dtype=np.uint8)[:] = 0
        return claimed, path
    made = _map(path, nbytes, fresh=True)
    return None if made is None else (made, path)


def _claim(where: Path, nbytes: int, path: str) -> mmap.mmap | None:
    """The smallest released file of ``where`` that fits ``nbytes``, renamed to ``path`` (a rename: one process wins
    it) and mapped; None where none fits."""
    try:
        names = os.listdir(where / _FREE)
    except OSError:
        return None
    fits = sorted((size, name) for name in names
                  if (size := int(name.split("-", 1)[0])) >= nbytes and size <= FREE_SLACK * nbytes)
    for _, name in fits:
        try:
            os.rename(where / _FREE / name, path)
        except OSError:  # another process took it first
            continue
        return _map(path, nbytes, fresh=False)
    return None


def _map(path: str, nbytes: int, fresh: bool) -> mmap.mmap | None:
    """``path`` mapped for ``nbytes``: a new file given its space now (``fresh``: an error now, never a SIGBUS on a
    later write), or released space with its pages mapped at once; None where that fails (the file removed)."""
    try:
        fd = os.open(path, os.O_RDWR | (os.O_CREAT | os.O_EXCL if fresh else 0), 0o600)
    except OSError:
        return None
    try:
        if fresh:
            os.posix_fallocate(fd, 0, nbytes)
            return mmap.mmap(fd, nbytes)
        return mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    finally:
        os.close(fd)


def _give_back(path: str) -> None:
    """A released file of recycled space into the arena's free folder (or removed, past :data:`FREE_BYTES`)."""
    where = Path(path).parent
    free = where / _FREE
    try:
        size = os.stat(path).st_size
        free.mkdir(exist_ok=True)
        kept = sum(int(name.split("-", 1)[0]) for name in os.listdir(free))
        if kept + size <= FREE_BYTES:
            os.rename(path, free / f"{size}-{os.getpid()}-{next(_count)}")
            return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.unlink(path)


def zeros(shape: tuple[int, ...], dtype=np.uint32, where: Path | str | None = None) -> np.ndarray:
    """A zeroed array, shared when an arena (or ``where``) is given and it is large enough."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    made = _new(nbytes, Path(where) if where else None)
    if made is None:
        return np.zeros(shape, dtype=dtype)
    mm, path = made
    return _wrap(mm, path).view(dtype).reshape(shape)  # a new file reads as zeros


def zeros_parts(shapes: list[tuple[int, ...]], dtype=np.uint32, recycle: bool = False) -> list[np.ndarray]:
    """Zeroed arrays of ``shapes`` in one shared file (a module's out words, one array per plan: one file to make
    instead of one per plan); its file goes when every part has been released (:func:`release`); ``recycle``: as
    :func:`share_together`."""
    dtype = np.dtype(dtype)
    sizes = [int(np.prod(s, dtype=np.int64)) * dtype.itemsize for s in shapes]
    starts, total = _laid_out(sizes)
    made = _new(total, None, recycle, zeroed=True)
    if made is None:
        return [np.zeros(s, dtype=dtype) for s in shapes]
    flat = _wrap(*made)
    _parts_left[flat._file] = len(shapes)
    return [flat[a : a + n].view(dtype).reshape(s) for s, a, n in zip(shapes, starts, sizes)]


_parts_left: dict[str, int] = {}  # per file of :func:`zeros_parts` made here: its parts not released yet


def _laid_out(sizes: list[int]) -> tuple[list[int], int]:
    """Where arrays of ``sizes`` bytes start in one file, each on a 64-byte boundary, and the file's size."""
    starts, pos = [], 0
    for n in sizes:
        starts.append(pos)
        pos += -(-n // 64) * 64
    return starts, pos


def share(arr: np.ndarray, where: Path | str | None = None, recycle: bool = False) -> np.ndarray:
    """``arr`` itself where it is shared already, small, or no arena is open; else a shared copy (``recycle``: as
    :func:`share_together`)."""
    if is_shared(arr):
        return arr
    return share_together(arr, where=where, recycle=recycle)[0]


def share_together(*arrays: np.ndarray, where: Path | str | None = None,
                   recycle: bool = False) -> tuple[np.ndarray, ...]:
    """Shared copies of ``arrays`` in one file (one file to make, and one mapping for each process that attaches
    them all: a plan's input words, predicted words and defined bits); the arrays themselves where no arena is
    open or they are small together.  ``recycle``: in space released before where some fits, and its own space
    given back when released so (``release(give_back=True)``: a plan's words, once compared and recorded)."""
    arrays = tuple(np.ascontiguousarray(a) for a in arrays)
    starts, total = _laid_out([a.nbytes for a in arrays])
    made = _new(total, Path(where) if where else None, recycle)
    if made is None:
        return arrays
    flat = _wrap(*made)
    out = []
    for a, at in zip(arrays, starts):
        view = flat[at : at + a.nbytes].view(a.dtype).reshape(a.shape)
        view[...] = a
        out.append(view)
    return tuple(out)


def is_shared(arr) -> bool:
    """Whether ``arr`` pickles as a file reference."""
    return isinstance(arr, SharedRef) or (isinstance(arr, SharedArray) and arr._offset() is not None)


def release(*arrays, give_back: bool = False) -> None:
    """Remove the files behind these arrays: no process can attach to them any more, mapped pages stay readable
    until the last mapping goes (call it once every process that needs them has them).  ``give_back``: a file made
    to take released space (``recycle``) goes back to the arena instead, its pages written again by the next plan
    that takes them: only for words nothing reads any more, here or in another process."""
    for arr in arrays:
        if isinstance(arr, (SharedArray, SharedRef)) and arr._file is not None:
            left = _parts_left.get(arr._file)
            if left is not None:  # one part of a file of several: the file goes with the last
                if left > 1:
                    _parts_left[arr._file] = left - 1
                    continue
                del _parts_left[arr._file]
            if give_back and os.path.basename(arr._file).startswith(_RECYCLED):
                _give_back(arr._file)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(arr._file)
