"""`make demo`: the show and its scenes, the sample pods and the tables it prints. May import
every other layer of ``localcluster``; nothing imports it but the tests and the benchmarks."""
