"""mma.sync (dense) and mma.sp (sparse): specs/mma_sync.yaml and specs/mma_sp.yaml."""

from .family import FAMILY

__all__ = ["FAMILY"]
