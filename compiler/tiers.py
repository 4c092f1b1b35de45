"""Compile tiers: how much a target optimizes a kernel, chosen by the runtime per compile.

`Tier.OPTIMIZED` (the default) is the kernel a target makes when the compile time does not
matter: on the CPU, parallel and serial versions of each loop nest under a run-time test,
unroll-and-jam of row reductions, flowjit's own GEMM with fused epilogues.
`Tier.QUICK` is the kernel it can make fastest: on the CPU, one serial version of each nest,
no `prange` (numba's parallel lowering is a third of a cold compile) and matrix products
through BLAS, so the shared GEMM library need not be built either.  The tiered policy
(runtime/cluster_kernels.py) runs a quick kernel while the optimized one compiles, and keeps
whichever measures faster.  Kernels of the two tiers have different cache keys.
A target without such a distinction (the reference interpreter) ignores the tier.
"""

from __future__ import annotations

import enum


class Tier(enum.Enum):
    """How much a target optimizes a kernel (module docstring)."""

    QUICK = "quick"
    OPTIMIZED = "optimized"
