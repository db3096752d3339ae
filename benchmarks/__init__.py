"""Benchmarks against delta-rs, measured in the same run. Run all: ``python -m benchmarks``."""
