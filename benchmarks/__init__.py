"""Benchmarks of pm-warehouse: normalisation throughput, memory, request efficiency and query speed.

Run them with ``pmw bench [--quick]`` or ``python -m benchmarks``; see benchmarks/README.md.
"""
