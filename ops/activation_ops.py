"""Activations and BiasAdd: part of `flowjit.nn` (see nn_ops.py; softmax: softmax_ops.py).

Ops: Relu, Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu (elementwise activations, made
from one table of kernel, gradient and lowering) and BiasAdd.  Public functions keep
TensorFlow 1.x's `tf.nn` signatures; `xw_plus_b` is a composition (MatMul + BiasAdd), as in
TensorFlow.

Numerics: softplus is log(1 + e^x) without overflow; float16 inputs are computed in float32
and rounded back.  BiasAdd is not marked ELEMENTWISE: its NCHW form does not broadcast the
NumPy way; its bias gradient sums over every axis but the channel's.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import cast, map_nodes
from ..compiler.core.shapes import TensorShape
from ..errors import InvalidArgumentError
from . import (fill_ops, join_ops, math_cast, math_compare, math_unary, matmul_ops, reduction_ops,
               reshape_ops, select_ops, shape_ops)
from .builder import (FLOATS, NUMERIC, REALS, binary_operands, check_dtype,
                      graph_for, make_op, to_tensor)
from .lower_reduce import compute_dtype
from .lower_util import require_real
from .registry import OpDef, Trait

__all__ = ["relu", "relu6", "elu", "selu", "softplus", "softsign", "leaky_relu", "bias_add",
           "xw_plus_b"]


def _compute_dtype(x: np.ndarray):
    """float16 is computed in float32 (then rounded back), like TensorFlow's CPU kernels."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


# --- elementwise activations ----------------------------------------------------------------

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _relu(x, attrs):
    return np.maximum(x, x.dtype.type(0))


def _relu6(x, attrs):
    return np.clip(x, x.dtype.type(0), x.dtype.type(6))


def _elu(x, attrs):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _selu(x, attrs):
    return _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0)))


def _softplus(x, attrs):
    return np.logaddexp(x.dtype.type(0), x)


def _softsign(x, attrs):
    return x / (1 + np.abs(x))


def _leaky_relu(x, attrs):
    return np.where(x > 0, x, x * attrs["alpha"])


def _activation_infer(allowed):
    def infer(op):
        x = op.inputs[0]
        check_dtype(x, allowed, "features")
        return [(x.dtype, x.shape)]

    return infer


def _activation_kernel(fn):
    def kernel(ctx, inputs, attrs):
        x = inputs[0]
        with np.errstate(over="ignore", invalid="ignore"):
            y = fn(_compute_dtype(x), attrs)
        return [np.asarray(y).astype(x.dtype, copy=False)]

    return kernel


# --- gradients and lowerings of the activations ---------------------------------------


def _relu_grad(op, g):
    return [_where(op.outputs[0] > 0, g, fill_ops.zeros_like(g))]


def _relu6_grad(op, g):
    x = op.inputs[0]
    return [_where(math_compare.logical_and(x > 0, x < 6), g, fill_ops.zeros_like(g))]


def _elu_grad(op, g):
    x, y = op.inputs[0], op.outputs[0]
    return [_where(x > 0, g, g * (y + 1.0))]


def _selu_grad(op, g):
    x, y = op.inputs[0], op.outputs[0]
    return [_where(x > 0, g * _SELU_SCALE, g * (y + _SELU_SCALE * _SELU_ALPHA))]


def _softplus_grad(op, g):
    return [g * math_unary.sigmoid(op.inputs[0])]


def _softsign_grad(op, g):
    return [g / math_unary.square(math_unary.abs(op.inputs[0]) + 1.0)]


def _leaky_relu_grad(op, g):
    return [_where(op.inputs[0] > 0, g, g * op.get_attr("alpha"))]


def _where(cond, a, b):
    return select_ops.where_v2(cond, a, b)


def _activation_lowering(fn):
    """Elementwise lowering of y = fn(dtype, x, op), computed in float32 for float16."""

    def lower(ctx, op, inputs):
        require_real(op)
        dt = inputs[0].dtype
        cdt = compute_dtype(dt)
        return [map_nodes(ctx, lambda x: cast(fn(cdt, cast(x, cdt), op), dt), inputs, dt)]

    return lower


def _mk(kind, dt, *args):
    return ir.make(kind, dt, args)


def _positive(x):
    return _mk(S.GT, _dtypes.bool_, x, ir.const(0, x.dtype))


def _expm1_negative_part(dt, x):
    return _mk(S.EXPM1, dt, _mk(S.MIN, dt, x, ir.const(0, dt)))


def _relu_ir(dt, x, op):
    return _mk(S.MAX, dt, x, ir.const(0, dt))


def _relu6_ir(dt, x, op):
    return _mk(S.MIN, dt, _relu_ir(dt, x, op), ir.const(6, dt))


