"""Gram products `a @ a.T` and `a.T @ a`: only one triangle is multiplied, then mirrored.

C = a @ a.T is symmetric, so half of a general product's multiply-adds are wasted; NumPy
notices the shared operand and calls BLAS syrk. Here the lower triangle of C is cut into
GRAM_BLOCKS row blocks and block [r0, r1) computes C[r0:r1, 0:r1] with one BLAS gemm that
writes straight into C (leading dimension n): 0.56 of the full product's work with 8 blocks.
Blocks run under `prange` in pairs (j, GRAM_BLOCKS - 1 - j), so every pair has the same
work; each gemm runs on one thread (blas_threads.py). The upper triangle is then copied
from the lower one in square tiles.

`gram_lines(...)` writes the statements for a MATMUL node whose two operands are the same
buffer with opposite transpose flags (`is_gram`); each block is one call of the intrinsic
`gram_rows` (gram_blas.py). This module imports no numba: the build decides with it.
"""

from __future__ import annotations

GRAM_BLOCKS = 8         # row blocks of the lower triangle (even: they run in pairs)
MIRROR_TILE = 64


def is_gram(node) -> bool:
    """Whether MATMUL `node` multiplies one 2-D operand by its own transpose."""
    a, b = node.inputs
    ta, tb = node.attr
    return a is b and ta != tb and len(node.shape) == 2 and node.dtype.np_dtype.kind == "f" \
        and node.dtype.np_dtype.itemsize in (4, 8)


def gram_lines(gen, a: str, out: str, n: str, transposed: bool) -> list:
    """Statements filling `out` (n x n, allocated) with the Gram product of buffer `a`."""
    half = GRAM_BLOCKS // 2
    t = MIRROR_TILE
    return [
        f"for pair in prange({half}):",
        "    for side in range(2):",
        f"        blk = pair if side == 0 else {GRAM_BLOCKS - 1} - pair",
        f"        lo = blk * {n} // {GRAM_BLOCKS}",
        f"        hi = (blk + 1) * {n} // {GRAM_BLOCKS}",
        "        if hi > lo:",
        f"            gram_rows({a}, {out}, lo, hi, {transposed})",
        f"for tile in prange(({n} + {t - 1}) // {t}):",
        f"    j0 = tile * {t}",
        f"    for i0 in range(0, j0 + {t}, {t}):",
        f"        for j in range(j0, min(j0 + {t}, {n})):",
        f"            for i in range(i0, min(i0 + {t}, j)):",
        f"                {out}[i, j] = {out}[j, i]",
    ]
