"""`tf.keras.layers`' image layers: Conv2D, MaxPooling2D, AveragePooling2D.

They call `tf.nn.conv2d`, `tf.nn.max_pool` and `tf.nn.avg_pool` (ops/conv_ops.py,
ops/pool_ops.py), with Keras' arguments: `padding` "valid" or "same", `strides` and
`dilation_rate` as an int or a pair, `data_format` "channels_last" (NHWC, the default) or
"channels_first" (NCHW).  Kernels have shape (kh, kw, in_channels, filters).
"""

from __future__ import annotations

from .. import nn
from ..compiler.core.shapes import TensorShape, as_shape
from . import activations
from .engine import Layer

__all__ = ["Conv2D", "MaxPooling2D", "AveragePooling2D"]


def _pair(value, what) -> tuple:
    if isinstance(value, int):
        return (value, value)
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}.")
    return pair


def _padding(padding) -> str:
    text = str(padding).lower()
    if text not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}.")
    return text.upper()


def _data_format(data_format) -> str:
    text = data_format or "channels_last"
    if text not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got "
                         f"{data_format!r}.")
    return "NHWC" if text == "channels_last" else "NCHW"


def _out_size(size, window, stride, dilation, padding):
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    reach = (window - 1) * dilation + 1
    return max((size - reach) // stride + 1, 0)


def _spatial_shape(layer, input_shape, window, channels_out):
    dims = as_shape(input_shape).as_list()
    if len(dims) != 4:
        raise ValueError(f"Layer {layer.name} ({type(layer).__name__}) expects inputs of rank "
                         f"4, got shape {as_shape(input_shape)}.")
    h_axis = 1 if layer.data_format == "NHWC" else 2
    dilation = getattr(layer, "dilation_rate", (1, 1))
    sizes = [_out_size(dims[h_axis + i], window[i], layer.strides[i], dilation[i],
                       layer.padding) for i in range(2)]
    channels = dims[3 if layer.data_format == "NHWC" else 1] if channels_out is None \
        else channels_out
    if layer.data_format == "NHWC":
        return TensorShape([dims[0], *sizes, channels])
    return TensorShape([dims[0], channels, *sizes])


class Conv2D(Layer):
    """A 2-D convolution with `filters` output channels, plus bias and activation."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1), groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if groups != 1:
            raise NotImplementedError("Conv2D: groups other than 1 are not supported.")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.strides = _pair(strides, "strides")
        self.dilation_rate = _pair(dilation_rate, "dilation_rate")
        if self.strides != (1, 1) and self.dilation_rate != (1, 1):
            raise ValueError("Conv2D: strides > 1 together with dilation_rate > 1 is not "
                             "supported (as in Keras).")
        self.padding, self.data_format = _padding(padding), _data_format(data_format)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer

    def build(self, input_shape):
        dims = as_shape(input_shape).as_list()
        channels = dims[-1 if self.data_format == "NHWC" else 1] if len(dims) == 4 else None
        if channels is None:
            raise ValueError(f"Conv2D {self.name}: inputs need rank 4 and a known channel "
                             f"dimension, got shape {as_shape(input_shape)}.")
        self.kernel = self.add_weight("kernel", [*self.kernel_size, channels, self.filters],
                                      self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        self.bias = self.add_weight("bias", [self.filters], self.bias_initializer,
                                    regularizer=self.bias_regularizer) if self.use_bias else None

    def call(self, inputs, training=False):
        if self.data_format == "NHWC":
            strides, dilations = [1, *self.strides, 1], [1, *self.dilation_rate, 1]
        else:
            strides, dilations = [1, 1, *self.strides], [1, 1, *self.dilation_rate]
        out = nn.conv2d(inputs, self.kernel, strides=strides, padding=self.padding,
                        data_format=self.data_format, dilations=dilations)
        if self.bias is not None:
            out = nn.bias_add(out, self.bias, data_format=self.data_format)
        return self.activation(out)

    def compute_output_shape(self, input_shape):
        return _spatial_shape(self, input_shape, self.kernel_size, self.filters)


class _Pooling2D(Layer):
    """Max or average over `pool_size` windows moved by `strides` (default: pool_size)."""

    _pool = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _pair(pool_size, "pool_size")
        self.strides = _pair(strides, "strides") if strides is not None else self.pool_size
        self.padding, self.data_format = _padding(padding), _data_format(data_format)

    def call(self, inputs, training=False):
        if self.data_format == "NHWC":
            ksize, strides = [1, *self.pool_size, 1], [1, *self.strides, 1]
        else:
            ksize, strides = [1, 1, *self.pool_size], [1, 1, *self.strides]
        pool = getattr(nn, self._pool)
        return pool(inputs, ksize=ksize, strides=strides, padding=self.padding,
                    data_format=self.data_format)

    def compute_output_shape(self, input_shape):
        return _spatial_shape(self, input_shape, self.pool_size, None)


class MaxPooling2D(_Pooling2D):
    """The maximum of each window."""

    _pool = "max_pool"


class AveragePooling2D(_Pooling2D):
    """The mean of each window (SAME padding averages over the window's inside part)."""

    _pool = "avg_pool"
