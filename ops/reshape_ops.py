"""Reshape: the same elements, in row-major order, in a new shape.

Public function (re-exported by `array_ops`): `reshape`.  The requested shape is an int32/
int64 tensor input with at most one -1 (inferred, by TensorFlow's rule that zero sizes drop
out of both products when the requested sizes hold a zero).  It lowers to a view of its
materialized input, or to an index remap when only size-1 dimensions come or go.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import remap
from . import lower_index as lx
from . import shape_ops
from .array_common import check_rank, describe_dims, index_tensor, runtime_error, static_ints
from .builder import INDEX_TYPES, check_dtype, make_op, to_tensor
from .conversion import static_shape_from_tensor
from .lower_util import require_real
from .registry import OpDef


def _check_sizes(sizes, fail):
    """Raise `fail(message)` unless `sizes` is a valid reshape target (>= 0, one -1 at most)."""
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise fail(f"Only one input size may be -1, not both {unknown[0]} and {unknown[1]} "
                   f"(requested shape {describe_dims(sizes)})")
    bad = [s for s in sizes if s < -1]
    if bad:
        raise fail(f"Size {bad[0]} in requested shape {describe_dims(sizes)} must be "
                   "non-negative (or -1 once)")


def resolve_reshape(in_shape, sizes, fail):
    """The output shape for `sizes` (at most one -1) given a fully known input shape.

    Follows TensorFlow's rule for -1 beside zero-sized dimensions: zero sizes are left out of
    both products so the other dimensions can still be inferred.  Raises the exception
    `fail(message)` builds (ValueError while building, InvalidArgumentError while running).
    """
    _check_sizes(sizes, fail)
    n = int(np.prod(in_shape, dtype=np.int64))
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    out = list(sizes)
    if unknown:
        sizes_have_zero = 0 in sizes
        product = int(np.prod([s for s in sizes if s > 0], dtype=np.int64))
        in_product = int(np.prod([d for d in in_shape if d > 0 or not sizes_have_zero],
                                 dtype=np.int64))
        out[unknown[0]] = in_product // product
        if 0 not in in_shape or not sizes_have_zero:
            if out[unknown[0]] * product != in_product:
                raise fail(f"Cannot reshape a tensor of shape {describe_dims(in_shape)} with "
                           f"{n} elements to shape {describe_dims(sizes)}: {n} is not a "
                           f"multiple of {product}")
    m = int(np.prod(out, dtype=np.int64))
    if m != n:
        raise fail(f"Cannot reshape a tensor of shape {describe_dims(in_shape)} with {n} "
                   f"elements to shape {describe_dims(out)} ({m} elements)")
    return out


def _reshape_infer(op):
    x, shape = op.inputs
    check_dtype(shape, INDEX_TYPES, "shape")
    check_rank(shape, 1, "shape")
    sizes = static_ints(shape)
    if sizes is not None:
        if x.shape.is_fully_defined():
            return [(x.dtype, resolve_reshape(x.shape.as_list(), sizes, ValueError))]
        _check_sizes(sizes, ValueError)
    return [(x.dtype, static_shape_from_tensor(shape))]


def _reshape_kernel(ctx, inputs, attrs):
    x, shape = inputs
    sizes = [int(s) for s in shape.reshape(-1)]
    out = resolve_reshape(list(x.shape), sizes, lambda m: runtime_error(ctx, m))
    return [x.reshape(out)]


def _reshape_grad(op, g):
    """The gradient keeps the elements in order: reshaped back to the input's shape."""
    return [reshape(g, shape_ops.shape(op.inputs[0])), None]


# --- lowering to kernel IR ----------------------------------------------------------------------


def _wildcard(known, in_dims):
    """(the size a reshape's -1 stands for, whether the element count then always matches).

    TensorFlow's rule: when the requested sizes hold a zero, zeros drop out of both products.
    Sizes that are also input sizes (the same Expr) cancel out first, so `[shape(x)[0], -1]`
    costs a product of the remaining input sizes."""
    rest_in = [d for d in in_dims if not ir.is_const(d, 1)]
    rest_known = []
    for s in known:
        if s in rest_in:
            rest_in.remove(s)
        elif not ir.is_const(s, 1):
            rest_known.append(s)
    have_zero = lx.any_of(lx.eq(s, 0) for s in known)
    numerator = lx.select(have_zero, lx.product(map(lx.nonzero, rest_in)), lx.product(rest_in))
    return lx.floordiv(numerator, lx.product(map(lx.nonzero, rest_known))), not rest_known


def _lower_reshape(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x = inputs[0]
    sizes = ctx.symbolic_ints(op.inputs[1])
    free = [k for k, s in enumerate(sizes) if ir.is_const(s, -1)]
    known = [s for k, s in enumerate(sizes) if k not in free]
    if len(free) > 1 or not all(lx.provably_nonneg(s) for s in known):
        raise NotLowerable("Reshape sizes must be non-negative sizes and at most one -1")
    in_dims = list(x.shape)
    exact = False
    if free:
        sizes[free[0]], exact = _wildcard(known, in_dims)
    if not exact:
        lx.require(ctx, lx.eq(lx.product(sizes), lx.product(in_dims)),
                   f"Cannot reshape a tensor to the shape requested by {op.name}: the number "
                   "of elements differs")
    shape = lx.out_shape(op.outputs[0], sizes)
    if shape == tuple(in_dims):
        return [x]
    # Only size-1 dimensions come or go (a -1 standing for the one input dimension left
    # over, which it equals whenever there are elements to load): an index remap.
    kept_in = [k for k, d in enumerate(in_dims) if not ir.is_const(d, 1)]
    kept_out = [k for k, d in enumerate(shape) if not ir.is_const(d, 1)]
    if len(kept_in) == len(kept_out) and all(
            in_dims[i] is shape[o] or o in free for i, o in zip(kept_in, kept_out)):
        where = dict(zip(kept_in, kept_out))
        return [remap(x, shape, lambda a: [a[where[k]] if k in where else ir.index(0)
                                           for k in range(len(in_dims))])]
    return [ir.reshape(x, shape)]


RESHAPE = OpDef("Reshape", _reshape_infer, _reshape_kernel, gradient=_reshape_grad,
               lower=_lower_reshape)


def reshape(tensor, shape, name=None):
    """`tensor`'s elements in a new `shape` (a list, TensorShape or 1-D int tensor; one -1)."""
    t = to_tensor(tensor)
    s = index_tensor(shape, "shape", graph=t.graph)
    return make_op(RESHAPE, [t, s], {}, name or "Reshape").outputs[0]


OP_DEFS = (RESHAPE,)
__all__ = ["reshape"]
