"""Benchmarks of pm-warehouse: normalization throughput, memory, request efficiency and query speed.

Run them with ``pmw bench [--quick]`` or ``python -m benchmarks``; see benchmarks/README.md.
"""
