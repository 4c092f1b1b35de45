"""`tf.layers` convolution and pooling: Conv1D, Conv2D, MaxPooling1D/2D, AveragePooling1D/2D
and their function forms, built on the convolution and pooling ops (ops/conv_ops.py,
ops/conv_api.py, ops/pool_ops.py).

Arguments as TensorFlow 1.x takes them: `kernel_size`, `strides`, `pool_size` and
`dilation_rate` an int or a tuple, `padding` "valid" or "same" (any case), `data_format`
"channels_last" (NHWC / NWC) or "channels_first" (NCHW / NCW).  A convolution's kernel is
[*kernel_size, input channels, filters] (glorot-uniform by default), its bias [filters].
"""

from __future__ import annotations

import enum
import numbers

from ..compiler.core.shapes import TensorShape
from ..ops import conv_api, conv_ops, init_ops, nn_ops, pool_ops
from .layers_base import InputSpec, Layer
from .layers_core import activation_fn, initializer_fn

__all__ = ["Conv1D", "Conv2D", "MaxPooling1D", "MaxPooling2D", "AveragePooling1D",
           "AveragePooling2D", "conv1d", "conv2d", "max_pooling1d", "max_pooling2d",
           "average_pooling1d", "average_pooling2d"]


class DataFormat(str, enum.Enum):
    """Where the channels are: last (NHWC) or right after the batch (NCHW)."""

    CHANNELS_LAST = "channels_last"
    CHANNELS_FIRST = "channels_first"


def _data_format(value, what: str) -> DataFormat:
    try:
        return DataFormat(value or DataFormat.CHANNELS_LAST)
    except ValueError:
        raise ValueError(f"{what}: data_format must be 'channels_last' or 'channels_first', "
                         f"got {value!r}.") from None


def _padding(value, what: str) -> str:
    padding = str(value).upper()
    if padding not in ("VALID", "SAME"):
        raise ValueError(f"{what}: padding must be 'valid' or 'same', got {value!r}.")
    return padding


def _tuple(value, rank: int, name: str, what: str) -> tuple:
    """An int or `rank` ints as a tuple of positive ints."""
    values = (value,) * rank if isinstance(value, numbers.Integral) else tuple(value)
    if len(values) != rank or not all(isinstance(v, numbers.Integral) and v > 0
                                      for v in values):
        raise ValueError(f"{what}: {name} must be a positive int or {rank} positive ints, "
                         f"got {value!r}.")
    return tuple(int(v) for v in values)


def _op_format(data_format: DataFormat, rank: int) -> str:
    spatial = "HW"[2 - rank:] if rank <= 2 else "DHW"
    if data_format is DataFormat.CHANNELS_LAST:
        return "N" + spatial + "C"
    return "NC" + spatial


class _Conv(Layer):
    """A convolution over `rank` spatial dimensions."""

    weight_names = ("kernel", "bias")   # tf.contrib.layers calls them weights, biases

    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=init_ops.zeros_initializer(),
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        what = type(self).__name__
        if int(filters) <= 0:
            raise ValueError(f"{what}: filters must be positive, got {filters}.")
        self.filters = int(filters)
        self.kernel_size = _tuple(kernel_size, self.rank, "kernel_size", what)
        self.strides = _tuple(strides, self.rank, "strides", what)
        self.dilation_rate = _tuple(dilation_rate, self.rank, "dilation_rate", what)
        self.padding = _padding(padding, what)
        self.data_format = _data_format(data_format, what)
        self.activation = activation_fn(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializer_fn(kernel_initializer)
        self.bias_initializer = initializer_fn(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.input_spec = InputSpec(ndim=self.rank + 2)
        self.kernel = self.bias = None

    def _channel_axis(self) -> int:
        return 1 if self.data_format is DataFormat.CHANNELS_FIRST else -1

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        channels = input_shape[self._channel_axis()].value
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs to {type(self).__name__} "
                             f"layer {self.name} should be defined; found shape "
                             f"{input_shape}.")
        self.kernel = self.add_weight(self.weight_names[0],
                                      [*self.kernel_size, channels, self.filters],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        if self.use_bias:
            self.bias = self.add_weight(self.weight_names[1], [self.filters],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): channels})
        self.built = True

    def _convolve(self, inputs):
        op_format = _op_format(self.data_format, self.rank)
        if self.rank == 1:
            return conv_api.conv1d(inputs, self.kernel, list(self.strides), self.padding,
                                   data_format=op_format, dilations=list(self.dilation_rate))
        return conv_ops.conv2d(inputs, self.kernel, list(self.strides), self.padding,
                               data_format=op_format, dilations=list(self.dilation_rate))

    def call(self, inputs):
        outputs = self._convolve(inputs)
        if self.use_bias:
            layout = "NCHW" if self.data_format is DataFormat.CHANNELS_FIRST else "NHWC"
            outputs = nn_ops.bias_add(outputs, self.bias, data_format=layout)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs


