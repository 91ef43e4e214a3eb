"""Shared words: what pickles as a file reference, what by value, and that results never depend on it."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import secrets
import shutil
import subprocess
import sys

import numpy as np
import pytest
from ptxconf.backends.base import Launch
from ptxconf.backends.pycuda_backend import _wire
from ptxconf.core import shared

PROBE = type("Probe", (), {"name": "probe"})()
BIG = (64, 128, 16)  # 512 KiB of uint32: above shared.MIN_BYTES


def _words(shape=BIG, seed=1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32, size=shape, dtype=np.uint32)


def test_whole_arrays_and_row_slices_pickle_as_references_and_read_back_equal():
    a = _words()
    with shared.arena() as d:
        assert d is not None and d.is_dir()
        s = shared.share(a)
        assert shared.is_shared(s) and np.array_equal(s, a)
        for view in (s, s[3:17], s[5]):
            data = pickle.dumps(view)
            assert len(data) < 400, "a contiguous view travels as (file, offset, shape, dtype)"
            back = pickle.loads(data)
            assert np.array_equal(back, view) and back.dtype == view.dtype
        back = pickle.loads(pickle.dumps(s[10:12]))
        back[0, 0, 0] = 12345  # the same pages: a write on one side is seen on the other
        assert s[10, 0, 0] == 12345
    assert not d.exists(), "the arena's files go with it"


@pytest.mark.parametrize("derive", [lambda s: s.copy(), lambda s: s + 1, lambda s: s[:, :, ::2], lambda s: s[[3, 1, 2]]])
def test_copies_strided_views_and_computed_arrays_pickle_by_value(derive):
    with shared.arena():
        s = shared.share(_words())
        d = derive(s)
        assert not shared.is_shared(d)
        data = pickle.dumps(d)
        assert len(data) >= d.nbytes
        assert np.array_equal(pickle.loads(data), d)


def test_small_arrays_no_arena_and_a_refusing_directory_stay_ordinary(tmp_path):
    small = np.arange(10, dtype=np.uint32)
    with shared.arena():
        assert shared.share(small) is small
    big = _words()
    assert shared.share(big) is big, "outside an arena nothing is shared"
    z = shared.zeros(BIG, np.uint32, where=tmp_path / "missing")
    assert type(z) is np.ndarray and not z.any()
    with shared.arena():
        z = shared.zeros(BIG, np.uint32)
        assert shared.is_shared(z) and z.shape == BIG and not z.any()


def _words_files(d) -> list[str]:
    """The arena's word files (not its owner lock)."""
    return [n for n in os.listdir(d) if n != shared._OWNER]


def test_release_removes_the_file_but_mapped_pages_stay_readable():
    with shared.arena() as d:
        s = shared.share(_words())
        ref = pickle.dumps(s)
        assert len(_words_files(d)) == 1
        shared.release(s)
        assert _words_files(d) == []
        assert np.array_equal(s, _words())
        with pytest.raises(FileNotFoundError):
            pickle.loads(ref)


def _child_sum(data: bytes, q) -> None:
    arr = pickle.loads(data)
    arr[0, 0, 0] = 7
    q.put(int(arr[1:].sum(dtype=np.uint64)))


def test_another_process_maps_the_same_words():
    a = _words()
    with shared.arena():
        s = shared.share(a)
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=_child_sum, args=(pickle.dumps(s), q))
        p.start()
        total = q.get(timeout=60)
        p.join(60)
        assert total == int(a[1:].sum(dtype=np.uint64))
        assert s[0, 0, 0] == 7


