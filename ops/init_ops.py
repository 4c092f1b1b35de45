"""Variable initializers (TensorFlow 1.x `tf.*_initializer`): callables that build the
initial-value tensor of a variable from its shape and dtype.

Each initializer is a small object, `init(shape, dtype=None, partition_info=None) -> Tensor`,
so `get_variable("w", [3, 4], initializer=tf.truncated_normal_initializer(stddev=0.1))` and
`tf.Variable(tf.zeros_initializer()([3]))` both work.  No op definitions live here: the
initializers compose the public random and array ops.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.shapes import as_shape
from . import basic_ops, fill_ops, random_ops

__all__ = [
    "zeros_initializer", "ones_initializer", "constant_initializer", "random_normal_initializer",
    "truncated_normal_initializer", "random_uniform_initializer", "glorot_uniform_initializer",
    "glorot_normal_initializer", "variance_scaling_initializer", "uniform_unit_scaling_initializer",
]


def _static_dims(shape):
    dims = as_shape(shape).as_list()
    if any(d is None for d in dims):
        raise ValueError(f"Initializers need a fully known shape, got {as_shape(shape)}.")
    return dims


class _Initializer:
    """Base for initializers: subclasses implement `_build(dims, dtype)`."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        return self._build(_static_dims(shape), dtype)

    def get_config(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}


class zeros_initializer(_Initializer):  # noqa: N801 - TensorFlow's name
    """Initializes to 0."""

    def _build(self, dims, dtype):
        return fill_ops.zeros(dims, dtype=dtype)


class ones_initializer(_Initializer):  # noqa: N801
    """Initializes to 1."""

    def _build(self, dims, dtype):
        return fill_ops.ones(dims, dtype=dtype)


class constant_initializer(_Initializer):  # noqa: N801
    """Initializes to `value` (a scalar is broadcast; a list must have the shape's size)."""

    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape=False):
        super().__init__(dtype)
        self.value = value

    def _build(self, dims, dtype):
        return basic_ops.constant(np.asarray(self.value), dtype=dtype, shape=dims)


class random_normal_initializer(_Initializer):  # noqa: N801
    """Normal(mean, stddev) values."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def _build(self, dims, dtype):
        return random_ops.random_normal(dims, self.mean, self.stddev, dtype=dtype, seed=self.seed)


class truncated_normal_initializer(random_normal_initializer):  # noqa: N801
    """Normal(mean, stddev) values, redrawn when more than 2 stddev from the mean."""

    def _build(self, dims, dtype):
        return random_ops.truncated_normal(dims, self.mean, self.stddev, dtype=dtype,
                                           seed=self.seed)


class random_uniform_initializer(_Initializer):  # noqa: N801
    """Uniform values in [minval, maxval)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def _build(self, dims, dtype):
        maxval = 1.0 if self.maxval is None and dtype.is_floating else self.maxval
        return random_ops.random_uniform(dims, self.minval, maxval, dtype=dtype, seed=self.seed)


def _fans(dims):
    if not dims:
        return 1, 1
    if len(dims) == 1:
        return dims[0], dims[0]
    receptive = int(np.prod(dims[:-2])) if len(dims) > 2 else 1
    return dims[-2] * receptive, dims[-1] * receptive


class variance_scaling_initializer(_Initializer):  # noqa: N801
    """Values with variance scale/n, n = fan_in, fan_out or their mean (He, Glorot, LeCun)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=_dtypes.float32):
        super().__init__(dtype)
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"mode must be fan_in, fan_out or fan_avg, got {mode!r}.")
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"Unknown distribution {distribution!r}.")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def _build(self, dims, dtype):
        fan_in, fan_out = _fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        variance = self.scale / max(1.0, n)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            return random_ops.random_uniform(dims, -limit, limit, dtype=dtype, seed=self.seed)
        if self.distribution == "truncated_normal":
            # 0.87962566 is the stddev of a unit normal truncated to [-2, 2].
            stddev = math.sqrt(variance) / 0.87962566103423978
            return random_ops.truncated_normal(dims, 0.0, stddev, dtype=dtype, seed=self.seed)
        return random_ops.random_normal(dims, 0.0, math.sqrt(variance), dtype=dtype, seed=self.seed)


class glorot_uniform_initializer(variance_scaling_initializer):  # noqa: N801
    """Xavier/Glorot uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out))."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class glorot_normal_initializer(variance_scaling_initializer):  # noqa: N801
    """Xavier/Glorot truncated normal with variance 2 / (fan_in + fan_out)."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


class uniform_unit_scaling_initializer(variance_scaling_initializer):  # noqa: N801
    """Deprecated TensorFlow initializer: uniform with variance factor/fan_in."""

    def __init__(self, factor=1.0, seed=None, dtype=_dtypes.float32):
        super().__init__(factor, "fan_in", "uniform", seed, dtype)
