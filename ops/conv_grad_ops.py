"""The convolutions' backprop ops: Conv2DBackpropInput, Conv2DBackpropFilter,
DepthwiseConv2dNativeBackpropInput and DepthwiseConv2dNativeBackpropFilter (TensorFlow's
op types, input orders and attrs; conv_ops.py defines the forward ops and their attrs).

For y = conv(x, w) (Conv2D or DepthwiseConv2dNative with the same attrs):
- BackpropInput(input_sizes, filter, out_backprop) is the gradient of sum(y * dy) with
  respect to x, of shape `input_sizes` (an int32 [4] tensor): the window gradients
  dy @ W^T (per channel for the depthwise op) added back, tap by tap, onto the input
  positions each window read (padding dropped); `nn.conv2d_transpose` is this op;
- BackpropFilter(input, filter_sizes, out_backprop) is the gradient with respect to w, of
  shape `filter_sizes`: the windows' matrix transposed times dy (im2col^T @ dy).
out_backprop must have the forward output's shape (an InvalidArgumentError naming the
computed and the actual size otherwise, as TensorFlow's).  Both ops are linear in each
data operand, so their gradients are the other two ops of the family (TensorFlow's): the
input gradient's with respect to the filter is BackpropFilter, with respect to dy the
forward convolution, and so on; second derivatives of a convolution work.

Lowerings: lower_conv.py (GEMM + col2im for the input gradient, im2col^T @ dy for the
filter gradient, tap reductions for the depthwise ops).
"""

from __future__ import annotations

import numpy as np

from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape
from . import conv_ops, shape_ops
from . import lower_conv as lc
from . import lower_index as lx
from . import lower_window as lw
from .array_common import index_tensor, runtime_error
from .builder import graph_for, make_op
from .conversion import static_shape_from_tensor
from .lower_reduce import cast_node
from .registry import OpDef

__all__ = ["conv2d_backprop_input", "conv2d_backprop_filter",
           "depthwise_conv2d_native_backprop_input", "depthwise_conv2d_native_backprop_filter"]

_DEPTHWISE = ("DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter")


def _out_channels(op_type: str, filter_dims, in_depth):
    """The forward output's channel count for a filter of `filter_dims`."""
    if op_type not in _DEPTHWISE:
        return filter_dims[3]
    depth = in_depth if in_depth is not None else filter_dims[2]
    return None if depth is None or filter_dims[3] is None else depth * filter_dims[3]


def _check_out_backprop(op_type: str, spec, expected, dy_shape):
    """ValueError when out_backprop's known sizes differ from the forward output's."""
    actual = conv_ops.dims(dy_shape)
    for axis, (e, a) in enumerate(zip(expected.dims, actual)):
        if e is not None and a is not None and e != a:
            raise ValueError(f"{op_type}: Size of out_backprop doesn't match computed: "
                             f"actual = {a}, computed = {e} (dimension {axis}; "
                             f"out_backprop {dy_shape}, expected {expected}).")


def _input_infer(op):
    conv_ops.check_operands(op)
    sizes, w, dy = op.inputs
    spec = lc.ConvSpec.of(op.type, op.attrs)
    xd, wd = conv_ops.dims(static_shape_from_tensor(sizes)), conv_ops.dims(w.shape)
    conv_ops.check_depth(op.type, xd[spec.layout.channel], wd[2], xd, w.shape)
    out_channels = _out_channels(op.type, wd, xd[spec.layout.channel])
    _check_out_backprop(op.type, spec, conv_ops.output_shape(spec, xd, wd, out_channels),
                        dy.shape)
    return [(w.dtype, TensorShape(xd))]


def _filter_infer(op):
    conv_ops.check_operands(op)
    x, sizes, dy = op.inputs
    spec = lc.ConvSpec.of(op.type, op.attrs)
    xd, wd = conv_ops.dims(x.shape), conv_ops.dims(static_shape_from_tensor(sizes))
    conv_ops.check_depth(op.type, xd[spec.layout.channel], wd[2], x.shape, wd)
    out_channels = _out_channels(op.type, wd, xd[spec.layout.channel])
    _check_out_backprop(op.type, spec, conv_ops.output_shape(spec, xd, wd, out_channels),
                        dy.shape)
    return [(x.dtype, TensorShape(wd))]


# --- reference kernels -------------------------------------------------------------------------