def test_arena_removes_directories_of_dead_runs_and_never_a_live_one():
    """A dead run's directory (its owner lock free) goes; a live run's (its lock held, here by another process that
    shares nothing else with this one, as a run in another PID namespace would) stays, whatever its name says."""
    base = shared._directory()
    dead = base / f"{shared._PREFIX}{secrets.token_hex(8)}-stale"
    dead.mkdir()
    (dead / shared._OWNER).write_bytes(b"")
    (dead / "x").write_bytes(b"0")
    # An old-style pid name no process has here.  Made under another name and locked before it takes the run name:
    # a run starting meanwhile elsewhere (another test worker) must never see it unlocked.
    live = base / f"{shared._PREFIX}999999999-live-{secrets.token_hex(4)}"
    making = base / f"making-{secrets.token_hex(8)}"
    making.mkdir()
    (making / shared._OWNER).write_bytes(b"")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
                               "fcntl.flock(fd, fcntl.LOCK_EX); os.rename(sys.argv[2], sys.argv[3]); "
                               "print('held', flush=True); sys.stdin.read()",
                               str(making / shared._OWNER), str(making), str(live)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with shared.arena() as mine:
            assert mine is not None and mine.name.startswith(shared._PREFIX)
        assert not dead.exists() and live.exists()
    finally:
        holder.communicate("")
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(making, ignore_errors=True)


def test_gpu_worker_gets_shared_words_by_reference_and_anything_else_by_rows():
    """What the PyCUDA backend sends its worker: a launch of shared words is (whole words, rows to gather, out buffer);
    unshared words go as the launch's own rows, and the out words come back by value."""
    words = _words()
    rows = np.array([5, 2, 9])
    order = np.array([2, 0, 1], dtype=np.uint32)
    with shared.arena():
        s, out = shared.share(words), shared.zeros(BIG, np.uint32)
        (item,), made = _wire([Launch(PROBE, s, 4, order, 1, rows=rows, into=out)])
        kernel, sent, gather, nout, sent_order, wpb, into, into_rows = item
        assert sent is s and gather is rows and into is out and into_rows is rows and made == []
        assert len(pickle.dumps(item)) < 2000
        (item,), made = _wire([Launch(PROBE, words, 4, order, 1, rows=rows, into=out)])
        assert shared.is_shared(item[1]) and len(made) == 1, "a plan's unshared words are shared once for the call"
        shared.release(*made)
    (item,), made = _wire([Launch(PROBE, words, 4, order, 1, rows=rows,
                                  into=np.zeros(BIG, np.uint32))])
    assert np.array_equal(item[1], words[rows]) and item[2] is None and item[6] is None and made == []


def test_arrays_shared_together_live_in_one_file_and_attach_to_one_mapping():
    """A plan's words, predicted words and defined bits: one file to make, one mapping per process that reads them."""
    a, b, c = _words(), _words((7, 128, 3), seed=2), _words((128, 3), seed=3)
    with shared.arena():
        sa, sb, sc = shared.share_together(a, b, c)
        assert all(shared.is_shared(x) for x in (sa, sb, sc))
        assert len({x._file for x in (sa, sb, sc)}) == 1
        assert np.array_equal(sa, a) and np.array_equal(sb, b) and np.array_equal(sc, c)
        ra, rb, rc = pickle.loads(pickle.dumps((sa, sb, sc)))  # what a receiving process gets back
        assert np.array_equal(ra, a) and np.array_equal(rb, b) and np.array_equal(rc, c)
        assert ra.base is rb.base is rc.base, "the file is mapped once, every array a view of it"
        rb[1, 2, 0] = 99  # a view of the same pages as the original
        assert sb[1, 2, 0] == 99 and np.array_equal(sa, a) and np.array_equal(sc, c)
        shared.release(sa, sb, sc)
    small = _words((2, 2), seed=4)
    assert shared.share_together(small)[0] is not None and not shared.is_shared(shared.share_together(small)[0])


def test_parts_of_one_file_keep_it_until_the_last_part_is_released():
    """A module's out words, one part per plan: a worker that attaches a later part after an earlier one was
    released still finds the file."""
    shapes = [(30, 128, 40), (50, 128, 40), (10, 128, 40)]
    with shared.arena():
        parts = shared.zeros_parts(shapes)
        assert [p.shape for p in parts] == shapes and all(shared.is_shared(p) and not p.any() for p in parts)
        path = parts[0]._file
        assert {p._file for p in parts} == {path}
        parts[1][...] = 7
        assert not parts[0].any() and not parts[2].any(), "parts never overlap"
        shared.release(parts[0])
        shared.release(parts[2])
        assert os.path.exists(path)
        assert np.all(pickle.loads(pickle.dumps(parts[1])) == 7)
        shared.release(parts[1])
        assert not os.path.exists(path)


