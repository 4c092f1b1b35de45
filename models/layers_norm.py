"""`tf.layers` batch normalization: the BatchNormalization layer and `batch_normalization`.

As TensorFlow 1.x defines it, over the axis (or axes) `axis` holding the features:

- variables `gamma` (if `scale`), `beta` (if `center`), and the non-trainable
  `moving_mean` (zeros) and `moving_variance` (ones), in that order;
- inference (`training` false): y = (x - moving_mean) / sqrt(moving_variance + epsilon) *
  gamma + beta;
- training: the same with the batch's mean and (biased) variance over the other axes, and
  two update ops in `UPDATE_OPS` (`AssignMovingAvg`, `AssignMovingAvg_1`):
  moving -= (moving - batch statistic) * (1 - momentum).  4-D inputs normalized over axis
  1 or 3 go through FusedBatchNormV3 (ops/norm_ops.py) as in TensorFlow (unless
  fused=False), and the variance their moving average takes is then the unbiased one,
  n / (n - 1) times the batch variance, as that op gives it;
- a bool tensor `training` selects between the two when the graph runs, and the updates
  then use momentum 1 (no change) when it is false.
"""

from __future__ import annotations

from ..compiler.core.graph import get_default_graph
from ..compiler.core.shapes import TensorShape
from ..ops import api as ops
from ..ops import init_ops, norm_ops
from ..ops.variables import assign_sub
from .layers_base import Layer
from .layers_core import initializer_fn, select_by_flag, training_flag

__all__ = ["BatchNormalization", "batch_normalization"]


