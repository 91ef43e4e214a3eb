"""wgmma.mma_async.sp: specs/wgmma_sp.yaml (schema wgmma_sp/1), sparse probes, emulation, comparator."""

from .family import FAMILY

__all__ = ["FAMILY"]