def test_a_reference_passed_on_unread_maps_nothing_and_reads_the_same_words_when_read():
    """The run's process takes a plan's words as references (it hands them on to the GPU worker and the comparison,
    which map the file themselves): nothing is mapped until something reads them, and then the words are the same."""
    a, b = _words(), _words((7, 128, 3), seed=2)
    with shared.arena():
        sa, sb = shared.share_together(a, b)
        path = sa._file
        ref = shared.SharedRef(*sa.__reduce__()[1])
        assert shared.is_shared(ref) and ref.shape == a.shape and len(ref) == len(a) and ref.dtype == a.dtype
        assert ref.nbytes == a.nbytes and ref.ndim == 3 and ref._array is None, "its shape is known without a mapping"
        again = pickle.loads(pickle.dumps(ref))  # the GPU worker's side: the same reference, attached there
        assert isinstance(again, shared.SharedArray) and np.array_equal(again, a)
        (item,), made = _wire([Launch(PROBE, ref, 4, np.arange(3, dtype=np.uint32), 1, rows=np.array([4, 1, 6]))])
        assert item[1] is ref and made == [], "handed on as the reference it is"
        assert ref._array is None
        assert np.array_equal(ref[4:6], a[4:6]) and np.array_equal(np.asarray(ref), a) and ref.sum() == a.sum()
        assert np.array_equal(Launch(PROBE, ref, 4, np.arange(64, dtype=np.uint32), 1).words(), a)
        shared.release(ref, sb)
        assert not os.path.exists(path)
        assert np.array_equal(ref[0], a[0]), "pages mapped before the release stay readable"


def test_the_run_process_takes_plans_with_their_words_unmapped():
    """A plan made by a plan worker reaches the run's process with its words as references (see SharedRef)."""
    from ptxconf.run.planpool import _Codec

    a = _words()
    with shared.arena():
        s = shared.share(a)
        data = _Codec({}).dumps({"words": s})
        assert isinstance(_Codec({}, words_unmapped=True).loads(data)["words"], shared.SharedRef)
        assert isinstance(_Codec({}).loads(data)["words"], shared.SharedArray)
        shared.release(s)


def _inode(path: str) -> int:
    return os.stat(path).st_ino


def test_recycled_space_goes_back_to_the_arena_and_the_next_plan_takes_it(monkeypatch):
    """A plan's words (``recycle``): released, the file's space waits in the arena and the next request it fits
    takes it (the same pages: no new allocation), with its own words and nothing of the old ones it reads."""
    a, b = _words((128, 128, 16)), _words((100, 128, 16), seed=9)  # 1 MiB, then 800 KiB
    with shared.arena() as d:
        (sa,) = shared.share_together(a, recycle=True)
        first, ino = sa._file, _inode(sa._file)
        ref = pickle.dumps(sa)
        shared.release(sa, sa, give_back=True)  # twice (words and predicted words share the file): given back once
        assert not os.path.exists(first) and len(os.listdir(d / "free")) == 1
        with pytest.raises(FileNotFoundError):
            pickle.loads(ref)  # nobody attaches to a released file
        sb = shared.share(b, recycle=True)  # smaller, within the slack: the same space
        assert _inode(sb._file) == ino and os.listdir(d / "free") == []
        assert np.array_equal(sb, b) and np.array_equal(pickle.loads(pickle.dumps(sb)), b)
        shared.release(sb, give_back=True)
        tiny = shared.share(_words((40, 128, 16), seed=3), recycle=True)  # under half of it: a file of its own
        assert _inode(tiny._file) != ino and len(os.listdir(d / "free")) == 1
        plain = shared.share(a)  # not recycled: removed when released, as before
        shared.release(plain, give_back=True)
        assert not os.path.exists(plain._file) and len(os.listdir(d / "free")) == 1
        kept = shared.share(b, recycle=True)  # takes the free space; released without give_back (its words may
        shared.release(kept)  # still be read): removed, its words readable here
        assert not os.path.exists(kept._file) and os.listdir(d / "free") == [] and np.array_equal(kept, b)
        monkeypatch.setattr(shared, "FREE_BYTES", 0)  # past the bound: a released file is removed
        shared.release(tiny, give_back=True)
        assert not os.path.exists(tiny._file) and os.listdir(d / "free") == []
    assert not d.exists(), "the arena's free space goes with it"


