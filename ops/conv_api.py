"""The convolution functions of `tf.nn` built from the convolution ops (conv_ops.py,
conv_grad_ops.py), with TensorFlow 1.x's signatures and checks.

- `conv1d`: a Conv2D over an inserted size-1 dim (NWC -> NHWC with H = 1, NCW -> NCHW),
  as TensorFlow builds it (ExpandDims, Conv2D, Squeeze);
- `depthwise_conv2d` (`rate` is the dilation), `separable_conv2d` (depthwise, then a 1x1
  Conv2D), `atrous_conv2d` (Conv2D with dilations `rate`), `convolution` (1-D and 2-D);
  these refuse strides above 1 together with a dilation above 1, as TensorFlow 1.x did
  (its space-to-batch implementation could not do both);
- `conv2d_transpose`: Conv2DBackpropInput of the given `output_shape`, checked against the
  filter's channels; `conv1d_transpose` the same over an inserted size-1 dim.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core.graph import Tensor, name_scope
from . import conv_grad_ops, conv_ops, join_ops, rearrange_ops
from . import lower_window as lw
from .builder import to_tensor

__all__ = ["conv1d", "conv1d_transpose", "depthwise_conv2d", "separable_conv2d",
           "atrous_conv2d", "convolution", "conv2d_transpose"]


def _no_dilated_strides(strides, dilations, what: str):
    """TensorFlow 1.x's refusal of strides and dilations above 1 together."""
    if any(s != 1 for s in strides) and any(d != 1 for d in dilations):
        raise ValueError(f"{what}: strides > 1 not supported in conjunction with "
                         f"dilation_rate > 1 (strides {list(strides)}, dilation rate "
                         f"{list(dilations)}).")


def _pick(first, second, names: str):
    if first is not None and second is not None:
        raise ValueError(f"give only one of {names}.")
    return first if first is not None else second


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None) -> Tensor:
    """A 1-D convolution of `value` [N, W, C] (NWC) or [N, C, W] (NCW) with `filters`
    [KW, C, OC]; `stride`/`dilations` an int or 1 or 3 ints; `padding` a string or 3
    (before, after) pairs."""
    value = _pick(value, input, "value and input")
    data_format = data_format or "NWC"
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"conv1d: data_format must be 'NWC' or 'NCW', got {data_format!r}.")
    layout = lw.Layout.of(data_format, "conv1d", (data_format,))
    strides = lw.sequence_arg(stride, 1, layout, "stride")
    rates = lw.sequence_arg(dilations, 1, layout, "dilations")
    spatial = layout.spatial[0]   # the width's axis; the new height goes before it
    if not isinstance(padding, str) and padding is not None:
        padding = [list(p) for p in padding]
        padding = padding[:spatial] + [[0, 0]] + padding[spatial:]
    with name_scope(name, "conv1d", [value, filters]) as scope:
        x = rearrange_ops.expand_dims(to_tensor(value, name="input"), spatial)
        w = rearrange_ops.expand_dims(to_tensor(filters, name="filters"), 0)
        out = conv_ops.conv2d(x, w, strides[:spatial] + [1] + strides[spatial:], padding,
                              use_cudnn_on_gpu=True if use_cudnn_on_gpu is None
                              else use_cudnn_on_gpu,
                              data_format="NHWC" if data_format == "NWC" else "NCHW",
                              dilations=rates[:spatial] + [1] + rates[spatial:])
        return rearrange_ops.squeeze(out, [spatial], name=scope)


def _rates(rate, dilations, layout, what):
    """The per-dimension dilations of a `rate` (TensorFlow 1.x) or `dilations` argument."""
    return lw.sequence_arg(_pick(rate, dilations, f"rate and dilations of {what}"), 2,
                           layout, "dilations")


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None, data_format=None,
                     dilations=None) -> Tensor:
    """Depthwise 2-D convolution: `filter` [KH, KW, C, M] gives C * M output channels;
    `rate` (or `dilations`): 1 or 2 ints, the dilation."""
    data_format = data_format or "NHWC"
    layout = lw.Layout.of(data_format, "depthwise_conv2d")
    rates = _rates(rate, dilations, layout, "depthwise_conv2d")
    strides = lw.sequence_arg(strides, 2, layout, "strides")
    _no_dilated_strides([strides[a] for a in layout.spatial],
                        [rates[a] for a in layout.spatial], "depthwise_conv2d")
    return conv_ops.depthwise_conv2d_native(input, filter, strides, padding, data_format,
                                            rates, name=name or "depthwise")


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, rate=None,
                     name=None, data_format=None, dilations=None) -> Tensor:
    """A depthwise convolution ([KH, KW, C, M]) followed by a 1x1 convolution
    (`pointwise_filter` [1, 1, C * M, OC])."""
    with name_scope(name, "separable_conv2d", [input, depthwise_filter, pointwise_filter]):
        depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, rate,
                                     data_format=data_format, dilations=dilations)
        return conv_ops.conv2d(depthwise, pointwise_filter, [1, 1, 1, 1], "VALID",
                               data_format=data_format or "NHWC")


