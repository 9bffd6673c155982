"""One module a measurement: the benchmarks ``make bench`` runs and the measurements behind the
docs' figures (each ``python -m bench.measurements.NAME``). May import ``bench.load`` and
``bench.fleet``."""