def _claim_one(d, n, q) -> None:
    made = shared._claim(d, n, str(d / f"r-claim-{os.getpid()}"))
    q.put(made is not None)


def test_released_space_goes_to_one_process_only():
    """Workers claim released space by renaming it: of several asking at once for the one free file, one gets it."""
    with shared.arena() as d:
        (s,) = shared.share_together(_words(), recycle=True)
        shared.release(s, give_back=True)
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        procs = [ctx.Process(target=_claim_one, args=(d, _words().nbytes, q)) for _ in range(4)]
        for p in procs:
            p.start()
        got = [q.get(timeout=30) for _ in procs]
        for p in procs:
            p.join()
        assert sorted(got) == [False, False, False, True]


def test_recycled_out_words_read_as_zeros():
    """A module's out words in released space: zeros, as in a new file (rows a failed launch never wrote are
    recorded as zeros, never as an earlier module's words)."""
    with shared.arena() as d:
        parts = shared.zeros_parts([(64, 128, 16), (40, 128, 16)], recycle=True)
        ino = _inode(parts[0]._file)
        for p in parts:
            p[...] = 0xDEADBEEF
        shared.release(*parts, give_back=True)
        assert len(os.listdir(d / "free")) == 1, "given back with its last part"
        again = shared.zeros_parts([(100, 128, 16)], recycle=True)
        assert _inode(again[0]._file) == ino and not again[0].any()


def _kept_outcomes(done: bool) -> list:
    """Outcomes of a small run, each with copies of its words taken while ``on_outcome`` ran."""
    from ptxconf.backends.emulator import EmulatorBackend
    from ptxconf.isa import load_specs
    from ptxconf.oracle import mma
    from ptxconf.run import runner

    specs = load_specs()
    vs = [specs.variants[f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16/ss"] for n in (256, 248, 240)]
    kept: list = []
    saved, runner.MODULE_PLANS = runner.MODULE_PLANS, 1  # a module per plan: each new one may take freed space
    try:
        runner.run_variants(EmulatorBackend(mma), vs, runner.RunRequest(3, value_cases=2, words_done_after_outcome=done),
                            on_outcome=lambda o: kept.append((o, np.array(o.out_words))))
    finally:
        runner.MODULE_PLANS = saved
    assert len(kept) == len(vs) and all(shared.is_shared(o.out_words) or o.out_words is None for o, _ in kept)
    return kept


def test_outcomes_kept_by_a_caller_keep_their_words():
    """A library caller that keeps outcomes reads their words after the run, unchanged: only a run that says its
    words are done after each outcome (the CLI's) gives their space to later modules (and then a kept outcome's out
    words are a later module's: this test would see it)."""
    assert all(np.array_equal(o.out_words, out) for o, out in _kept_outcomes(False))
    assert not all(np.array_equal(o.out_words, out) for o, out in _kept_outcomes(True))


def test_an_arena_of_many_files_goes_whole_with_its_free_space():
    """The files are unlinked by several threads at once (a lane's end of a whole suite gives back gigabytes): every
    file, in the arena and in its free space, and the directories."""
    with shared.arena() as d:
        kept = [shared.share(_words((64, 128, 16), seed=s)) for s in range(6)]
        freed = shared.share(_words((64, 128, 16), seed=7), recycle=True)
        shared.release(freed, give_back=True)
        assert len(os.listdir(d / "free")) == 1 and sum(1 for p in d.iterdir() if p.is_file()) >= 6
    assert not d.exists() and all(not os.path.exists(k._file) for k in kept)
