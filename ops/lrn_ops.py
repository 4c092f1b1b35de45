"""Local response normalization: LRN and LRNGrad (TensorFlow's op types and attrs), and the
public `local_response_normalization` (also `lrn`).

LRN(input) over the last dim (the depth d) of a 4-D input:
    sqr_sum[..., d] = sum of input[..., j]^2 for j in [d - depth_radius, d + depth_radius]
                      (inside [0, depth))
    output = input / (bias + alpha * sqr_sum) ** beta
Attrs `depth_radius` (int >= 0, default 5), `bias` (1), `alpha` (1), `beta` (0.5).
LRNGrad(input_grads, input_image, output_image): with N = bias + alpha * sqr_sum,
    dx[d] = g[d] * N[d] ** -beta - 2 * alpha * beta * x[d] * sum over |j - d| <= r of
            g[j] * out[j] / N[j]
(out[j] / N[j] is x[j] * N[j] ** (-beta - 1)).  Floats only (float16 computed in float32).
LRN's gradient is LRNGrad; LRNGrad has none (TensorFlow defines none either).  Both lower
to a REDUCE over the depth window (bounds checked by a SELECT) and elementwise COMPUTEs.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Combiner
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import cast
from . import lower_index as lx
from .array_common import check_rank, runtime_error
from .builder import FLOATS, check_dtype, graph_for, make_op, to_tensor
from .lower_reduce import cast_node, compute_dtype
from .lower_util import require_real
from .registry import OpDef

__all__ = ["local_response_normalization", "lrn"]


def _settings(attrs):
    """(depth_radius, bias, alpha, beta) with TensorFlow's defaults."""
    return (int(attrs.get("depth_radius", 5)), float(attrs.get("bias", 1.0)),
            float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 0.5)))


def _infer(names):
    def infer(op):
        for t, name in zip(op.inputs, names):
            check_dtype(t, FLOATS, name)
            check_rank(t, 4, name)
            if t.dtype is not op.inputs[0].dtype or not t.shape.is_compatible_with(
                    op.inputs[0].shape):
                raise ValueError(f"{op.type}: {name} ({t.dtype.name} {t.shape}) must have "
                                 f"the dtype and shape of {names[0]} "
                                 f"({op.inputs[0].dtype.name} {op.inputs[0].shape}).")
        if _settings(op.attrs)[0] < 0:
            raise ValueError(f"{op.type}: depth_radius must be non-negative, got "
                             f"{_settings(op.attrs)[0]}.")
        shape = op.inputs[0].shape
        for t in op.inputs[1:]:
            shape = shape.merge_with(t.shape)
        return [(op.inputs[0].dtype, shape)]

    return infer


# --- reference kernels ---------------------------------------------------------------------------


def _window_sum(values: np.ndarray, radius: int) -> np.ndarray:
    """Each depth's sum of `values` over the depths within `radius` (in window order)."""
    depth = values.shape[-1]
    out = np.zeros_like(values)
    for offset in range(-min(radius, depth), min(radius, depth) + 1):
        lo, hi = max(0, -offset), min(depth, depth - offset)
        if lo < hi:
            out[..., lo:hi] += values[..., lo + offset:hi + offset]
    return out


def _checked(ctx, op_type, arrays):
    acc = np.float32 if arrays[0].dtype == np.float16 else arrays[0].dtype
    for a in arrays:
        if a.ndim != 4 or a.shape != arrays[0].shape:
            raise runtime_error(ctx, f"{op_type}: the inputs must be 4-dimensional and of one "
                                     f"shape, got {[list(b.shape) for b in arrays]}")
    return [a.astype(acc) for a in arrays]


def _norm(x, attrs):
    radius, bias, alpha, _ = _settings(attrs)
    return bias + alpha * _window_sum(x * x, radius)


def _lrn_kernel(ctx, inputs, attrs):
    (x,) = _checked(ctx, "LRN", inputs)
    beta = _settings(attrs)[3]
    with np.errstate(all="ignore"):
        out = x / np.power(_norm(x, attrs), x.dtype.type(beta))
    return [out.astype(inputs[0].dtype)]


def _lrn_grad_kernel(ctx, inputs, attrs):
    g, x, y = _checked(ctx, "LRNGrad", inputs)
    radius, _, alpha, beta = _settings(attrs)
    acc = x.dtype.type
    with np.errstate(all="ignore"):
        norm = _norm(x, attrs)
        spread = _window_sum(g * y / norm, radius)
        dx = g * np.power(norm, acc(-beta)) - acc(2 * alpha * beta) * x * spread
    return [dx.astype(inputs[0].dtype)]


# --- gradient and lowerings ----------------------------------------------------------------------


