"""Tensor-core numerics: a parameterised arithmetic model, designed experiments, a fuzzer, findings."""
