"""Gradients of the reductions (reduction_ops: Sum, Mean, Prod, Max, Min) and of the matrix
products (matmul_ops: MatMul, BatchMatMulV2).

Kept here, beside the op modules rather than inside them, because those modules are at
their size limit; `GRADIENTS` pairs each OpDef with `fn(op, *output_grads)` and
`ops/__init__.py` installs it as `OpDef.gradient` at registration.

A reduction's gradient reshapes the output gradient to the input's rank with the reduced
axes kept as size 1 ("kept shape") and broadcasts it back; the kept shape is a constant when
the input shape and axes are known while building, else it is computed from runtime shapes
(so unknown dims, keep_dims and negative or repeated reduction_indices all work).  Max/Min
share the gradient evenly among tied extremes; Prod's gradient is exact with zeros in the
input (no division by zero: the product of the other elements is formed from counts of zeros
and the product of the non-zero elements).  ArgMax/ArgMin, Any and All have integer or bool
outputs and no gradient.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from . import math_ops as mo
from . import matmul_ops, reduction_ops
from .array_ops import broadcast_to, ones_like, reshape, zeros_like
from .array_ops import range as _range
from .conversion import static_value
from .math_grad import sum_to_shape
from .reduction_ops import reduce_any, reduce_prod, reduce_sum
from .join_ops import stack
from .shape_ops import rank, shape, size


def _kept_shape(x, axes_t):
    """x's shape with the reduced axes set to 1: a list of ints when known, else a tensor."""
    axes = static_value(axes_t)
    if axes is not None and x.shape.is_fully_defined():
        dims = x.shape.as_tuple()
        reduced = {int(a) % len(dims) for a in axes.reshape(-1)} if dims else set()
        return [1 if i in reduced else d for i, d in enumerate(dims)]
    if axes is not None and x.shape.ndims is not None:
        n = x.shape.ndims
        reduced = {int(a) % n for a in axes.reshape(-1)} if n else set()
        x_shape = shape(x)
        return stack([1 if i in reduced else (d if d is not None else x_shape[i])
                      for i, d in enumerate(x.shape.dims)]) if n else []
    x_shape = shape(x)
    r = rank(x)
    axes_norm = mo.floormod(mo.cast(reshape(axes_t, [-1]), _dtypes.int32), r)
    hit = reduce_any(mo.equal(reshape(_range(0, r), [-1, 1]), reshape(axes_norm, [1, -1])),
                     axis=1)
    return mo.where_v2(hit, ones_like(x_shape), x_shape)


def _kept(op, t):
    """Output-shaped `t` reshaped to the kept shape (a no-op when keep_dims was set)."""
    if op.get_attr("keep_dims"):
        return t
    return reshape(t, _kept_shape(op.inputs[0], op.inputs[1]))


def _sum(op, g):
    x = op.inputs[0]
    return [broadcast_to(_kept(op, g), shape(x)), None]


def _mean(op, g):
    x, z = op.inputs[0], op.outputs[0]
    count = mo.floordiv(size(x), mo.maximum(size(z), 1))
    return [mo.truediv(_sum(op, g)[0], mo.cast(count, x.dtype)), None]


def _prod(op, g):
    x, axes = op.inputs
    is_zero = mo.equal(x, zeros_like(x))
    zeros = reduce_sum(mo.cast(is_zero, x.dtype), axes, keepdims=True)
    nonzero_prod = reduce_prod(mo.where_v2(is_zero, ones_like(x), x), axes, keepdims=True)
    none = zeros_like(nonzero_prod)
    # d prod / d x_i = product of the other elements: nonzero_prod / x_i if no zero, the
    # nonzero product at the single zero, and 0 wherever there are other zeros.
    at_zero = mo.where_v2(mo.equal(zeros, 1.0), nonzero_prod, none)
    elsewhere = mo.where_v2(mo.equal(zeros, 0.0), nonzero_prod, none) / mo.where_v2(
        is_zero, ones_like(x), x)
    return [_kept(op, g) * mo.where_v2(is_zero, at_zero, elsewhere), None]


def _extreme(op, g):
    x, axes = op.inputs
    hits = mo.cast(mo.equal(x, _kept(op, op.outputs[0])), x.dtype)
    ties = reduce_sum(hits, axes, keepdims=True)
    return [_kept(op, g) * hits / ties, None]


# --- matrix products --------------------------------------------------------------------------


def _product_grads(a, b, g, ta, tb):
    """(da, db) of a' @ b' where a' is a (transposed if ta) and b' likewise."""
    mm = matmul_ops.matmul
    if not ta and not tb:
        return mm(g, b, transpose_b=True), mm(a, g, transpose_a=True)
    if ta and not tb:
        return mm(b, g, transpose_b=True), mm(a, g)
    if not ta and tb:
        return mm(g, b), mm(g, a, transpose_a=True)
    return mm(b, g, transpose_a=True, transpose_b=True), mm(g, a, transpose_a=True,
                                                            transpose_b=True)


def _matmul(op, g):
    a, b = op.inputs
    return list(_product_grads(a, b, g, op.get_attr("transpose_a"),
                               op.get_attr("transpose_b")))


def _batch_matmul(op, g):
    a, b = op.inputs
    da, db = _product_grads(a, b, g, op.get_attr("adj_x"), op.get_attr("adj_y"))
    return [sum_to_shape(da, a), sum_to_shape(db, b)]  # batch dims may have broadcast


GRADIENTS = (
    (reduction_ops.SUM, _sum),
    (reduction_ops.MEAN, _mean),
    (reduction_ops.PROD, _prod),
    (reduction_ops.MAX, _extreme),
    (reduction_ops.MIN, _extreme),
    (matmul_ops.MATMUL, _matmul),
    (matmul_ops.BATCH_MATMUL_V2, _batch_matmul),
)
