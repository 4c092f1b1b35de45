"""flowjit's GEMM: c = a @ b for float32/float64 2-D arrays, with its own micro-kernel.

The classic blocked algorithm (Goto and van de Geijn's; BLIS's loop order), per thread:

    for each slice of the reduction axis (equal slices of at most KC):
        pack b's KC rows into NR-wide column panels           (Bp: KC x N, padded)
        for each MC-block of a's rows:
            pack a's block into MR-tall row panels            (Ap: MC x KC, padded)
            for each B panel, for each A panel: one micro-kernel call (gemm_ukernel.py)

Packing copies every element once and puts each micro-kernel's operands in the order it
reads them; ragged edges are zero-padded in the panels and their tiles go through a small
scratch tile, so the micro-kernel computes full MR-row tiles; the last column panel computes
only as many vectors as its columns need (1024 columns are 21 full panels and one vector).
When a has at most DIRECT_ROWS row panels, each B panel serves only a few micro-kernel calls
and b's full panels are read where they lie (contiguous rows) instead. Any strides are
accepted for a and b; c must have contiguous rows (kernel buffers do), else a private buffer
is computed and copied in. Sums run in a fixed order per element (k ascending within a
KC-slice, slices in order), so results are deterministic.

Entry points for generated kernels (they reach them through scalar_code):
- `gemm_parallel(a, b, out, blocks)`: the product in `blocks` parallel parts (rows of c, or
  columns when c has fewer rows than columns), called at a kernel's top level, never inside
  a prange loop (its parallel region would nest in the kernel's);
- `matmul_into(a, b, out)`: serial, for batched products (one per matrix under prange);
  products narrower than `gemm_tiles.narrow_columns` go to BLAS there;
- `gram_product(a, out, blocks)` / `gram_product_t`: a @ a.T / a.T @ a in symmetric mode,
  where micro-tiles wholly above the diagonal are skipped, the triangle is cut into row
  blocks of equal area (`triangle_bound`), and each block mirrors its rows into the upper
  triangle (600x300 float32 on 2 threads: 0.78 ms, NumPy's syrk 1.30 ms, the full product
  1.04 ms).
Both call the GEMM of their dtype by symbol (gemm_entry.py): one C-ABI function per dtype,
compiled once and kept in the disk cache (gemm_library.py), so no kernel contains (and
compiles again) the GEMM's code.  Its operands are layout-'A' views, so one compiled GEMM
per dtype serves every layout.

Why not BLAS: scipy's OpenBLAS picks its kernel from OPENBLAS_CORETYPE, and this project's
machines pin it to Haswell (AVX2) for the sake of older OpenBLAS builds; its AVX2 kernel
then reaches about half of an AVX-512 core, and even unpinned it runs the skinny products
of a training step (K = 32, or few rows) well below this kernel (README, "GEMM").
`FLOWJIT_GEMM=blas` (matmul_code.gemm_mode, part of the cache key) sends products to BLAS.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload

from .build import PRANGE_ONLY
from .gemm_pack import transpose_block, transposable
from .gemm_tiles import TILE, lanes, narrow_columns, tile_shape
from .gemm_ukernel import EPILOGUE_BIAS, EPILOGUE_RELU, ukernel
from .matmul_code import SPLIT_MIN_WORK, gemm_mode

KC = 208     # longest reduction slice: a B micro-panel (KC x NR, 39 KB) stays in L1 (48 KB)
             # while A panels stream past (1024^3 float32, 2 threads, Emerald Rapids,
             # 64-byte aligned panels: 7.1-7.3 ms at 176, 192 and 208, 7.3-7.4 at 160, 7.5
             # at 224; 1024 in equal slices of at most 208 (4 x 208 + 192): 0.965 of NumPy's
             # time against 0.975 for 5 x 192 + 64)
MC = 144     # rows of a per block: Ap (MC x KC) stays in L2
FULL = 1 << 62   # gemm_rows' diagonal offset for a product computed whole
DIRECT_ROWS = 4  # row panels of a up to which b is read in place, not packed
_JIT = dict(boundscheck=False, nogil=True, error_model="numpy")


@intrinsic
def _any_layout(typingctx, x):
    """x as a writable 2-D array of layout 'A' (the same data model: a retyped borrow), so
    that one compiled gemm per dtype serves every operand layout and read-only flag (each
    combination would otherwise compile the packing loops again, 2-3 s each)."""
    if not (isinstance(x, types.Array) and x.ndim == 2):
        return None
    target = types.Array(x.dtype, 2, "A")

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, target, args[0])

    return target(x), codegen


@intrinsic
def data_address(typingctx, ary):
    """The address of an array's first element, as an integer."""
    if not isinstance(ary, types.Array):
        return None

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.ptrtoint(array.data, context.get_value_type(types.intp))

    return types.intp(ary), codegen


