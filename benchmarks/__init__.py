"""flowjit benchmarks (timings live here, never in the unit tests).

`session_overhead`: Session.run of tiny graphs against the same NumPy code
(`python -m flowjit bench`).  See /work/shared/BENCHMARKING.md-style rules in each module's
docstring: interleaved repetitions, calibrated batches, outputs checked before timing.
"""
