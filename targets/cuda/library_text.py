"""The kernels of whole-array nodes as numba-cuda source: the tiled matrix product, the
ordered row scatter and the shared-memory transpose (docs/architecture.md, "The CUDA target").

- `matmul_kernel`: C[b] = op(A[b]) @ op(B[b]) with op a transpose or not.  A block computes
  a BM x BM tile of C (BM = `LaunchShape.mm_block`), stepping through K in slices of
  `mm_k`: the block stages the slices of A and B in shared memory, then each thread
  accumulates an R x R sub-tile (R = `mm_reg`) in registers, its rows and columns strided
  by the block's thread rows so neighbouring threads read neighbouring shared words.
  Batches are the grid's z axis; an operand with one batch serves all of them.
- `scatter_kernel`: out[rows[r]] = updates[r] for r in order: one thread per column of a
  row, each walking the rows in order, so the last write of a repeated row wins (or, adding,
  repeated rows add up) exactly as on the CPU; a row out of range sets an error flag the
  host turns into ValueError.
- `transpose_kernel`: the last two axes of a tensor swapped through a shared-memory tile
  (TS x TS+1 to dodge bank conflicts): reads and writes are both along rows.
"""

from __future__ import annotations

from .scalar_text import ctor


def matmul_kernel(name: str, dtype, transpose_a: bool, transpose_b: bool, launch) -> str:
    bm, bk, reg = launch.mm_block, launch.mm_k, launch.mm_reg
    side = bm // reg            # threads per side of the block
    c = ctor(dtype)
    numba_t = dtype.name
    a_at = "A[ao + gk * M + gm]" if transpose_a else "A[ao + gm * K + gk]"
    b_at = "B[bo + gn * K + gk]" if transpose_b else "B[bo + gk * N + gn]"
    return f'''
@cuda.jit
def {name}(A, B, C, M, N, K, a_batch_size, b_batch_size):
    sa = cuda.shared.array(({bk}, {bm}), numba.{numba_t})
    sb = cuda.shared.array(({bk}, {bm}), numba.{numba_t})
    acc = cuda.local.array(({reg}, {reg}), numba.{numba_t})
    ra = cuda.local.array({reg}, numba.{numba_t})
    rb = cuda.local.array({reg}, numba.{numba_t})
    t = cuda.threadIdx.x
    ty = t // {side}
    tx = t % {side}
    batch = cuda.blockIdx.z
    ao = batch * a_batch_size
    bo = batch * b_batch_size
    m0 = cuda.blockIdx.y * {bm}
    n0 = cuda.blockIdx.x * {bm}
    for i in range({reg}):
        for j in range({reg}):
            acc[i, j] = {c}(0)
    for k0 in range(0, K, {bk}):
        e = t
        while e < {bk * bm}:
            kk = e // {bm}
            mm = e % {bm}
            gm = m0 + mm
            gn = n0 + mm
            gk = k0 + kk
            if gm < M and gk < K:
                sa[kk, mm] = {a_at}
            else:
                sa[kk, mm] = {c}(0)
            if gn < N and gk < K:
                sb[kk, mm] = {b_at}
            else:
                sb[kk, mm] = {c}(0)
            e += {side * side}
        cuda.syncthreads()
        for kk in range({bk}):
            for i in range({reg}):
                ra[i] = sa[kk, ty + i * {side}]
            for j in range({reg}):
                rb[j] = sb[kk, tx + j * {side}]
            for i in range({reg}):
                for j in range({reg}):
                    acc[i, j] = {c}(acc[i, j] + ra[i] * rb[j])
        cuda.syncthreads()
    co = batch * M * N
    for i in range({reg}):
        gm = m0 + ty + i * {side}
        if gm < M:
            for j in range({reg}):
                gn = n0 + tx + j * {side}
                if gn < N:
                    C[co + gm * N + gn] = acc[i, j]
'''


def matmul_threads(launch) -> int:
    side = launch.mm_block // launch.mm_reg
    return side * side


def scatter_kernel(name: str, add: bool = False) -> str:
    write = "+=" if add else "="   # one thread per column walks the rows in order
    return f'''
@cuda.jit
def {name}(out, rows, updates, n_rows, n_base, row_size, error):
    c = cuda.grid(1)
    step = cuda.gridsize(1)
    while c < row_size:
        for r in range(n_rows):
            row = rows[r]
            if row < 0 or row >= n_base:
                error[0] = 1
            else:
                out[row * row_size + c] {write} updates[r * row_size + c]
        c += step
'''


def transpose_kernel(name: str, dtype, tile: int) -> str:
    return f'''
@cuda.jit
def {name}(x, out, R, C):
    tile = cuda.shared.array(({tile}, {tile + 1}), numba.{dtype.name})
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    batch = cuda.blockIdx.z
    base = batch * R * C
    r0 = cuda.blockIdx.y * {tile}
    c0 = cuda.blockIdx.x * {tile}
    r = r0 + ty
    while r < r0 + {tile}:
        if r < R and c0 + tx < C:
            tile[r - r0, tx] = x[base + r * C + c0 + tx]
        r += cuda.blockDim.y
    cuda.syncthreads()
    c = c0 + ty
    while c < c0 + {tile}:
        if c < C and r0 + tx < R:
            out[base + c * R + r0 + tx] = tile[tx, c - c0]
        c += cuda.blockDim.y
'''