def _elu_ir(dt, x, op):
    return _mk(S.SELECT, dt, _positive(x), x, _expm1_negative_part(dt, x))


def _selu_ir(dt, x, op):
    neg = _mk(S.MUL, dt, ir.const(_SELU_ALPHA, dt), _expm1_negative_part(dt, x))
    return _mk(S.MUL, dt, ir.const(_SELU_SCALE, dt), _mk(S.SELECT, dt, _positive(x), x, neg))


def _softplus_ir(dt, x, op):  # logaddexp(0, x) = max(x, 0) + log1p(exp(-|x|))
    tail = _mk(S.LOG1P, dt, _mk(S.EXP, dt, _mk(S.NEG, dt, _mk(S.ABS, dt, x))))
    return _mk(S.ADD, dt, _relu_ir(dt, x, op), tail)


def _softsign_ir(dt, x, op):
    return _mk(S.DIV, dt, x, _mk(S.ADD, dt, ir.const(1, dt), _mk(S.ABS, dt, x)))


def _leaky_relu_ir(dt, x, op):
    alpha = ir.const(op.get_attr("alpha"), dt)
    return _mk(S.SELECT, dt, _positive(x), x, _mk(S.MUL, dt, x, alpha))


# (op type, allowed dtypes, kernel body, gradient, lowering's scalar expression)
_ACTIVATIONS = (
    ("Relu", REALS, _relu, _relu_grad, _relu_ir),
    ("Relu6", REALS, _relu6, _relu6_grad, _relu6_ir),
    ("Elu", FLOATS, _elu, _elu_grad, _elu_ir),
    ("Selu", FLOATS, _selu, _selu_grad, _selu_ir),
    ("Softplus", FLOATS, _softplus, _softplus_grad, _softplus_ir),
    ("Softsign", FLOATS, _softsign, _softsign_grad, _softsign_ir),
    ("LeakyRelu", FLOATS, _leaky_relu, _leaky_relu_grad, _leaky_relu_ir),
)

RELU, RELU6, ELU, SELU, SOFTPLUS, SOFTSIGN, LEAKY_RELU = (
    OpDef(name, _activation_infer(allowed), _activation_kernel(fn),
          traits={Trait.ELEMENTWISE}, gradient=gradient, lower=_activation_lowering(scalar),
          doc=f"The {name} activation, elementwise.")
    for name, allowed, fn, gradient, scalar in _ACTIVATIONS)


def _activation(op_def, features, name, attrs=None) -> Tensor:
    graph = graph_for((features,))
    with graph.as_default(), graph.name_scope(name or op_def.default_name) as scope:
        x = to_tensor(features, name="features")
        return make_op(op_def, [x], attrs or {}, name=scope).outputs[0]


def relu(features, name=None) -> Tensor:
    """max(features, 0)."""
    return _activation(RELU, features, name)


def relu6(features, name=None) -> Tensor:
    """min(max(features, 0), 6)."""
    return _activation(RELU6, features, name)


def elu(features, name=None) -> Tensor:
    """features if > 0, else exp(features) - 1."""
    return _activation(ELU, features, name)


