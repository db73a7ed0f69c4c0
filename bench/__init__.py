"""Benchmarks; run them all with ``python -m bench`` (see README.md)."""
