"""Benchmarks and long reliability runs (``python -m bench.reliability``)."""
