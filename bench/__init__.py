"""Benchmarks of the extender and of end-to-end scheduling (`make bench` writes bench/RESULTS.md).

Four layers, each importing only the ones below it: ``report`` -> ``measurements`` ->
``load`` and ``fleet``. ``python -m bench`` and ``python -m bench.scale`` sit on top."""
