"""TensorFlow 1.x `tf.nn` functions that are compositions of existing ops (no op types of their
own): `swish` (`silu`), `crelu`, `relu_layer`, `log_poisson_loss`,
`weighted_cross_entropy_with_logits`, `sufficient_statistics`, `normalize_moments`,
`weighted_moments` and `zero_fraction`.

Each builds what TensorFlow's function computes (the formula in its docstring), so values,
dtypes and gradients follow from the ops used.
"""

from __future__ import annotations

import math

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from . import math_ops as mo
from .activation_ops import relu, xw_plus_b
from .array_ops import concat, reshape, squeeze, zeros_like
from .builder import graph_for, to_tensor
from .reduction_ops import reduce_mean, reduce_prod, reduce_sum
from .shape_ops import shape as shape_of

__all__ = ["swish", "silu", "crelu", "relu_layer", "log_poisson_loss",
           "weighted_cross_entropy_with_logits", "sufficient_statistics", "normalize_moments",
           "weighted_moments", "zero_fraction"]


def swish(features, beta=1.0, name=None) -> Tensor:
    """features * sigmoid(beta * features) (SiLU for beta = 1)."""
    x = to_tensor(features, name="features")
    with x.graph.name_scope(name or "swish"):
        beta = mo.cast(beta, x.dtype)
        return mo.multiply(x, mo.sigmoid(mo.multiply(beta, x)))


silu = swish


def crelu(features, name=None, axis=-1) -> Tensor:
    """concat([relu(x), relu(-x)], axis): twice the channels, both signs kept."""
    x = to_tensor(features, name="features")
    with x.graph.name_scope(name or "CRelu"):
        return relu(concat([x, mo.negative(x)], axis))


def relu_layer(x, weights, biases, name=None) -> Tensor:
    """relu(x @ weights + biases)."""
    graph = graph_for((x, weights, biases))
    with graph.as_default(), graph.name_scope(name or "relu_layer"):
        return relu(xw_plus_b(x, weights, biases))


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None) -> Tensor:
    """exp(log_input) - log_input * targets; with `compute_full_loss`, plus Stirling's
    approximation of log(targets!) (targets * log(targets) - targets + 0.5 * log(2 pi
    targets)) where targets > 1."""
    graph = graph_for((targets, log_input))
    with graph.as_default(), graph.name_scope(name or "log_poisson_loss"):
        log_input = to_tensor(log_input, name="log_input")
        targets = to_tensor(targets, dtype=log_input.dtype, name="targets")
        if not targets.shape.is_compatible_with(log_input.shape):
            raise ValueError(f"log_poisson_loss: targets {targets.shape} and log_input "
                             f"{log_input.shape} must have the same shape.")
        loss = mo.subtract(mo.exp(log_input), mo.multiply(log_input, targets))
        if not compute_full_loss:
            return loss
        ones = mo.cast(1.0, targets.dtype)
        safe = mo.where_v2(mo.greater(targets, ones), targets, mo.add(zeros_like(targets),
                                                                       ones))
        stirling = mo.add(mo.subtract(mo.multiply(safe, mo.log(safe)), safe),
                          mo.multiply(mo.cast(0.5, safe.dtype),
                                      mo.log(mo.multiply(mo.cast(2 * math.pi, safe.dtype),
                                                         safe))))
        return mo.add(loss, mo.where_v2(mo.greater(targets, ones), stirling,
                                        zeros_like(stirling)))


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None) -> Tensor:
    """The sigmoid cross entropy with the positive term weighted by `pos_weight`:
    (1 - z) * x + (1 + (pos_weight - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0)),
    stable for any logit x (`targets` is TF 1.x's name for the labels)."""
    labels = targets if labels is None else labels
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs labels, logits and "
                         "pos_weight.")
    graph = graph_for((labels, logits, pos_weight))
    with graph.as_default(), graph.name_scope(name or "logistic_loss"):
        x = to_tensor(logits, name="logits")
        z = to_tensor(labels, dtype=x.dtype, name="labels")
        if not x.shape.is_compatible_with(z.shape):
            raise ValueError(f"weighted_cross_entropy_with_logits: logits {x.shape} and labels "
                             f"{z.shape} must have the same shape.")
        w = mo.cast(pos_weight, x.dtype)
        log_weight = mo.add(mo.cast(1.0, x.dtype), mo.multiply(mo.subtract(w, 1.0), z))
        softplus_neg = mo.add(mo.log1p(mo.exp(mo.negative(mo.abs(x)))),
                              relu(mo.negative(x)))
        return mo.add(mo.multiply(mo.subtract(mo.cast(1.0, x.dtype), z), x),
                      mo.multiply(log_weight, softplus_neg))


