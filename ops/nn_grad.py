"""Gradients of the `flowjit.nn` ops (activation_ops and loss_ops): Relu, Relu6, Elu, Selu,
Softplus, Softsign, LeakyRelu, BiasAdd, Softmax, LogSoftmax, L2Loss and the two softmax
cross entropies.

Kept beside those modules (which are at their size limit) as one table, `GRADIENTS`, of
(OpDef, `fn(op, *output_grads)`); `ops/__init__.py` installs each as `OpDef.gradient`.

The cross-entropy ops have two outputs, the loss and `backprop` (softmax - labels); both are
differentiated: the loss's gradient is `backprop` scaled per row, and a gradient arriving at
`backprop` goes through the softmax Jacobian.  Dense labels get the gradient -log_softmax
(TensorFlow 1.x's `softmax_cross_entropy_with_logits` stops it with StopGradient; `_v2`
does not); sparse (integer) labels get None.
"""

from __future__ import annotations

from . import activation_ops as act
from . import loss_ops
from . import math_ops as mo
from .array_ops import concat, expand_dims, reshape, zeros_like
from .array_ops import range as _range
from .reduction_ops import reduce_sum
from .shape_ops import rank, shape


def _where(cond, a, b):
    return mo.where_v2(cond, a, b)


def _relu(op, g):
    return [_where(op.outputs[0] > 0, g, zeros_like(g))]


def _relu6(op, g):
    x = op.inputs[0]
    return [_where(mo.logical_and(x > 0, x < 6), g, zeros_like(g))]


def _elu(op, g):
    x, y = op.inputs[0], op.outputs[0]
    return [_where(x > 0, g, g * (y + 1.0))]


def _selu(op, g):
    x, y = op.inputs[0], op.outputs[0]
    alpha, scale = act._SELU_ALPHA, act._SELU_SCALE
    return [_where(x > 0, g * scale, g * (y + scale * alpha))]


def _softplus(op, g):
    return [g * mo.sigmoid(op.inputs[0])]


def _softsign(op, g):
    return [g / mo.square(mo.abs(op.inputs[0]) + 1.0)]


def _leaky_relu(op, g):
    return [_where(op.inputs[0] > 0, g, g * op.get_attr("alpha"))]


def _bias_add(op, g):
    value = op.inputs[0]
    if op.get_attr("data_format") != "NCHW":
        channels = shape(op.inputs[1])
        return [g, reduce_sum(reshape(g, concat([[-1], channels], 0)), 0)]
    r = value.shape.ndims
    axes = [0, *range(2, r)] if r is not None else concat([[0], _range(2, rank(g))], 0)
    return [g, reduce_sum(g, axes)]


def _softmax_backward(probs, g):
    """The softmax Jacobian (last axis) applied to g."""
    return (g - reduce_sum(g * probs, -1, keepdims=True)) * probs


def _softmax(op, g):
    return [_softmax_backward(op.outputs[0], g)]


def _log_softmax(op, g):
    return [g - reduce_sum(g, -1, keepdims=True) * mo.exp(op.outputs[0])]


def _l2_loss(op, g):
    return [op.inputs[0] * g]


def _logits_grad(op, g_loss, g_backprop, dense: bool):
    """The gradient for the logits of a cross-entropy op.

    d loss / d logits = softmax * sum(labels) - labels, which is the op's `backprop` output
    when the labels sum to 1 (always for sparse labels); dense labels need not.
    """
    logits, backprop = op.inputs[0], op.outputs[1]
    grad = None
    if g_loss is not None:
        if dense:
            labels = op.inputs[1]
            backprop = act.softmax(logits) * reduce_sum(labels, -1, keepdims=True) - labels
        grad = expand_dims(g_loss, -1) * backprop
    if g_backprop is not None:
        through = _softmax_backward(act.softmax(logits), g_backprop)
        grad = through if grad is None else grad + through
    return grad


def _softmax_xent(op, g_loss, g_backprop=None):
    logits = op.inputs[0]
    labels_grad = None
    if g_loss is not None:
        labels_grad = expand_dims(g_loss, -1) * -act.log_softmax(logits)
    if g_backprop is not None:
        labels_grad = -g_backprop if labels_grad is None else labels_grad - g_backprop
    return [_logits_grad(op, g_loss, g_backprop, True), labels_grad]


def _sparse_softmax_xent(op, g_loss, g_backprop=None):
    return [_logits_grad(op, g_loss, g_backprop, False), None]


GRADIENTS = (
    (act.RELU, _relu),
    (act.RELU6, _relu6),
    (act.ELU, _elu),
    (act.SELU, _selu),
    (act.SOFTPLUS, _softplus),
    (act.SOFTSIGN, _softsign),
    (act.LEAKY_RELU, _leaky_relu),
    (act.BIAS_ADD, _bias_add),
    (act.SOFTMAX, _softmax),
    (act.LOG_SOFTMAX, _log_softmax),
    (loss_ops.L2_LOSS, _l2_loss),
    (loss_ops.SOFTMAX_XENT, _softmax_xent),
    (loss_ops.SPARSE_SOFTMAX_XENT, _sparse_softmax_xent),
)
