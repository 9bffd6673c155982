"""bench/RESULTS.md and the scale run's results file and plots, from what the measurements
returned. May import ``bench.measurements``, ``bench.load`` and ``bench.fleet``."""
