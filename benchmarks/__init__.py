"""Reproducible performance harness: `python -m benchmarks NAME --json`."""