def _sizes(ctx, op_type: str, sizes: np.ndarray, name: str) -> list:
    values = [int(v) for v in np.asarray(sizes).reshape(-1)]
    if len(values) != 4 or any(v < 0 for v in values):
        raise runtime_error(ctx, f"{op_type}: {name} must hold 4 non-negative sizes, got "
                                 f"{values}")
    return values


def _check_dy(ctx, spec, geo, batch, out_channels, dy_last):
    expected = (batch, *[o for o, _, _ in geo], out_channels)
    for axis, (e, a) in enumerate(zip(expected, dy_last.shape)):
        if e != a:
            raise runtime_error(ctx, f"{spec.op_type}: Size of out_backprop doesn't match "
                                     f"computed: actual = {a}, computed = {e} (dimension "
                                     f"{axis} channels-last; out_backprop "
                                     f"{list(dy_last.shape)}, expected {list(expected)})")


def _input_kernel(ctx, inputs, attrs, op_type):
    """The window gradients dy @ W^T (depthwise: per channel, summed over the multiplier)
    added back tap by tap onto the padded input, then cropped."""
    spec = lc.ConvSpec.of(op_type, attrs)
    sizes, w, dy = inputs
    conv_ops.check_arrays(ctx, op_type, (w, dy), ("filter", "out_backprop"))
    shape = spec.layout.to_channels_last(np.empty(_sizes(ctx, op_type, sizes, "input_sizes"),
                                                  np.bool_)).shape
    if shape[-1] != w.shape[2]:
        raise runtime_error(ctx, f"{op_type}: input depth must equal filter depth: "
                                 f"{shape[-1]} vs {w.shape[2]}")
    geo = conv_ops.run_geometry(ctx, spec, shape[1:-1], w.shape[:2])
    dy_last = spec.layout.to_channels_last(dy)
    depthwise = op_type in _DEPTHWISE
    out_channels = w.shape[2] * w.shape[3] if depthwise else w.shape[3]
    _check_dy(ctx, spec, geo, shape[0], out_channels, dy_last)
    acc = conv_ops.accumulator(w.dtype)
    dy_acc, w_acc = dy_last.astype(acc, copy=False), w.astype(acc, copy=False)
    outs = [o for o, _, _ in geo]
    if depthwise:
        split = dy_acc.reshape(dy_acc.shape[:-1] + w.shape[2:])
        cols = np.einsum("nhwcm,ijcm->nhwijc", split, w_acc)
    else:
        rows = int(np.prod(dy_acc.shape[:-1]))
        cols = (dy_acc.reshape(rows, out_channels) @ w_acc.reshape(-1, out_channels).T)
        cols = cols.reshape(dy_acc.shape[:-1] + w.shape[:3])
    padded = np.zeros((shape[0], *[n + b + a for n, (_, b, a) in zip(shape[1:-1], geo)],
                       shape[-1]), acc)
    for taps in np.ndindex(*w.shape[:2]):
        padded[lw.tap_slices(taps, outs, spec.strides, spec.dilations)] += \
            cols[(slice(None),) * 3 + taps]
    crop = (slice(None),) + tuple(slice(b, b + n) for n, (_, b, _) in
                                  zip(shape[1:-1], geo)) + (slice(None),)
    out = spec.layout.from_channels_last(padded[crop].astype(w.dtype))
    return [np.ascontiguousarray(out)]


def _filter_kernel(ctx, inputs, attrs, op_type):
    """im2col(x)^T @ dy (depthwise: per channel) as the filter's shape."""
    spec = lc.ConvSpec.of(op_type, attrs)
    x, sizes, dy = inputs
    conv_ops.check_arrays(ctx, op_type, (x, dy), ("input", "out_backprop"))
    w_shape = _sizes(ctx, op_type, sizes, "filter_sizes")
    x_last = spec.layout.to_channels_last(x)
    if x_last.shape[-1] != w_shape[2]:
        raise runtime_error(ctx, f"{op_type}: input depth must equal filter depth: "
                                 f"{x_last.shape[-1]} vs {w_shape[2]}")
    geo = conv_ops.run_geometry(ctx, spec, x_last.shape[1:-1], w_shape[:2])
    dy_last = spec.layout.to_channels_last(dy)
    depthwise = op_type in _DEPTHWISE
    out_channels = w_shape[2] * w_shape[3] if depthwise else w_shape[3]
    _check_dy(ctx, spec, geo, x_last.shape[0], out_channels, dy_last)
    acc = conv_ops.accumulator(x.dtype)
    dy_acc = dy_last.astype(acc, copy=False)
    cols = conv_ops.windows(spec, x_last, geo, w_shape[:2], acc)
    if depthwise:
        split = dy_acc.reshape(dy_acc.shape[:-1] + tuple(w_shape[2:]))
        out = np.einsum("nhwijc,nhwcm->ijcm", cols, split)
    else:
        rows, depth = int(np.prod(cols.shape[:3])), int(np.prod(w_shape[:3]))
        # dy^T @ cols, transposed: OpenBLAS ran cols^T @ dy 100x slower on a 1-channel
        # input (25 x 50176 @ 50176 x 32: 0.93 s against 8 ms)
        out = (dy_acc.reshape(rows, out_channels).T @ cols.reshape(rows, depth)).T
    return [np.asarray(out, acc).reshape(w_shape).astype(x.dtype)]


