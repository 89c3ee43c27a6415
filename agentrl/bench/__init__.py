"""Benchmarks, runnable as modules (``python -m agentrl.bench.sandbox``)."""
