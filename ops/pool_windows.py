"""Pooling windows shared by pool_ops.py (MaxPool, AvgPool) and pool_grad_ops.py (their
gradient ops): the attrs checked once (`PoolSpec`), the NumPy pieces of the reference
kernels, and the kernel-IR pieces of the lowerings.  Output sizes and padding are
lower_window.py's (shared with the convolutions).

Conventions every pooling op keeps (TensorFlow's, checked with TensorFlow 2.21's kernels):
- window taps are numbered in row-major order over the window (tap t of a kh x kw window
  is row t // kw, column t % kw); output position o reads input position o * stride + tap
  - before; positions outside the input are padding and are never part of a window's
  maximum or average;
- max pooling takes a NaN as -inf (TensorFlow's kernel skips NaNs too), so a window's
  maximum is the largest number in it, -inf when it holds none;
- its gradient goes to ONE position per window: the first tap (row-major) holding the
  maximum, as TensorFlow's MaxPoolGrad does with ties;
- average pooling divides by the number of taps inside the input (SAME padding near the
  border averages fewer elements).
A window holds at least one input position (SAME padding is less than the window, and
EXPLICIT padding must be: `PoolSpec` checks it), unless the input is empty and EXPLICIT
padding makes outputs anyway: such a window's maximum is -inf (the dtype's minimum), its
MaxPoolGradGrad value 0.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..compiler.core import ir
from ..compiler.core.ir import Combiner, Node
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import cast
from ..compiler.core.shapes import TensorShape
from . import lower_index as lx
from . import lower_window as lw
from .array_common import runtime_error

POOL_ATTRS = ("ksize", "strides", "padding", "explicit_paddings", "data_format")


@dataclasses.dataclass(frozen=True)
class PoolSpec:
    """A pooling op's attrs, checked (ValueError naming the op otherwise)."""

    op_type: str
    layout: lw.Layout
    ksize: tuple         # per spatial dim
    strides: tuple
    padding: lw.Padding
    pads: tuple          # (before, after) per spatial dim; zeros unless EXPLICIT

    @staticmethod
    def of(op_type: str, attrs, explicit_ok: bool = True) -> PoolSpec:
        """The spec of an op's attrs (an Operation's `attrs` or a kernel's attrs dict)."""
        layout = lw.Layout.of(attrs.get("data_format", "NHWC"), op_type)
        padding = lw.padding_attr(attrs["padding"], op_type, explicit_ok)
        ksize = lw.window_attr(attrs["ksize"], "ksize", layout, op_type)
        strides = lw.window_attr(attrs["strides"], "strides", layout, op_type)
        pads = lw.explicit_pairs(padding, attrs.get("explicit_paddings", []), layout, op_type)
        for k, (before, after) in zip(ksize, pads):
            if before >= k or after >= k:
                raise ValueError(f"{op_type}: explicit padding ({before}, {after}) needs to be "
                                 f"smaller than the window size {k} (ksize {ksize}).")
        return PoolSpec(op_type, layout, tuple(ksize), tuple(strides), padding, tuple(pads))

    @property
    def taps(self) -> int:
        """The number of positions in a window."""
        return int(np.prod(self.ksize))

    def geometry(self, in_sizes) -> list:
        """(out, before, after) per spatial dim for static sizes (None where unknown)."""
        return [lw.output_size(n, k, s, 1, self.padding, p) for n, k, s, p in
                zip(in_sizes, self.ksize, self.strides, self.pads)]

    def output_shape(self, input_shape: TensorShape) -> TensorShape:
        """The static shape of the pooled output of an input of `input_shape`."""
        layout = self.layout
        dims = list(input_shape.dims) if input_shape.ndims is not None else [None] * 4
        geo = self.geometry([dims[a] for a in layout.spatial])
        return TensorShape(layout.shape(dims[layout.batch], [o for o, _, _ in geo],
                                        dims[layout.channel]))


