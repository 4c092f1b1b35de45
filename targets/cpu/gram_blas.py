"""`gram_rows`: one block of a Gram product as one BLAS gemm (see gram_code.py).

The gemm goes through numba's own `numba_xxgemm` helper (scipy's BLAS, column-major
conventions), so cached object code needs no symbol beyond what numba's runtime provides.
"""

from __future__ import annotations

from llvmlite import ir as llir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.linalg import make_constant_slot

_KIND = {types.float32: "s", types.float64: "d"}


@intrinsic
def gram_rows(typingctx, a, out, r0, r1, transposed):
    """out[r0:r1, 0:r1] = rows r0..r1 (first r1 columns) of a @ a.T, or of a.T @ a when
    `transposed` (a literal bool). a and out are C-contiguous 2-D arrays of one float type."""
    if not (isinstance(a, types.Array) and isinstance(out, types.Array) and a.ndim == 2
            and out.ndim == 2 and a.dtype == out.dtype and a.dtype in _KIND
            and a.layout == "C" and out.layout == "C"
            and isinstance(transposed, types.BooleanLiteral)):
        return None
    flip = transposed.literal_value
    dtype = a.dtype

    def codegen(context, builder, signature, args):
        a_val, out_val, lo, hi, _ = args
        intp = context.get_value_type(types.intp)
        arr_a = context.make_array(signature.args[0])(context, builder, a_val)
        arr_c = context.make_array(signature.args[1])(context, builder, out_val)
        rows_a, cols_a = cgutils.unpack_tuple(builder, arr_a.shape, 2)
        n = cgutils.unpack_tuple(builder, arr_c.shape, 2)[1]
        char = llir.IntType(8)
        void_p = cgutils.voidptr_t
        fnty = llir.FunctionType(llir.IntType(32), [
            char, char, char, intp, intp, intp, void_p, void_p, intp, void_p, intp, void_p,
            void_p, intp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")
        alpha = make_constant_slot(context, builder, dtype, 1.0)
        beta = make_constant_slot(context, builder, dtype, 0.0)
        # Column-major view of out[r0:r1, 0:r1]: an r1 x (r1 - r0) matrix M at out + r0*n
        # with leading dimension n, M[x, y] = C[r0 + y, x].
        c_ptr = cgutils.gep(builder, arr_c.data, builder.mul(lo, n))
        width = builder.sub(hi, lo)
        if not flip:   # C = a a^T, a is (n, k): M = (a^T)^T[0:r1] @ a^T[:, r0:r1]
            k = cols_a
            transa, transb = ord("t"), ord("n")
            lda = ldb = cols_a
            b_ptr = cgutils.gep(builder, arr_a.data, builder.mul(lo, cols_a))
        else:          # C = a^T a, a is (k, n): M = F[0:r1] @ F[r0:r1]^T with F = a^T
            k = rows_a
            transa, transb = ord("n"), ord("t")
            lda = ldb = cols_a
            b_ptr = cgutils.gep(builder, arr_a.data, lo)
        builder.call(fn, [
            char(ord(_KIND[dtype])), char(transa), char(transb), hi, width, k,
            builder.bitcast(alpha, void_p), builder.bitcast(arr_a.data, void_p), lda,
            builder.bitcast(b_ptr, void_p), ldb, builder.bitcast(beta, void_p),
            builder.bitcast(c_ptr, void_p), n])
        return context.get_dummy_value()

    return types.none(a, out, types.intp, types.intp, transposed), codegen
