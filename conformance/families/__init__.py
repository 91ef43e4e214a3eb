"""Instruction families, one package each; registered in :mod:`conformance.registry`."""
