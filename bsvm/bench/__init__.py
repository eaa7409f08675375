"""On-demand benchmarks: ``python -m bsvm.bench NAME`` prints a table. Not part of the test suite."""