def _axes_list(axes):
    return [int(a) for a in (axes if isinstance(axes, (list, tuple)) else [axes])]


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """(count, sum of (x - shift), sum of (x - shift)**2, shift) over `axes`: the number
    of elements reduced (x's dtype), the shifted sums (shift None: of x itself) and shift."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = to_tensor(x, name="x")
    with x.graph.name_scope(name or "sufficient_statistics"):
        axes = [a % x.shape.ndims for a in _axes_list(axes)] if x.shape.ndims else \
            _axes_list(axes)
        dims = [x.shape.dims[a] if x.shape.ndims else None for a in axes]
        if all(d is not None for d in dims):
            total = 1
            for d in dims:
                total *= d
            count = to_tensor(float(total), dtype=x.dtype, name="count")
        else:
            sizes = [shape_of(x)[a] for a in axes]
            count = mo.cast(reduce_prod(concat([reshape(s, [1]) for s in sizes], 0)), x.dtype,
                            name="count")
        if shift is not None:
            shift = to_tensor(shift, dtype=x.dtype, name="shift")
            centered = mo.subtract(x, shift)
        else:
            centered = x
        mean_ss = reduce_sum(centered, axis=axes, keepdims=keep, name="mean_ss")
        var_ss = reduce_sum(mo.square(centered), axis=axes, keepdims=keep, name="var_ss")
        return count, mean_ss, var_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient statistics: mean = mean_ss / counts + shift,
    variance = variance_ss / counts - (mean_ss / counts)**2."""
    graph = graph_for((counts, mean_ss, variance_ss, shift))
    with graph.as_default(), graph.name_scope(name or "normalize"):
        mean_ss = to_tensor(mean_ss, name="mean_ss")
        divisor = mo.reciprocal(mo.cast(counts, mean_ss.dtype), name="divisor")
        shifted_mean = mo.multiply(mean_ss, divisor, name="shifted_mean")
        mean = shifted_mean if shift is None else mo.add(shifted_mean,
                                                         mo.cast(shift, mean_ss.dtype),
                                                         name="mean")
        variance = mo.subtract(mo.multiply(to_tensor(variance_ss, dtype=mean_ss.dtype),
                                           divisor), mo.square(shifted_mean), name="variance")
        return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over `axes` with each element counted `frequency_weights`
    times (broadcast against x): sum(w x) / sum(w) and sum(w (x - mean)**2) / sum(w)."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = to_tensor(x, name="x")
    with x.graph.name_scope(name or "weighted_moments"):
        w = mo.cast(to_tensor(frequency_weights, name="frequency_weights"), x.dtype)
        axes = _axes_list(axes)
        weighted = mo.multiply(w, mo.add(x, zeros_like(w)))
        total = reduce_sum(mo.add(w, zeros_like(x)), axis=axes, keepdims=True)
        divisor = mo.reciprocal(total)
        mean = mo.multiply(reduce_sum(weighted, axis=axes, keepdims=True), divisor)
        variance = mo.multiply(reduce_sum(mo.multiply(w, mo.square(mo.subtract(x, mean))),
                                          axis=axes, keepdims=True), divisor)
        if not keep:
            mean, variance = squeeze(mean, axis=axes), squeeze(variance, axis=axes)
        return mean, variance


def zero_fraction(value, name=None) -> Tensor:
    """The fraction of `value`'s elements that are zero (a float32 scalar)."""
    x = to_tensor(value, name="value")
    with x.graph.name_scope(name or "zero_fraction"):
        zero = mo.equal(x, zeros_like(x))
        return reduce_mean(mo.cast(zero, _dtypes.float32), name="fraction")
