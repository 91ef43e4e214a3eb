"""Probe generators: what every family's probes share (``ptx.py``: module framing, case prologue, surroundings).

Each family's own generators sit in its folder, ``conformance/families/<name>/probe.py`` (the kernels) and
``cases.py`` (the seeded inputs); README "Layers" says so too.
"""
