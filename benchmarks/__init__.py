"""On-demand benchmarks: ``python -m benchmarks NAME`` prints a table. Not part of the test suite."""
