"""wmma.load / wmma.store: observed fragment layouts (a GPU fact; results/h100-wmma)."""

from .family import FAMILY

__all__ = ["FAMILY"]
