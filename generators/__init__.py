"""Probe generators: seeded inputs and PTX probe kernels made from spec variants."""
