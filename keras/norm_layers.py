"""`tf.keras.layers.BatchNormalization`.

Normalizes over every axis but `axis` (the features, default the last):
`gamma * (x - mean) / sqrt(var + epsilon) + beta`.  While training, mean and variance are
the batch's (`tf.nn.moments`, the biased variance) and the layer's `updates` move the
non-trainable `moving_mean`/`moving_variance` towards them
(`moving -= (moving - batch) * (1 - momentum)`), run by the model's train op; at inference
the moving statistics are used.  As in Keras 2, inputs of rank 4 or 5 normalized over their
channel axis (1 or the last: where Keras uses its fused kernel) move the variance towards
the batch's unbiased variance (times n / (n - 1)), other inputs towards the biased one.
The normalization itself is `tf.nn.batch_normalization`.
"""

from __future__ import annotations

from .. import nn
from ..compiler.core.shapes import as_shape
from ..ops import api as ops
from ..ops.variables import assign_sub
from .engine import Layer

__all__ = ["BatchNormalization"]


class BatchNormalization(Layer):
    """Batch normalization (module docstring), with Keras' arguments and defaults."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise NotImplementedError("BatchNormalization: one feature axis only.")
            axis = axis[0]
        self.axis, self.momentum, self.epsilon = int(axis), float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.initializers = (beta_initializer, gamma_initializer, moving_mean_initializer,
                             moving_variance_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.training_differs = True

    def _feature_axis(self, rank) -> int:
        axis = self.axis + rank if self.axis < 0 else self.axis
        if not 0 < axis < rank:
            raise ValueError(f"BatchNormalization {self.name}: axis {self.axis} is not a "
                             f"feature axis of inputs of rank {rank}.")
        return axis

    def build(self, input_shape):
        shape = as_shape(input_shape)
        if shape.rank is None:
            raise ValueError(f"BatchNormalization {self.name}: inputs need a known rank.")
        size = shape.as_list()[self._feature_axis(shape.rank)]
        if size is None:
            raise ValueError(f"BatchNormalization {self.name}: the feature axis of inputs of "
                             f"shape {shape} must have a known size.")
        beta_init, gamma_init, mean_init, var_init = self.initializers
        self.gamma = self.add_weight("gamma", [size], gamma_init,
                                     regularizer=self.gamma_regularizer) if self.scale else None
        self.beta = self.add_weight("beta", [size], beta_init,
                                    regularizer=self.beta_regularizer) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", [size], mean_init, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", [size], var_init,
                                               trainable=False)

    def call(self, inputs, training=False):
        rank = inputs.shape.rank
        axis = self._feature_axis(rank)
        broadcast = [1] * rank
        broadcast[axis] = -1

        def shaped(t):
            return t if t is None or axis == rank - 1 else ops.reshape(t, broadcast)

        if training:
            reduce_axes = [a for a in range(rank) if a != axis]
            mean, variance = nn.moments(inputs, axes=reduce_axes)
            decay = 1.0 - self.momentum
            observed = variance
            if rank in (4, 5) and axis in (1, rank - 1):   # Keras' fused kernel's statistics
                count = ops.cast(ops.size(inputs), variance.dtype) / \
                    float(inputs.shape.as_list()[axis])
                observed = variance * count / ops.maximum(count - 1.0, 1.0)
            self.updates = [
                assign_sub(self.moving_mean, (self.moving_mean - mean) * decay).op,
                assign_sub(self.moving_variance,
                           (self.moving_variance - observed) * decay).op]
        else:
            mean, variance = self.moving_mean, self.moving_variance
        normalize = getattr(nn, "batch_normalization", None) or _batch_normalization
        return normalize(inputs, shaped(mean), shaped(variance), shaped(self.beta),
                         shaped(self.gamma), self.epsilon)


def _batch_normalization(x, mean, variance, offset, scale, variance_epsilon):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset (tf.nn.batch_normalization's
    definition, for when that function is not there)."""
    factor = ops.rsqrt(variance + variance_epsilon)
    if scale is not None:
        factor = factor * scale
    out = (x - mean) * factor
    return out + offset if offset is not None else out
