"""TensorFlow's gradient-helper ops, as GraphDefs written by TensorFlow 1.x contain them.

Ops: TanhGrad(y, dy) = dy * (1 - y*y), SigmoidGrad(y, dy) = dy * y * (1 - y), ReluGrad(
gradients, features) = gradients * (features > 0) (elementwise, both inputs of one shape: no
broadcasting), BiasAddGrad(out_backprop) (the sum over every axis but the channel axis:
the last for data_format "NHWC", axis 1 for "NCHW") and BroadcastGradientArgs(s0, s1) ->
(r0, r1) (for two shapes that broadcast, the axes to sum each input's gradient over).
TensorFlow's own gradients of Tanh, Sigmoid, Relu and BiasAdd emit the first four;
flowjit's gradients (math_unary.py, activation_ops.py) compose public ops instead, so
these ops appear in imported graphs.  Functions (`tanh_grad`, ..., `broadcast_gradient_args`,
TensorFlow's raw op names) build them; they are not part of the `tf.*` namespace.

Numerics follow TensorFlow's kernels: float16 is computed in float32 and rounded once;
complex TanhGrad/SigmoidGrad multiply by the conjugate of the derivative; ReluGrad
multiplies (so a NaN or infinite gradient at features <= 0 gives NaN, as in TensorFlow);
BiasAddGrad sums float16 in float32 and integers in their own dtype (wrapping).
BroadcastGradientArgs follows TensorFlow's BCast: identical shapes give no axes; otherwise
shapes are aligned on the right, and each input reduces over the leading axes it lacks and
every axis where it has size 1 and the other input does not, and both reduce where both
have size 1.  The elementwise ops and BiasAddGrad lower into compiled clusters; gradients are
TensorFlow's second-order ones, written with these functions.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Combiner
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable, cast, map_nodes, reduce_axes
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import fill_ops, join_ops, pad_ops, reshape_ops, shape_ops
from .builder import (FLOAT_OR_COMPLEX, INDEX_TYPES, NUMERIC, REALS, binary_operands,
                      check_dtype, graph_for, make_op, to_tensor)
from .conversion import static_value
from .elementwise import op_of
from .lower_reduce import cast_node, compute_dtype
from .lower_util import require_real
from .registry import OpDef, Trait, not_differentiable

# --- elementwise gradient ops: TanhGrad, SigmoidGrad, ReluGrad --------------------------------


def _tanh_grad(y, dy):
    return dy * np.conj(1 - y * y) if y.dtype.kind == "c" else dy * (1 - y * y)


def _sigmoid_grad(y, dy):
    return dy * np.conj(y * (1 - y)) if y.dtype.kind == "c" else dy * y * (1 - y)


def _relu_grad(gradients, features):
    return gradients * (features > 0).astype(gradients.dtype)


def _same_shape_infer(allowed, names):
    def infer(op):
        a, b = op.inputs
        for t, param in zip(op.inputs, names):
            check_dtype(t, allowed, param)
        if b.dtype is not a.dtype:
            raise TypeError(f"Input '{names[1]}' of '{op.type}' Op has type {b.dtype.name} "
                            f"that does not match type {a.dtype.name} of argument "
                            f"'{names[0]}'.")
        if not a.shape.is_compatible_with(b.shape):
            raise ValueError(f"Dimensions must be equal: {op.type} needs '{names[0]}' and "
                             f"'{names[1]}' of one shape, got {a.shape} and {b.shape}.")
        return [(a.dtype, a.shape.merge_with(b.shape))]

    return infer


def _same_shape_kernel(fn, name):
    def kernel(ctx, inputs, attrs):
        a, b = inputs
        if a.shape != b.shape:
            raise InvalidArgumentError(
                None, op_of(ctx), f"Inputs to operation {name} must "
                                  f"have the same size and shape.  Input 0: {list(a.shape)} "
                                  f"!= input 1: {list(b.shape)}")
        wide = np.float32 if a.dtype == np.float16 else a.dtype
        with np.errstate(all="ignore"):
            out = fn(a.astype(wide, copy=False), b.astype(wide, copy=False))
        return [np.asarray(out).astype(a.dtype, copy=False)]

    return kernel


def _mk(kind, dt, *args):
    return ir.make(kind, dt, args)


def _tanh_grad_ir(dt, y, dy):
    return _mk(S.MUL, dt, dy, _mk(S.SUB, dt, ir.const(1, dt), _mk(S.MUL, dt, y, y)))


def _sigmoid_grad_ir(dt, y, dy):
    return _mk(S.MUL, dt, _mk(S.MUL, dt, dy, y), _mk(S.SUB, dt, ir.const(1, dt), y))


def _relu_grad_ir(dt, g, f):
    return _mk(S.MUL, dt, g, cast(_mk(S.GT, _dtypes.bool_, f, ir.const(0, dt)), dt))


def _same_shape_lowering(scalar):
    """out = scalar(compute dtype, a, b) elementwise, the shapes checked equal at run time."""

    def lower(ctx, op, inputs):
        require_real(op)
        a, b = inputs
        if len(a.shape) != len(b.shape):
            raise NotLowerable(f"{op.type} of inputs of different ranks (the reference "
                               f"kernel reports it)")
        for i, (m, n) in enumerate(zip(a.shape, b.shape)):
            ctx.check_equal(m, n, f"Inputs to operation {op.type} must have the same size "
                                  f"and shape (dimension {i} differs)")
        dt = a.dtype
        cdt = compute_dtype(dt)
        return [map_nodes(ctx, lambda x, y: cast(scalar(cdt, cast(x, cdt), cast(y, cdt)), dt),
                          inputs, dt, op.type)]

    return lower


def _tanh_grad_grad(op, g):
    y, dy = op.inputs
    return [g * -2.0 * dy * y, tanh_grad(y, g)]


def _sigmoid_grad_grad(op, g):
    y, dy = op.inputs
    gb = g * dy
    return [gb - 2.0 * gb * y, sigmoid_grad(y, g)]


def _relu_grad_grad(op, g):
    features = op.inputs[1]
    return [relu_grad(g, features), fill_ops.zeros_like(features)]


# (op type, allowed dtypes, input names, kernel, gradient, lowering's scalar expression)
_ELEMENTWISE = (
    ("TanhGrad", FLOAT_OR_COMPLEX, ("y", "dy"), _tanh_grad, _tanh_grad_grad, _tanh_grad_ir),
    ("SigmoidGrad", FLOAT_OR_COMPLEX, ("y", "dy"), _sigmoid_grad, _sigmoid_grad_grad,
     _sigmoid_grad_ir),
    ("ReluGrad", REALS, ("gradients", "features"), _relu_grad, _relu_grad_grad, _relu_grad_ir),
)

TANH_GRAD, SIGMOID_GRAD, RELU_GRAD = (
    OpDef(name, _same_shape_infer(allowed, names), _same_shape_kernel(fn, name),
          traits={Trait.ELEMENTWISE}, gradient=gradient, lower=_same_shape_lowering(scalar),
          doc=f"{name}: the backpropagated gradient of {name[:-4]}, elementwise.")
    for name, allowed, names, fn, gradient, scalar in _ELEMENTWISE)


def _apply_same_shape(op_def, a, b, names, name) -> Tensor:
    a, b = binary_operands(a, b, op_def.name, names)
    return make_op(op_def, [a, b], {"T": a.dtype}, name or op_def.name).outputs[0]


def tanh_grad(y, dy, name=None) -> Tensor:
    """dy * (1 - y*y): the gradient of y = tanh(x) from y and the gradient dy of y."""
    return _apply_same_shape(TANH_GRAD, y, dy, ("y", "dy"), name)


def sigmoid_grad(y, dy, name=None) -> Tensor:
    """dy * y * (1 - y): the gradient of y = sigmoid(x) from y and the gradient dy of y."""
    return _apply_same_shape(SIGMOID_GRAD, y, dy, ("y", "dy"), name)


def relu_grad(gradients, features, name=None) -> Tensor:
    """gradients * (features > 0): the gradient of relu(features)."""
    return _apply_same_shape(RELU_GRAD, gradients, features, ("gradients", "features"), name)


# --- BiasAddGrad ------------------------------------------------------------------------------


def _channels_first(attrs) -> bool:
    """Whether the attrs (an op's, or a kernel's dict) say "NCHW" (TensorFlow's default,
    "NHWC", when a GraphDef left the attr out)."""
    data_format = attrs.get("data_format", "NHWC")
    if isinstance(data_format, bytes):
        data_format = data_format.decode()
    return data_format == "NCHW"


def _bias_grad_infer(op):
    x = op.inputs[0]
    check_dtype(x, NUMERIC, "out_backprop")
    first = _channels_first(op.attrs)
    min_rank = 3 if first else 2
    rank = x.shape.ndims
    if rank is None:
        return [(x.dtype, unknown_shape(1))]
    if rank < min_rank:
        raise ValueError(f"Shape must be at least rank {min_rank} but is rank {rank}: "
                         f"BiasAddGrad with data_format {'NCHW' if first else 'NHWC'} needs "
                         f"out_backprop of rank >= {min_rank}, got shape {x.shape}.")
    return [(x.dtype, TensorShape([x.shape.dims[1 if first else rank - 1]]))]


def _bias_grad_kernel(ctx, inputs, attrs):
    x = inputs[0]
    first = _channels_first(attrs)
    if x.ndim < (3 if first else 2):
        raise InvalidArgumentError(None, op_of(ctx), f"BiasAddGrad needs out_backprop of rank "
                                                     f">= {3 if first else 2}, got shape "
                                                     f"{list(x.shape)}")
    channel = 1 if first else x.ndim - 1
    axes = tuple(k for k in range(x.ndim) if k != channel)
    wide = np.float32 if x.dtype == np.float16 else x.dtype
    with np.errstate(all="ignore"):   # inf + -inf is NaN, as in TensorFlow
        total = np.sum(x, axis=axes, dtype=wide)
    return [total.astype(x.dtype, copy=False)]


def _bias_grad_grad(op, g):
    x = op.inputs[0]
    if not _channels_first(op.attrs):
        return [pad_ops.broadcast_to(g, shape_ops.shape(x))]
    rank = x.shape.ndims
    column = [-1] + [1] * (rank - 2) if rank is not None else join_ops.concat(
        [[-1], fill_ops.ones_like(shape_ops.shape(x))[2:]], 0)
    return [pad_ops.broadcast_to(reshape_ops.reshape(g, column), shape_ops.shape(x))]


def _lower_bias_grad(ctx, op, inputs):
    require_real(op)
    x = inputs[0]
    rank = len(x.shape)
    first = _channels_first(op.attrs)
    if rank < (3 if first else 2):
        raise NotLowerable("BiasAddGrad of too low a rank (the reference kernel reports it)")
    channel = 1 if first else rank - 1
    acc = compute_dtype(x.dtype)
    total = reduce_axes(x, [k for k in range(rank) if k != channel], False, Combiner.ADD, acc,
                        lambda e: cast(e, acc))
    return [cast_node(total, x.dtype)]


BIAS_ADD_GRAD = OpDef("BiasAddGrad", _bias_grad_infer, _bias_grad_kernel,
                      traits={Trait.REDUCTION}, gradient=_bias_grad_grad, lower=_lower_bias_grad,
                      doc="The bias gradient of BiasAdd: out_backprop summed over every axis "
                          "but the channel axis (last, or 1 for NCHW).")


def bias_add_grad(out_backprop, data_format: str = "NHWC", name=None) -> Tensor:
    """The sum of `out_backprop` over every axis but the channel axis (the last for "NHWC",
    axis 1 for "NCHW"): the gradient of BiasAdd's bias."""
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW', got {data_format!r}.")
    x = to_tensor(out_backprop, graph=graph_for((out_backprop,)), name="out_backprop")
    return make_op(BIAS_ADD_GRAD, [x], {"T": x.dtype, "data_format": data_format},
                   name or "BiasAddGrad").outputs[0]