# --- gradients ---------------------------------------------------------------------------------


def _forward_op(op_type: str):
    return conv_ops.DEPTHWISE_CONV2D if op_type in _DEPTHWISE else conv_ops.CONV2D


def _input_grad(op, g):
    """Of BackpropInput(sizes, w, dy): [None, BackpropFilter(g, shape(w), dy),
    conv(g, w)]."""
    _, w, dy = op.inputs
    attrs = lc.op_attrs(op)
    filter_op = DEPTHWISE_BACKPROP_FILTER if op.type in _DEPTHWISE else CONV2D_BACKPROP_FILTER
    return [None, make_conv(filter_op, [g, shape_ops.shape(w), dy], attrs),
            make_conv(_forward_op(op.type), [g, w], attrs)]


def _filter_grad(op, g):
    """Of BackpropFilter(x, sizes, dy): [BackpropInput(shape(x), g, dy), None,
    conv(x, g)]."""
    x, _, dy = op.inputs
    attrs = lc.op_attrs(op)
    input_op = DEPTHWISE_BACKPROP_INPUT if op.type in _DEPTHWISE else CONV2D_BACKPROP_INPUT
    return [make_conv(input_op, [shape_ops.shape(x), g, dy], attrs), None,
            make_conv(_forward_op(op.type), [x, g], attrs)]


# --- lowerings ---------------------------------------------------------------------------------


def _dy_dims(ctx, op, dy, g: lc.ConvGeometry, out_channels):
    """Check out_backprop's sizes against the forward output's at run time."""
    expected = g.spec.layout.index(g.batch, g.outs, out_channels)
    dims = lc.known_dims(ctx, op.inputs[2], dy, f"out_backprop of {op.name}")
    for axis, (e, a) in enumerate(zip(expected, dims)):
        ctx.check_equal(a, e, f"{op.type}: Size of out_backprop doesn't match computed "
                              f"(dimension {axis}, {op.name})")


def _lower_input(ctx, op, inputs):
    lc.require_float(op)
    spec = lc.ConvSpec.of(op.type, op.attrs)
    _, w, dy = inputs
    xd = list(lx.out_shape(op.outputs[0], ctx.symbolic_ints(op.inputs[0])))
    wd = lc.known_dims(ctx, op.inputs[1], w, f"the filter of {op.name}")
    ctx.check_equal(xd[spec.layout.channel], wd[2], f"{op.type}: input depth must equal "
                                                    f"filter depth ({op.name})")
    g = lc.ConvGeometry.of(ctx, spec, xd, wd[:2])
    if op.type in _DEPTHWISE:
        _dy_dims(ctx, op, dy, g, lx.mul(wd[2], wd[3]))
        out = lc.depthwise_input_grad(g, w, dy, wd[3])
    else:
        _dy_dims(ctx, op, dy, g, wd[3])
        out = lc.conv_input_grad(g, w, dy, wd[3])
    return [lc.finish(out, op.outputs[0].dtype, spec.layout)]


def _lower_filter(ctx, op, inputs):
    lc.require_float(op)
    spec = lc.ConvSpec.of(op.type, op.attrs)
    x, _, dy = inputs
    xd = lc.known_dims(ctx, op.inputs[0], x, f"the input of {op.name}")
    wd = list(lx.out_shape(op.outputs[0], ctx.symbolic_ints(op.inputs[1])))
    ctx.check_equal(xd[spec.layout.channel], wd[2], f"{op.type}: input depth must equal "
                                                    f"filter depth ({op.name})")
    g = lc.ConvGeometry.of(ctx, spec, xd, wd[:2])
    if op.type in _DEPTHWISE:
        _dy_dims(ctx, op, dy, g, lx.mul(wd[2], wd[3]))
        out = lc.depthwise_filter_grad(g, x, dy, wd[3])
    else:
        _dy_dims(ctx, op, dy, g, wd[3])
        out = lc.conv_filter_grad(g, x, dy, wd[3])
    return [cast_node(out, op.outputs[0].dtype)]


