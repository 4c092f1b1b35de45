"""Forward convolutions: Conv2D and DepthwiseConv2dNative (TensorFlow's op types and attrs).

Conv2D(input, filter): input [N, H, W, C] (NHWC) or [N, C, H, W] (NCHW), filter [KH, KW, C,
OC]; out[n, oh, ow, oc] = sum over kh, kw, c of input[n, oh * sh + kh * dh - top,
ow * sw + kw * dw - left, c] * filter[kh, kw, c, oc], reading 0 outside the input (the
padding).  DepthwiseConv2dNative(input, filter): filter [KH, KW, C, M]; output channel
c * M + m is input channel c convolved with filter[:, :, c, m].  Attrs: `strides`,
`dilations` (one per input dim, 1 on batch and channels), `padding` SAME / VALID /
EXPLICIT with `explicit_paddings` (a (before, after) pair per dim), `data_format`;
Conv2D also has `use_cudnn_on_gpu` (accepted, meaning nothing here).  Strides and
dilations above 1 may be combined (TensorFlow 2's kernels compute it; the public
`convolution`-style functions refuse it as TensorFlow 1.x did).  Inputs are float16
(computed in float32), float32 or float64; the input depth must equal the filter's (no
grouped convolutions).

The reference kernels read every window through a strided view of the zero-padded input
(lower_window.window_view): Conv2D is that (N*OH*OW, KH*KW*C) matrix times the filter
matrix, the depthwise op an einsum over the taps.  Gradients are the backprop ops of
conv_grad_ops.py; the lowerings are lower_conv.py's im2col GEMM and tap reductions.
Public functions: `conv2d` (TensorFlow 1.x signature) and `depthwise_conv2d_native`; the
compositions (conv1d, depthwise_conv2d, conv2d_transpose, convolution, ...) are conv_api.py.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape
from . import conv_grad_ops, shape_ops
from . import lower_conv as lc
from . import lower_window as lw
from .array_common import check_rank, runtime_error
from .builder import check_dtype, graph_for, make_op, to_tensor
from .registry import OpDef

__all__ = ["conv2d", "depthwise_conv2d_native"]

CONV_TYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


# --- shape inference ---------------------------------------------------------------------------


ARGUMENTS = {"Conv2D": ("input", "filter"), "DepthwiseConv2dNative": ("input", "filter"),
             "Conv2DBackpropInput": ("input_sizes", "filter", "out_backprop"),
             "DepthwiseConv2dNativeBackpropInput": ("input_sizes", "filter", "out_backprop"),
             "Conv2DBackpropFilter": ("input", "filter_sizes", "out_backprop"),
             "DepthwiseConv2dNativeBackpropFilter": ("input", "filter_sizes", "out_backprop")}


def check_operands(op):
    """Dtype and rank checks of a convolution op's inputs (TypeError/ValueError): the data
    operands are 4-D tensors of one float dtype, the sizes operand a 4-element int32
    vector."""
    data = []
    for t, name in zip(op.inputs, ARGUMENTS[op.type]):
        if name.endswith("_sizes"):
            check_dtype(t, (_dtypes.int32,), name)
            check_rank(t, 1, name)
            if t.shape.ndims == 1 and t.shape.dims[0] not in (None, 4):
                raise ValueError(f"{op.type}: {name} must hold 4 sizes, got shape {t.shape}.")
            continue
        check_dtype(t, CONV_TYPES, name)
        check_rank(t, 4, name)
        data.append((t, name))
    (first, first_name), *rest = data
    for t, name in rest:
        if t.dtype is not first.dtype:
            raise TypeError(f"Input '{name}' of '{op.type}' Op has type {t.dtype.name} that "
                            f"does not match type {first.dtype.name} of argument "
                            f"'{first_name}'.")


def dims(shape, rank: int = 4) -> list:
    """A static shape's sizes (None where unknown), `rank` of them."""
    return list(shape.dims) if shape.ndims is not None else [None] * rank


def check_depth(op_type: str, in_depth, filter_depth, input_shape, filter_shape):
    """ValueError when the input depth and the filter's input depth are known and differ."""
    if in_depth is not None and filter_depth is not None and in_depth != filter_depth:
        raise ValueError(f"{op_type}: the depth of the input ({in_depth}) must equal the "
                         f"input depth of the filter ({filter_depth}); input shape "
                         f"{input_shape}, filter shape {filter_shape} (grouped "
                         "convolutions are not supported).")


def output_shape(spec: lc.ConvSpec, input_dims, filter_dims, out_channels) -> TensorShape:
    """The static output shape of a convolution of `spec` (sizes may be None)."""
    layout = spec.layout
    geo = spec.geometry([input_dims[a] for a in layout.spatial], filter_dims[:2])
    return TensorShape(layout.shape(input_dims[layout.batch], [o for o, _, _ in geo],
                                    out_channels))


