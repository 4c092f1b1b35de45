"""SumToShape (`sum_to_shape_of`): the adjoint of broadcasting, for gradients.

`output = sum of grad over its leading axes and over the axes where shape[i] == 1 but
grad's dim is not`, reshaped to `shape`. Gradients of broadcasting ops (`sum_to_shape`)
use it when the operand's sizes are not all known while the graph is built (a placeholder
of shape [None, 8]): instead of computing the reduction axes at run time (a data-dependent
`where` over the shape, which nothing can compile), the axes are decided when the op is
lowered, from the signature the cluster is compiled for, which knows which sizes are 1.
The reference kernel decides from the actual sizes, the same rule. Its gradient is
broadcasting back (`broadcast_to`).
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Combiner
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import reduce_axes, remap
from . import pad_ops, reduction_ops, reshape_ops, shape_ops
from .builder import INDEX_TYPES, NUMERIC, check_dtype, graph_for, make_op, to_tensor
from .conversion import static_shape_from_tensor
from .registry import OpDef

__all__ = ["sum_to_shape_of", "sum_to_shape"]


def _infer(op):
    grad, shape = op.inputs
    check_dtype(grad, NUMERIC, "grad")
    check_dtype(shape, INDEX_TYPES, "shape")
    return [(grad.dtype, static_shape_from_tensor(shape))]


def _axes(grad_shape, target) -> list:
    lead = len(grad_shape) - len(target)
    if lead < 0:
        raise ValueError(f"cannot sum a tensor of shape {list(grad_shape)} to the larger "
                         f"shape {list(target)}")
    return list(range(lead)) + [lead + i for i, d in enumerate(target)
                                if d == 1 and grad_shape[lead + i] != 1]


def _kernel(ctx, inputs, attrs):
    grad, shape = inputs
    target = tuple(int(d) for d in shape)
    axes = _axes(grad.shape, target)
    out = grad.sum(axis=tuple(axes)) if axes else grad
    return [np.asarray(out, dtype=grad.dtype).reshape(target)]


def _lower(ctx, op, inputs):
    g = inputs[0]
    target = ctx.symbolic_ints(op.inputs[1])
    lead = len(g.shape) - len(target)
    if lead < 0:
        raise NotLowerable(f"{op.name}: target rank above the gradient's")
    axes = list(range(lead))
    for i, d in enumerate(target):
        gd = g.shape[lead + i]
        if ir.is_const(d, 1):
            if not ir.is_const(gd, 1):
                axes.append(lead + i)
        else:   # not 1 in this signature: broadcasting left it alone
            ctx.check_equal(d, gd, f"{op.name}: gradient and target sizes differ")
    node = reduce_axes(g, axes, keepdims=True, combiner=Combiner.ADD) if axes else g
    if lead:
        shape = list(node.shape[lead:])
        node = remap(node, shape, lambda av: [ir.index(0)] * lead + list(av))
    return [node]


def _gradient(op, g):
    return [pad_ops.broadcast_to(g, shape_ops.shape(op.inputs[0])), None]


SUM_TO_SHAPE = OpDef("SumToShape", _infer, _kernel, gradient=_gradient, lower=_lower,
                     doc="grad summed over the axes broadcasting added, to `shape`.")


def sum_to_shape_of(grad, shape, name=None) -> Tensor:
    """`grad` summed over the axes that broadcasting to grad's shape expanded from `shape`."""
    graph = graph_for((grad, shape))
    grad = to_tensor(grad, graph=graph, name="grad")
    if not isinstance(shape, Tensor):
        shape = np.asarray(shape, dtype=np.int32).reshape(-1)
    shape = to_tensor(shape, graph=graph, name="shape")
    return make_op(SUM_TO_SHAPE, [grad, shape], {}, name, graph=graph).outputs[0]


def sum_to_shape(grad, x):
    """`grad` (shaped like a broadcast result) summed back to the shape of `x`.

    For the gradients of broadcasting ops.  When both static shapes are fully known the
    axes are computed while building (a reduce_sum and a reshape); when x's rank is that of
    grad and no dim of x can be 1 nothing was broadcast; otherwise the SumToShape op decides
    the axes when it is compiled.
    """
    gs, xs = grad.shape, x.shape
    if gs.is_fully_defined() and xs.is_fully_defined():
        g_dims, x_dims = gs.as_tuple(), xs.as_tuple()
        if g_dims == x_dims:
            return grad
        lead = len(g_dims) - len(x_dims)
        axes = list(range(lead)) + [lead + i for i, d in enumerate(x_dims)
                                    if d == 1 and g_dims[lead + i] != 1]
        summed = reduction_ops.reduce_sum(grad, axes) if axes else grad
        return reshape_ops.reshape(summed, x_dims)
    if gs.ndims is not None and gs.ndims == xs.ndims and all(
            d is not None and d != 1 for d in xs.dims):
        return grad  # no dimension of x can have been broadcast
    return sum_to_shape_of(grad, shape_ops.shape(x))


OP_DEFS = (SUM_TO_SHAPE,)
