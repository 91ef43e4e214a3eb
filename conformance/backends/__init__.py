"""Backends run probe batches: a real GPU through PyCUDA, a NumPy emulator, or ptxas alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Backend

__all__ = ["Backend", "BackendError", "Launch", "LaunchResult", "get_backend"]
_FROM_BASE = ("Backend", "BackendError", "Launch", "LaunchResult")


def __getattr__(name: str) -> Any:
    """The base classes, imported when first asked for: the GPU worker's interpreter imports this package for its
    own module only, and :mod:`.base` brings the spec model with it (0.3 s of its start)."""
    if name in _FROM_BASE:
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_backend(name: str, **kwargs) -> Backend:
    """``auto`` picks PyCUDA when a GPU answers, else the emulator (and says why)."""
    from .base import BackendError
    if name == "auto":
        from .pycuda_backend import gpu_available

        ok, why = gpu_available()
        name = "pycuda" if ok else "emulator"
        kwargs.setdefault("auto_reason", why)
    if name == "pycuda":
        from .pycuda_backend import PyCudaBackend, gpu_available

        if "auto_reason" not in kwargs:  # asked for by name: say why it cannot run, before any worker starts
            ok, why = gpu_available()
            if not ok:
                raise BackendError(why.replace("; using the NumPy emulator", ""))

        return PyCudaBackend(**{k: v for k, v in kwargs.items() if k != "semantics"})
    if name == "emulator":
        from .emulator import EmulatorBackend

        if kwargs.get("semantics") is None:  # what the emulator computes D with; a command that observes hardware gives none
            raise BackendError("this command observes the hardware; the emulator has nothing to observe "
                               "(run it on a GPU: --backend pycuda)")

        return EmulatorBackend(**{k: v for k, v in kwargs.items() if k not in ("build", "use_cache", "ptxas")})
    raise ValueError(f"unknown backend {name!r}; choose auto, pycuda or emulator")
