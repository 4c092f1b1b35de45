"""flowjit benchmarks (timings live here, never in the unit tests).

`session_overhead`: Session.run of tiny graphs against the same NumPy code
(`python -m flowjit bench session`).  `compiler_workloads`: flowjit.jit against NumPy,
numexpr, numba, JAX, PyTorch and TensorFlow on workloads W1-W7 (`python -m flowjit bench
compiler`; its parts: `workloads`, `peers`, `numba_kernels`, `compile_time`).  Both measure
with `timing`: outputs checked before timing, interleaved repetitions of calibrated batches,
interference from other processes detected through /proc/stat.  `report` (with
`report_render`) runs them all and writes a report with tables and plots (`python -m flowjit
bench report`).
"""
