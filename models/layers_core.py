"""`tf.layers` core layers: Dense, Dropout, Flatten and their function forms.

Also the small lookups the layers share: activations, initializers and training flags given
by name or value (`activation="relu"`, `kernel_initializer="zeros"`, `training=True` or a
bool tensor).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape
from ..ops import api as ops
from ..ops import composite_ops, init_ops, nn_ops
from .layers_base import InputSpec, Layer

__all__ = ["Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]

_ACTIVATIONS = {"relu": nn_ops.relu, "relu6": nn_ops.relu6, "elu": nn_ops.elu,
                "selu": nn_ops.selu, "sigmoid": nn_ops.sigmoid, "tanh": nn_ops.tanh,
                "softmax": nn_ops.softmax, "softplus": nn_ops.softplus,
                "softsign": nn_ops.softsign, "linear": None}

_INITIALIZERS = {"zeros": init_ops.zeros_initializer, "ones": init_ops.ones_initializer,
                 "glorot_uniform": init_ops.glorot_uniform_initializer,
                 "glorot_normal": init_ops.glorot_normal_initializer,
                 "random_normal": init_ops.random_normal_initializer,
                 "random_uniform": init_ops.random_uniform_initializer,
                 "truncated_normal": init_ops.truncated_normal_initializer}


def activation_fn(activation):
    """A callable (or None) for `activation`: a function, None, or a Keras name."""
    if activation is None or callable(activation):
        return activation
    if isinstance(activation, str) and activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    raise ValueError(f"Unknown activation {activation!r}; give a callable or one of "
                     f"{sorted(_ACTIVATIONS)}.")


def initializer_fn(initializer):
    """An initializer object (or None: get_variable's default) for `initializer`."""
    if initializer is None or callable(initializer):
        return initializer
    if isinstance(initializer, str) and initializer in _INITIALIZERS:
        return _INITIALIZERS[initializer]()
    raise ValueError(f"Unknown initializer {initializer!r}; give a callable or one of "
                     f"{sorted(_INITIALIZERS)}.")


def training_flag(training):
    """`training` as a Python bool, or a scalar bool tensor decided when the graph runs."""
    if isinstance(training, Tensor) or hasattr(training, "_as_graph_tensor"):
        flag = ops.convert_to_tensor(training)
        if flag.dtype is not _dtypes.bool_ or flag.shape.ndims not in (None, 0):
            raise TypeError(f"training must be a Python bool or a scalar bool tensor, got "
                            f"{flag.dtype.name} tensor of shape {flag.shape}.")
        return flag
    if isinstance(training, (bool, np.bool_)) or training is None:
        return bool(training)
    raise TypeError(f"training must be a Python bool or a scalar bool tensor, got "
                    f"{type(training).__name__}.")


def select_by_flag(flag, when_true, when_false):
    """`when_true()` or `when_false()` for a Python flag; both, selected by a tensor flag."""
    if not isinstance(flag, Tensor):
        return when_true() if flag else when_false()
    return ops.where_v2(flag, when_true(), when_false())


class Dense(Layer):
    """`outputs = activation(inputs @ kernel + bias)`; the kernel is [input dim, units]."""

    weight_names = ("kernel", "bias")   # tf.contrib.layers calls them weights, biases

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        if int(units) <= 0:
            raise ValueError(f"Dense: units must be positive, got {units}.")
        self.units = int(units)
        self.activation = activation_fn(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializer_fn(kernel_initializer)
        self.bias_initializer = initializer_fn(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.input_spec = InputSpec(min_ndim=2)
        self.kernel = self.bias = None

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        if not self._dtype.is_floating:
            raise TypeError(f"Unable to build Dense layer {self.name} with non-floating "
                            f"point dtype {self._dtype.name}.")
        last = input_shape[-1].value if input_shape.ndims else None
        if last is None:
            raise ValueError(f"The last dimension of the inputs to Dense layer {self.name} "
                             f"should be defined; found shape {input_shape}.")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight(self.weight_names[0], [last, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, trainable=True)
        if self.use_bias:
            self.bias = self.add_weight(self.weight_names[1], [self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, trainable=True)
        self.built = True

    def call(self, inputs):
        inputs = ops.cast(inputs, self._dtype) if inputs.dtype is not self._dtype else inputs
        rank = inputs.shape.ndims
        if rank is not None and rank > 2:
            flat = ops.reshape(inputs, [-1, self.kernel.shape[0].value])
            product = ops.matmul(flat, self.kernel)
            outer = ops.shape(inputs)[:-1]
            outputs = ops.reshape(product, ops.concat([outer, [self.units]], 0),
                                  name="Tensordot")
            outputs.set_shape(inputs.shape[:-1].concatenate([self.units]))
        else:
            outputs = ops.matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)[:-1].concatenate([self.units])


class Dropout(Layer):
    """Zero a `rate` fraction of the inputs and scale the rest by 1/(1 - rate) when
    training; the identity otherwise.  `training` may be a bool tensor."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not isinstance(rate, Tensor) and not 0 <= float(rate) < 1:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate}.")
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def _noise_shape(self, inputs):
        if self.noise_shape is None:
            return None
        dims = ops.shape(inputs)
        return ops.stack([dims[i] if d is None else d for i, d in enumerate(self.noise_shape)])

    def call(self, inputs, training=False):
        flag = training_flag(training)

        def dropped():
            return composite_ops.dropout(inputs, rate=self.rate,
                                         noise_shape=self._noise_shape(inputs),
                                         seed=self.seed)

        return select_by_flag(flag, dropped, lambda: ops.identity(inputs))

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


class Flatten(Layer):
    """Reshape to [batch, everything else] (channels moved last first for channels_first)."""

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"Flatten: data_format must be 'channels_last' or "
                             f"'channels_first', got {data_format!r}.")
        self.data_format = data_format or "channels_last"
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        rank = inputs.shape.ndims
        if rank is None:
            return ops.reshape(inputs, ops.stack([ops.shape(inputs)[0], -1]))
        if self.data_format == "channels_first" and rank > 2:
            inputs = ops.transpose(inputs, [0, *range(2, rank), 1])
        if rank == 1:
            return ops.expand_dims(inputs, 1)
        rest = inputs.shape[1:]
        if rest.is_fully_defined():
            return ops.reshape(inputs, [-1, int(rest.num_elements())])
        if inputs.shape[0].value is not None:
            return ops.reshape(inputs, [inputs.shape[0].value, -1])
        return ops.reshape(inputs, ops.stack([ops.shape(inputs)[0], -1]))

    def compute_output_shape(self, input_shape):
        shape = TensorShape(input_shape)
        rest = shape[1:]
        return TensorShape([shape[0], rest.num_elements() if rest.is_fully_defined() else None])


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """`tf.layers.dense`: a Dense layer applied once (variables `dense/kernel`, `dense/bias`)."""
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer, trainable=trainable, name=name,
                  _reuse=reuse)
    return layer(inputs)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """`tf.layers.dropout`: dropout when `training` (a bool or a bool tensor) is true."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)(inputs,
                                                                       training=training)


def flatten(inputs, name=None, data_format="channels_last"):
    """`tf.layers.flatten`: [batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""
    return Flatten(data_format=data_format, name=name)(inputs)