class Conv1D(_Conv):
    """1-D convolution of [batch, width, channels] (or [batch, channels, width]) inputs."""

    rank = 1


class Conv2D(_Conv):
    """2-D convolution of [batch, height, width, channels] (or NCHW) inputs."""

    rank = 2


class _Pooling(Layer):
    """Max or average pooling over `rank` spatial dimensions."""

    rank = 2
    kind = "max"

    def __init__(self, pool_size, strides=None, padding="valid",
                 data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        what = type(self).__name__
        self.pool_size = _tuple(pool_size, self.rank, "pool_size", what)
        self.strides = _tuple(strides if strides is not None else self.pool_size, self.rank,
                              "strides", what)
        self.padding = _padding(padding, what)
        self.data_format = _data_format(data_format, what)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        op_format = _op_format(self.data_format, self.rank)
        if self.rank == 1:
            pool = pool_ops.max_pool1d if self.kind == "max" else pool_ops.avg_pool1d
            return pool(inputs, list(self.pool_size), list(self.strides), self.padding,
                        data_format=op_format)
        pool = pool_ops.max_pool if self.kind == "max" else pool_ops.avg_pool
        return pool(inputs, list(self.pool_size), list(self.strides), self.padding,
                    data_format=op_format)


class MaxPooling1D(_Pooling):
    """The maximum of each window of [batch, width, channels] inputs."""

    rank, kind = 1, "max"


class MaxPooling2D(_Pooling):
    """The maximum of each window of [batch, height, width, channels] inputs."""

    rank, kind = 2, "max"


class AveragePooling1D(_Pooling):
    """The average of each window of [batch, width, channels] inputs."""

    rank, kind = 1, "avg"


class AveragePooling2D(_Pooling):
    """The average of each window of [batch, height, width, channels] inputs."""

    rank, kind = 2, "avg"


def _conv_function(layer_class):
    def apply(inputs, filters, kernel_size, strides=1, padding="valid",
              data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
              kernel_initializer=None, bias_initializer=init_ops.zeros_initializer(),
              kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
              kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
              reuse=None):
        layer = layer_class(filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, dilation_rate=dilation_rate,
                            activation=activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer,
                            activity_regularizer=activity_regularizer, trainable=trainable,
                            name=name, _reuse=reuse)
        return layer(inputs)

    apply.__name__ = layer_class.__name__.lower()
    apply.__doc__ = (f"`tf.layers.{apply.__name__}`: a {layer_class.__name__} layer applied "
                     f"once (variables `{apply.__name__}/kernel`, `{apply.__name__}/bias`).")
    return apply


def _pool_function(layer_class, tf_name):
    def apply(inputs, pool_size, strides, padding="valid", data_format="channels_last",
              name=None):
        return layer_class(pool_size, strides, padding=padding, data_format=data_format,
                           name=name)(inputs)

    apply.__name__ = tf_name
    apply.__doc__ = f"`tf.layers.{tf_name}`: a {layer_class.__name__} layer applied once."
    return apply


conv1d = _conv_function(Conv1D)
conv2d = _conv_function(Conv2D)
max_pooling1d = _pool_function(MaxPooling1D, "max_pooling1d")
max_pooling2d = _pool_function(MaxPooling2D, "max_pooling2d")
average_pooling1d = _pool_function(AveragePooling1D, "average_pooling1d")
average_pooling2d = _pool_function(AveragePooling2D, "average_pooling2d")
