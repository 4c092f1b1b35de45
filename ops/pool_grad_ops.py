"""The gradient ops of pooling (TensorFlow's op types and attrs, pool_ops.py's windows):

- MaxPoolGrad(orig_input, orig_output, grad): input-shaped; each window's gradient goes to
  the first tap (row-major) holding the window's maximum of orig_input (recomputed from
  it, as TensorFlow's kernel does: orig_output is only checked for its shape), summed
  where windows overlap;
- MaxPoolGradGrad(orig_input, orig_output, grad): pooled-shaped; grad (input-shaped) read
  at each window's maximum: the gradient of MaxPoolGrad with respect to its `grad`;
- AvgPoolGrad(orig_input_shape, grad): each window's gradient divided by its tap count
  (taps inside the input) and spread over those taps.
Attrs are the forward op's (`ksize`, `strides`, `padding`, `explicit_paddings`,
`data_format`).  Gradients (so double backprop works, as TensorFlow's): MaxPoolGrad's is
MaxPoolGradGrad of the incoming gradient, MaxPoolGradGrad's is MaxPoolGrad, AvgPoolGrad's
is AvgPool; the other inputs get zeros (MaxPool's selection is piecewise constant) or
nothing (a shape).

Lowerings: the first maximum of each window is an ARGMAX REDUCE over the flattened taps;
MaxPoolGrad and AvgPoolGrad are gathers summed by an ADD REDUCE over the (at most
ceil(k / stride) per dim) windows covering each input position, MaxPoolGradGrad a load at
the argmax.  Those lowerings compile for floats.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.ir import Combiner
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import TensorShape
from . import fill_ops, pool_ops
from . import lower_index as lx
from . import pool_windows as pw
from .array_common import check_rank, runtime_error
from .builder import FLOATS, REALS, check_dtype, make_op, to_tensor
from .conversion import static_shape_from_tensor
from .lower_reduce import cast_node, compute_dtype
from .lower_util import require_real
from .registry import OpDef

_MAX_TYPES = tuple(t for t in REALS if t is not _dtypes.bool_)


# --- shape inference -----------------------------------------------------------------------------


def _check_same(op, tensors, names):
    for t, name in zip(tensors, names):
        check_dtype(t, _MAX_TYPES, name)
        check_rank(t, 4, name)
        if t.dtype is not tensors[0].dtype:
            raise TypeError(f"Input '{name}' of '{op.type}' Op has type {t.dtype.name} that "
                            f"does not match type {tensors[0].dtype.name} of argument "
                            f"'{names[0]}'.")


def _check_compatible(op, tensor, shape: TensorShape, name: str, what: str):
    if not tensor.shape.is_compatible_with(shape):
        raise ValueError(f"{op.type}: {name} has shape {tensor.shape} but the {what} has "
                         f"shape {shape}.")


def _max_grad_infer(op):
    orig_input, orig_output, grad = op.inputs
    _check_same(op, op.inputs, ("orig_input", "orig_output", "grad"))
    spec = pw.PoolSpec.of(op.type, op.attrs)
    pooled = spec.output_shape(orig_input.shape)
    _check_compatible(op, orig_output, pooled, "orig_output", "pooled orig_input")
    if op.type == "MaxPoolGrad":
        _check_compatible(op, grad, pooled, "grad", "pooled orig_input")
        return [(orig_input.dtype, orig_input.shape)]
    _check_compatible(op, grad, orig_input.shape, "grad", "orig_input")
    return [(orig_input.dtype, pooled.merge_with(orig_output.shape))]


def _avg_grad_infer(op):
    shape_t, grad = op.inputs
    check_dtype(shape_t, (_dtypes.int32,), "orig_input_shape")
    check_rank(shape_t, 1, "orig_input_shape")
    check_dtype(grad, FLOATS, "grad")
    check_rank(grad, 4, "grad")
    if shape_t.shape.ndims == 1 and shape_t.shape.dims[0] not in (None, 4):
        raise ValueError(f"AvgPoolGrad: orig_input_shape must hold 4 sizes, got shape "
                         f"{shape_t.shape}.")
    spec = pw.PoolSpec.of(op.type, op.attrs, explicit_ok=False)
    shape = static_shape_from_tensor(shape_t)
    if shape.ndims is None:
        shape = TensorShape([None] * 4)
    _check_compatible(op, grad, spec.output_shape(shape), "grad", "pooled orig_input_shape")
    return [(grad.dtype, shape)]


# --- reference kernels ---------------------------------------------------------------------------


def _max_grad_setup(ctx, op_type, inputs, attrs):
    spec = pw.PoolSpec.of(op_type, attrs)
    orig_input, orig_output, grad = inputs
    if orig_input.ndim != 4:
        raise runtime_error(ctx, f"{op_type}: orig_input must be 4-dimensional, got shape "
                                 f"{list(orig_input.shape)}")
    layout = spec.layout
    x_last = layout.to_channels_last(orig_input)
    geo = pw.run_geometry(ctx, spec, x_last.shape[1:-1])
    pooled = layout.shape(x_last.shape[0], [o for o, _, _ in geo], x_last.shape[-1])
    pw.check_shape(ctx, spec, orig_output, pooled, "orig_output")
    pw.check_shape(ctx, spec, grad, pooled if op_type == "MaxPoolGrad" else orig_input.shape,
                   "grad")
    return spec, x_last, geo, pw.first_max_taps(spec, x_last, geo)


def _max_pool_grad_kernel(ctx, inputs, attrs):
    spec, x_last, geo, best = _max_grad_setup(ctx, "MaxPoolGrad", inputs, attrs)
    g = spec.layout.to_channels_last(inputs[2])
    acc = np.float32 if g.dtype == np.float16 else g.dtype
    parts = np.where(np.arange(spec.taps) == best[..., None], g[..., None].astype(acc), 0)
    dx = pw.scatter_taps(spec, parts.astype(acc), geo, x_last.shape[1:-1])
    return [np.ascontiguousarray(spec.layout.from_channels_last(dx.astype(g.dtype)))]


def _max_pool_grad_grad_kernel(ctx, inputs, attrs):
    spec, x_last, geo, best = _max_grad_setup(ctx, "MaxPoolGradGrad", inputs, attrs)
    g = spec.layout.to_channels_last(inputs[2])
    taps = pw.tap_stack(spec, g, geo, 0)
    out = np.take_along_axis(taps, best[..., None], axis=-1)[..., 0]
    return [np.ascontiguousarray(spec.layout.from_channels_last(out))]


def _avg_pool_grad_kernel(ctx, inputs, attrs):
    spec = pw.PoolSpec.of("AvgPoolGrad", attrs, explicit_ok=False)
    shape, grad = inputs
    sizes = [int(v) for v in np.reshape(shape, -1)]
    if len(sizes) != 4 or any(v < 0 for v in sizes):
        raise runtime_error(ctx, f"AvgPoolGrad: orig_input_shape must be 4 non-negative "
                                 f"sizes, got {sizes}")
    layout = spec.layout
    in_sizes = [sizes[a] for a in layout.spatial]
    geo = pw.run_geometry(ctx, spec, in_sizes)
    pw.check_shape(ctx, spec, grad, layout.shape(sizes[layout.batch], [o for o, _, _ in geo],
                                                 sizes[layout.channel]), "grad")
    acc = np.float32 if grad.dtype == np.float16 else grad.dtype
    g = layout.to_channels_last(grad).astype(acc)
    inside = pw.inside_mask(spec, in_sizes, geo)
    share = g / inside.sum(-1).astype(acc)
    dx = pw.scatter_taps(spec, np.where(inside, share[..., None], 0).astype(acc), geo,
                         in_sizes)
    return [np.ascontiguousarray(layout.from_channels_last(dx.astype(grad.dtype)))]


# --- gradients -----------------------------------------------------------------------------------


def _max_pool_grad_grad(op, g):
    x, y = op.inputs[:2]
    return [fill_ops.zeros_like(x), fill_ops.zeros_like(y),
            max_pool_grad_grad(x, y, g, pw.op_attrs(op))]


def _max_pool_grad_grad_grad(op, g):
    x, y = op.inputs[:2]
    return [fill_ops.zeros_like(x), fill_ops.zeros_like(y),
            max_pool_grad(x, y, g, pw.op_attrs(op))]


def _avg_pool_grad_grad(op, g):
    attrs = pw.op_attrs(op)
    return [None, make_op(pool_ops.AVG_POOL, [g], attrs, "AvgPool").outputs[0]]


# --- lowerings -----------------------------------------------------------------------------------


def _require_float(op):
    require_real(op)
    if not op.outputs[0].dtype.is_floating:
        raise NotLowerable(f"{op.type} on {op.outputs[0].dtype.name} is not compiled")


def _scatter_sum(g: pw.PoolGeometry, shape, part_fn, dtype):
    """Input-shaped (`shape`): each position's sum over the windows covering it of
    part_fn(batch, outs, channel, flat tap) (a compute-dtype Expr)."""
    axes = pw.body_axes(shape)
    n, ins, c = g.split(axes)
    extents = g.cover_extents()
    steps = [None] * len(ins)   # a REDUCE over the dims where several windows overlap
    for d in (d for d, e in enumerate(extents) if e > 1):
        steps[d] = ir.reduce_var(sum(e > 1 for e in extents[:d]))
    cond, outs, taps = g.covering(ins, steps)
    body = lx.select(cond, part_fn(n, outs, c, g.flat_tap(taps)), ir.const(0, dtype))
    if all(j is None for j in steps):   # windows do not overlap: one term per position
        return ir.compute(dtype, shape, ir.axis_vars(len(shape)), body)
    return ir.reduce(dtype, shape, ir.axis_vars(len(shape)), [j for j in steps if j is not None],
                     [ir.index(e) for e in extents if e > 1], body, Combiner.ADD)


def _lower_max_pool_grad(ctx, op, inputs):
    _require_float(op)
    x, _, grad = inputs
    g = pw.PoolGeometry.of(ctx, pw.PoolSpec.of(op.type, op.attrs), x.shape, op.inputs[0])
    pooled = g.out_shape(op.inputs[1])
    for a, b in zip(pooled, grad.shape):
        ctx.check_equal(a, b, f"{op.type}: grad must have the pooled shape of orig_input")
    best = pw.first_max_node(g, x, pooled)
    dtype = compute_dtype(x.dtype)

    def part(n, outs, c, tap):
        hit = lx.eq(ir.load(best, g.spec.layout.index(n, outs, c)), tap)
        return lx.select(hit, pw.value(g.load(grad, n, outs, c), dtype), ir.const(0, dtype))

    return [cast_node(_scatter_sum(g, g.in_shape(op.outputs[0]), part, dtype), x.dtype)]


def _lower_max_pool_grad_grad(ctx, op, inputs):
    _require_float(op)
    x, _, grad = inputs
    g = pw.PoolGeometry.of(ctx, pw.PoolSpec.of(op.type, op.attrs), x.shape, op.inputs[0])
    for a, b in zip(x.shape, grad.shape):
        ctx.check_equal(a, b, f"{op.type}: grad must have the shape of orig_input")
    shape = g.out_shape(op.outputs[0])
    best = pw.first_max_node(g, x, shape)
    axes = pw.body_axes(shape)
    n, outs, c = g.split(axes)
    cond, positions = g.taps(outs, g.window_taps(ir.load(best, axes)))
    body = lx.select(cond, g.load(grad, n, positions, c), ir.const(0, x.dtype))
    return [ir.compute(x.dtype, shape, ir.axis_vars(len(shape)), body)]


def _lower_avg_pool_grad(ctx, op, inputs):
    _require_float(op)
    grad = inputs[1]
    sizes = ctx.symbolic_ints(op.inputs[0])
    if len(sizes) != 4:
        raise NotLowerable("AvgPoolGrad needs 4 sizes")
    for s in sizes:
        lx.require(ctx, lx.ge(s, 0), "AvgPoolGrad: orig_input_shape must be non-negative")
    g = pw.PoolGeometry.of(ctx, pw.PoolSpec.of(op.type, op.attrs, explicit_ok=False), sizes,
                           op.outputs[0])
    for a, b in zip(g.out_shape(op.inputs[1]), grad.shape):
        ctx.check_equal(a, b, "AvgPoolGrad: grad must have the pooled shape of "
                              "orig_input_shape")
    dtype = compute_dtype(grad.dtype)

    def part(n, outs, c, tap):
        return ir.make(ir.Scalar.DIV, dtype, (pw.value(g.load(grad, n, outs, c), dtype),
                                              pw.value(g.count(outs), dtype)))

    return [cast_node(_scatter_sum(g, g.in_shape(op.outputs[0]), part, dtype), grad.dtype)]


MAX_POOL_GRAD = OpDef("MaxPoolGrad", _max_grad_infer, _max_pool_grad_kernel,
                      gradient=_max_pool_grad_grad, lower=_lower_max_pool_grad,
                      doc="The gradient of MaxPool with respect to its input.")
MAX_POOL_GRAD_GRAD = OpDef("MaxPoolGradGrad", _max_grad_infer, _max_pool_grad_grad_kernel,
                           gradient=_max_pool_grad_grad_grad, lower=_lower_max_pool_grad_grad,
                           doc="The gradient of MaxPoolGrad with respect to its grad.")
AVG_POOL_GRAD = OpDef("AvgPoolGrad", _avg_grad_infer, _avg_pool_grad_kernel,
                      gradient=_avg_pool_grad_grad, lower=_lower_avg_pool_grad,
                      doc="The gradient of AvgPool with respect to its input.")


# --- functions (TensorFlow's raw op names; not in the tf.nn namespace) ---------------------------


def _attrs(attrs, ksize, strides, padding, data_format, explicit_paddings):
    if attrs is not None:
        return dict(attrs)
    out = {"ksize": list(ksize), "strides": list(strides), "padding": padding,
           "data_format": data_format}
    if explicit_paddings:
        out["explicit_paddings"] = list(explicit_paddings)
    return out


def max_pool_grad(orig_input, orig_output, grad, attrs=None, ksize=None, strides=None,
                  padding=None, data_format="NHWC", explicit_paddings=(), name=None):
    """MaxPoolGrad: the gradient `grad` of MaxPool(orig_input) = orig_output sent back to
    each window's first maximum; `attrs` (a MaxPool's) or the window arguments."""
    x, y, g = (to_tensor(t) for t in (orig_input, orig_output, grad))
    return make_op(MAX_POOL_GRAD, [x, y, g], _attrs(attrs, ksize, strides, padding,
                                                    data_format, explicit_paddings),
                   name or "MaxPoolGrad").outputs[0]


def max_pool_grad_grad(orig_input, orig_output, grad, attrs=None, ksize=None, strides=None,
                       padding=None, data_format="NHWC", explicit_paddings=(), name=None):
    """MaxPoolGradGrad: the input-shaped `grad` read at each window's first maximum."""
    x, y, g = (to_tensor(t) for t in (orig_input, orig_output, grad))
    return make_op(MAX_POOL_GRAD_GRAD, [x, y, g], _attrs(attrs, ksize, strides, padding,
                                                         data_format, explicit_paddings),
                   name or "MaxPoolGradGrad").outputs[0]


def avg_pool_grad(orig_input_shape, grad, attrs=None, ksize=None, strides=None, padding=None,
                  data_format="NHWC", name=None):
    """AvgPoolGrad: the gradient `grad` of AvgPool over an input of `orig_input_shape`
    spread evenly over each window's taps inside the input."""
    g = to_tensor(grad)
    shape = to_tensor(orig_input_shape, dtype=_dtypes.int32, graph=g.graph)
    attrs = _attrs(attrs, ksize, strides, padding, data_format, ())
    attrs.pop("explicit_paddings", None)
    return make_op(AVG_POOL_GRAD, [shape, g], attrs, name or "AvgPoolGrad").outputs[0]


OP_DEFS = (MAX_POOL_GRAD, MAX_POOL_GRAD_GRAD, AVG_POOL_GRAD)
