"""Backends run probe batches: a real GPU through PyCUDA, a NumPy emulator, or ptxas alone."""

from .base import Backend, BackendError, Launch, LaunchResult

__all__ = ["Backend", "BackendError", "Launch", "LaunchResult", "get_backend"]


def get_backend(name: str, **kwargs) -> Backend:
    """``auto`` picks PyCUDA when a GPU answers, else the emulator (and says why)."""
    if name == "auto":
        from .pycuda_backend import gpu_available

        ok, why = gpu_available()
        name = "pycuda" if ok else "emulator"
        kwargs.setdefault("auto_reason", why)
    if name == "pycuda":
        from .pycuda_backend import PyCudaBackend

        return PyCudaBackend(**{k: v for k, v in kwargs.items() if k != "semantics"})
    if name == "emulator":
        from .emulator import EmulatorBackend

        return EmulatorBackend(**kwargs)
    raise ValueError(f"unknown backend {name!r}; choose auto, pycuda or emulator")