class BatchNormalization(Layer):
    """Normalize each feature by its batch statistics (training) or moving averages."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=init_ops.zeros_initializer(),
                 gamma_initializer=init_ops.ones_initializer(),
                 moving_mean_initializer=init_ops.zeros_initializer(),
                 moving_variance_initializer=init_ops.ones_initializer(),
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError("BatchNormalization: renorm, virtual_batch_size and "
                                      "adjustment are not supported.")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else int(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializer_fn(beta_initializer)
        self.gamma_initializer = initializer_fn(gamma_initializer)
        self.moving_mean_initializer = initializer_fn(moving_mean_initializer)
        self.moving_variance_initializer = initializer_fn(moving_variance_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.fused = fused
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def _axes(self, rank: int) -> list:
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        normalized = sorted({a % rank for a in axes} if rank else set())
        if any(not -rank <= a < rank for a in axes) or len(normalized) != len(axes):
            raise ValueError(f"BatchNormalization {self.name}: invalid axis {self.axis} for "
                             f"inputs of rank {rank}.")
        return normalized

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        rank = input_shape.ndims
        if rank is None:
            raise ValueError(f"BatchNormalization {self.name}: the inputs' rank must be "
                             "known.")
        if not self._dtype.is_floating:
            raise TypeError(f"BatchNormalization {self.name}: inputs must be floating point, "
                            f"got {self._dtype.name}.")
        self._feature_axes = self._axes(rank)
        self._rank = rank
        fused_shape = rank == 4 and self._feature_axes in ([1], [3])
        if self.fused and not fused_shape:
            raise ValueError(f"BatchNormalization {self.name}: fused=True is only supported "
                             f"for 4-D inputs normalized over axis 1 or 3, got shape "
                             f"{input_shape} and axis {self.axis}.")
        self._fused = fused_shape and self.fused is not False
        dims = [input_shape[a].value for a in self._feature_axes]
        if any(d is None for d in dims):
            raise ValueError(f"BatchNormalization {self.name}: axis {self.axis} of the input "
                             f"shape {input_shape} must be known.")
        if len(dims) == 1:
            param_shape = dims
        else:   # TensorFlow's parameters then have the inputs' rank, 1 off the axes
            param_shape = [input_shape[a].value if a in self._feature_axes else 1
                           for a in range(rank)]
        self._param_shape = param_shape
        if self.scale:
            self.gamma = self.add_weight("gamma", param_shape,
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer)
        if self.center:
            self.beta = self.add_weight("beta", param_shape, initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer)
        self.moving_mean = self.add_weight("moving_mean", param_shape,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", param_shape,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)
        self.built = True

    def _broadcastable(self, t):
        """A parameter-shaped tensor reshaped to broadcast against the inputs."""
        if len(self._param_shape) == self._rank or self._feature_axes == [self._rank - 1]:
            return t
        shape = [1] * self._rank
        shape[self._feature_axes[0]] = -1
        return ops.reshape(t, shape)

    def _normalize(self, x, mean, variance):
        """x * inv + (beta - mean * inv), inv = gamma / sqrt(variance + epsilon)."""
        inv = ops.rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            inv = inv * self._broadcastable(self.gamma)
        offset = -mean * inv
        if self.beta is not None:
            offset = self._broadcastable(self.beta) + offset
        return x * inv + offset

    def call(self, inputs, training=False):
        flag = training_flag(training)
        if self._fused:
            return self._call_fused(inputs, flag)
        x = inputs
        reduce_axes = [a for a in range(self._rank) if a not in self._feature_axes]
        moving_mean = self._broadcastable(self.moving_mean)
        moving_variance = self._broadcastable(self.moving_variance)
        if flag is False:
            return self._normalize(x, moving_mean, moving_variance)
        with get_default_graph().name_scope("moments"):
            batch_mean = ops.reduce_mean(x, axis=reduce_axes, keepdims=True, name="mean")
            centered = ops.squared_difference(x, ops.stop_gradient(batch_mean))
            batch_variance = ops.reduce_mean(centered, axis=reduce_axes, keepdims=True,
                                             name="variance")
        mean = select_by_flag(flag, lambda: batch_mean, lambda: moving_mean)
        variance = select_by_flag(flag, lambda: batch_variance, lambda: moving_variance)
        outputs = self._normalize(x, mean, variance)
        self._add_moving_updates(ops.reshape(batch_mean, self._param_shape),
                                 ops.reshape(batch_variance, self._param_shape), flag,
                                 x.dtype)
        return outputs

    def _call_fused(self, x, flag):
        """FusedBatchNormV3 (ops/norm_ops.py), whose training variance is the unbiased one
        the moving average takes, as TensorFlow's fused path."""
        data_format = "NCHW" if self._feature_axes == [1] else "NHWC"
        ones = ops.ones(self._param_shape, x.dtype)
        gamma = self.gamma if self.gamma is not None else ones
        beta = self.beta if self.beta is not None else ops.zeros(self._param_shape, x.dtype)

        def inference():
            return norm_ops.fused_batch_norm(x, gamma, beta, self.moving_mean,
                                             self.moving_variance, self.epsilon, data_format,
                                             is_training=False)[0]

        if flag is False:
            return inference()
        outputs, mean, variance = norm_ops.fused_batch_norm(
            x, gamma, beta, epsilon=self.epsilon, data_format=data_format, is_training=True)
        outputs = select_by_flag(flag, lambda: outputs, inference)
        self._add_moving_updates(mean, variance, flag, x.dtype)
        return outputs

    def _add_moving_updates(self, mean, variance, flag, dtype):
        """moving -= (moving - batch statistic) * (1 - momentum), no change when the
        training flag is false."""
        decay = select_by_flag(flag, lambda: ops.constant(1.0 - self.momentum, dtype),
                               lambda: ops.constant(0.0, dtype))
        self.add_update(self._moving_average(self.moving_mean, mean, decay))
        self.add_update(self._moving_average(self.moving_variance, variance, decay))

    @staticmethod
    def _moving_average(variable, value, decay):
        with get_default_graph().name_scope("AssignMovingAvg") as scope:
            delta = (variable.value() - value) * decay
            return assign_sub(variable, delta, name=scope)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                        scale=True, beta_initializer=init_ops.zeros_initializer(),
                        gamma_initializer=init_ops.ones_initializer(),
                        moving_mean_initializer=init_ops.zeros_initializer(),
                        moving_variance_initializer=init_ops.ones_initializer(),
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """`tf.layers.batch_normalization`: a BatchNormalization layer applied once; with
    `training` true its moving-average updates are in `tf.GraphKeys.UPDATE_OPS`."""
    layer = BatchNormalization(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                               scale=scale, beta_initializer=beta_initializer,
                               gamma_initializer=gamma_initializer,
                               moving_mean_initializer=moving_mean_initializer,
                               moving_variance_initializer=moving_variance_initializer,
                               beta_regularizer=beta_regularizer,
                               gamma_regularizer=gamma_regularizer, renorm=renorm,
                               fused=fused, trainable=trainable,
                               virtual_batch_size=virtual_batch_size, adjustment=adjustment,
                               name=name, _reuse=reuse)
    return layer(inputs, training=training)
