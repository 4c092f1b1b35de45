"""The TF1 losses of `flowjit.nn`: L2Loss and the cross entropies (see nn_ops.py).

Ops: L2Loss (sum(t**2) / 2, a scalar), SoftmaxCrossEntropyWithLogits and
SparseSoftmaxCrossEntropyWithLogits (inputs `features` = logits and `labels`; outputs the
per-row `loss` and the `backprop` softmax - labels, as TensorFlow's ops do).
`sigmoid_cross_entropy_with_logits` is a composition, max(x, 0) - x*z + log1p(exp(-|x|)).

One deliberate generalisation: TensorFlow's cross-entropy ops take rank-2 logits and its
Python wrappers reshape other ranks around them; here the ops accept logits of any rank
>= 1 and reduce over the last axis, so no reshapes are needed (results are the same).
Sparse labels outside [0, classes) are an InvalidArgumentError naming the bad value.
As in TensorFlow 1.x, `softmax_cross_entropy_with_logits` (v1) and the sparse and sigmoid
versions must be called with keyword arguments (labels=..., logits=...).

Gradients: both outputs of the cross entropies are differentiated: the loss's gradient is
`backprop` scaled per row, and a gradient arriving at `backprop` goes through the softmax
Jacobian.  Dense labels get the gradient -log_softmax; sparse (integer) labels get None.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Combiner
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.ir_build import cast, reduce_axes
from ..errors import InvalidArgumentError
from . import math_ops
from .activation_ops import _compute_dtype
from .array_ops import expand_dims
from .basic_ops import stop_gradient
from .builder import FLOATS, INDEX_TYPES, check_dtype, graph_for, make_op, to_tensor
from .fill_ops import zeros_like
from .lower_reduce import RowSoftmax, compute_dtype
from .rearrange_ops import move_axis_to_end
from .reduction_ops import reduce_sum
from .registry import OpDef, Trait
from .softmax_ops import _shifted, _softmax_backward, _static_axis, log_softmax, softmax

__all__ = ["l2_loss", "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits"]


# --- L2Loss ---------------------------------------------------------------------------------


def _l2_infer(op):
    t = op.inputs[0]
    check_dtype(t, FLOATS, "t")
    return [(t.dtype, ())]


def _l2_kernel(ctx, inputs, attrs):
    t = inputs[0]
    work = _compute_dtype(t)
    return [np.asarray(np.sum(work * work) / 2).astype(t.dtype)]


def _l2_loss_grad(op, g):
    return [op.inputs[0] * g]


def _lower_l2_loss(ctx, op, inputs):
    t = inputs[0]
    dt = compute_dtype(t.dtype)
    total = reduce_axes(t, range(len(t.shape)), False, Combiner.ADD, dt,
                        lambda e: ir.make(S.MUL, dt, (cast(e, dt), cast(e, dt))))
    half = ir.make(S.DIV, dt, (ir.load(total, ()), ir.const(2, dt)))
    return [ir.compute(t.dtype, (), (), cast(half, t.dtype))]


L2_LOSS = OpDef("L2Loss", _l2_infer, _l2_kernel, traits={Trait.REDUCTION},
                gradient=_l2_loss_grad, lower=_lower_l2_loss,
                doc="sum(t ** 2) / 2 over every element.")


def l2_loss(t, name=None) -> Tensor:
    """Half the sum of squares of `t`'s elements (a float scalar)."""
    graph = graph_for((t,))
    with graph.as_default(), graph.name_scope(name or "L2Loss") as scope:
        return make_op(L2_LOSS, [to_tensor(t, name="t")], {}, name=scope).outputs[0]


# --- softmax cross entropy ------------------------------------------------------------------


def _xent_infer(op):
    logits, labels = op.inputs
    check_dtype(logits, FLOATS, "features")
    if labels.dtype is not logits.dtype:
        raise TypeError(f"Input 'labels' of '{op.type}' Op has type {labels.dtype.name} that "
                        f"does not match type {logits.dtype.name} of argument 'features'.")
    if logits.shape.ndims == 0 or labels.shape.ndims == 0:
        raise ValueError("logits and labels must have at least one dimension (the classes).")
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"logits and labels must have the same shape: logits {logits.shape}"
                         f", labels {labels.shape}.")
    shape = logits.shape.merge_with(labels.shape)
    return [(logits.dtype, shape[:-1]), (logits.dtype, shape)]


