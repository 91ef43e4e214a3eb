"""tcgen05.mma (Blackwell): specs/tcgen05.yaml (schema tcgen05/1), descriptors, run probes, self-check, assemble."""

from .family import FAMILY

__all__ = ["FAMILY"]
