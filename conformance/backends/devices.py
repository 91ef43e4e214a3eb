"""Several GPUs as one backend.

Each member is a backend of its own (its own worker process and CUDA context, so a fault costs one launch on one
device).  Where the run may fork workers it runs a lane per device (:mod:`ptxconf.run.lanes`: a whole pipeline in
a process of its own, with a backend made for it by :meth:`DeviceSet.lane_backends`); otherwise, in one process, a
module runs on whichever device is free, as many at once as there are devices, the members share the builds (a
module is assembled once), and the run loop asks ``parallel`` how many modules to keep in flight: the same plans,
verdicts and reports as on one GPU, in the same order.  Devices of different compute capability would plan
differently, so they are refused.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor

from ptxconf.isa.targets import PtxVersion

from ._spawn import parse_devices  # the one reading of --devices (light: the command reads it before the CLI loads)
from .base import Backend, BackendError, Launch, LaunchResult

__all__ = ["DeviceSet", "parse_devices"]


class DeviceSet(Backend):
    """Backends of one kind, one per device, behind the one-backend interface."""

    def __init__(self, members: list[Backend]):
        if not members:
            raise BackendError("no devices")
        self.members = members
        self.name = members[0].name
        self.parallel = len(members)
        self._free: queue.Queue[Backend] = queue.Queue()
        for m in members:
            self._free.put(m)
        self._info: dict | None = None
        self._lane_stats: list[dict] | None = None  # what each device's lane reported, where the run ran in lanes

    def info(self) -> dict:
        if self._info is None:
            # Every member's worker started here, from this thread (a worker ends with the thread that started it),
            # all at once: they start CUDA while the run sets out, and the lanes take them over.
            self.open()
            with ThreadPoolExecutor(len(self.members), thread_name_prefix="ptxconf-info") as ask:
                infos = list(ask.map(lambda m: m.info(), self.members))  # each device's worker starts at once
            ccs = {i.get("compute_capability") for i in infos}
            if len(ccs) > 1:
                raise BackendError(f"the devices differ in compute capability ({', '.join(sorted(map(str, ccs)))}); "
                                   "run each kind with its own --devices")
            self._info = {**infos[0], "devices": [{"device": i.get("device"), "gpu": i.get("gpu")} for i in infos]}
            self._info.pop("device", None)
        return self._info

    def compute_capability(self) -> tuple[int, int]:
        self.info()
        return self.members[0].compute_capability()

    def max_ptx(self) -> PtxVersion:
        return min(m.max_ptx() for m in self.members)

    def prefetch(self, module: str) -> None:
        self.members[0].prefetch(module)  # the builds are shared

    def open(self) -> None:
        for m in self.members:
            m.open()

    def handed_over(self) -> None:
        for m in self.members:
            m.handed_over()

    def set_stop(self, stop) -> None:
        for m in self.members:
            m.set_stop(stop)

    def run(self, module, launches: list[Launch]) -> list[LaunchResult]:
        """On the first free device (callers run up to ``parallel`` modules at once, from threads)."""
        member = self._free.get()
        try:
            return member.run(module, launches)
        finally:
            self._free.put(member)

    def lane_backends(self) -> list[Backend]:
        """A backend per device for a lane process of its own (the run then runs a whole pipeline per device)."""
        return [m.for_lane() for m in self.members]

    def absorb_lane_stats(self, stats: list[dict]) -> None:
        """What the lanes' backends reported: the devices' stats from then on."""
        self._lane_stats = list(stats)

    def stats(self) -> dict:
        per = self._lane_stats if self._lane_stats is not None else [m.stats() for m in self.members]
        out: dict = {"devices": len(per), "per_device": per}
        for s in per:
            for k, v in s.items():
                if isinstance(v, (int, float)):
                    out[k] = round(out.get(k, 0) + v, 3)
                elif isinstance(v, dict):
                    acc = out.setdefault(k, {})
                    for kk, vv in v.items():
                        acc[kk] = acc.get(kk, 0) + vv
        return out

    def close(self) -> None:
        for m in self.members:
            m.close()