def _xent_kernel(ctx, inputs, attrs):
    logits, labels = inputs
    if logits.ndim == 0 or logits.shape != labels.shape:
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"logits and labels must be same size: logits_size="
                                   f"{list(logits.shape)} labels_size={list(labels.shape)}")
    x, z = _compute_dtype(logits), _compute_dtype(labels)
    shifted, log_total = _shifted(x)
    with np.errstate(invalid="ignore", over="ignore"):
        log_probs = shifted - log_total
        loss = -np.sum(z * log_probs, axis=-1)
        backprop = np.exp(log_probs) - z
    dtype = logits.dtype
    return [np.asarray(loss).astype(dtype, copy=False), backprop.astype(dtype, copy=False)]


def _logits_grad(op, g_loss, g_backprop, dense: bool):
    """The gradient for the logits of a cross-entropy op.

    d loss / d logits = softmax * sum(labels) - labels, which is the op's `backprop` output
    when the labels sum to 1 (always for sparse labels); dense labels need not.  A gradient
    arriving at `backprop` goes through the softmax Jacobian.
    """
    logits, backprop = op.inputs[0], op.outputs[1]
    grad = None
    if g_loss is not None:
        if dense:
            labels = op.inputs[1]
            backprop = softmax(logits) * reduce_sum(labels, -1, keepdims=True) - labels
        grad = expand_dims(g_loss, -1) * backprop
    if g_backprop is not None:
        through = _softmax_backward(softmax(logits), g_backprop)
        grad = through if grad is None else grad + through
    return grad


def _softmax_xent_grad(op, g_loss, g_backprop=None):
    """Dense labels get -log_softmax (TensorFlow 1.x's v1 function stops it with
    StopGradient; `_v2` does not)."""
    logits = op.inputs[0]
    labels_grad = None
    if g_loss is not None:
        labels_grad = expand_dims(g_loss, -1) * -log_softmax(logits)
    if g_backprop is not None:
        labels_grad = -g_backprop if labels_grad is None else labels_grad - g_backprop
    return [_logits_grad(op, g_loss, g_backprop, True), labels_grad]


def _lower_xent(ctx, op, inputs):
    """loss = -sum(labels * log_probs) per row; backprop = exp(log_probs) - labels.

    Every node is built over logits' shape (labels' sizes are checked equal to it), so the
    max, the sum of exps, the loss and the backprop share one loop nest over rows."""
    logits, labels = inputs
    if len(labels.shape) != len(logits.shape):
        raise NotLowerable("logits and labels must have the same rank")
    for da, db in zip(logits.shape, labels.shape):
        ctx.check_equal(da, db, "logits and labels must be same size")
    rows = RowSoftmax(logits)
    dt, out = rows.dtype, logits.dtype

    def label(idx):
        return cast(ir.load(labels, idx), dt)

    last = len(logits.shape) - 1
    picked = reduce_axes(logits, [last], False, Combiner.ADD, dt,
                         lambda e: rows.op(S.MUL, label(e.args), rows.log_prob(e.args)))
    row_axes, axes = ir.axis_vars(last), ir.axis_vars(last + 1)
    loss = cast(rows.op(S.NEG, ir.load(picked, row_axes)), out)
    backprop = rows.op(S.SUB, rows.op(S.EXP, rows.log_prob(axes)), label(axes))
    return [ir.compute(out, logits.shape[:-1], row_axes, loss),
            ir.compute(out, logits.shape, axes, cast(backprop, out))]


