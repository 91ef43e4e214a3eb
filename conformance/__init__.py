"""ptx-conformance: conformance tests and a hardware fuzzer for PTX matrix instructions."""

__version__ = "0.1.0"
