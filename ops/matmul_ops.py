"""Matrix products: MatMul (rank 2) and BatchMatMulV2 (batched, broadcasting batch dims).

Public function: `matmul` (TensorFlow 1.x signature).  Rank-2 operands make a MatMul op
(attrs `transpose_a`, `transpose_b`); operands of higher or unknown rank make a
BatchMatMulV2 op (attrs `adj_x`, `adj_y`: conjugate-transpose of the last two dims) whose
leading dims broadcast as in NumPy.  For real dtypes adjoint and transpose are the same;
for complex operands the flag an op lacks is done by a (Conjugate)Transpose op first
(`adjoint_*` on rank 2, `transpose_*` when batched), where TensorFlow uses Conj.
Inner-dimension mismatches known while building are a ValueError naming both shapes;
those found at run time are an InvalidArgumentError.  float16 products accumulate in
float32.
"""

from __future__ import annotations

import numpy as np

from . import rearrange_ops, sum_to_shape
from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable, broadcast_shape, load_broadcast
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..compiler.core.shapes import broadcast_shape as broadcast_static_shape
from ..compiler.core.unit_dims import is_unit
from ..errors import InvalidArgumentError
from .builder import binary_operands, check_dtype, graph_for, make_op
from .lower_reduce import cast_node, compute_dtype
from .registry import OpDef

__all__ = ["matmul"]

MATMUL_TYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32,
                _dtypes.int64, _dtypes.complex64, _dtypes.complex128)


def _check_operands(op):
    a, b = op.inputs
    check_dtype(a, MATMUL_TYPES, "a")
    if b.dtype is not a.dtype:
        raise TypeError(f"Input 'b' of '{op.op_def.name}' Op has type {b.dtype.name} that "
                        f"does not match type {a.dtype.name} of argument 'a'.")
    return a, b