def atrous_conv2d(value, filters, rate, padding, name=None) -> Tensor:
    """Conv2D (NHWC, stride 1) with the filter dilated by `rate`."""
    if int(rate) < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    return conv_ops.conv2d(value, filters, [1, 1, 1, 1], padding,
                           dilations=[1, int(rate), int(rate), 1], name=name or "atrous")


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None,
                name=None, data_format=None, filters=None, dilations=None) -> Tensor:
    """An N-D convolution for N = 1 (rank-3 input) or 2 (rank 4): `strides` and
    `dilation_rate` hold N ints (or one int); they cannot both exceed 1."""
    filter = _pick(filter, filters, "filter and filters")
    rate = _pick(dilation_rate, dilations, "dilation_rate and dilations")
    x = to_tensor(input, name="input")
    rank = x.shape.ndims
    if rank is None:
        w_rank = to_tensor(filter, name="filter").shape.ndims
        rank = None if w_rank is None else w_rank
    if rank not in (3, 4):
        raise ValueError(f"convolution: only 1-D and 2-D convolutions (inputs of rank 3 or 4) "
                         f"are supported; the input {x.name} has shape {x.shape}.")
    n = rank - 2
    strides = [1] * n if strides is None else list(np.atleast_1d(strides)) * (
        n if np.size(strides) == 1 else 1)
    rate = [1] * n if rate is None else list(np.atleast_1d(rate)) * (
        n if np.size(rate) == 1 else 1)
    if len(strides) != n or len(rate) != n:
        raise ValueError(f"convolution: strides {strides} and dilation_rate {rate} must hold "
                         f"{n} values for a {n}-D convolution.")
    _no_dilated_strides(strides, rate, "convolution")
    if n == 1:
        df = "NCW" if data_format is not None and data_format.startswith("NC") else "NWC"
        return conv1d(x, filter, [int(s) for s in strides], padding, data_format=df,
                      dilations=[int(r) for r in rate], name=name or "convolution")
    df = "NCHW" if data_format is not None and data_format.startswith("NC") else "NHWC"
    return conv_ops.conv2d(x, filter, [int(s) for s in strides], padding, data_format=df,
                           dilations=[int(r) for r in rate], name=name or "convolution")


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,
                     padding="SAME", data_format="NHWC", name=None, input=None, filters=None,
                     dilations=None) -> Tensor:
    """The transpose (gradient) of conv2d: Conv2DBackpropInput of shape `output_shape` for
    `value` [N, H, W, OC] and `filter` [KH, KW, C, OC]."""
    value = _pick(value, input, "value and input")
    filter = _pick(filter, filters, "filter and filters")
    layout = lw.Layout.of(data_format, "conv2d_transpose")
    with name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        x = to_tensor(value, name="value")
        w = to_tensor(filter, name="filter")
        channels = x.shape.dims[layout.channel] if x.shape.ndims == 4 else None
        if w.shape.ndims == 4 and channels is not None and w.shape.dims[3] is not None \
                and channels != w.shape.dims[3]:
            raise ValueError(f"input channels does not match filter's input channels, "
                             f"{channels} != {w.shape.dims[3]}")
        sizes = output_shape if isinstance(output_shape, Tensor) else \
            [int(v) for v in np.asarray(output_shape).reshape(-1)]
        if not isinstance(sizes, Tensor):
            if len(sizes) != 4:
                raise ValueError(f"output_shape must have shape (4,), got {sizes}")
            if w.shape.ndims == 4 and w.shape.dims[2] is not None and \
                    sizes[layout.channel] != w.shape.dims[2]:
                raise ValueError(f"output_shape does not match filter's output channels, "
                                 f"{sizes[layout.channel]} != {w.shape.dims[2]}")
        attrs = conv_ops.conv_op_attrs(strides, padding, data_format, dilations)
        attrs["use_cudnn_on_gpu"] = True
        return conv_grad_ops.make_conv(conv_grad_ops.CONV2D_BACKPROP_INPUT, [sizes, w, x],
                                       attrs, name=scope)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",
                     dilations=None, name=None) -> Tensor:
    """The transpose (gradient) of conv1d: `input` [N, W, OC] (NWC) or [N, OC, W] (NCW),
    `filters` [KW, C, OC], `output_shape` the 3 sizes of the result."""
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"conv1d_transpose: data_format must be 'NWC' or 'NCW', got "
                         f"{data_format!r}.")
    layout = lw.Layout.of(data_format, "conv1d_transpose", (data_format,))
    strides = lw.sequence_arg(strides, 1, layout, "strides")
    rates = lw.sequence_arg(dilations, 1, layout, "dilations")
    spatial = layout.spatial[0]
    with name_scope(name, "conv1d_transpose", [input, filters, output_shape]) as scope:
        x = rearrange_ops.expand_dims(to_tensor(input, name="input"), spatial)
        w = rearrange_ops.expand_dims(to_tensor(filters, name="filters"), 0)
        if isinstance(output_shape, Tensor):
            sizes = join_ops.concat([output_shape[:spatial], [1], output_shape[spatial:]], 0)
        else:
            sizes = [int(v) for v in np.asarray(output_shape).reshape(-1)]
            if len(sizes) != 3:
                raise ValueError(f"output_shape must have 3 sizes, got {sizes}")
            sizes = sizes[:spatial] + [1] + sizes[spatial:]
        out = conv2d_transpose(x, w, sizes, strides[:spatial] + [1] + strides[spatial:],
                               padding, "NHWC" if data_format == "NWC" else "NCHW",
                               dilations=rates[:spatial] + [1] + rates[spatial:])
        return rearrange_ops.squeeze(out, [spatial], name=scope)