def op_attrs(op) -> dict:
    """The pooling attrs of `op` (to build its gradient ops with the same windows)."""
    return {k: op.attrs[k] for k in POOL_ATTRS if k in op.attrs}


# --- NumPy pieces of the reference kernels -------------------------------------------------


def run_geometry(ctx, spec: PoolSpec, in_sizes) -> list:
    """(out, before, after) per spatial dim of a kernel's array (InvalidArgumentError when
    the window does not fit)."""
    out = []
    for n, k, s, p in zip(in_sizes, spec.ksize, spec.strides, spec.pads):
        size, before, after, problem = lw.runtime_output_size(n, k, s, 1, spec.padding, p)
        if problem is not None:
            raise runtime_error(ctx, f"{spec.op_type}: {problem}")
        out.append((size, before, after))
    return out


def check_shape(ctx, spec: PoolSpec, array: np.ndarray, want, name: str):
    """InvalidArgumentError unless `array` (in the op's layout) has the shape `want`."""
    if list(array.shape) != list(want):
        raise runtime_error(ctx, f"{spec.op_type}: {name} must have shape {list(want)}, got "
                                 f"{list(array.shape)}")


def max_key(x: np.ndarray) -> np.ndarray:
    """What max pooling compares: the values with NaN as -inf."""
    return np.where(np.isnan(x), -np.inf, x) if x.dtype.kind == "f" else x


def lowest(dtype: np.dtype):
    """The value padding takes in a maximum: -inf, or the integer dtype's minimum."""
    return -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


def tap_stack(spec: PoolSpec, x_last: np.ndarray, geo, fill) -> np.ndarray:
    """[N, *out, C, taps]: the input every window reads at each tap (channels-last), `fill`
    in the padding."""
    padded = lw.pad_spatial(x_last, [(b, a) for _, b, a in geo], fill)
    outs = [o for o, _, _ in geo]
    ones = (1,) * len(outs)
    return np.stack([padded[lw.tap_slices(t, outs, spec.strides, ones)]
                     for t in np.ndindex(*spec.ksize)], axis=-1)


def inside_mask(spec: PoolSpec, in_sizes, geo) -> np.ndarray:
    """[1, *out, 1, taps] bool: which taps of each window lie inside the input."""
    return tap_stack(spec, np.ones((1, *in_sizes, 1), bool), geo, False)


def first_max_taps(spec: PoolSpec, x_last: np.ndarray, geo) -> np.ndarray:
    """[N, *out, C]: each window's first tap (row-major) holding its maximum."""
    keys = tap_stack(spec, max_key(x_last), geo, lowest(x_last.dtype))
    inside = inside_mask(spec, x_last.shape[1:-1], geo)
    best = np.max(np.where(inside, keys, lowest(x_last.dtype)), axis=-1, keepdims=True)
    return np.argmax(inside & (keys == best), axis=-1)


def scatter_taps(spec: PoolSpec, parts: np.ndarray, geo, in_sizes) -> np.ndarray:
    """[N, *in, C]: each input position's sum of `parts` ([N, *out, C, taps]: what each
    window gives each of its taps) over the windows reading it."""
    pads = [(b, a) for _, b, a in geo]
    padded = np.zeros((parts.shape[0],) + tuple(n + b + a for n, (b, a) in zip(in_sizes, pads))
                      + (parts.shape[-2],), parts.dtype)
    outs = [o for o, _, _ in geo]
    ones = (1,) * len(outs)
    for j, t in enumerate(np.ndindex(*spec.ksize)):
        padded[lw.tap_slices(t, outs, spec.strides, ones)] += parts[..., j]
    return padded[(slice(None),) + tuple(slice(b, b + n) for n, (b, _) in
                                         zip(in_sizes, pads)) + (slice(None),)]


