"""Instruction families, one package each; registered in :mod:`ptxconf.registry`."""
