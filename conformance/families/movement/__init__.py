"""ldmatrix / stmatrix / movmatrix: specs/ldmatrix.yaml, stmatrix.yaml, movmatrix.yaml; composition with mma."""

from .family import FAMILY

__all__ = ["FAMILY"]
