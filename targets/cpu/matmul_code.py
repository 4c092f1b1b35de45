"""Code for a 2-D MATMUL node: flowjit's GEMM or BLAS calls, split across numba's threads.

float32/float64 products with at least `gemm_tiles.narrow_columns` output columns call
`gemm_parallel` (gemm.py), which splits itself across the threads; so does `a.T @ b` with
few columns, as `(b.T @ a).T`.  Everything else (narrow products, other dtypes, every
product under FLOWJIT_GEMM=blas) goes to BLAS as follows.

numba's `np.dot` calls scipy's OpenBLAS, which has a thread pool of its own.  Inside one
kernel the two pools fight: after a BLAS call OpenBLAS's threads keep spinning while the
kernel's next `prange` loop wants the same cores (the elementwise nests after the matmuls of
the W5 training step ran 2-3x slower than alone).  So kernels that call BLAS run it on ONE
thread (blas_threads.py scopes that around the call) and large products are split into
blocks here, one single-threaded BLAS call per block, under `prange`:

- `C = A @ B` with A stored row-major (no transpose flag on A): blocks of C's rows;
- `C = a.T @ B` (the weight-gradient shape: the reduction runs over a's rows) with a small
  C: blocks of the reduction axis, each into its own partial C, then summed (float sums
  in another order than one BLAS call: within float tolerance, as any BLAS threading);
- otherwise A's transpose is copied row-major first (M*K elements, small next to M*N*K
  multiply-adds) and C's rows are split.

A product of one operand with its own transpose (`a @ a.T`, `a.T @ a`) computes one triangle
and mirrors it instead (gram_code.py).

Small products (under SPLIT_MIN_WORK multiply-adds) are one BLAS call, decided at run time
from the sizes like the other loop nests (or at generation when the sizes are static).
"""

from __future__ import annotations

import os

import numpy as np

from ...compiler.core import ir
from ...compiler.loop_ir import (Alloc, Call, Do, If, IndexOpKind, Int, Let, Load, Loop,
                                 LoopKind, Source, Store, Var, index_op)
from .gemm_tiles import narrow_columns
from .gram_code import gram_lines, is_gram

SPLIT_MIN_WORK = 1 << 19     # multiply-adds: below this one BLAS call on one thread is best
# in a while loop's condition or body (codegen.PER_ITERATION_PARALLEL_MIN_WORK): a split
# product launches a parallel region at every iteration
PER_ITERATION_SPLIT_MIN_WORK = 1 << 24
                             # (a 1000x1000 float64 matrix-vector product, 1M, is split)
PARTIAL_MAX_ELEMENTS = 1 << 18  # C small enough to keep one partial copy of it per block
ADD, MUL, DIV, GE = IndexOpKind.ADD, IndexOpKind.MUL, IndexOpKind.FLOORDIV, IndexOpKind.GE


def split_blocks() -> int:
    """Blocks per split product: one per thread of numba's pool (more blocks measured slower
    on 1024^3: each block packs B again). Read without importing numba, as numba sizes its
    pool (NUMBA_NUM_THREADS, else the CPUs this process may use); part of the cache key."""
    configured = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def gemm_mode() -> str:
    """"own" (the default) or "blas" (FLOWJIT_GEMM=blas: every product through scipy's
    BLAS, for comparison or for a BLAS faster than this kernel); part of the cache key."""
    mode = os.environ.get("FLOWJIT_GEMM", "own").strip().lower() or "own"
    if mode not in ("own", "blas"):
        raise ValueError(f"FLOWJIT_GEMM={mode!r}: expected 'own' or 'blas'")
    return mode