def _forward_infer(op):
    check_operands(op)
    x, w = op.inputs
    spec = lc.ConvSpec.of(op.type, op.attrs)
    xd, wd = dims(x.shape), dims(w.shape)
    check_depth(op.type, xd[spec.layout.channel], wd[2], x.shape, w.shape)
    if op.type == "Conv2D":
        out_channels = wd[3]
    else:
        depth = xd[spec.layout.channel] if xd[spec.layout.channel] is not None else wd[2]
        out_channels = None if depth is None or wd[3] is None else depth * wd[3]
    return [(x.dtype, output_shape(spec, xd, wd, out_channels))]


# --- reference kernels -------------------------------------------------------------------------


def accumulator(dtype) -> np.dtype:
    """The dtype the kernels compute in: float32 for float16, else the dtype itself."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def check_arrays(ctx, op_type: str, arrays, names):
    """InvalidArgumentError unless every array is 4-dimensional."""
    for a, name in zip(arrays, names):
        if a.ndim != 4:
            raise runtime_error(ctx, f"{op_type}: {name} must be 4-dimensional, got shape "
                                     f"{list(a.shape)}")


def run_geometry(ctx, spec: lc.ConvSpec, in_sizes, windows) -> list:
    """(out, before, after) per spatial dim for a kernel's arrays (InvalidArgumentError
    when the window does not fit)."""
    out = []
    for n, k, s, d, p in zip(in_sizes, windows, spec.strides, spec.dilations, spec.pads):
        size, before, after, problem = lw.runtime_output_size(n, k, s, d, spec.padding, p)
        if problem is not None:
            raise runtime_error(ctx, f"{spec.op_type}: {problem}")
        out.append((size, before, after))
    return out


def check_runtime_depth(ctx, spec: lc.ConvSpec, x_last: np.ndarray, w: np.ndarray):
    if x_last.shape[-1] != w.shape[2]:
        raise runtime_error(ctx, f"{spec.op_type}: input depth must equal filter depth: "
                                 f"{x_last.shape[-1]} vs {w.shape[2]} (input "
                                 f"{list(x_last.shape)}, filter {list(w.shape)})")


def windows(spec: lc.ConvSpec, x_last: np.ndarray, geo, window_sizes, acc) -> np.ndarray:
    """(N, OH, OW, KH, KW, C): the channels-last input (padded with zeros, in the
    accumulator dtype) that each output position reads at each filter tap (a view)."""
    padded = lw.pad_spatial(x_last.astype(acc, copy=False), [(b, a) for _, b, a in geo])
    return lw.window_view(padded, window_sizes, [o for o, _, _ in geo], spec.strides,
                          spec.dilations)


def _prepare(ctx, op_type, inputs, attrs):
    """(spec, channels-last input, filter, geometry, accumulator dtype) of a forward op."""
    spec = lc.ConvSpec.of(op_type, attrs)
    x, w = inputs
    check_arrays(ctx, spec.op_type, inputs, ("input", "filter"))
    x_last = spec.layout.to_channels_last(x)
    check_runtime_depth(ctx, spec, x_last, w)
    geo = run_geometry(ctx, spec, x_last.shape[1:-1], w.shape[:2])
    return spec, x_last, w, geo, accumulator(x.dtype)


def _conv2d_kernel(ctx, inputs, attrs):
    """im2col: the windows as a (N*OH*OW, KH*KW*C) matrix, times the filter matrix."""
    spec, x_last, w, geo, acc = _prepare(ctx, "Conv2D", inputs, attrs)
    cols = windows(spec, x_last, geo, w.shape[:2], acc)
    rows, depth = int(np.prod(cols.shape[:3])), w[..., 0].size
    out = cols.reshape(rows, depth) @ w.reshape(depth, w.shape[3]).astype(acc)
    out = out.reshape(cols.shape[:3] + (w.shape[3],)).astype(x_last.dtype)
    return [np.ascontiguousarray(spec.layout.from_channels_last(out))]


def _depthwise_kernel(ctx, inputs, attrs):
    """out[n, o, c * M + m] = sum over taps of window[n, o, tap, c] * w[tap, c, m]."""
    spec, x_last, w, geo, acc = _prepare(ctx, "DepthwiseConv2dNative", inputs, attrs)
    cols = windows(spec, x_last, geo, w.shape[:2], acc)
    out = np.einsum("nhwijc,ijcm->nhwcm", cols, w.astype(acc))
    out = out.reshape(out.shape[:3] + (w.shape[2] * w.shape[3],)).astype(x_last.dtype)
    return [np.ascontiguousarray(spec.layout.from_channels_last(out))]


# --- gradients ---------------------------------------------------------------------------------


def _conv2d_grad(op, g):
    x, w = op.inputs
    attrs = lc.op_attrs(op)
    return [conv_grad_ops.make_conv(conv_grad_ops.CONV2D_BACKPROP_INPUT,
                                    [shape_ops.shape(x), w, g], attrs),
            conv_grad_ops.make_conv(conv_grad_ops.CONV2D_BACKPROP_FILTER,
                                    [x, shape_ops.shape(w), g], attrs)]


def _depthwise_grad(op, g):
    x, w = op.inputs
    attrs = lc.op_attrs(op)
    return [conv_grad_ops.make_conv(conv_grad_ops.DEPTHWISE_BACKPROP_INPUT,
                                    [shape_ops.shape(x), w, g], attrs),
            conv_grad_ops.make_conv(conv_grad_ops.DEPTHWISE_BACKPROP_FILTER,
                                    [x, shape_ops.shape(w), g], attrs)]


# --- lowerings ---------------------------------------------------------------------------------


def _geometry(ctx, op, inputs):
    """(spec, geometry, filter dims) of a forward op, with the depth check."""
    lc.require_float(op)
    spec = lc.ConvSpec.of(op.type, op.attrs)
    x, w = inputs
    xd = lc.known_dims(ctx, op.inputs[0], x, f"the input of {op.name}")
    wd = lc.known_dims(ctx, op.inputs[1], w, f"the filter of {op.name}")
    ctx.check_equal(xd[spec.layout.channel], wd[2],
                    f"{op.type}: input depth must equal filter depth ({op.name})")
    return spec, lc.ConvGeometry.of(ctx, spec, xd, wd[:2]), wd


def _lower_conv2d(ctx, op, inputs):
    spec, g, wd = _geometry(ctx, op, inputs)
    out = lc.conv_forward(g, inputs[0], inputs[1], wd[3])
    return [lc.finish(out, op.outputs[0].dtype, spec.layout)]


def _lower_depthwise(ctx, op, inputs):
    spec, g, wd = _geometry(ctx, op, inputs)
    out = lc.depthwise_forward(g, inputs[0], inputs[1], wd[3])
    return [lc.finish(out, op.outputs[0].dtype, spec.layout)]


CONV2D = OpDef("Conv2D", _forward_infer, _conv2d_kernel, gradient=_conv2d_grad,
               lower=_lower_conv2d,
               doc="2-D convolution of an input with a filter (cross-correlation).")
DEPTHWISE_CONV2D = OpDef("DepthwiseConv2dNative", _forward_infer, _depthwise_kernel,
                         gradient=_depthwise_grad, lower=_lower_depthwise,
                         doc="Each input channel convolved with its own filters.")


# --- public functions ----------------------------------------------------------------------


def conv_op_attrs(strides, padding, data_format, dilations, n_spatial=2) -> dict:
    """The attrs of a convolution op from a public function's arguments: `strides` and
    `dilations` as an int or 1, n_spatial or n_spatial + 2 ints; `padding` a string or
    (before, after) pairs per dimension."""
    layout = lw.Layout.of(data_format, "conv2d")
    pad, pairs = lw.padding_arg(padding, layout)
    return {"strides": lw.sequence_arg(strides, n_spatial, layout, "strides"),
            "padding": pad, "explicit_paddings": pairs, "data_format": data_format,
            "dilations": lw.sequence_arg(dilations, n_spatial, layout, "dilations")}


def data_tensors(values, names) -> list:
    """The data operands as tensors, TensorFlow's way: the first converted as it is, values
    that are not tensors then taking its dtype (a float64 NumPy filter for a float32 input),
    so only two tensors of different dtypes are a TypeError (from the op's checks)."""
    first = to_tensor(values[0], name=names[0])
    return [first] + [to_tensor(v, name=n) if _is_tensor(v) else
                      to_tensor(v, dtype=first.dtype, name=n)
                      for v, n in zip(values[1:], names[1:])]


def _is_tensor(value) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_graph_tensor")


def build(op_def, inputs, attrs, name, default_name) -> Tensor:
    """One convolution op on converted `inputs` ((value, name) pairs) in their graph."""
    graph = graph_for([v for v, _ in inputs])
    with graph.as_default(), graph.name_scope(name or default_name) as scope:
        tensors = data_tensors([v for v, _ in inputs], [n for _, n in inputs])
        return make_op(op_def, tensors, attrs, name=scope).outputs[0]


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None) -> Tensor:
    """A 2-D convolution (Conv2D) of a 4-D `input` with `filter` [KH, KW, C, OC].

    `strides`/`dilations`: an int or 1, 2 or 4 ints; `padding`: "SAME", "VALID" or a list
    of 4 (before, after) pairs in data_format order (zeros for batch and channels);
    `filters` is TensorFlow 2's name for `filter`.
    """
    if filter is None:
        filter = filters
    elif filters is not None:
        raise ValueError("conv2d: give `filter` or `filters`, not both.")
    if filter is None or strides is None or padding is None:
        raise ValueError("conv2d needs `filter`, `strides` and `padding`.")
    attrs = conv_op_attrs(strides, padding, data_format, dilations)
    attrs["use_cudnn_on_gpu"] = bool(use_cudnn_on_gpu)
    return build(CONV2D, [(input, "input"), (filter, "filter")], attrs, name, "Conv2D")


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",
                            dilations=(1, 1, 1, 1), name=None) -> Tensor:
    """The DepthwiseConv2dNative op: `filter` [KH, KW, C, M] gives C * M output channels,
    channel c * M + m being input channel c convolved with filter[:, :, c, m]."""
    attrs = conv_op_attrs(strides, padding, data_format, dilations)
    return build(DEPTHWISE_CONV2D, [(input, "input"), (filter, "filter")], attrs, name,
                 "DepthwiseConv2dNative")


OP_DEFS = (CONV2D, DEPTHWISE_CONV2D)
