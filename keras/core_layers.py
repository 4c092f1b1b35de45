"""`tf.keras.layers`' basic layers: Dense, Activation, Dropout, Flatten, Reshape, Embedding.

Each is a `Layer` (keras/engine.py) with Keras' arguments and defaults (glorot_uniform
kernels, zero biases, activations by name or callable), computing with flowjit's ops.
"""

from __future__ import annotations

import numpy as np

from .. import nn
from ..compiler.core.shapes import TensorShape, as_shape
from ..ops import api as ops
from . import activations
from .engine import Layer

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Embedding"]


def _known_last_dim(layer, input_shape) -> int:
    shape = as_shape(input_shape)
    if shape.rank is None or shape.rank < 2 or shape.as_list()[-1] is None:
        raise ValueError(f"Layer {layer.name} ({type(layer).__name__}) needs inputs of rank "
                         f">= 2 with a known last dimension, got shape {shape}.")
    return int(shape.as_list()[-1])


class Dense(Layer):
    """`activation(inputs @ kernel + bias)` over the last axis of `inputs`."""

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError(f"Dense: units must be a positive integer, got {units!r}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer

    def build(self, input_shape):
        fan_in = _known_last_dim(self, input_shape)
        self.kernel = self.add_weight("kernel", [fan_in, self.units], self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        self.bias = self.add_weight("bias", [self.units], self.bias_initializer,
                                    regularizer=self.bias_regularizer) if self.use_bias else None

    def call(self, inputs, training=False):
        x = ops.cast(inputs, self.dtype) if inputs.dtype is not self.dtype else inputs
        rank = x.shape.rank
        if rank is not None and rank > 2:
            dims = x.shape.as_list()
            flat = ops.reshape(x, [-1, dims[-1]])
            out = ops.matmul(flat, self.kernel)
            if all(d is not None for d in dims[1:-1]):
                target = [-1, *dims[1:-1], self.units]
            else:
                target = ops.concat([ops.shape(x)[:-1], [self.units]], axis=0)
            out = ops.reshape(out, target)
        else:
            out = ops.matmul(x, self.kernel)
        if self.bias is not None:
            out = nn.bias_add(out, self.bias)
        return self.activation(out)

    def compute_output_shape(self, input_shape):
        _known_last_dim(self, input_shape)
        return TensorShape([*as_shape(input_shape).as_list()[:-1], self.units])


class Activation(Layer):
    """Applies an activation function (a Keras name or a callable)."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs, training=False):
        return self.activation(inputs)


class Dropout(Layer):
    """While training, zeroes each input with probability `rate` and scales the rest by
    1 / (1 - rate); at inference the identity."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate!r}.")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed
        self.training_differs = self.rate > 0.0

    def call(self, inputs, training=False):
        if not training or self.rate == 0.0:
            return inputs
        noise_shape = self.noise_shape
        if noise_shape is not None:   # None entries take the input's size
            dynamic = ops.shape(inputs)
            noise_shape = ops.stack([dynamic[i] if d is None else d
                                     for i, d in enumerate(noise_shape)])
        return nn.dropout(inputs, rate=self.rate, noise_shape=noise_shape, seed=self.seed)


class Flatten(Layer):
    """Reshapes [batch, d1, d2, ...] to [batch, d1 * d2 * ...]."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format

    def call(self, inputs, training=False):
        x = inputs
        if self.data_format == "channels_first" and x.shape.rank and x.shape.rank > 2:
            x = ops.transpose(x, [0, *range(2, x.shape.rank), 1])
        size = self.compute_output_shape(x.shape).as_list()[1]
        return ops.reshape(x, [-1, size if size is not None else -1])

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        rest = dims[1:]
        return TensorShape([dims[0], None if None in rest else int(np.prod(rest, dtype=int))])


class Reshape(Layer):
    """Reshapes each example to `target_shape` (one entry may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"Reshape: at most one -1 in target_shape {self.target_shape}.")

    def call(self, inputs, training=False):
        return ops.reshape(inputs, [-1, *self.compute_output_shape(inputs.shape)
                                    .as_list()[1:]])

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        target = list(self.target_shape)
        if -1 in target:
            known = int(np.prod([d for d in target if d != -1], dtype=int))
            if None in dims[1:]:
                raise ValueError(f"Reshape {self.name}: a -1 in target_shape needs inputs "
                                 f"of known size, got {as_shape(input_shape)}.")
            total = int(np.prod(dims[1:], dtype=int))
            if known == 0 or total % known:
                raise ValueError(f"Reshape {self.name}: cannot reshape inputs of shape "
                                 f"{as_shape(input_shape)} to {self.target_shape}.")
            target[target.index(-1)] = total // known
        elif None not in dims[1:] and int(np.prod(dims[1:], dtype=int)) != \
                int(np.prod(target, dtype=int)):
            raise ValueError(f"Reshape {self.name}: total size of the new shape "
                             f"{self.target_shape} must equal that of the input "
                             f"{as_shape(input_shape)}.")
        return TensorShape([dims[0], *target])


class Embedding(Layer):
    """Maps integer ids in [0, input_dim) to rows of an (input_dim, output_dim) table."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None, **kwargs):
        if input_length is not None and "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = embeddings_regularizer
        self.mask_zero = bool(mask_zero)

    def build(self, input_shape):
        self.embeddings = self.add_weight("embeddings", [self.input_dim, self.output_dim],
                                          self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer)

    def call(self, inputs, training=False):
        ids = inputs if inputs.dtype.is_integer else ops.cast(inputs, "int32")
        return nn.embedding_lookup(self.embeddings, ids)

    def compute_output_shape(self, input_shape):
        return TensorShape([*as_shape(input_shape).as_list(), self.output_dim])
