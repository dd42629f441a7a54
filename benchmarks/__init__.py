"""Benchmarks: scripts that measure, run by hand (`python -m benchmarks.<name>`), not tests."""
