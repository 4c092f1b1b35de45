"""Tile shapes of flowjit's GEMM micro-kernel (gemm_ukernel.py), importable without numba.

The code generator needs them to decide which products the kernel takes (a product
narrower than half a vector goes to BLAS) and how to chunk rows; the micro-kernel builds its
vectors from them.  The shape depends on the CPU the kernels are compiled for (numba's
NUMBA_CPU_NAME / NUMBA_CPU_FEATURES when set, else this host, as the kernel cache keys it):

- AVX-512: 64-byte vectors, 8 rows x 3 vectors, 24 of the 32 vector registers for
  accumulators (Zen 5, one thread, 1024^3 float32: 12x2 134, 14x2 152, 6x4 146, 8x3 149
  GFLOP/s; OpenBLAS's Haswell kernel 110-118);
- otherwise (AVX2 and FMA): 32-byte vectors, 6 rows x 2 vectors, 12 of the 16 registers for
  accumulators, 2 for B's vectors, 1 for A's broadcast (Zen 1, one thread, 1024^3 float32:
  32.6 GFLOP/s against OpenBLAS's 35.8; the AVX-512 tile, which LLVM splits into 48 halves
  that spill, ran 18.8; 8 x 1 vectors 31, 4 x 3 was slower).
"""

from __future__ import annotations

import os


def _has_avx512() -> bool:
    """Whether the kernels' CPU has AVX-512F (numba's target CPU, else the host)."""
    features = os.environ.get("NUMBA_CPU_FEATURES", "").strip()
    if features:
        return "+avx512f" in features.split(",")
    name = os.environ.get("NUMBA_CPU_NAME", "").strip()
    if name and name != "host":
        return False   # a portable target without a feature list: assume no AVX-512
    from llvmlite import binding   # numba's dependency; no numba import here
    return bool(binding.get_host_cpu_features().get("avx512f", False))


if _has_avx512():
    VECTOR_BYTES = 64
    TILE = {"float32": (8, 3), "float64": (8, 3)}   # (MR rows, NV vectors per row)
else:
    VECTOR_BYTES = 32
    TILE = {"float32": (6, 2), "float64": (6, 2)}


def lanes(dtype_name: str) -> int:
    """Elements of `dtype_name` in one vector."""
    return VECTOR_BYTES // {"float32": 4, "float64": 8}[dtype_name]


def tile_shape(dtype_name: str) -> tuple:
    """(MR, NR) of the micro-kernel for `dtype_name`."""
    mr, nv = TILE[dtype_name]
    return mr, nv * lanes(dtype_name)


def narrow_columns(dtype_name: str) -> int:
    """Products with fewer output columns than this go to BLAS: half a vector (8 float32, 4
    float64 columns), below which the micro-kernel would compute mostly padding; 0 for
    dtypes the kernel does not handle (everything goes to BLAS).  It used to be half a tile
    (24 / 12 columns), but a kernel's BLAS call runs on scipy's OpenBLAS threads, which
    spin for ~0.1 s after each call and take the cores from the kernel's next parallel
    loop unless the user opted in to process tuning: the W5 batch-4096 training step, whose
    forward product has 8 columns, took 102 ms a step that way on a 2-core Zen 1 against
    43 ms with that product in this GEMM (NumPy's step: 80 ms)."""
    return lanes(dtype_name) // 2 if dtype_name in TILE else 0
