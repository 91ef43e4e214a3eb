"""wgmma.mma_async: specs/wgmma.yaml (schema wgmma/1), descriptors, probes, comparator, assemble, reuse probe."""

from .family import FAMILY

__all__ = ["FAMILY"]
