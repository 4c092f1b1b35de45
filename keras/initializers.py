"""`tf.keras.initializers`: Keras' initializer names and classes over flowjit's TF1 ones.

An initializer is called as `init(shape, dtype=None)` and returns the initial-value tensor,
built in the default graph (a random op, seeded from the graph's seed).  Keras' defaults
differ from TF1's in places (`RandomNormal` has stddev 0.05, `RandomUniform` the range
[-0.05, 0.05]); `get(identifier)` takes a name, a class instance, a callable or a config.
`Orthogonal` has no op to build on (no QR decomposition op): it draws its matrix with NumPy,
seeded from the same graph and op seeds, and embeds it as a constant.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.shapes import as_shape
from ..ops import api as ops
from ..ops import init_ops

__all__ = ["Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform", "TruncatedNormal",
           "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform",
           "LecunNormal", "LecunUniform", "Orthogonal", "get"]

Zeros = init_ops.zeros_initializer
Ones = init_ops.ones_initializer
Constant = init_ops.constant_initializer
VarianceScaling = init_ops.variance_scaling_initializer
GlorotUniform = init_ops.glorot_uniform_initializer
GlorotNormal = init_ops.glorot_normal_initializer


class RandomNormal(init_ops.random_normal_initializer):
    """Normal(mean, stddev) values; Keras' default stddev is 0.05."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=_dtypes.float32):
        super().__init__(mean, stddev, seed, dtype)


class TruncatedNormal(init_ops.truncated_normal_initializer):
    """Normal values redrawn beyond 2 stddev; Keras' default stddev is 0.05."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=_dtypes.float32):
        super().__init__(mean, stddev, seed, dtype)


class RandomUniform(init_ops.random_uniform_initializer):
    """Uniform values in [minval, maxval); Keras' default range is [-0.05, 0.05)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=_dtypes.float32):
        super().__init__(minval, maxval, seed, dtype)


def HeNormal(seed=None):  # noqa: N802 - Keras' class name
    """He normal: truncated normal with variance 2 / fan_in."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def HeUniform(seed=None):  # noqa: N802
    """He uniform: U(-l, l), l = sqrt(6 / fan_in)."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def LecunNormal(seed=None):  # noqa: N802
    """LeCun normal: truncated normal with variance 1 / fan_in."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def LecunUniform(seed=None):  # noqa: N802
    """LeCun uniform: U(-l, l), l = sqrt(3 / fan_in)."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


class Orthogonal:
    """A random orthogonal matrix (times `gain`), from the QR decomposition of a normal draw
    (Saxe et al.); shapes of rank > 2 are flattened to (prod(shape[:-1]), shape[-1])."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = as_shape(shape).as_list()
        if len(dims) < 2 or any(d is None for d in dims):
            raise ValueError(f"Orthogonal initializer needs a known shape of rank >= 2, got "
                             f"{as_shape(shape)}.")
        seeds = ops.get_seed(self.seed)
        rng = np.random.default_rng(None if seeds[0] is None else list(seeds))
        rows, cols = int(np.prod(dims[:-1])), dims[-1]
        draw = rng.standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(draw)
        q *= np.sign(np.diag(r))
        matrix = q if rows >= cols else q.T
        dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        value = (self.gain * matrix).reshape(dims).astype(dtype.as_numpy_dtype)
        return ops.constant(value, dtype=dtype)


_BY_NAME = {
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "random_normal": RandomNormal, "normal": RandomNormal, "random_uniform": RandomUniform,
    "uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
}
_BY_NAME.update({name.lower(): cls for name, cls in [
    ("GlorotUniform", GlorotUniform), ("GlorotNormal", GlorotNormal), ("HeNormal", HeNormal),
    ("HeUniform", HeUniform), ("Zeros", Zeros), ("Ones", Ones), ("Orthogonal", Orthogonal),
    ("RandomNormal", RandomNormal), ("RandomUniform", RandomUniform),
    ("TruncatedNormal", TruncatedNormal)]})


def get(identifier):
    """An initializer from a name ("glorot_uniform", "GlorotUniform"), a config dict
    ({"class_name": ..., "config": {...}}), an initializer object or any callable."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        factory = _factory(identifier["class_name"])
        return factory(**identifier.get("config", {}))
    if isinstance(identifier, str):
        return _factory(identifier)()
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret initializer identifier: {identifier!r}.")


def _factory(name: str):
    key = name.lower()
    if key not in _BY_NAME:
        raise ValueError(f"Unknown initializer: {name!r}. Known: "
                         f"{', '.join(sorted(set(_BY_NAME)))}.")
    return _BY_NAME[key]