def selu(features, name=None) -> Tensor:
    """The scaled ELU: scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    return _activation(SELU, features, name)


def softplus(features, name=None) -> Tensor:
    """log(exp(features) + 1), without overflow for large |features|."""
    return _activation(SOFTPLUS, features, name)


def softsign(features, name=None) -> Tensor:
    """features / (abs(features) + 1)."""
    return _activation(SOFTSIGN, features, name)


def leaky_relu(features, alpha: float = 0.2, name=None) -> Tensor:
    """features if > 0, else alpha * features; integer inputs are cast to float32 first."""
    graph = graph_for((features,))
    with graph.as_default(), graph.name_scope(name or "LeakyRelu") as scope:
        x = to_tensor(features, name="features")
        if x.dtype.is_integer:
            x = math_cast.cast(x, _dtypes.float32)
        # a GraphDef holds float attrs in 32 bits (as TensorFlow does), so the op keeps the
        # 32-bit value: a written and re-read graph computes exactly what this one does
        alpha = float(np.float32(alpha))
        return make_op(LEAKY_RELU, [x], {"alpha": alpha}, name=scope).outputs[0]


# --- BiasAdd ----------------------------------------------------------------------------------


def _bias_infer(op):
    value, bias = op.inputs
    check_dtype(value, NUMERIC, "value")
    if bias.dtype is not value.dtype:
        raise TypeError(f"Input 'bias' of 'BiasAdd' Op has type {bias.dtype.name} that does "
                        f"not match type {value.dtype.name} of argument 'value'.")
    channels_first = op.get_attr("data_format") == "NCHW"
    min_rank = 3 if channels_first else 2
    rank = value.shape.ndims
    if rank is not None and rank < min_rank:
        raise ValueError(f"Shape must be at least rank {min_rank} but is rank {rank}: "
                         f"BiasAdd with data_format {op.get_attr('data_format')} needs a "
                         f"value of rank >= {min_rank}, got shape {value.shape}.")
    if bias.shape.ndims is not None and bias.shape.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {bias.shape.ndims}: the bias must "
                         f"be a vector, got shape {bias.shape}.")
    if rank is None:
        return [(value.dtype, value.shape)]
    axis = 1 if channels_first else rank - 1
    channels, count = value.shape.dims[axis], bias.shape[0].value
    if channels is not None and count is not None and channels != count:
        raise ValueError(f"Dimensions must be equal, but are {channels} and {count}: the bias "
                         f"has {count} elements but the channel dimension ({axis}) of value "
                         f"{value.shape} has {channels}.")
    dims = list(value.shape.dims)
    dims[axis] = channels if channels is not None else count
    return [(value.dtype, TensorShape(dims))]


def _bias_kernel(ctx, inputs, attrs):
    value, bias = inputs
    axis = 1 if attrs["data_format"] == "NCHW" else value.ndim - 1
    if value.shape[axis] != bias.shape[0]:
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"Must provide as many biases as the channel dimension of "
                                   f"the input tensor: bias {list(bias.shape)} vs. "
                                   f"{value.shape[axis]} in {list(value.shape)}")
    shaped = bias.reshape((-1,) + (1,) * (value.ndim - axis - 1))
    return [np.asarray(value + shaped).astype(value.dtype, copy=False)]


def _bias_add_grad(op, g):
    value = op.inputs[0]
    if op.get_attr("data_format") != "NCHW":
        channels = shape_ops.shape(op.inputs[1])
        rows = reshape_ops.reshape(g, join_ops.concat([[-1], channels], 0))
        return [g, reduction_ops.reduce_sum(rows, 0)]
    r = value.shape.ndims
    axes = [0, *range(2, r)] if r is not None else join_ops.concat(
        [[0], fill_ops.range(2, shape_ops.rank(g))], 0)
    return [g, reduction_ops.reduce_sum(g, axes)]


def _lower_bias_add(ctx, op, inputs):
    require_real(op)
    value, bias = inputs
    axis = 1 if op.get_attr("data_format") == "NCHW" else len(value.shape) - 1
    ctx.check_equal(value.shape[axis], bias.shape[0], "Must provide as many biases as the "
                    "channel dimension of the input tensor")
    shape = list(value.shape)
    if not ir.is_const(shape[axis]):
        shape[axis] = bias.shape[0]  # the two are equal; prefer a static size
    axes = ir.axis_vars(len(shape))
    body = ir.make(S.ADD, value.dtype, (ir.load(value, axes), ir.load(bias, (axes[axis],))))
    return [ir.compute(value.dtype, shape, axes, body)]


BIAS_ADD = OpDef("BiasAdd", _bias_infer, _bias_kernel, gradient=_bias_add_grad,
                 lower=_lower_bias_add,
                 doc="value + bias along the channel dimension (last, or 1 for NCHW).")


def bias_add(value, bias, data_format: str | None = None, name=None) -> Tensor:
    """Add the vector `bias` along the channel dim of `value` (last, or dim 1 for "NC...")."""
    if data_format is None:
        data_format = "NHWC"
    if not isinstance(data_format, str) or not data_format.startswith("N"):
        raise ValueError(f"data_format must be 'NHWC' or 'NCHW' (or N...C / NC...), got "
                         f"{data_format!r}.")
    data_format = "NCHW" if data_format.startswith("NC") else "NHWC"
    graph = graph_for((value, bias))
    with graph.as_default(), graph.name_scope(name or "BiasAdd") as scope:
        value, bias = binary_operands(value, bias, "BiasAdd", names=("value", "bias"))
        return make_op(BIAS_ADD, [value, bias], {"data_format": data_format},
                       name=scope).outputs[0]


def xw_plus_b(x, weights, biases, name=None) -> Tensor:
    """matmul(x, weights) + biases (a composition of MatMul and BiasAdd)."""
    graph = graph_for((x, weights, biases))
    with graph.as_default(), graph.name_scope(name or "xw_plus_b") as scope:
        return bias_add(matmul_ops.matmul(x, weights), biases, name=scope)


OP_DEFS = (RELU, RELU6, ELU, SELU, SOFTPLUS, SOFTSIGN, LEAKY_RELU, BIAS_ADD)
