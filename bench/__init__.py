"""Benchmarks of the extender and of end-to-end scheduling (`make bench` writes bench/RESULTS.md)."""