def matmul_lines(gen, node) -> list:
    """Loop-IR statements computing MATMUL `node` into its buffer (allocated here)."""
    if len(node.shape) == 3:
        return _batched_lines(gen, node)
    if len(node.shape) != 2:
        raise NotImplementedError(f"matmul of rank {len(node.shape)}")
    a, b = (gen.buffers[id(x)] for x in node.inputs)
    ta, tb = node.attr
    stmts = gen.allocate(node)
    out = gen.buffers[id(node)]
    a_t = f"{a}.T" if ta else a
    b_t = f"{b}.T" if tb else b
    if gen.quick:   # the quick tier: one BLAS call, no GEMM library, no parallel blocks
        return stmts + [_call("np.dot", a_t, b_t, out)]
    m, n = node.shape
    narrow = narrow_columns(node.dtype.np_dtype.name) if gemm_mode() == "own" else 0
    k = node.inputs[0].shape[0 if ta else 1]
    if all(ir.is_const(d) for d in (m, n, k)) and m.attr * n.attr * k.attr < _split_min(gen):
        narrow = 0   # small and static: one BLAS call, and the kernel links no GEMM code
    if narrow and not is_gram(node):
        # flowjit's GEMM (gemm.py), which splits the product across the threads itself;
        # products narrower than half its tile go to BLAS, split here
        blocks = _gemm_blocks(gen, m, n, k)
        own = [_call("gemm_parallel", a_t, b_t, out, blocks)]
        narrow_stmts = _blas_lines(gen, node, a, b, out)
        epilogue = gen.schedule.epilogues.get(id(node))
        if epilogue is not None and not ta:
            # the consumer nest runs inside the GEMM (compiler/gemm_epilogue.py); where
            # BLAS computes the product it runs after it, as a nest
            own = [_call("gemm_epilogue", a_t, b_t, out, blocks,
                         _bias_text(gen, epilogue), Int(int(epilogue.relu)))]
            only_own = ir.is_const(n) and n.attr >= narrow
            narrow_stmts = narrow_stmts + gen.absorb(
                epilogue.node, f"fused into {node.name}'s GEMM as its epilogue", emit=not only_own)
        if ta:
            # a.T @ b with few columns (the weight gradient x.T @ dz): as (b.T @ a).T it
            # has many columns, and a's rows are read in place, unpacked
            flipped = [_call("gemm_parallel", b if tb else b + ".T", a, f"{out}.T",
                             blocks)]
            narrow_stmts = [If(index_op(GE, gen.size(m), Int(narrow)), tuple(flipped),
                               tuple(narrow_stmts))]
        if ir.is_const(n):
            return stmts + (own if n.attr >= narrow else narrow_stmts)
        return stmts + [If(index_op(GE, gen.size(n), Int(narrow)), tuple(own),
                           tuple(narrow_stmts))]
    return stmts + _blas_lines(gen, node, a, b, out)


def _split_min(gen) -> int:
    """The multiply-adds from which a product is split across the threads."""
    return PER_ITERATION_SPLIT_MIN_WORK if gen.per_iteration else SPLIT_MIN_WORK


def _gemm_blocks(gen, m, n, k):
    """The `blocks` argument of flowjit's GEMM: the threads (it goes serial itself below
    SPLIT_MIN_WORK), or in a per-iteration function 1 below PER_ITERATION_SPLIT_MIN_WORK."""
    threads = split_blocks()
    if not gen.per_iteration or threads == 1:
        return Int(threads)
    if all(ir.is_const(d) for d in (m, n, k)):
        return Int(threads if m.attr * n.attr * k.attr >= _split_min(gen) else 1)
    work = " * ".join(gen.text(gen.size(d)) for d in (m, n, k))
    return Source(f"({threads} if {work} >= {_split_min(gen)} else 1)")


def _call(fn: str, *args) -> Do:
    """A call of library routine `fn`; string arguments are array expressions."""
    return Do(Call(fn, tuple(Source(x) if isinstance(x, str) else x for x in args)))


def _bias_text(gen, epilogue) -> str:
    """The epilogue's bias as a 1-D array expression (None without one)."""
    bias = epilogue.bias
    if bias is None:
        return "None"
    name = gen.buffers[id(bias)]
    leading = len(bias.shape) - 1
    return f"{name}[{', '.join(['0'] * leading)}]" if leading else name


def _blas_lines(gen, node, a, b, out) -> list:
    """The product through BLAS: one call, or one single-threaded call per block."""
    ta, tb = node.attr
    a_t = f"{a}.T" if ta else a
    b_t = f"{b}.T" if tb else b
    single = [_call("np.dot", a_t, b_t, out)]
    m, n = node.shape
    k = node.inputs[0].shape[0 if ta else 1]
    dims = (m, n, k)
    if all(ir.is_const(d) for d in dims):
        if int(np.prod([d.attr for d in dims], dtype=np.int64)) < _split_min(gen):
            return single
        if is_gram(node):
            return gram_lines(gen, a, out, gen.size(m), transposed=bool(ta))
        return _split_lines(gen, node, a, b_t, out, ta, tb, dims)
    work = index_op(MUL, *(gen.size(d) for d in dims))
    if is_gram(node):   # a @ a.T or a.T @ a: one triangle, mirrored (gram_code.py)
        split = gram_lines(gen, a, out, gen.size(m), transposed=bool(ta))
    else:
        split = _split_lines(gen, node, a, b_t, out, ta, tb, dims)
    return [If(index_op(GE, work, Int(_split_min(gen))), tuple(split), tuple(single))]