def _inner_dims(a_shape, b_shape, ta: bool, tb: bool):
    """(m, n) of the product of the trailing matrices; ValueError if k differs."""
    a_dims, b_dims = a_shape.dims[-2:], b_shape.dims[-2:]
    m, ka = (a_dims[1], a_dims[0]) if ta else (a_dims[0], a_dims[1])
    kb, n = (b_dims[1], b_dims[0]) if tb else (b_dims[0], b_dims[1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"Dimensions must be equal, but are {ka} and {kb}: matmul needs the "
                         f"inner dimensions to agree; a has shape {a_shape}"
                         f"{' (transposed)' if ta else ''} and b has shape {b_shape}"
                         f"{' (transposed)' if tb else ''}.")
    return m, n


def _matmul_infer(op):
    a, b = _check_operands(op)
    for name, t in (("a", a), ("b", b)):
        if t.shape.ndims is not None and t.shape.ndims != 2:
            raise ValueError(f"Shape must be rank 2 but is rank {t.shape.ndims} for input "
                             f"'{name}' of MatMul (shape {t.shape}); use a batched matmul "
                             "on operands of rank > 2.")
    a_shape, b_shape = a.shape.with_rank(2), b.shape.with_rank(2)
    m, n = _inner_dims(a_shape, b_shape, op.get_attr("transpose_a"),
                       op.get_attr("transpose_b"))
    return [(a.dtype, TensorShape([m, n]))]


def _product(a, b):
    if a.dtype == np.float16:
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    return np.matmul(a, b)


def _size_error(ctx, a, b, what):
    return InvalidArgumentError(None, ctx.op if ctx else None,
                                f"Matrix size-incompatible: {what}: In[0]: {list(a.shape)}, "
                                f"In[1]: {list(b.shape)}")


def _matmul_kernel(ctx, inputs, attrs):
    a, b = inputs
    a = a.T if attrs["transpose_a"] else a
    b = b.T if attrs["transpose_b"] else b
    if a.shape[1] != b.shape[0]:
        raise _size_error(ctx, inputs[0], inputs[1], "the inner dimensions differ")
    return [np.asarray(_product(a, b))]


# --- gradients -----------------------------------------------------------------------------


def _product_grads(a, b, g, ta, tb):
    """(da, db) of a' @ b' where a' is a (transposed if ta) and b' likewise."""
    if not ta and not tb:
        return matmul(g, b, transpose_b=True), matmul(a, g, transpose_a=True)
    if ta and not tb:
        return matmul(b, g, transpose_b=True), matmul(a, g)
    if not ta and tb:
        return matmul(g, b), matmul(g, a, transpose_a=True)
    return matmul(b, g, transpose_a=True, transpose_b=True), matmul(g, a, transpose_a=True,
                                                                    transpose_b=True)


def _matmul_grad(op, g):
    a, b = op.inputs
    return list(_product_grads(a, b, g, op.get_attr("transpose_a"),
                               op.get_attr("transpose_b")))


def _batch_matmul_grad(op, g):
    a, b = op.inputs
    da, db = _product_grads(a, b, g, op.get_attr("adj_x"), op.get_attr("adj_y"))
    # batch dims may have broadcast
    return [sum_to_shape.sum_to_shape(da, a), sum_to_shape.sum_to_shape(db, b)]


# --- lowerings to kernel IR ---------------------------------------------------------------------
def _lower_matmul(ctx, op, inputs):
    """A BLAS call for float32/float64 (float16 through float32, as the kernel does)."""
    a, b = inputs
    if not a.dtype.is_floating:
        raise NotLowerable(f"MatMul on {a.dtype.name} is not compiled (BLAS is float only)")
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    (m, ka), (kb, n) = (a.shape[::-1] if ta else a.shape), (b.shape[::-1] if tb else b.shape)
    ctx.check_equal(ka, kb, "Matrix size-incompatible: the inner dimensions differ")
    dt = compute_dtype(a.dtype)
    a, b = cast_node(a, dt), cast_node(b, dt)
    if any(ir.is_const(d, 1) for d in (m, n, ka)):
        product = _unit_dim_product(a, b, ta, tb, m, n, ka)
    else:
        product = ir.matmul(a, b, ta, tb, (m, n))
    return [cast_node(product, inputs[0].dtype)]


def _unit_dim_product(a, b, ta, tb, m, n, k):
    """A product with a static size-1 dimension as loops of the compiler's own: a
    matrix-vector or vector-matrix product (`m` or `n` is 1) is a sum over k (a row
    reduction for `A @ x`, a column reduction for `x @ A`), an outer product (`k` is 1)
    an elementwise multiply.  Both fuse with their neighbours, and run on every thread;
    BLAS ran `x @ A` on one (a GEMM with one row) and `A @ x` as a GEMM of one column."""
    i, j = ir.axis_vars(2)
    row = ir.index(0) if ir.is_const(m, 1) else i      # a unit output axis reads index 0
    col = ir.index(0) if ir.is_const(n, 1) else j
    r = ir.index(0) if ir.is_const(k, 1) else ir.reduce_var(0)
    body = ir.make(ir.Scalar.MUL, a.dtype,
                   (ir.load(a, (r, row) if ta else (row, r)),
                    ir.load(b, (col, r) if tb else (r, col))))
    if ir.is_const(k, 1):
        return ir.compute(a.dtype, (m, n), (i, j), body)
    return ir.reduce(a.dtype, (m, n), (i, j), (r,), (k,), body, ir.Combiner.ADD)


def _lower_batch_matmul(ctx, op, inputs):
    """One BLAS/GEMM call per matrix of the batch (a 3-D MATMUL node): the broadcast batch
    dims are flattened into one.  An operand whose batch dims are all 1 (or absent) is one
    matrix shared by every product (its 2-D form); one that already has the full batch
    shape is read in place; one that broadcasts along some batch dims only (a (3, 1, m, k)
    against a (1, 4, k, n)) is first copied to the full batch shape, as NumPy's matmul
    loop reads it."""
    a, b = inputs
    if not a.dtype.is_floating or a.dtype.is_complex:
        raise NotLowerable(f"BatchMatMulV2 on {a.dtype.name} is not compiled (BLAS is float "
                           "only)")
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    batch = broadcast_shape(ctx, [a.shape[:-2], b.shape[:-2]],
                            "BatchMatMulV2 (the batch dimensions of the two operands)")
    m, ka = a.shape[-1:-3:-1] if adj_x else a.shape[-2:]
    kb, n = b.shape[-1:-3:-1] if adj_y else b.shape[-2:]
    ctx.check_equal(ka, kb, "Matrix size-incompatible: the inner dimensions differ")
    count = ir.index(1)
    for d in batch:
        count = d if ir.is_const(count, 1) else ir.make(ir.Scalar.MUL, ir.INDEX, (count, d))
    dt = compute_dtype(a.dtype)
    product = ir.matmul(_batch_operand(cast_node(a, dt), batch, count),
                        _batch_operand(cast_node(b, dt), batch, count), adj_x, adj_y,
                        (count, m, n))
    if len(batch) != 1:
        product = ir.reshape(product, tuple(batch) + (m, n))
    return [cast_node(product, a.dtype)]


def _batch_operand(x, batch, count):
    """Operand `x` of a batched product over `batch` as the 3-D MATMUL node reads it: 2-D
    (shared) when its batch dims are all 1, else (count, rows, cols), copied to the full
    batch shape first where it broadcasts along some batch dims."""
    dims, matrix = tuple(x.shape[:-2]), tuple(x.shape[-2:])
    if all(ir.is_const(d, 1) for d in dims):
        return ir.reshape(x, matrix) if dims else x
    full = len(dims) == len(batch) and not any(is_unit(d) and not is_unit(e)
                                                 for d, e in zip(dims, batch))
    if not full:   # broadcast along some batch dims only: the full batch, copied
        shape = tuple(batch) + matrix
        x = ir.compute(x.dtype, shape, ir.axis_vars(len(shape)),
                       load_broadcast(x, ir.axis_vars(len(shape))))
    return x if len(batch) == 1 else ir.reshape(x, (count,) + matrix)


MATMUL = OpDef("MatMul", _matmul_infer, _matmul_kernel, gradient=_matmul_grad,
               lower=_lower_matmul,
               doc="Product of two matrices, optionally transposing either.")


def _batch_infer(op):
    a, b = _check_operands(op)
    for name, t in (("a", a), ("b", b)):
        if t.shape.ndims is not None and t.shape.ndims < 2:
            raise ValueError(f"Shape must be at least rank 2 but is rank {t.shape.ndims} for "
                             f"input '{name}' of BatchMatMulV2 (shape {t.shape}).")
    if a.shape.ndims is None or b.shape.ndims is None:
        return [(a.dtype, unknown_shape())]
    m, n = _inner_dims(a.shape, b.shape, op.get_attr("adj_x"), op.get_attr("adj_y"))
    try:
        batch = broadcast_static_shape(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"The batch dimensions of a {a.shape} and b {b.shape} do not "
                         "broadcast.") from None
    return [(a.dtype, batch.concatenate([m, n]))]


def _adjoint(x):
    x = np.swapaxes(x, -1, -2)
    return np.conj(x) if x.dtype.kind == "c" else x


def _batch_kernel(ctx, inputs, attrs):
    a, b = inputs
    a = _adjoint(a) if attrs["adj_x"] else a
    b = _adjoint(b) if attrs["adj_y"] else b
    if a.shape[-1] != b.shape[-2]:
        raise _size_error(ctx, inputs[0], inputs[1], "the inner dimensions differ")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise _size_error(ctx, inputs[0], inputs[1], "the batch dimensions do not "
                                                     "broadcast") from None
    return [np.asarray(_product(a, b))]


BATCH_MATMUL_V2 = OpDef("BatchMatMulV2", _batch_infer, _batch_kernel,
                        gradient=_batch_matmul_grad, lower=_lower_batch_matmul,
                        doc="Batched matrix product; batch dims broadcast.")


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: str | None = None) -> Tensor:
    """The matrix product `a @ b` (batched over leading dims when either has rank > 2).

    `transpose_*` transposes and `adjoint_*` conjugate-transposes the last two dims of an
    operand before multiplying; the `*_is_sparse` hints are accepted and ignored.
    """
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    graph = graph_for((a, b))
    with graph.as_default(), graph.name_scope(name or "MatMul") as scope:
        a, b = binary_operands(a, b, "MatMul", names=("a", "b"))
        ranks = (a.shape.ndims, b.shape.ndims)
        batched = any(r is None or r > 2 for r in ranks)
        if a.dtype.is_complex:
            a, transpose_a, adjoint_a = _complex_operand(a, transpose_a, adjoint_a, batched)
            b, transpose_b, adjoint_b = _complex_operand(b, transpose_b, adjoint_b, batched)
        if batched:
            attrs = {"adj_x": bool(transpose_a or adjoint_a),
                     "adj_y": bool(transpose_b or adjoint_b)}
            return make_op(BATCH_MATMUL_V2, [a, b], attrs, name=scope).outputs[0]
        attrs = {"transpose_a": bool(transpose_a or adjoint_a),
                 "transpose_b": bool(transpose_b or adjoint_b)}
        return make_op(MATMUL, [a, b], attrs, name=scope).outputs[0]


def _complex_operand(x: Tensor, transpose: bool, adjoint: bool, batched: bool):
    """For complex `x`, do what the op's flag cannot: MatMul only transposes and
    BatchMatMulV2 only adjoints.  Returns (operand, transpose, adjoint) for the op."""
    if not batched and adjoint:
        return rearrange_ops.transpose(x, [1, 0], conjugate=True), False, False
    if batched and transpose:
        rank = x.shape.ndims
        if rank is None:
            raise ValueError(f"transpose of complex {x.name} of unknown rank: use adjoint_* "
                             "(conjugate transpose) or give the operand a known rank.")
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        return rearrange_ops.transpose(x, perm), False, False
    return x, transpose, adjoint


OP_DEFS = (MATMUL, BATCH_MATMUL_V2)
