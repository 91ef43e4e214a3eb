"""Backends run probe batches: a real GPU through PyCUDA, a NumPy emulator, or ptxas alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Backend, NoGpu

__all__ = ["Backend", "BackendError", "Launch", "LaunchResult", "NoGpu", "get_backend", "without_gpu"]
_FROM_BASE = ("Backend", "BackendError", "Launch", "LaunchResult", "NoGpu")


def __getattr__(name: str) -> Any:
    """The base classes, imported when first asked for: the GPU worker's interpreter imports this package for its
    own module only, and :mod:`.base` brings the spec model with it (0.3 s of its start)."""
    if name in _FROM_BASE:
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_backend(name: str, worker_decides: bool = False, **kwargs) -> Backend:
    """``auto`` picks PyCUDA when a GPU answers, else the emulator (and says why); ``pycuda`` without one raises.

    ``worker_decides`` (a run, which starts its GPU workers at once): where a GPU is likely (PyCUDA installed, a driver
    node there: :func:`._spawn.gpu_likely`), no CUDA is started in this process to ask (0.5 s of its start);
    the PyCUDA backend's worker is the check, its first ``info`` raising :class:`NoGpu` where CUDA did not start
    there, and :func:`without_gpu` then gives what this would have given."""
    from .base import BackendError
    if name in ("auto", "pycuda") and worker_decides:
        from ._spawn import gpu_likely

        if gpu_likely():
            return _pycuda(auto_from_worker=name == "auto", **kwargs)
    if name == "auto":
        from .pycuda_backend import gpu_available

        ok, why = gpu_available()
        name = "pycuda" if ok else "emulator"
        kwargs.setdefault("auto_reason", why)
    if name == "pycuda":
        from .pycuda_backend import ON_EMULATOR, gpu_available

        if "auto_reason" not in kwargs:  # asked for by name: say why it cannot run, before any worker starts
            ok, why = gpu_available()
            if not ok:
                raise BackendError(why.removesuffix(ON_EMULATOR))
        return _pycuda(**kwargs)
    if name == "emulator":
        from .emulator import EmulatorBackend

        if kwargs.get("semantics") is None:  # what the emulator computes D with; a command that observes hardware gives none
            raise BackendError("this command observes the hardware; the emulator has nothing to observe "
                               "(run it on a GPU: --backend pycuda)")

        return EmulatorBackend(**{k: v for k, v in kwargs.items() if k not in ("build", "use_cache", "ptxas")})
    raise ValueError(f"unknown backend {name!r}; choose auto, pycuda or emulator")


def without_gpu(name: str, no_gpu: NoGpu, **kwargs) -> Backend:
    """What :func:`get_backend` gives for ``name`` where a GPU worker found no GPU (``no_gpu``, its first answer):
    the emulator under ``auto``, with its reason (``PyCUDA not importable ...``, ``no CUDA driver or device ...``,
    as where this process asks); under ``pycuda``, that reason raised."""
    from .base import BackendError
    from .pycuda_backend import ON_EMULATOR

    if name != "auto":
        raise BackendError(str(no_gpu))
    return get_backend("emulator", **{**kwargs, "auto_reason": f"{no_gpu}{ON_EMULATOR}"})


def _pycuda(**kwargs) -> Backend:
    from .pycuda_backend import PyCudaBackend

    return PyCudaBackend(**{k: v for k, v in kwargs.items() if k != "semantics"})