# --- BroadcastGradientArgs --------------------------------------------------------------------


def broadcast_gradient_axes(s0, s1):
    """(r0, r1): for shapes `s0`, `s1` (sequences of ints) that broadcast, the axes of the
    broadcast shape to sum each input's gradient over (TensorFlow's BCast, see the module
    docstring); ValueError when they do not broadcast.  The reference of
    BroadcastGradientArgs."""
    s0, s1 = [int(d) for d in s0], [int(d) for d in s1]
    if s0 == s1:
        return [], []
    n = max(len(s0), len(s1))
    a, b = [1] * (n - len(s0)) + s0, [1] * (n - len(s1)) + s1
    r0, r1 = [], []
    for i, (x, y) in enumerate(zip(a, b)):
        if x == 1 and y == 1:
            r0.append(i)
            r1.append(i)
        elif x == 1:
            r0.append(i)
        elif y == 1:
            r1.append(i)
        elif x != y:
            raise ValueError(f"Incompatible shapes: {s0} vs. {s1}")
    return r0, r1


def _args_infer(op):
    s0, s1 = op.inputs
    check_dtype(s0, INDEX_TYPES, "s0")
    if s1.dtype is not s0.dtype:
        raise TypeError(f"Input 's1' of 'BroadcastGradientArgs' Op has type {s1.dtype.name} "
                        f"that does not match type {s0.dtype.name} of argument 's0'.")
    for t, param in ((s0, "s0"), (s1, "s1")):
        if t.shape.ndims is not None and t.shape.ndims != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.ndims}: '{param}' of "
                             f"BroadcastGradientArgs must be a shape vector, got {t.shape}.")
    v0, v1 = static_value(s0), static_value(s1)
    if v0 is not None and v1 is not None:
        r0, r1 = broadcast_gradient_axes(v0.reshape(-1), v1.reshape(-1))
        return [(s0.dtype, TensorShape([len(r0)])), (s0.dtype, TensorShape([len(r1)]))]
    return [(s0.dtype, unknown_shape(1)), (s0.dtype, unknown_shape(1))]


