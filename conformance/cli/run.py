"""``ptxconf run`` (the suite) and ``ptxconf replay`` (its comparators again, on a recorded run, without a GPU)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .specs import load, specs_arg

if TYPE_CHECKING:
    from ptxconf.backends import Backend, NoGpu

__all__ = ["add_parser"]


# A GPU on a host of LANES_FROM_CORES cores or more for each GPU of the run is DEFAULT_LANES lanes (pipelines, each a
# process of its own with its share of the variants and cores: ``--lanes 4``, or ``--devices 0,0,0,0``).  The run's
# own process bounds one lane.  One H200 with 16 cores, whole suite: warm 11.0-11.2 s with one lane, 9.4 s with two
# (one call); then 9.3 / 10.2 s with two lanes, 8.9 / 9.2 with three, 8.8 / 8.2 with four, cold 16.5, 15.4 and
# 13.5 s (another call).  Several GPUs get as many lanes each: one lane per GPU would make ``--devices all`` slower
# than one GPU alone.
LANES_FROM_CORES = 16
DEFAULT_LANES = 4
# ``--values device``: a worker drawing value checks on a GPU for each DEVICE_WORKERS_CORES host cores per GPU.
DEVICE_WORKERS_CORES = 4


def lanes_per_gpu(asked: int | None, gpus: int, jobs: int) -> int:
    """``--lanes``, else :data:`DEFAULT_LANES` where the host has :data:`LANES_FROM_CORES` cores for each GPU and the
    run has workers to share (``--jobs`` 2 or more), else one."""
    if asked is not None:
        return asked
    return DEFAULT_LANES if jobs >= 2 and (os.cpu_count() or 1) >= LANES_FROM_CORES * gpus else 1


def _run_backend(args, semantics, jobs: int, no_gpu: NoGpu | None = None, counted: int | None = None):
    """The run's backend: one device, or several lanes (of one GPU or of several, ``--devices``, ``--lanes``) behind
    one interface.  No CUDA is started here to learn whether a GPU is there: its GPU workers say, and where they
    found none (``no_gpu``) it is made again knowing that.  ``--devices`` counts the GPUs from the driver's nodes
    where they tell (``devices_guessed`` on the backend: its first worker's answer checks it, and where CUDA counts
    otherwise the backend is made again with CUDA's count, ``counted``), else by starting CUDA here."""
    from ptxconf.backends import get_backend, without_gpu
    from ptxconf.backends.devices import DeviceSet, parse_devices

    kw = dict(semantics=semantics, build=args.build, use_cache=not args.no_cache, ptxas=_run_ptxas(args),
              worker_decides=True)
    asked = getattr(args, "lanes", None)
    guessed = None  # the GPUs the driver's nodes count, where --devices is counted from them
    if asked is not None and asked < 1:
        raise SystemExit(f"ptxconf run: --lanes {asked}: give 1 or more")
    if not getattr(args, "devices", None):
        first = get_backend(args.backend, **kw) if no_gpu is None else without_gpu(args.backend, no_gpu, **kw)
        if first.name != "pycuda":
            if asked is not None and asked > 1:
                raise SystemExit("ptxconf run: --lanes runs pipelines per GPU; the emulator runs on this CPU")
            return first
        ids = [first.device]
    else:
        if args.backend == "emulator":
            raise SystemExit("ptxconf run: --devices picks GPUs; the emulator runs on this CPU (leave --devices out)")
        from ptxconf.backends._spawn import visible_gpus
        from ptxconf.backends.pycuda_backend import device_count

        guessed = visible_gpus() if counted is None else None
        try:
            ids = parse_devices(args.devices, counted if counted is not None else guessed or device_count())
        except ValueError as exc:
            if guessed is not None:  # the guess may be what is wrong: CUDA's own count decides, and says why
                return _run_backend(args, semantics, jobs, no_gpu, device_count())
            raise SystemExit(f"ptxconf run: --devices {exc}") from None
        first = get_backend("pycuda", device=ids[0], **kw) if no_gpu is None else without_gpu("pycuda", no_gpu, **kw)
    if len(set(ids)) < len(ids):  # a GPU named more than once: the lanes as named
        if asked is not None:
            raise SystemExit("ptxconf run: --lanes and a GPU named more than once in --devices: give one or the other")
        lanes = 1
    else:
        lanes = lanes_per_gpu(asked, len(ids), jobs)
    members, first_of = [first], {ids[0]: first}
    for k in range(1, lanes * len(ids)):  # lane by lane over the GPUs; a GPU's first backend answers for its lanes
        d = ids[k % len(ids)]
        member = get_backend("pycuda", device=d, builds_from=first_of.get(d, first), **kw)
        first_of.setdefault(d, member)
        members.append(member)
    backend = first if len(members) == 1 else DeviceSet(members)
    if guessed is not None and first.name == "pycuda":
        backend.devices_guessed = guessed  # type: ignore[union-attr]
    return backend


class _EarlyBackend:
    """The run's backend made and opened first thing, what that raised kept for where the run uses the backend.

    Opening starts the GPU workers, processes of their own that need about 0.75 s each to have CUDA ready (H100).
    Opened after the specs were loaded, they made the last part of the 2.5 s a warm run spent before its first step
    (16-core H100 host); opened first, they start while this process loads the specs.  Made on this thread, not on
    one of its own: a GPU worker ends with the thread that started it (:mod:`ptxconf.core.lifetime`), and making the
    backend is imports that hold the GIL anyway (no CUDA started here: the workers' first answer says whether a GPU
    is there, :meth:`answered`).  Its errors wait for :meth:`backend`, where the run made it before: an error in the
    run's own arguments (``--select``, ``--out``) is still the one reported."""

    def __init__(self) -> None:
        self._backend: Backend | None = None
        self._error: BaseException | None = None
        self._make: Callable[..., Backend] | None = None

    def start(self, make: Callable[..., Backend], no_gpu: NoGpu | None = None) -> None:
        """``make(no_gpu)`` the backend and open it: ``no_gpu`` is None, or what its GPU workers answered first where
        they found no GPU (then ``make`` gives what ``--backend`` does without one)."""
        self._make = make
        try:
            self._backend = make(no_gpu)
            self._backend.open()
        except Exception as exc:  # noqa: BLE001 - kept for :meth:`backend`, raised there
            self._error = exc
        except SystemExit as exc:  # a usage error (its line), kept; a signal's exit (a number) leaves now
            if not isinstance(exc.code, str):
                raise
            self._error = exc

    def backend(self) -> Backend:
        """The backend opened, or what making or opening it raised."""
        if self._error is not None:
            raise self._error
        assert self._backend is not None, "start() first"
        return self._backend

    def answered(self) -> tuple[Backend, dict]:
        """The backend and its first answer (``info``, where its GPU workers say whether CUDA started); where they
        found no GPU, the backend made again knowing that (``auto``: the emulator, saying why) and its answer; where
        CUDA counts other GPUs than the backend was made for (``devices_guessed``), or a GPU it was made for does not
        answer, made again with CUDA's count (its first worker's, else counted here)."""
        from ptxconf.backends import NoGpu
        from ptxconf.backends.base import BackendError

        backend = self.backend()
        make = self._make
        assert make is not None
        guessed = getattr(backend, "devices_guessed", None)
        try:
            info = backend.info()
        except NoGpu as no_gpu:
            return self._again(make, no_gpu)
        except BackendError:
            if guessed is None:
                raise
            info = {}  # a GPU the nodes counted that CUDA does not have: made again with CUDA's own count
        counted = info.get("cuda_devices")
        if guessed is None or counted == guessed:
            return backend, info
        if not isinstance(counted, int):
            from ptxconf.backends.pycuda_backend import device_count

            counted = device_count()
        return self._again(lambda no_gpu: make(no_gpu, counted))

    def _again(self, make: Callable[..., Backend], no_gpu: NoGpu | None = None) -> tuple[Backend, dict]:
        """The backend closed, made again by ``make`` and opened, and its first answer."""
        self.close()
        self.start(make, no_gpu)
        backend = self.backend()
        return backend, backend.info()

    def close(self) -> None:
        """Close what was made (also where opening it failed), once."""
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()


def cmd_run(args) -> int:
    from ptxconf.run.signals import StopSignals

    own = getattr(args, "stop", None) is None  # ``main`` takes the signals before it builds the parser
    stop = StopSignals().install() if own else args.stop
    try:
        status = _cmd_run(args, stop)
        return stop.exit_status if stop.requested else status  # also a signal after the last report
    finally:
        if own:
            stop.release()  # after the last report


def _cmd_run(args, stop) -> int:
    from ptxconf.core.family import select_checks
    from ptxconf.oracle import mma

    try:
        checks = select_checks(args.check, args.undefined)
    except ValueError as exc:
        raise SystemExit(f"ptxconf: --check {exc}") from None
    early = _EarlyBackend()
    try:
        # The lanes ask only whether the run has workers (``jobs`` 2 or more), which the variants' count never
        # changes (:func:`_jobs`): the run's own ``jobs`` come once the variants are known.
        early.start(lambda no_gpu, counted=None: _run_backend(args, mma, _jobs(args.jobs, sys.maxsize), no_gpu, counted))
        return _run_selected(args, stop, checks, early)
    finally:
        early.close()  # also where the run stops before it uses the backend: no GPU worker left behind


def _run_selected(args, stop, checks: tuple[str, ...] | None, early: _EarlyBackend) -> int:
    """The rest of :func:`_cmd_run`, the backend's GPU workers starting meanwhile: the specs, the variants, the
    output folder, then the run on the backend."""
    from ptxconf.backends import BackendError
    from ptxconf.core.family import family_of, run_variants_of
    from ptxconf.run.report import RunLog, git_revision, specs_hash
    from ptxconf.run.session import RunSession, UsageError, prepare_out_dir, recorded_done, take_lock

    specs = load(args)
    run_variants_of(specs)  # runnable variants derived from documents (e.g. tcgen05 Table 39 tuples), for this run only
    variants = specs.select(args.select) if args.select else list(specs.variants.values())
    if checks is not None:  # only the variants that make a check asked for
        picked = [v for v in variants if family_of(v).checks_of(v, checks)]
        if variants and not picked:
            raise SystemExit(f"ptxconf: no selected variant makes {', '.join(checks)}")
        variants = picked
    if not variants:
        hint = ""
        if args.select:
            import difflib

            close = difflib.get_close_matches(args.select[0], list(specs.variants), n=2, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise SystemExit(f"ptxconf: --select {' '.join(args.select or [])} matches no variant{hint}")
    out_dir = Path(args.out)
    if args.force:
        _refuse_links(out_dir)
    stop.writing()  # from here a signal is a request the run finishes cleanly
    try:
        prepare_out_dir(out_dir, args.force, args.resume)
        out_dir.mkdir(parents=True, exist_ok=True)
        lock = take_lock(out_dir)
    except UsageError as exc:
        raise SystemExit(f"ptxconf run: {exc}") from None
    try:
        done = recorded_done(out_dir, args.seed) if args.resume else set()
        jobs = _jobs(args.jobs, len(variants))
        try:
            backend, info = early.answered()
        except BackendError as exc:
            raise SystemExit(f"ptxconf: backend {args.backend}: {exc}") from None
        if info.get("auto"):
            print(f"ptxconf: --backend auto: {info['auto']}", file=sys.stderr)
        if info.get("backend") == "emulator" and not args.quiet:  # evidence labelled: no GPU made these verdicts
            print(f"ptxconf run: on the emulator ({info.get('gpu', 'NumPy')}, compute capability "
                  f"{info.get('compute_capability', '?')}): its verdicts check the suite against specs/, not a GPU",
                  file=sys.stderr)
        header = {
            "command": "ptxconf " + shlex.join(getattr(args, "argv", None) or sys.argv[1:]),
            "git_revision": git_revision(),
            "specs_hash": specs_hash(specs),
        }
        log = RunLog(out_dir, info, args.seed, Path(args.junit) if args.junit else None, label=args.label,
                     flavor=args.junit_flavor, header=header)
        if args.resume:
            log.load_recorded(done)
        session = RunSession(specs, variants, out_dir, log, args.seed, checks,
                             args.cases, save_observations=not args.no_observations, quiet=args.quiet,
                             verbose=args.verbose, skip_done=done, signals=stop,
                             jobs=jobs, device_values=_device_values(args, backend))
        started = time.time()
        try:
            status = session.run(backend)
        finally:
            early.close()
            log.close()
        session.print_outcome(time.time() - started)
        return status
    except UsageError as exc:
        raise SystemExit(f"ptxconf run: {exc}") from None
    finally:
        lock.release()


def _device_values(args, backend) -> Callable[[list], object] | None:
    """``--values device``: what makes the workers of the value checks drawn on the device (CuPy on each of the run's
    GPUs, or the NumPy emulator where the run is on the emulator); None for ``--values host``."""
    if getattr(args, "values", "host") == "host":
        return None
    from ptxconf.run.devicevalues import DeviceValues

    max_ptx = backend.max_ptx()
    if backend.name == "emulator":
        from ptxconf.backends.bulk_device import EmulatedDevice
        from ptxconf.oracle import mma

        cc = backend.compute_capability()
        ordinals = [0]

        def make(_ordinal: int):
            return EmulatedDevice(semantics=mma, cc=cc, max_ptx=max_ptx)
    else:
        from ptxconf.cli.preflight import needs_package

        needs_package("cupy", "ptxconf run", "--values device on a GPU")  # (--backend auto found one)
        from ptxconf.backends.bulk_device import CupyDevice

        ptxas, use_cache = _run_ptxas(args), not args.no_cache
        members = getattr(backend, "members", [backend])
        ordinals = list(dict.fromkeys(m.device for m in members))

        def make(ordinal: int):
            return CupyDevice(ordinal, ptxas=ptxas, use_cache=use_cache, max_ptx=max_ptx)
    per = args.device_workers or max(1, (os.cpu_count() or 1) // (DEVICE_WORKERS_CORES * len(ordinals)))
    return lambda variants: DeviceValues(make, ordinals, variants, args.seed, args.device_cases, per, backend.name)


def _jobs(asked: int | None, variants: int) -> int:
    """Worker processes: as asked (default one per core), but no more than there are variants to plan (an idle
    worker only costs its start-up); a run asked to use workers keeps at least two."""
    jobs = asked or (os.cpu_count() or 1)
    return jobs if jobs <= 1 else max(2, min(jobs, variants))


def _refuse_links(out_dir: Path) -> None:
    """``--force`` deletes the run's own files; one of them that is a symlink would take the deletion elsewhere (or
    stop it halfway), so the run refuses before deleting anything."""
    from ptxconf.run.files import RUN_FILES

    for name in RUN_FILES:
        if (out_dir / name).is_symlink():
            raise SystemExit(f"ptxconf run: --force: {out_dir / name} is a symlink; --force replaces only the run's own "
                             "files: remove the link first")


def _run_ptxas(args) -> str | None:
    """``--ptxas VERSION|PATH``: the ptxas that builds the run's cubins (a release installed by ``ptxconf toolchains
    install``, or a path); None: the one on PATH."""
    if not args.ptxas:
        return None
    from ptxconf.backends.ptxas import PtxasNotFound, find_ptxas

    try:
        return find_ptxas(args.ptxas)
    except PtxasNotFound as exc:
        raise SystemExit(f"ptxconf run: --ptxas: {exc}") from None


def cmd_replay(args) -> int:
    from ptxconf.run.replay import replay_dir

    if args.out and Path(args.out).resolve() == Path(args.directory).resolve():
        raise SystemExit(f"ptxconf replay: --out {args.out} is the recorded run itself; give a fresh folder "
                         "(the replay would add its verdicts to the run's own results)")
    specs = load(args)
    return replay_dir(
        specs,
        Path(args.directory),
        junit=Path(args.junit) if args.junit else None,
        quiet=args.quiet,
        out=Path(args.out) if args.out else None,
        jobs=args.jobs or os.cpu_count() or 1,
    )


def add_parser(commands) -> None:
    r = commands.add_parser("run", help="run the conformance suite")
    specs_arg(r)
    r.add_argument("--backend", default="auto", choices=["auto", "pycuda", "emulator"])
    r.add_argument("--select", action="append", metavar="GLOB", help="variant id, prefix or glob (repeatable)")
    r.add_argument("--check", action="append", metavar="CHECK",
                   help="value, map.A, map.B, map.C, ... or a glob such as 'undefined.*' (repeatable; default each family's)")
    r.add_argument("--undefined", action="store_true",
                   help="also run the checks of inputs the ISA leaves undefined: what the hardware did is recorded "
                        "as 'undefined by the ISA', never as a pass or a failure")
    r.add_argument("--cases", type=int, default=8, metavar="N", help="random cases per variant for the value check")
    r.add_argument("--values", default="host", choices=["host", "device"],
                   help="where value checks are drawn and compared: host (the plan's cases, every word saved) or "
                        "device (the family's bulk cases, --device-cases of them, drawn, run and compared on the "
                        "GPU, each case kept as a digest that replay checks; needs CuPy)")
    r.add_argument("--device-cases", type=int, default=256, metavar="N",
                   help="--values device: cases per variant's value check (default 256)")
    r.add_argument("--device-workers", type=int, default=None, metavar="N",
                   help=f"--values device: processes per GPU that draw value checks (default one per "
                        f"{DEVICE_WORKERS_CORES} host cores per GPU)")
    r.add_argument("--seed", type=int, default=0, metavar="S")
    r.add_argument("--out", default="ptxconf-results", metavar="DIR")
    r.add_argument("--junit", metavar="FILE", help="JUnit XML path (default DIR/junit.xml)")
    r.add_argument("--no-observations", action="store_true", help="do not save raw inputs/outputs")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress lines or bar")
    r.add_argument("-v", "--verbose", action="store_true", help="list every failure (default: the first 20)")
    r.add_argument("--build", default="auto", choices=["auto", "ptxas", "jit"],
                   help="GPU: assemble modules with ptxas in parallel (cached) or hand PTX to the driver JIT")
    r.add_argument("--ptxas", metavar="VERSION|PATH",
                   help="GPU: the ptxas that builds the cubins: a release (13.5, 12.4.131; see ptxconf toolchains) "
                        "or a path (default: the one on PATH); summary.json names it")
    r.add_argument("--no-cache", action="store_true", help="GPU: neither read nor fill the compiled-module cache")
    r.add_argument("--devices", metavar="all|N|I,J",
                   help="run on several GPUs at once (CUDA ordinals, the first N, or all): whole pipelines (lanes) per "
                        "device, each in a process of its own with its share of the variants and cores (with --jobs "
                        "1, one process: modules go to whichever device is free); the same verdicts as on one. "
                        "A GPU named more than once is that many lanes (0,0: two lanes on GPU 0). Default: GPU 0")
    r.add_argument("--lanes", type=int, default=None, metavar="N",
                   help=f"lanes per GPU (default: {DEFAULT_LANES} on a host of {LANES_FROM_CORES} cores or more for "
                        "each GPU, else 1)")
    r.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="processes that plan variants, and as many that compare them (default: one per core; 1: "
                        "everything in this process)")
    r.add_argument("--force", action="store_true", help="replace the run already in --out")
    r.add_argument("--resume", action="store_true", help="continue the run in --out, skipping what it recorded")
    r.add_argument("--label", metavar="NAME", help="the run's name in JUnit classnames (default: the --out folder name)")
    r.add_argument("--junit-flavor", default="jenkins", choices=["jenkins", "gitlab"],
                   help="jenkins: valid against junit-10.xsd and Ant's schema; gitlab: adds file= on each testcase")
    r.set_defaults(func=cmd_run)

    r = commands.add_parser("replay", help="re-run the comparators on a recorded run, without a GPU")
    specs_arg(r)
    r.add_argument("directory", metavar="DIR")
    r.add_argument("--junit", metavar="FILE")
    r.add_argument("--out", metavar="OUT", help="write results.jsonl and junit.xml of the replay here")
    r.add_argument("--quiet", action="store_true")
    r.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="processes that draw the device's value checks again (default: one per core)")
    r.set_defaults(func=cmd_replay)