def _kernel(fn, op_type):
    def kernel(ctx, inputs, attrs):
        return fn(ctx, inputs, attrs, op_type)

    return kernel


def _op(name, infer, fn, gradient, lower, doc):
    return OpDef(name, infer, _kernel(fn, name), gradient=gradient, lower=lower, doc=doc)


CONV2D_BACKPROP_INPUT = _op("Conv2DBackpropInput", _input_infer, _input_kernel, _input_grad,
                            _lower_input, "The gradient of Conv2D with respect to its input.")
CONV2D_BACKPROP_FILTER = _op("Conv2DBackpropFilter", _filter_infer, _filter_kernel,
                             _filter_grad, _lower_filter,
                             "The gradient of Conv2D with respect to its filter.")
DEPTHWISE_BACKPROP_INPUT = _op("DepthwiseConv2dNativeBackpropInput", _input_infer,
                               _input_kernel, _input_grad, _lower_input,
                               "The gradient of DepthwiseConv2dNative w.r.t. its input.")
DEPTHWISE_BACKPROP_FILTER = _op("DepthwiseConv2dNativeBackpropFilter", _filter_infer,
                                _filter_kernel, _filter_grad, _lower_filter,
                                "The gradient of DepthwiseConv2dNative w.r.t. its filter.")


# --- public functions ----------------------------------------------------------------------


def make_conv(op_def, inputs, attrs, name=None) -> Tensor:
    """A convolution-family op on `inputs` (sizes as int32 tensors) with `attrs`."""
    graph = graph_for(inputs)
    with graph.as_default(), graph.name_scope(name or op_def.name) as scope:
        position = _sizes_position(op_def)
        data = [v for k, v in enumerate(inputs) if k != position]
        names = [n for k, n in enumerate(conv_ops.ARGUMENTS[op_def.name]) if k != position]
        data = iter(conv_ops.data_tensors(data, names))
        tensors = [index_tensor(v, "sizes") if k == position else next(data)
                   for k, v in enumerate(inputs)]
        return make_op(op_def, tensors, attrs, name=scope).outputs[0]


def _sizes_position(op_def):
    """Which input of `op_def` is a sizes vector (None for the forward ops)."""
    if op_def in (CONV2D_BACKPROP_INPUT, DEPTHWISE_BACKPROP_INPUT):
        return 0
    return 1 if op_def in (CONV2D_BACKPROP_FILTER, DEPTHWISE_BACKPROP_FILTER) else None


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None) -> Tensor:
    """The gradient of `conv2d` with respect to its input, of shape `input_sizes`."""
    filter = filters if filter is None else filter
    attrs = conv_ops.conv_op_attrs(strides, padding, data_format, dilations)
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    return make_conv(CONV2D_BACKPROP_INPUT, [input_sizes, filter, out_backprop], attrs, name)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1),
                           name=None) -> Tensor:
    """The gradient of `conv2d` with respect to its filter, of shape `filter_sizes`."""
    attrs = conv_ops.conv_op_attrs(strides, padding, data_format, dilations)
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    return make_conv(CONV2D_BACKPROP_FILTER, [input, filter_sizes, out_backprop], attrs, name)


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,
                                           padding, data_format="NHWC",
                                           dilations=(1, 1, 1, 1), name=None) -> Tensor:
    """The gradient of `depthwise_conv2d_native` with respect to its input."""
    attrs = conv_ops.conv_op_attrs(strides, padding, data_format, dilations)
    return make_conv(DEPTHWISE_BACKPROP_INPUT, [input_sizes, filter, out_backprop], attrs,
                     name)


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides,
                                            padding, data_format="NHWC",
                                            dilations=(1, 1, 1, 1), name=None) -> Tensor:
    """The gradient of `depthwise_conv2d_native` with respect to its filter."""
    attrs = conv_ops.conv_op_attrs(strides, padding, data_format, dilations)
    return make_conv(DEPTHWISE_BACKPROP_FILTER, [input, filter_sizes, out_backprop], attrs,
                     name)


OP_DEFS = (CONV2D_BACKPROP_INPUT, CONV2D_BACKPROP_FILTER, DEPTHWISE_BACKPROP_INPUT,
           DEPTHWISE_BACKPROP_FILTER)