SOFTMAX_XENT = OpDef("SoftmaxCrossEntropyWithLogits", _xent_infer, _xent_kernel,
                     gradient=_softmax_xent_grad, lower=_lower_xent,
                     default_name="softmax_cross_entropy_with_logits",
                     doc="Per-row -sum(labels * log_softmax(features)), and its gradient.")


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None,
                                         dim=None) -> Tensor:
    """Per-example cross entropy between `labels` (a distribution) and softmax(`logits`).

    `axis` (alias `dim`; default -1) is the class axis; the result drops it.
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = _static_axis(-1 if axis is None and dim is None else
                        (axis if axis is not None else dim))
    graph = graph_for((logits, labels))
    with graph.as_default(), graph.name_scope(
            name or "softmax_cross_entropy_with_logits") as scope:
        logits = to_tensor(logits, name="logits")
        labels = to_tensor(labels, dtype=logits.dtype, name="labels")
        logits = move_axis_to_end(logits, axis)[0]
        labels = move_axis_to_end(labels, axis)[0]
        return make_op(SOFTMAX_XENT, [logits, labels], {}, name=scope).outputs[0]


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None) -> Tensor:
    """TF1's (deprecated) softmax cross entropy: keyword arguments only.

    As in TensorFlow 1.x, `labels` is wrapped in StopGradient (no gradient flows into it);
    otherwise this equals the v2 function.
    """
    _ensure_keywords("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    graph = graph_for((logits, labels))
    logits = to_tensor(logits, graph=graph, name="logits")
    labels = stop_gradient(to_tensor(labels, dtype=logits.dtype, graph=graph, name="labels"))
    return softmax_cross_entropy_with_logits_v2(labels, logits, axis=axis, name=name,
                                                dim=None if axis is not None else dim)


def _ensure_keywords(fn_name, sentinel, labels, logits):
    if sentinel is not None:
        raise ValueError(f"Only call `{fn_name}` with named arguments (labels=..., "
                         "logits=..., ...).")
    if labels is None or logits is None:
        raise ValueError(f"Both labels and logits must be provided to `{fn_name}`.")


# --- sparse softmax cross entropy -----------------------------------------------------------


def _sparse_infer(op):
    logits, labels = op.inputs
    check_dtype(logits, FLOATS, "features")
    check_dtype(labels, INDEX_TYPES, "labels")
    if logits.shape.ndims == 0:
        raise ValueError("logits must have at least one dimension (the classes).")
    if logits.shape.ndims is not None:
        if not labels.shape.is_compatible_with(logits.shape[:-1]):
            raise ValueError(f"labels.shape must equal logits.shape except for the last "
                             f"dimension: labels {labels.shape}, logits {logits.shape}.")
        batch = logits.shape[:-1].merge_with(labels.shape)
        return [(logits.dtype, batch), (logits.dtype, batch.concatenate(logits.shape[-1:]))]
    return [(logits.dtype, labels.shape), (logits.dtype, logits.shape)]


def _sparse_kernel(ctx, inputs, attrs):
    logits, labels = inputs
    op = ctx.op if ctx else None
    if logits.ndim == 0 or logits.shape[:-1] != labels.shape:
        raise InvalidArgumentError(None, op, f"logits and labels must have the same first "
                                             f"dimensions: logits shape {list(logits.shape)}, "
                                             f"labels shape {list(labels.shape)}")
    classes = logits.shape[-1]
    bad = (labels < 0) | (labels >= classes)
    if np.any(bad):
        value = labels[bad].reshape(-1)[0]
        raise InvalidArgumentError(None, op, f"Received a label value of {value} which is "
                                             f"outside the valid range of [0, {classes}).")
    shifted, log_total = _shifted(_compute_dtype(logits))
    log_probs = shifted - log_total
    index = labels[..., np.newaxis].astype(np.intp)
    loss = -np.take_along_axis(log_probs, index, axis=-1)[..., 0]
    backprop = np.exp(log_probs)
    np.put_along_axis(backprop, index, np.take_along_axis(backprop, index, -1) - 1, axis=-1)
    dtype = logits.dtype
    return [np.asarray(loss).astype(dtype, copy=False), backprop.astype(dtype, copy=False)]


def _sparse_softmax_xent_grad(op, g_loss, g_backprop=None):
    """Sparse (integer) labels have no gradient."""
    return [_logits_grad(op, g_loss, g_backprop, False), None]


def _lower_sparse_xent(ctx, op, inputs):
    """loss = -log_probs[label] per row; backprop = exp(log_probs) - onehot(label).

    Labels outside [0, classes) fail as in the reference kernel: a REDUCE says whether all
    are in range and a runtime check reads it.  Each label is also clamped into range with
    a bound that reads that flag, so no load at a label index can run before the check."""
    logits, labels = inputs
    rank = len(logits.shape)
    if len(labels.shape) != rank - 1:
        raise NotLowerable("labels must have the rank of logits minus one")
    for da, db in zip(logits.shape, labels.shape):
        ctx.check_equal(da, db, "logits and labels must have the same first dimensions")
    index, classes = ir.INDEX, logits.shape[-1]

    def make(kind, dtype, *args):
        return ir.make(kind, dtype, args)

    def in_range(e):
        e = cast(e, index)
        return make(S.AND, "bool", make(S.GE, "bool", e, ir.index(0)),
                    make(S.LT, "bool", e, classes))

    valid = ir.load(reduce_axes(labels, range(rank - 1), False, Combiner.AND,
                                body_fn=in_range), ())
    ctx.check(valid, f"{op.name}: a label value is outside the valid range of [0, classes)")
    rows = RowSoftmax(logits)
    dt, out = rows.dtype, logits.dtype
    axes = ir.axis_vars(rank)
    row_axes = axes[:-1]
    top = make(S.SELECT, index, valid, make(S.SUB, index, classes, ir.index(1)), ir.index(0))
    label = make(S.MAX, index, make(S.MIN, index, cast(ir.load(labels, row_axes), index), top),
                 ir.index(0))
    loss = rows.op(S.NEG, rows.log_prob(row_axes + (label,)))
    prob = rows.op(S.EXP, rows.log_prob(axes))
    hit = make(S.EQ, "bool", axes[-1], label)
    backprop = rows.op(S.SELECT, hit, rows.op(S.SUB, prob, ir.const(1, dt)), prob)
    return [ir.compute(out, logits.shape[:-1], row_axes, cast(loss, out)),
            ir.compute(out, logits.shape, axes, cast(backprop, out))]


SPARSE_SOFTMAX_XENT = OpDef("SparseSoftmaxCrossEntropyWithLogits", _sparse_infer,
                            _sparse_kernel, gradient=_sparse_softmax_xent_grad,
                            lower=_lower_sparse_xent,
                            default_name="SparseSoftmaxCrossEntropyWithLogits",
                            doc="Per-row -log_softmax(features)[label], and its gradient.")


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None) -> Tensor:
    """Cross entropy of softmax(`logits`) against integer class `labels` (one per row).

    `labels` has logits' shape without the last (class) axis; values must be in
    [0, classes), checked when the graph runs.
    """
    _ensure_keywords("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    graph = graph_for((logits, labels))
    with graph.as_default(), graph.name_scope(
            name or "SparseSoftmaxCrossEntropyWithLogits") as scope:
        logits = to_tensor(logits, name="logits")
        labels = to_tensor(labels, name="labels")
        return make_op(SPARSE_SOFTMAX_XENT, [logits, labels], {}, name=scope).outputs[0]


# --- sigmoid cross entropy (a composition) --------------------------------------------------


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                      name=None) -> Tensor:
    """Elementwise logistic loss: max(x, 0) - x * z + log(1 + exp(-|x|)), stable for any x."""
    _ensure_keywords("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    graph = graph_for((logits, labels))
    with graph.as_default(), graph.name_scope(name or "logistic_loss") as scope:
        logits = to_tensor(logits, name="logits")
        if not logits.dtype.is_floating:
            raise TypeError(f"logits must be a floating-point tensor, got "
                            f"{logits.dtype.name}.")
        labels = to_tensor(labels, dtype=logits.dtype, name="labels")
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs "
                             f"{labels.shape}).")
        # max(x, 0) and -|x| as selects on x >= 0 (as TensorFlow builds them), so that the
        # gradient at x == 0 is sigmoid(0) - z = 0.5 - z, not relu's and abs's 0 there
        zeros = zeros_like(logits)
        nonneg = math_ops.greater_equal(logits, zeros)
        relu_logits = math_ops.where_v2(nonneg, logits, zeros)
        neg_abs = math_ops.where_v2(nonneg, math_ops.negative(logits), logits)
        linear = math_ops.subtract(relu_logits, math_ops.multiply(logits, labels))
        softplus_part = math_ops.log1p(math_ops.exp(neg_abs))
        return math_ops.add(linear, softplus_part, name=scope)


OP_DEFS = (L2_LOSS, SOFTMAX_XENT, SPARSE_SOFTMAX_XENT)
