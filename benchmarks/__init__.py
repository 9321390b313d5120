"""Reproducible benchmarks: every case is timed against a baseline measured in the same run."""