def _batched_lines(gen, node) -> list:
    """A batch of products (C[i] = A[i] @ B[i]; a rank-2 operand is shared): one
    single-threaded BLAS call per matrix, the matrices spread over the threads when there
    are several and the work is large."""
    a_node, b_node = node.inputs
    a, b = (gen.buffers[id(x)] for x in node.inputs)
    ta, tb = node.attr
    stmts = gen.allocate(node)
    out = gen.buffers[id(node)]
    a_i = f"{a}[bi]" if len(a_node.shape) == 3 else a
    b_i = f"{b}[bi]" if len(b_node.shape) == 3 else b
    call = _call("matmul_into", f"{a_i}{'.T' if ta else ''}", f"{b_i}{'.T' if tb else ''}",
                 f"{out}[bi]")
    count, m, n = (gen.size(d) for d in node.shape)
    k = gen.size(a_node.shape[-2 if ta else -1])
    work = index_op(MUL, count, m, n, k)
    if gen.quick:
        return stmts + [Loop(LoopKind.SERIAL, "bi", Int(0), count, (call,))]
    many = index_op(IndexOpKind.AND, index_op(IndexOpKind.GT, count, Int(1)),
                    index_op(GE, work, Int(_split_min(gen))))
    return stmts + [If(many, (Loop(LoopKind.PARALLEL, "bi", Int(0), count, (call,)),),
                       (Loop(LoopKind.SERIAL, "bi", Int(0), count, (call,)),))]


def _split_lines(gen, node, a, b_t, out, ta, tb, dims) -> list:
    m, n, k = (gen.size(d) for d in dims)
    if ta and not tb:
        small = _small_output(dims)
        if small is True:
            return _reduction_split(gen, node, a, b_t, out, m, n, k)
        if small is None:  # decided at run time
            return [If(index_op(IndexOpKind.LE, index_op(MUL, m, n), Int(PARTIAL_MAX_ELEMENTS)),
                       tuple(_reduction_split(gen, node, a, b_t, out, m, n, k)),
                       tuple(_row_split(gen, a, b_t, out, m, ta)))]
    return _row_split(gen, a, b_t, out, m, ta)


def _block_bounds(extent, blocks: int) -> list:
    """lo and hi of block `blk` of `blocks` equal parts of `extent`."""
    blk = Var("blk")
    return [Let("lo", index_op(DIV, index_op(MUL, blk, extent), Int(blocks))),
            Let("hi", index_op(DIV, index_op(MUL, index_op(ADD, blk, Int(1)), extent),
                               Int(blocks)))]


def _row_split(gen, a, b_t, out, m, ta) -> list:
    blocks = split_blocks()
    stmts = []
    if ta:  # rows of a.T are columns of a: copy the transpose row-major once
        a_rows = gen.names.fresh("at")
        stmts.append(Alloc(a_rows, Call("np.ascontiguousarray", (Source(f"{a}.T"),))))
    else:
        a_rows = a
    nonempty = index_op(IndexOpKind.GT, Var("hi"), Var("lo"))
    return stmts + [Loop(LoopKind.PARALLEL, "blk", Int(0), Int(blocks), tuple(
        _block_bounds(m, blocks)
        + [If(nonempty, (_call("np.dot", f"{a_rows}[lo:hi]", b_t, f"{out}[lo:hi]"),))]))]


def _small_output(dims):
    """Whether C is small enough for partial copies: True, False, or None (run time)."""
    m, n, _ = dims
    if ir.is_const(m) and ir.is_const(n):
        return m.attr * n.attr <= PARTIAL_MAX_ELEMENTS
    return None


def _reduction_split(gen, node, a, b, out, m, n, k) -> list:
    blocks = split_blocks()
    part = gen.names.fresh("part")
    acc = gen.names.fresh("acc")
    dtype = node.dtype.np_dtype.name
    i0, i1, blk = Var("i0"), Var("i1"), Var("blk")
    nonempty = index_op(IndexOpKind.GT, Var("hi"), Var("lo"))
    zero = Loop(LoopKind.SERIAL, "i0", Int(0), m, (Loop(LoopKind.SERIAL, "i1", Int(0), n, (
        Store(part, (blk, i0, i1), Int(0)),)),))
    total = Loop(LoopKind.SERIAL, "i0", Int(0), m, (Loop(LoopKind.SERIAL, "i1", Int(0), n, (
        Let(acc, Load(part, (Int(0), i0, i1))),
        Loop(LoopKind.SERIAL, "blk", Int(1), Int(blocks), (
            Let(acc, index_op(ADD, Var(acc), Load(part, (blk, i0, i1)))),)),
        Store(out, (i0, i1), Var(acc)))),))
    shape = f"({blocks}, {gen.text(m)}, {gen.text(n)})"
    return [Alloc(part, Call("empty_buffer", (Source(shape), Source(f"np.{dtype}")))),
            Loop(LoopKind.PARALLEL, "blk", Int(0), Int(blocks), tuple(
                _block_bounds(k, blocks)
                + [If(nonempty, (_call("np.dot", f"{a}[lo:hi].T", f"{b}[lo:hi]",
                                       f"{part}[blk]"),), (zero,))])),
            total]