def _lrn_grad(op, g):
    return [make_op(LRN_GRAD, [g, op.inputs[0], op.outputs[0]], dict(op.attrs),
                    "LRNGrad").outputs[0]]


def _body_axes(shape):
    return tuple(ir.index(0) if ir.is_const(d, 1) else v
                 for v, d in zip(ir.axis_vars(len(shape)), shape))


def _window_sum_node(node, radius: int, body_fn):
    """node-shaped REDUCE: each depth's sum of body_fn(index) over the depths within
    `radius` inside [0, depth)."""
    shape = node.shape
    if ir.is_const(shape[3]) and shape[3].attr >= 1:   # no window reaches further
        radius = min(radius, shape[3].attr - 1)
    axes = _body_axes(shape)
    tap = ir.reduce_var(0)
    depth = lx.add(lx.sub(axes[3], radius), tap)
    inside = lx.all_of([lx.ge(depth, 0), lx.lt(depth, shape[3])])
    idx = axes[:3] + (lx.clamp(depth, shape[3]),)
    value = body_fn(idx)
    body = lx.select(inside, value, ir.const(0, value.dtype))
    return ir.reduce(value.dtype, shape, ir.axis_vars(4), (tap,), (ir.index(2 * radius + 1),),
                     body, Combiner.ADD)


class _Lrn:
    """Kernel-IR pieces of LRN over node `x` in the compute dtype."""

    def __init__(self, op, x):
        self.radius, self.bias, self.alpha, self.beta = _settings(op.attrs)
        self.x, self.dtype = x, compute_dtype(x.dtype)
        self.axes = ir.axis_vars(4)

    def op(self, kind, *args):
        return ir.make(kind, self.dtype, args)

    def c(self, value):
        return ir.const(value, self.dtype)

    def load(self, node, idx=None):
        return cast(ir.load(node, self.axes if idx is None else idx), self.dtype)

    def norm(self):
        """N = bias + alpha * sqr_sum, x-shaped."""
        squares = _window_sum_node(self.x, self.radius,
                                   lambda idx: self.op(S.MUL, self.load(self.x, idx),
                                                       self.load(self.x, idx)))
        body = self.op(S.ADD, self.c(self.bias), self.op(S.MUL, self.c(self.alpha),
                                                         ir.load(squares, self.axes)))
        return ir.compute(self.dtype, self.x.shape, self.axes, body)

    def compute(self, body, dtype):
        return cast_node(ir.compute(self.dtype, self.x.shape, self.axes, body), dtype)


def _check_shapes(ctx, op, inputs):
    for t in inputs[1:]:
        for a, b in zip(t.shape, inputs[0].shape):
            ctx.check_equal(a, b, f"{op.type}: the inputs must have one shape")


def _lower_lrn(ctx, op, inputs):
    require_real(op)
    k = _Lrn(op, inputs[0])
    norm = k.norm()
    body = k.op(S.DIV, k.load(k.x), k.op(S.POW, k.load(norm), k.c(k.beta)))
    return [k.compute(body, k.x.dtype)]


def _lower_lrn_grad(ctx, op, inputs):
    require_real(op)
    _check_shapes(ctx, op, inputs)
    g, x, y = inputs
    k = _Lrn(op, x)
    norm = k.norm()
    ratio = k.compute(k.op(S.DIV, k.op(S.MUL, k.load(g), k.load(y)), k.load(norm)), k.dtype)
    spread = _window_sum_node(ratio, k.radius, lambda idx: k.load(ratio, idx))
    direct = k.op(S.MUL, k.load(g), k.op(S.POW, k.load(norm), k.c(-k.beta)))
    through = k.op(S.MUL, k.op(S.MUL, k.c(2 * k.alpha * k.beta), k.load(x)),
                   k.load(spread))
    return [k.compute(k.op(S.SUB, direct, through), x.dtype)]


LRN = OpDef("LRN", _infer(("input",)), _lrn_kernel, gradient=_lrn_grad, lower=_lower_lrn,
            doc="Local response normalization over the last dim.")
LRN_GRAD = OpDef("LRNGrad", _infer(("input_grads", "input_image", "output_image")),
                 _lrn_grad_kernel, lower=_lower_lrn_grad, doc="The gradient of LRN.")


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5,
                                 name=None) -> Tensor:
    """input / (bias + alpha * (sum of input^2 over the depths within depth_radius)) **
    beta, over the last dim of a 4-D float `input`."""
    attrs = {"depth_radius": int(depth_radius), "bias": float(np.float32(bias)),
             "alpha": float(np.float32(alpha)), "beta": float(np.float32(beta))}
    graph = graph_for((input,))
    with graph.as_default():
        x = to_tensor(input, name="input")
        return make_op(LRN, [x], attrs, name or "LRN").outputs[0]


lrn = local_response_normalization

OP_DEFS = (LRN, LRN_GRAD)
