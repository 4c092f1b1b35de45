"""`tf.keras.activations`: activation functions by Keras name, and `get` to look them up.

Each function takes a tensor and returns one, built from flowjit's ops; `get(identifier)`
accepts a name ("relu"), a callable (returned as is) or None (the identity, Keras' "linear").
"""

from __future__ import annotations

from .. import nn
from ..ops import api as ops

__all__ = ["relu", "sigmoid", "tanh", "softmax", "linear", "elu", "selu", "softplus",
           "softsign", "exponential", "hard_sigmoid", "swish", "relu6", "leaky_relu", "get",
           "serialize"]


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """max(x, 0); with `alpha`, `alpha * x` below the threshold; capped at `max_value`."""
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return nn.relu(x)
    below = alpha * (x - threshold) if alpha else ops.zeros_like(x)
    out = ops.where(ops.greater_equal(x, threshold), x, below)
    return out if max_value is None else ops.minimum(out, max_value)


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return ops.sigmoid(x)


def tanh(x):
    """The hyperbolic tangent."""
    return ops.tanh(x)


def softmax(x, axis=-1):
    """exp(x) normalized to sum 1 along `axis`."""
    return nn.softmax(x, axis=axis)


def linear(x):
    """The identity (no activation)."""
    return x


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    if alpha == 1.0:
        return nn.elu(x)
    return ops.where(ops.greater(x, 0.0), x, alpha * (ops.exp(x) - 1.0))


def selu(x):
    """The scaled ELU of Klambauer et al."""
    return nn.selu(x)


def softplus(x):
    """log(1 + exp(x))."""
    return nn.softplus(x)


def softsign(x):
    """x / (1 + |x|)."""
    return nn.softsign(x)


def exponential(x):
    """exp(x)."""
    return ops.exp(x)


def hard_sigmoid(x):
    """The piecewise-linear sigmoid clip(0.2 * x + 0.5, 0, 1)."""
    return ops.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def swish(x):
    """x * sigmoid(x)."""
    return x * ops.sigmoid(x)


def relu6(x):
    """min(max(x, 0), 6)."""
    return nn.relu6(x)


def leaky_relu(x, alpha=0.3):
    """x for x > 0, alpha * x otherwise (Keras' default slope 0.3)."""
    return nn.leaky_relu(x, alpha=alpha)


_BY_NAME = {name: globals()[name] for name in __all__ if name not in ("get", "serialize")}


def get(identifier):
    """The activation function `identifier` names, a callable as is, or `linear` for None.

    Raises ValueError naming the known activations for an unknown name.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]
        except KeyError:
            raise ValueError(f"Unknown activation function: {identifier!r}. Known: "
                             f"{', '.join(sorted(_BY_NAME))}.") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}.")


def serialize(activation) -> str:
    """The name of an activation function (its Python name for one not from this module)."""
    for name, fn in _BY_NAME.items():
        if fn is activation:
            return name
    return getattr(activation, "__name__", repr(activation))
