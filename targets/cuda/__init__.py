"""The CUDA target: the kernel IR's schedule rendered as numba-cuda kernels (docs/architecture.md,
"The CUDA target").

Modules: `scalar_text` (scalar expressions as kernel statements and host size
expressions), `kernel_text` (one kernel per loop-nest kind), `codegen` (a whole cluster: the
kernels and the host function that sizes, allocates and launches them), `build` (numba-cuda
compilation, the in-memory cache, PTX), `target` (the target-protocol instance).  Nothing here
imports numba-cuda until a kernel is built, so the CPU path never loads it.
"""
