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

`gram_lines(...)` builds the loop-IR statements for a MATMUL node whose two operands are the same
buffer with opposite transpose flags (`is_gram`); each BLAS block is one call of the
intrinsic `gram_rows` (gram_blas.py). This module imports no numba: the build decides
with it.
"""

from __future__ import annotations

from ...compiler.loop_ir import (Call, Do, If, IndexOpKind, Int, Let, Load, Loop, LoopKind,
                                 Source, Store, Var, index_op)

GRAM_BLOCKS = 8         # row blocks of the lower triangle (even: they run in pairs)
ADD, MUL, DIV = IndexOpKind.ADD, IndexOpKind.MUL, IndexOpKind.FLOORDIV


def is_gram(node) -> bool:
    """Whether MATMUL `node` multiplies one 2-D operand by its own transpose."""
    a, b = node.inputs
    ta, tb = node.attr
    return a is b and ta != tb and len(node.shape) == 2 and node.dtype.np_dtype.kind == "f" \
        and node.dtype.np_dtype.itemsize in (4, 8)


def gram_lines(gen, a: str, out: str, n, transposed: bool) -> list:
    """Loop-IR statements filling `out` (n x n, allocated; `n` a loop-IR size) with the
    Gram product of buffer `a`."""
    from .matmul_code import gemm_mode, split_blocks  # matmul_code imports this module

    if gemm_mode() == "own":
        # flowjit's GEMM multiplies the lower triangle's tiles itself, in row blocks of equal
        # area that each pack their share of the operand once, and mirrors them
        name = f"gram_product{'_t' if transposed else ''}"
        return [Do(Call(name, (Var(a), Var(out), Int(split_blocks()))))]
    lo, hi, i, j = Var("lo"), Var("hi"), Var("i"), Var("j")
    blk = Var("blk")
    block = (
        Do(Call("gram_rows", (Var(a), Var(out), lo, hi, Source(str(transposed))))),
        # the block's columns of the upper triangle
        Loop(LoopKind.SERIAL, "i", Int(0), hi, (
            Loop(LoopKind.SERIAL, "j", index_op(IndexOpKind.MAX, lo, index_op(ADD, i, Int(1))),
                 hi, (Store(out, (i, j), Load(out, (j, i))),)),)))
    side = (
        Let("blk", Source(f"pair if side == 0 else {GRAM_BLOCKS - 1} - pair")),
        Let("lo", index_op(DIV, index_op(MUL, blk, n), Int(GRAM_BLOCKS))),
        Let("hi", index_op(DIV, index_op(MUL, index_op(ADD, blk, Int(1)), n), Int(GRAM_BLOCKS))),
        If(index_op(IndexOpKind.GT, hi, lo), block))
    return [Loop(LoopKind.PARALLEL, "pair", Int(0), Int(GRAM_BLOCKS // 2), (
        Loop(LoopKind.SERIAL, "side", Int(0), Int(2), side),))]