def _args_kernel(ctx, inputs, attrs):
    s0, s1 = inputs
    if s0.ndim != 1 or s1.ndim != 1:
        raise InvalidArgumentError(None, op_of(ctx), f"BroadcastGradientArgs needs shape "
                                                     f"vectors, got shapes {list(s0.shape)} "
                                                     f"and {list(s1.shape)}")
    try:
        r0, r1 = broadcast_gradient_axes(s0, s1)
    except ValueError as e:
        raise InvalidArgumentError(None, op_of(ctx), str(e)) from None
    return [np.asarray(r0, dtype=s0.dtype), np.asarray(r1, dtype=s0.dtype)]


BROADCAST_GRADIENT_ARGS = OpDef(
    "BroadcastGradientArgs", _args_infer, _args_kernel, gradient=not_differentiable,
    doc="The axes to sum each input's gradient over when shapes s0 and s1 broadcast.")


def broadcast_gradient_args(s0, s1, name=None):
    """(r0, r1) tensors: the axes to reduce the gradients of inputs of shapes `s0` and `s1`
    (int32 or int64 vectors) over, under NumPy broadcasting (TensorFlow's semantics)."""
    graph = graph_for((s0, s1))
    s0 = to_tensor(s0, graph=graph, name="s0")
    s1 = to_tensor(s1, dtype=s0.dtype, graph=graph, name="s1")
    op = make_op(BROADCAST_GRADIENT_ARGS, [s0, s1], {"T": s0.dtype},
                 name or "BroadcastGradientArgs")
    return op.outputs[0], op.outputs[1]


OP_DEFS = (TANH_GRAD, SIGMOID_GRAD, RELU_GRAD, BIAS_ADD_GRAD, BROADCAST_GRADIENT_ARGS)
