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
from .gemm_tiles import narrow_columns
from .gram_code import gram_lines, is_gram

SPLIT_MIN_WORK = 1 << 19     # multiply-adds: below this one BLAS call on one thread is best
                             # (a 1000x1000 float64 matrix-vector product, 1M, is split)
PARTIAL_MAX_ELEMENTS = 1 << 18  # C small enough to keep one partial copy of it per block


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
    """Statements computing MATMUL `node` into its buffer (allocated here)."""
    if len(node.shape) == 3:
        return _batched_lines(gen, node)
    if len(node.shape) != 2:
        raise NotImplementedError(f"matmul of rank {len(node.shape)}")
    a, b = (gen.buffers[id(x)] for x in node.inputs)
    ta, tb = node.attr
    lines = gen.allocate(node)
    out = gen.buffers[id(node)]
    a_t = f"{a}.T" if ta else a
    b_t = f"{b}.T" if tb else b
    m, n = node.shape
    narrow = narrow_columns(node.dtype.np_dtype.name) if gemm_mode() == "own" else 0
    k = node.inputs[0].shape[0 if ta else 1]
    if all(ir.is_const(d) for d in (m, n, k)) and m.attr * n.attr * k.attr < SPLIT_MIN_WORK:
        narrow = 0   # small and static: one BLAS call, and the kernel links no GEMM code
    if narrow and not is_gram(node):
        # flowjit's GEMM (gemm.py), which splits the product across the threads itself;
        # products narrower than half its tile go to BLAS, split here
        own = [f"gemm_parallel({a_t}, {b_t}, {out}, {split_blocks()})"]
        narrow_lines = _blas_lines(gen, node, a, b, out)
        epilogue = gen.schedule.epilogues.get(id(node))
        if epilogue is not None and not ta:
            # the consumer nest runs inside the GEMM (compiler/gemm_epilogue.py); where
            # BLAS computes the product it runs after it, as a nest
            own = [f"gemm_epilogue({a_t}, {b_t}, {out}, {split_blocks()}, "
                   f"{_bias_text(gen, epilogue)}, {int(epilogue.relu)})"]
            only_own = ir.is_const(n) and n.attr >= narrow
            narrow_lines = narrow_lines + gen.absorb(
                epilogue.node, f"fused into {node.name}'s GEMM as its epilogue", emit=not only_own)
        if ta:
            # a.T @ b with few columns (the weight gradient x.T @ dz): as (b.T @ a).T it
            # has many columns, and a's rows are read in place, unpacked
            flipped = [f"gemm_parallel({b if tb else b + '.T'}, {a}, {out}.T, "
                       f"{split_blocks()})"]
            narrow_lines = ([f"if {gen.size_text(m)} >= {narrow}:"]
                            + ["    " + s for s in flipped]
                            + ["else:"] + ["    " + s for s in narrow_lines])
        if ir.is_const(n):
            return lines + (own if n.attr >= narrow else narrow_lines)
        return (lines + [f"if {gen.size_text(n)} >= {narrow}:"] + ["    " + s for s in own]
                + ["else:"] + ["    " + s for s in narrow_lines])
    return lines + _blas_lines(gen, node, a, b, out)


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
    single = [f"np.dot({a_t}, {b_t}, {out})"]
    m, n = node.shape
    k = node.inputs[0].shape[0 if ta else 1]
    dims = (m, n, k)
    if all(ir.is_const(d) for d in dims):
        if int(np.prod([d.attr for d in dims], dtype=np.int64)) < SPLIT_MIN_WORK:
            return single
        if is_gram(node):
            return gram_lines(gen, a, out, gen.size_text(m), transposed=bool(ta))
        return _split_lines(gen, node, a, b_t, out, ta, tb, dims)
    work = " * ".join(gen.size_text(d) for d in dims)
    if is_gram(node):   # a @ a.T or a.T @ a: one triangle, mirrored (gram_code.py)
        split = gram_lines(gen, a, out, gen.size_text(m), transposed=bool(ta))
    else:
        split = _split_lines(gen, node, a, b_t, out, ta, tb, dims)
    return ([f"if {work} >= {SPLIT_MIN_WORK}:"] + ["    " + s for s in split]
            + ["else:"] + ["    " + s for s in single])


def _batched_lines(gen, node) -> list:
    """A batch of products (C[i] = A[i] @ B[i]; a rank-2 operand is shared): one
    single-threaded BLAS call per matrix, the matrices spread over the threads when there
    are several and the work is large."""
    a_node, b_node = node.inputs
    a, b = (gen.buffers[id(x)] for x in node.inputs)
    ta, tb = node.attr
    lines = gen.allocate(node)
    out = gen.buffers[id(node)]
    a_i = f"{a}[bi]" if len(a_node.shape) == 3 else a
    b_i = f"{b}[bi]" if len(b_node.shape) == 3 else b
    call = f"matmul_into({a_i}{'.T' if ta else ''}, {b_i}{'.T' if tb else ''}, {out}[bi])"
    count, m, n = (gen.size_text(d) for d in node.shape)
    k = gen.size_text(a_node.shape[-2 if ta else -1])
    work = f"{count} * {m} * {n} * {k}"
    return lines + [f"if {count} > 1 and {work} >= {SPLIT_MIN_WORK}:",
                    f"    for bi in prange({count}):", f"        {call}",
                    "else:", f"    for bi in range({count}):", f"        {call}"]


def _split_lines(gen, node, a, b_t, out, ta, tb, dims) -> list:
    m, n, k = (gen.size_text(d) for d in dims)
    if ta and not tb:
        small = _small_output(dims)
        if small is True:
            return _reduction_split(gen, node, a, b_t, out, m, n, k)
        if small is None:  # decided at run time
            return ([f"if {m} * {n} <= {PARTIAL_MAX_ELEMENTS}:"]
                    + ["    " + s for s in _reduction_split(gen, node, a, b_t, out, m, n, k)]
                    + ["else:"]
                    + ["    " + s for s in _row_split(gen, a, b_t, out, m, ta)])
    return _row_split(gen, a, b_t, out, m, ta)


def _row_split(gen, a, b_t, out, m, ta) -> list:
    blocks = split_blocks()
    lines = []
    if ta:  # rows of a.T are columns of a: copy the transpose row-major once
        a_rows = gen.names.fresh("at")
        lines.append(f"{a_rows} = np.ascontiguousarray({a}.T)")
    else:
        a_rows = a
    return lines + [
        f"for blk in prange({blocks}):",
        f"    lo = blk * {m} // {blocks}",
        f"    hi = (blk + 1) * {m} // {blocks}",
        "    if hi > lo:",
        f"        np.dot({a_rows}[lo:hi], {b_t}, {out}[lo:hi])",
    ]


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
    return [
        f"{part} = empty_buffer(({blocks}, {m}, {n}), np.{dtype})",
        f"for blk in prange({blocks}):",
        f"    lo = blk * {k} // {blocks}",
        f"    hi = (blk + 1) * {k} // {blocks}",
        "    if hi > lo:",
        f"        np.dot({a}[lo:hi].T, {b}[lo:hi], {part}[blk])",
        "    else:",
        f"        for i0 in range({m}):",
        f"            for i1 in range({n}):",
        f"                {part}[blk, i0, i1] = 0",
        f"for i0 in range({m}):",
        f"    for i1 in range({n}):",
        f"        {acc} = {part}[0, i0, i1]",
        f"        for blk in range(1, {blocks}):",
        f"            {acc} += {part}[blk, i0, i1]",
        f"        {out}[i0, i1] = {acc}",
    ]