@njit(inline="always", **_JIT)
def _int(value):
    """`value` as a plain int64: a constant argument would otherwise be typed as a literal
    and compile the callee once more for it (seconds per specialization of gemm_rows, which
    the shared library compiles once per machine: gemm_library.py)."""
    return np.int64(value)


@njit(**_JIT)
def aligned_empty(size, dtype):
    """A new 1-D array of `size` elements whose data starts on a 64-byte boundary (a cache
    line, a vector): NRT's large arrays start 32 bytes past one, so every 64-byte load of a
    packed panel straddled two lines (1024^3 float32: 8.05 ms unaligned, 7.47 aligned)."""
    raw = np.empty(size + 64, dtype)   # 64 elements: room for any skip
    skip = ((-data_address(raw)) % 64) // raw.itemsize
    return raw[skip:skip + size]


@njit(**_JIT)
def triangle_bound(n, blk, blocks):
    """First row of row block `blk` of `blocks` that cut an n x n lower triangle into parts
    of equal area (rows up to r hold r*r/2 of it), on a multiple of 8 rows."""
    if blk >= blocks:
        return n
    return min(n, (int(n * np.sqrt(blk / blocks)) + 4) // 8 * 8)


def _make(dtype_name: str):
    mr, nr = tile_shape(dtype_name)
    nv, width_of_vector = TILE[dtype_name][1], lanes(dtype_name)
    dtype = np.dtype(dtype_name)
    zero = dtype.type(0)
    transposes = transposable(dtype_name)

    @njit(inline="always", **_JIT)
    def finish(value, shift, relu):
        """One element of the epilogue, as the micro-kernel computes it: value + shift,
        then np.maximum(., 0) when `relu` (NaN stays NaN, -0.0 becomes 0.0)."""
        value = value + shift
        if relu and not (value > 0 or value != value):
            return zero
        return value

    @njit(**_JIT)
    def pack_b(b, p0, kc, bp, first):
        """bp[jp*kc*NR + k*NR + j] = b[p0 + k, jp*NR + j] for panels jp >= first, zero
        beyond b's columns."""
        n = b.shape[1]
        full = n // nr
        for k in range(kc):
            src = b[p0 + k]
            for jp in range(first, full):
                dst = bp[jp * kc * nr + k * nr:]
                part = src[jp * nr:]
                for j in range(nr):
                    dst[j] = part[j]
            if full * nr < n:
                dst = bp[full * kc * nr + k * nr:]
                part = src[full * nr:]
                width = n - full * nr
                for j in range(nr):
                    dst[j] = part[j] if j < width else 0

    @njit(**_JIT)
    def pack_a(a, i0, mc, p0, kc, ap):
        """ap[ip*kc*MR + k*MR + r] = a[i0 + ip*MR + r, p0 + k], zero beyond the block: whole
        panels of rows contiguous along k by vector transposes (gemm_pack.py) where the
        tile's MR allows them, the rest element by element."""
        panels = (mc + mr - 1) // mr
        lda = a.strides[0] // a.itemsize
        rows_contiguous = transposes and a.strides[1] == a.itemsize and \
            lda * a.itemsize == a.strides[0]
        for ip in range(panels):
            r0 = i0 + ip * mr
            height = min(mr, i0 + mc - r0)
            k_vector = kc // width_of_vector * width_of_vector \
                if rows_contiguous and height == mr else 0
            for k0 in range(0, k_vector, width_of_vector):
                transpose_block(a, r0 * lda + p0 + k0, lda, ap, ip * kc * mr + k0 * mr)
            for k in range(k_vector, kc):
                dst = ap[ip * kc * mr + k * mr:]
                for r in range(mr):
                    dst[r] = a[r0 + r, p0 + k] if r < height else 0

    @njit(**_JIT)
    def gemm_rows(a, b, c, diagonal, bias, epilogue):
        """c = a @ b, then the `epilogue` (gemm_ukernel.EPILOGUE_* flags, 0: none) with the
        vector `bias` along c's columns; with diagonal = (row of c's first row) - (column
        of its first column) in a symmetric product's coordinates, tiles wholly above that
        product's diagonal are skipped (FULL: none)."""
        m, depth = a.shape
        n = b.shape[1]
        ldc = c.strides[0] // c.itemsize
        col_panels = (n + nr - 1) // nr
        # equal slices of at most KC, on multiples of 16 (a thin last slice pays a whole
        # pass over C for little work)
        slices = max(1, (depth + KC - 1) // KC)
        step = max(16, min(KC, ((depth + slices - 1) // slices + 15) // 16 * 16))
        bp = aligned_empty(col_panels * nr * min(step, max(depth, 1)), dtype)
        ap = aligned_empty(((min(MC, m) + mr - 1) // mr) * mr * min(step, max(depth, 1)),
                           dtype)
        tile = aligned_empty(mr * nr, dtype)
        # the epilogue's bias, zero-padded to whole panels (the micro-kernel reads vectors)
        shift = aligned_empty(col_panels * nr, dtype)
        for j in range(col_panels * nr):
            shift[j] = bias[j] if (epilogue & EPILOGUE_BIAS and j < n) else 0
        relu = epilogue & EPILOGUE_RELU
        # Few rows of a: each B panel serves only a few micro-kernel calls, so full panels
        # are read where they lie (rows ldb apart) instead of being copied first; only the
        # ragged last panel is packed (x.T @ dz of the W5 step packs none of dz's 16 MB)
        ldb = b.strides[0] // b.itemsize
        direct = (m <= DIRECT_ROWS * mr and b.strides[1] == b.itemsize and ldb > 0
                  and ldb * b.itemsize == b.strides[0])
        first = n // nr if direct else 0
        if depth == 0:
            for i in range(m):
                for j in range(n):
                    c[i, j] = finish(0, shift[j], relu) if epilogue else 0
        for p0 in range(0, depth, step):
            kc = min(step, depth - p0)
            accumulate = 1 if p0 > 0 else 0
            last = epilogue if p0 + kc >= depth else 0   # the epilogue runs with the last slice
            pack_b(b, p0, kc, bp, first)
            for i0 in range(0, m, MC):
                mc = min(MC, m - i0)
                pack_a(a, i0, mc, p0, kc, ap)
                for jp in range(col_panels):
                    j0 = jp * nr
                    width = min(nr, n - j0)
                    # the ragged last panel computes only the vectors it needs
                    vectors = (width + width_of_vector - 1) // width_of_vector
                    exact = width == vectors * width_of_vector
                    for ip in range((mc + mr - 1) // mr):
                        r0 = i0 + ip * mr
                        height = min(mr, m - r0)
                        if j0 - r0 > diagonal + height - 1:
                            continue    # above the diagonal: the mirror fills it
                        a_off = ip * kc * mr
                        if jp < first:
                            if height == mr:
                                ukernel(kc, ap, a_off, b, p0 * ldb + j0, ldb, c,
                                        r0 * ldc + j0, ldc, accumulate, nv, shift, j0, last)
                                continue
                            ukernel(kc, ap, a_off, b, p0 * ldb + j0, ldb, tile, 0, nr, 0, nv,
                                    shift, 0, 0)
                        elif height == mr and exact:
                            ukernel(kc, ap, a_off, bp, jp * kc * nr, nr, c, r0 * ldc + j0,
                                    ldc, accumulate, vectors, shift, j0, last)
                            continue
                        else:
                            ukernel(kc, ap, a_off, bp, jp * kc * nr, nr, tile, 0, nr, 0,
                                    vectors, shift, 0, 0)
                        for r in range(height):
                            for j in range(width):
                                value = tile[r * nr + j]
                                if accumulate:
                                    value += c[r0 + r, j0 + j]
                                if last:
                                    value = finish(value, shift[j0 + j], relu)
                                c[r0 + r, j0 + j] = value

    @njit(**_JIT)
    def gemm(a, b, c, bias, epilogue):
        if c.shape[0] == 0 or c.shape[1] == 0:
            return
        if c.shape[1] == 1 or c.strides[1] == c.itemsize:
            gemm_rows(a, b, c, _int(FULL), bias, epilogue)
            return
        tmp = _any_layout(np.empty(c.shape, dtype))   # one specialization of gemm_rows
        gemm_rows(a, b, tmp, _int(FULL), bias, epilogue)
        for i in range(c.shape[0]):
            for j in range(c.shape[1]):
                c[i, j] = tmp[i, j]

    @njit(**_JIT)
    def symmetric_rows(a, b, c, lo, hi):
        """Rows lo..hi of the symmetric c = a @ b (b is a's transpose): the tiles of the
        lower triangle, then the rows' mirror image into columns lo..hi above the diagonal
        (no other row block writes those columns)."""
        if hi <= lo:
            return
        gemm_rows(a[lo:hi], b[:, :hi], c[lo:hi, :hi], lo, c[lo, :hi], _int(0))
        for i in range(hi):
            for j in range(max(lo, i + 1), hi):
                c[i, j] = c[j, i]

    return gemm, symmetric_rows


def _make_parallel(gemm, symmetric_rows, nr: int):
    @njit(parallel=PRANGE_ONLY, **_JIT)
    def gemm_split(a, b, c, blocks, symmetric, bias, epilogue):
        """c = a @ b in `blocks` parallel parts: blocks of c's rows (each packs all of b),
        or of its columns when c has fewer rows than columns (each packs its own share of
        b: x.T @ dz of the W5 step, 32 x 1024, packs nothing twice).  `blocks` comes from
        the generated code (matmul_code.split_blocks(), part of the cache key), not from
        numba.get_num_threads(), whose threading-layer symbol cached object code lacks.
        symmetric = 1 says b is a's transpose: only the lower triangle's tiles are
        multiplied, in row blocks of equal area, each mirrored into the upper triangle (no
        epilogue then).  `epilogue` (gemm_ukernel.EPILOGUE_* flags) with the vector `bias`
        along c's columns is applied to c after the product (gemm_rows)."""
        m, n = c.shape
        depth = a.shape[1]
        mirrored = symmetric and m == n and m > 0 and c.strides[1] == c.itemsize
        if mirrored:
            if blocks == 1 or m * n * depth < 2 * SPLIT_MIN_WORK:
                symmetric_rows(a, b, c, _int(0), m)
                return
        elif blocks == 1 or m * n * depth < SPLIT_MIN_WORK:
            gemm(a, b, c, bias, epilogue)
            return
        by_rows = m >= n
        panels = (n + nr - 1) // nr
        # ONE parallel region for every kind of split: each region is a function of its own
        # that LLVM optimizes with the whole micro-kernel inlined (seconds apiece)
        for blk in prange(blocks):
            if mirrored:
                symmetric_rows(a, b, c, triangle_bound(m, blk, blocks),
                               triangle_bound(m, blk + 1, blocks))
            elif by_rows:
                lo, hi = blk * m // blocks, (blk + 1) * m // blocks
                if hi > lo:
                    gemm(a[lo:hi], b, c[lo:hi], bias, epilogue)
            else:
                lo = min(n, (blk * panels // blocks) * nr)
                hi = min(n, ((blk + 1) * panels // blocks) * nr)
                if hi > lo:
                    gemm(a, b[:, lo:hi], c[:, lo:hi], bias[lo:hi], epilogue)

    return gemm_split


_PARTS = {name: _make(name) for name in ("float32", "float64")}
GEMMS = {name: parts[0] for name, parts in _PARTS.items()}
_SPLIT = {name: _make_parallel(*parts, tile_shape(name)[1]) for name, parts in _PARTS.items()}


def gemm_parallel(a, b, out, blocks):
    """out[...] = a @ b for 2-D float arrays, in `blocks` parts on numba's threads (kernels call
    this at their top level, never inside a prange loop)."""
    np.dot(a, b, out)


@overload(gemm_parallel, jit_options=_JIT, inline="always")
def _gemm_parallel(a, b, out, blocks):
    from .gemm_entry import external_gemm  # lazy: that module imports numba

    name = str(out.dtype)
    if name not in _SPLIT or not a.dtype == b.dtype == out.dtype:
        return None
    shared = external_gemm(name)

    def impl(a, b, out, blocks):
        shared(a, b, out, blocks, 0, np.empty(0, out.dtype), 0)

    return impl


def gemm_epilogue(a, b, out, blocks, bias, relu):
    """out[...] = a @ b + bias (bias None: no bias), then np.maximum(out, 0) when `relu`: the
    GEMM of gemm_parallel with an epilogue fused into its last stores (gemm_ukernel.py)."""
    np.dot(a, b, out)
    if bias is not None:
        out += bias
    if relu:
        np.maximum(out, 0, out)


@overload(gemm_epilogue, jit_options=_JIT, inline="always")
def _gemm_epilogue(a, b, out, blocks, bias, relu):
    from .gemm_entry import external_gemm  # lazy: that module imports numba

    name = str(out.dtype)
    if name not in _SPLIT or not a.dtype == b.dtype == out.dtype:
        return None
    if not isinstance(relu, (types.Boolean, types.Integer)):
        return None
    shared = external_gemm(name)
    if isinstance(bias, types.NoneType):
        def no_bias(a, b, out, blocks, bias, relu):
            shared(a, b, out, blocks, 0, np.empty(0, out.dtype),
                   EPILOGUE_RELU if relu else 0)   # a zero bias, then max(., 0)
        return no_bias
    if not (isinstance(bias, types.Array) and bias.ndim == 1 and bias.dtype == out.dtype):
        return None

    def with_bias(a, b, out, blocks, bias, relu):
        shared(a, b, out, blocks, 0, bias, EPILOGUE_BIAS | (EPILOGUE_RELU if relu else 0))

    return with_bias


def matmul_into(a, b, out):
    """out[...] = a @ b for 2-D arrays, serial (batched products call it per matrix)."""
    np.dot(a, b, out)


@overload(matmul_into, jit_options=_JIT, inline="always")
def _matmul_into(a, b, out):
    name = str(out.dtype)
    # FLOWJIT_GEMM read when the kernel is typed, as the code generator and the cache key
    # read it, so a change of the variable reaches batched products too
    if gemm_mode() == "own" and name in GEMMS and a.dtype == b.dtype == out.dtype:
        from .gemm_entry import external_gemm  # lazy: that module imports numba

        shared = external_gemm(name)
        narrow = narrow_columns(name)

        def own(a, b, out):
            if out.shape[1] >= narrow:
                shared(a, b, out, 1, 0, np.empty(0, out.dtype), 0)
            else:
                np.dot(a, b, out)

        return own

    def blas(a, b, out):
        np.dot(a, b, out)

    return blas


def gram_product(a, out, blocks):
    """out[...] = a @ a.T, symmetric: one triangle multiplied in `blocks` parallel parts,
    then mirrored (kernels call this at their top level, never inside a prange loop)."""
    np.dot(a, a.T, out)


def gram_product_t(a, out, blocks):
    """out[...] = a.T @ a, as gram_product."""
    np.dot(a.T, a, out)


def _gram_overload(transposed: bool):
    def typer(a, out, blocks):
        from .gemm_entry import external_gemm  # lazy: that module imports numba

        name = str(out.dtype)
        if name not in GEMMS or a.dtype != out.dtype:
            return None
        shared = external_gemm(name)
        if transposed:
            def impl(a, out, blocks):
                shared(a.T, a, out, blocks, 1, np.empty(0, out.dtype), 0)
        else:
            def impl(a, out, blocks):
                shared(a, a.T, out, blocks, 1, np.empty(0, out.dtype), 0)
        return impl

    return typer


overload(gram_product, jit_options=_JIT, inline="always")(_gram_overload(False))
overload(gram_product_t, jit_options=_JIT, inline="always")(_gram_overload(True))
