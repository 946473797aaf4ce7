"""Benchmark scripts: they print tables and never assert on time."""