# --- kernel IR ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PoolGeometry:
    """A pooling op's sizes as int64 Exprs."""

    spec: PoolSpec
    batch: ir.Expr
    in_sizes: tuple
    channels: ir.Expr
    outs: tuple
    befores: tuple

    @staticmethod
    def of(ctx, spec: PoolSpec, input_dims, tensor) -> PoolGeometry:
        """The geometry of pooling an input of `input_dims` (in the op's layout), graph
        tensor `tensor` of that shape: its static sizes become constants (checked at run
        time), so windows and bounds fold while lowering."""
        layout = spec.layout
        input_dims = known_dims(ctx, tensor, input_dims, spec.op_type)
        in_sizes = tuple(input_dims[a] for a in layout.spatial)
        outs, befores = [], []
        for n, k, s, p in zip(in_sizes, spec.ksize, spec.strides, spec.pads):
            out, before = lw.output_size_expr(ctx, n, ir.index(k), s, 1, spec.padding, p,
                                              f"window of {spec.op_type}")
            outs.append(out)
            befores.append(before)
        return PoolGeometry(spec, input_dims[layout.batch], in_sizes,
                            input_dims[layout.channel], tuple(outs), tuple(befores))

    def out_shape(self, tensor) -> tuple:
        """The pooled shape in the op's layout (static sizes of `tensor` preferred)."""
        return lx.out_shape(tensor, self.spec.layout.shape(self.batch, self.outs,
                                                           self.channels))

    def in_shape(self, tensor) -> tuple:
        """The input's shape in the op's layout (static sizes of `tensor` preferred)."""
        return lx.out_shape(tensor, self.spec.layout.shape(self.batch, self.in_sizes,
                                                           self.channels))

    def split(self, axes):
        """(batch, spatial list, channel) of an index in the op's layout."""
        layout = self.spec.layout
        return axes[layout.batch], [axes[a] for a in layout.spatial], axes[layout.channel]

    def load(self, node: Node, batch, spatial, channel) -> ir.Expr:
        """`node` (in the op's layout) at a (batch, spatial positions, channel) index."""
        return ir.load(node, self.spec.layout.index(batch, spatial, channel))

    def window_taps(self, flat_tap):
        """The per-dim taps of row-major tap number `flat_tap`."""
        taps, rest = [], flat_tap
        for k in reversed(self.spec.ksize[1:]):
            taps.append(lx.mod(rest, k))
            rest = lx.floordiv(rest, k)
        return [rest] + taps[::-1]

    def taps(self, outs, taps):
        """(inside condition, clamped input positions) of window taps `taps` at output
        positions `outs`."""
        positions = [lw.input_position(o, t, s, 1, b) for o, t, s, b in
                     zip(outs, taps, self.spec.strides, self.befores)]
        if self.spec.padding is lw.Padding.VALID:   # every tap lies inside the input
            return ir.const(True, "bool"), positions
        cond = lx.all_of(lw.inside(p, n) for p, n in zip(positions, self.in_sizes))
        return cond, [lx.clamp(p, n) for p, n in zip(positions, self.in_sizes)]

    def covering(self, ins, steps):
        """(condition, output positions, taps) of the windows that read input positions
        `ins`: window o = (i + before) // stride - step reads i at tap i + before - o *
        stride, for steps in [0, ceil(k / stride)) while that tap is in the window and o is
        an output position.  `steps` holds None for dims with one step (k <= stride: the
        step is 0, o >= 0 always, and the tap is in the window when k == stride).
        Positions are clamped (meaningful where the condition holds)."""
        conds, outs, taps = [], [], []
        for i, j, k, s, b, o_size in zip(ins, steps, self.spec.ksize, self.spec.strides,
                                         self.befores, self.outs):
            shifted = lx.add(i, b)
            if j is None:
                o, tap = lx.floordiv(shifted, s), lx.mod(shifted, s)
                conds += [lx.lt(o, o_size)] + ([lx.lt(tap, k)] if k < s else [])
            else:
                o = lx.sub(lx.floordiv(shifted, s), j)
                tap = lx.sub(shifted, lx.mul(o, s))
                conds += [lx.ge(o, 0), lx.lt(o, o_size), lx.lt(tap, k)]
            outs.append(lx.clamp(o, o_size))
            taps.append(tap)
        return lx.all_of(conds), outs, taps

    def cover_extents(self) -> tuple:
        """The number of windows along each dim that may read one input position."""
        return tuple(-(-k // s) for k, s in zip(self.spec.ksize, self.spec.strides))

    def flat_tap(self, taps) -> ir.Expr:
        """The row-major tap number of per-dim `taps`."""
        out = taps[0]
        for t, k in zip(taps[1:], self.spec.ksize[1:]):
            out = lx.add(lx.mul(out, k), t)
        return out

    def count(self, outs) -> ir.Expr:
        """The number of taps inside the input of the windows at `outs` (int64)."""
        total = ir.index(1)
        for o, k, s, b, n in zip(outs, self.spec.ksize, self.spec.strides, self.befores,
                                 self.in_sizes):
            if self.spec.padding is lw.Padding.VALID:
                total = lx.mul(total, k)
                continue
            start = lx.sub(lx.mul(o, s), b)
            total = lx.mul(total, lx.sub(lx.minimum(lx.add(start, k), n), lx.maximum(start, 0)))
        return total


def known_dims(ctx, tensor, dims, what: str) -> list:
    """`dims` (Exprs of `tensor`'s shape) with each size the graph knows statically made a
    constant, with a run-time check that the array agrees."""
    static = tensor.shape.dims if tensor.shape.ndims == len(dims) else None
    out = list(dims)
    for k, d in enumerate(out):
        if static is not None and static[k] is not None and not ir.is_const(d):
            ctx.check_equal(d, ir.index(static[k]), f"{what}: dimension {k} must be "
                                                    f"{static[k]}, as the graph says")
            out[k] = ir.index(static[k])
    return out


def body_axes(shape) -> tuple:
    """The loop variables of a node of `shape`, index 0 on statically size-1 dims (a
    REDUCE's loops leave those out: its body must not name their variables)."""
    return tuple(ir.index(0) if ir.is_const(d, 1) else v
                 for v, d in zip(ir.axis_vars(len(shape)), shape))


def max_key_ir(e: ir.Expr) -> ir.Expr:
    """`e` with NaN as -inf (floats), what max pooling compares."""
    if not e.dtype.is_floating:
        return e
    nan = ir.make(S.ISNAN, "bool", (e,))
    return lx.select(nan, ir.const(-np.inf, e.dtype), e)


def max_node(g: PoolGeometry, x: Node, shape) -> Node:
    """[pooled shape]: each window's maximum (NaN as -inf; the dtype's lowest value in the
    padding): a MAX REDUCE over the window taps."""
    n, outs, c = g.split(body_axes(shape))
    taps = tuple(ir.reduce_var(j) for j in range(len(outs)))
    cond, positions = g.taps(outs, taps)
    low = ir.const(lowest(x.dtype.np_dtype), x.dtype)
    body = lx.select(cond, max_key_ir(g.load(x, n, positions, c)), low)
    return ir.reduce(x.dtype, shape, ir.axis_vars(len(shape)), taps,
                     tuple(ir.index(k) for k in g.spec.ksize), body, Combiner.MAX)


def first_max_node(g: PoolGeometry, x: Node, shape) -> Node:
    """int64 [pooled shape]: each window's first tap (row-major) holding its maximum (an
    ARGMAX over the flattened taps; padding is NaN there, which ARGMAX skips)."""
    axes = body_axes(shape)
    n, outs, c = g.split(axes)
    tap = ir.reduce_var(0)
    cond, positions = g.taps(outs, g.window_taps(tap))
    key = max_key_ir(g.load(x, n, positions, c))
    body = lx.select(cond, key, ir.const(np.nan, x.dtype))
    return ir.reduce(ir.INDEX, shape, ir.axis_vars(len(shape)), (tap,),
                     (ir.index(g.spec.taps),), body, Combiner.ARGMAX)


def value(e: ir.Expr, dtype) -> ir.Expr:
    """`e` converted to `dtype` (itself when already of it)."""
    return cast(e, dtype)
