"""Gram products `a @ a.T` and `a.T @ a`: only one triangle is multiplied, then mirrored.

C = a @ a.T is symmetric, so half of a general product's multiply-adds are wasted; NumPy
notices the shared operand and calls BLAS syrk. Here the lower triangle of C is cut into
GRAM_BLOCKS row blocks and block [r0, r1) computes C[r0:r1, 0:r1] with one BLAS gemm that
writes straight into C (leading dimension n): 0.56 of the full product's work with 8 blocks.
Blocks run under `prange` in pairs (j, GRAM_BLOCKS - 1 - j), so every pair has the same
work; each gemm runs on one thread (blas_threads.py). Right after its gemm, a block copies
its rows into its columns of the upper triangle (C[i, r0:r1] = C[r0:r1, i], rows still in
that thread's cache; the columns of different blocks are disjoint). A separate parallel
mirror pass over C measured bimodal (0.9 or 1.6 ms for 600x300) where this is steady.

With flowjit's own GEMM (the default, matmul_code.gemm_mode) the product is instead one call,
`gram_product(a, out, blocks)`: the GEMM skips the micro-tiles above the diagonal and cuts
the triangle into one row block of equal area per thread (gemm.py), each packing the
shared operand once; eight BLAS-sized blocks would pack it eight times (600x300 float32:
2.8 ms, as against NumPy's syrk at 1.4 ms).

`gram_lines(...)` writes the statements for a MATMUL node whose two operands are the same
buffer with opposite transpose flags (`is_gram`); each BLAS block is one call of the
intrinsic `gram_rows` (gram_blas.py). This module imports no numba: the build decides with
it.
"""

from __future__ import annotations

GRAM_BLOCKS = 8         # row blocks of the lower triangle (even: they run in pairs)


def is_gram(node) -> bool:
    """Whether MATMUL `node` multiplies one 2-D operand by its own transpose."""
    a, b = node.inputs
    ta, tb = node.attr
    return a is b and ta != tb and len(node.shape) == 2 and node.dtype.np_dtype.kind == "f" \
        and node.dtype.np_dtype.itemsize in (4, 8)


def gram_lines(gen, a: str, out: str, n: str, transposed: bool) -> list:
    """Statements filling `out` (n x n, allocated) with the Gram product of buffer `a`."""
    from .matmul_code import gemm_mode, split_blocks

    if gemm_mode() == "own":
        # flowjit's GEMM multiplies the lower triangle's tiles itself, in row blocks of equal
        # area that each pack their share of the operand once, and mirrors them
        return [f"gram_product{'_t' if transposed else ''}({a}, {out}, {split_blocks()})"]
    block_call = f"gram_rows({a}, {out}, lo, hi, {transposed})"
    half = GRAM_BLOCKS // 2
    return [
        f"for pair in prange({half}):",
        "    for side in range(2):",
        f"        blk = pair if side == 0 else {GRAM_BLOCKS - 1} - pair",
        f"        lo = blk * {n} // {GRAM_BLOCKS}",
        f"        hi = (blk + 1) * {n} // {GRAM_BLOCKS}",
        "        if hi > lo:",
        f"            {block_call}",
        "            for i in range(hi):",   # the block's columns of the upper triangle
        "                for j in range(max(lo, i + 1), hi):",
        f"                    {out}[i, j] = {out}[j, i]",
    ]
