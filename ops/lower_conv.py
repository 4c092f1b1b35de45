"""Convolution attrs and kernel-IR builders shared by conv_ops.py (Conv2D,
DepthwiseConv2dNative) and conv_grad_ops.py (their backprop ops).

`ConvSpec` is an op's attrs (strides, dilations, padding, explicit_paddings, data_format)
checked once, with the window geometry of lower_window.py.  The IR builders work in the
channels-last order (batch, spatial..., channels) whatever the op's data_format: loads of
an NCHW tensor go through `ConvGeometry.load`, and results are put back in the op's layout
by `to_layout`.

The lowerings (docs/architecture.md, "A new op"; measured per shape in
benchmarks/conv_step.py):
- Conv2D is im2col + one matrix product: the *patches* node (N, OH, OW, KH, KW, C) holds
  every window's inputs (zero where the window reads padding: a SELECT on the bounds),
  viewed as a (N*OH*OW, KH*KW*C) matrix times the filter viewed as (KH*KW*C, OC); a 1x1
  window with stride 1 and no padding reads the input itself as the matrix.  Its bias and
  relu become the GEMM's epilogue (compiler/flat_epilogues.py);
- Conv2DBackpropFilter is dy^T @ patches, (OC, KH*KW*C), transposed to the filter's
  layout (the same patches node: interned, so a training step computes it once for the
  forward and the filter gradient; this operand order measured 1.5x faster than
  patches^T @ dy, whose 64-column result fills the GEMM's 48-wide panels badly);
- Conv2DBackpropInput with unit strides is a forward convolution of dy: the windows of dy
  each input position gathers (N*H*W, KH*KW*OC) times the filter with its channel axes
  swapped; with larger strides (whose gathered windows would be mostly zeros) it is
  dy @ W^T, a (N*OH*OW, KH*KW*C) matrix of window gradients, summed back onto the input
  (*col2im*: a REDUCE over the taps of the outputs that read each input position, with
  the stride-divisibility and bounds conditions of `lower_window.source_output`).  The
  gather compiles to one loop nest like im2col's (a col2im summing 25 taps in one
  expression took 31 s of numba compile; the REDUCE 8 s; the gather 3 s);
- the depthwise ops are REDUCEs over the taps (forward, input gradient) or over the batch
  and output positions (filter gradient): each output channel reads one input channel, so
  there is no inner product for a GEMM to take.
float16 is computed in float32 and rounded once, as the reference kernels do.
"""

from __future__ import annotations

import dataclasses

from ..compiler.core import ir
from ..compiler.core.ir import Combiner, Node
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable, cast
from . import lower_index as lx
from . import lower_window as lw
from .lower_reduce import cast_node, compute_dtype

CONV_ATTRS = ("strides", "use_cudnn_on_gpu", "padding", "explicit_paddings", "data_format",
              "dilations")


@dataclasses.dataclass(frozen=True)
class ConvSpec:
    """A convolution op's attrs, checked (ValueError naming the op otherwise)."""

    op_type: str
    layout: lw.Layout
    strides: tuple
    dilations: tuple
    padding: lw.Padding
    pads: tuple          # (before, after) per spatial dim; zeros unless EXPLICIT

    @staticmethod
    def of(op_type: str, attrs) -> ConvSpec:
        """The spec of an op's attrs (an Operation's `attrs` or a kernel's attrs dict)."""
        layout = lw.Layout.of(attrs.get("data_format", "NHWC"), op_type)
        padding = lw.padding_attr(attrs["padding"], op_type)
        strides = lw.window_attr(attrs["strides"], "strides", layout, op_type)
        dilations = lw.window_attr(attrs.get("dilations", [1] * layout.rank), "dilations",
                                   layout, op_type)
        pads = lw.explicit_pairs(padding, attrs.get("explicit_paddings", []), layout, op_type)
        return ConvSpec(op_type, layout, tuple(strides), tuple(dilations), padding,
                        tuple(pads))

    def geometry(self, in_sizes, windows) -> list:
        """(out, before, after) per spatial dim for static sizes (None where unknown)."""
        return [lw.output_size(n, k, s, d, self.padding, p) for n, k, s, d, p in
                zip(in_sizes, windows, self.strides, self.dilations, self.pads)]


def op_attrs(op) -> dict:
    """The convolution attrs of `op` (to build its gradient ops with the same geometry)."""
    return {k: op.attrs[k] for k in CONV_ATTRS if k in op.attrs}


# --- geometry in kernel IR ---------------------------------------------------------------------


def known_dims(ctx, tensor, node: Node, what: str) -> list:
    """`node`'s sizes, each one the graph knows statically made a constant (with a run-time
    check that the array agrees): constant window sizes make constant loop bounds."""
    static = tensor.shape.dims if tensor.shape.ndims == len(node.shape) else None
    dims = list(node.shape)
    for k, d in enumerate(dims):
        if static is not None and static[k] is not None and not ir.is_const(d):
            ctx.check_equal(d, ir.index(static[k]), f"{what}: dimension {k} must be "
                                                    f"{static[k]}, as the graph says")
            dims[k] = ir.index(static[k])
    return dims


@dataclasses.dataclass(frozen=True)
class ConvGeometry:
    """A convolution's sizes as int64 Exprs (channels-last order)."""

    spec: ConvSpec
    batch: ir.Expr
    in_sizes: tuple
    channels: ir.Expr
    windows: tuple
    outs: tuple
    befores: tuple

    @staticmethod
    def of(ctx, spec: ConvSpec, input_dims, window_dims) -> ConvGeometry:
        """The geometry for an input of `input_dims` (in the op's layout) and a window of
        `window_dims` (one per spatial dim)."""
        layout = spec.layout
        in_sizes = tuple(input_dims[a] for a in layout.spatial)
        outs, befores = [], []
        for n, k, s, d, p in zip(in_sizes, window_dims, spec.strides, spec.dilations,
                                 spec.pads):
            out, before = lw.output_size_expr(ctx, n, k, s, d, spec.padding, p,
                                              f"filter of {spec.op_type}")
            outs.append(out)
            befores.append(before)
        return ConvGeometry(spec, input_dims[layout.batch], in_sizes,
                            input_dims[layout.channel], tuple(window_dims), tuple(outs),
                            tuple(befores))

    @property
    def rows(self) -> ir.Expr:
        """N * OH * OW: the rows of the im2col matrix."""
        return lx.product((self.batch,) + self.outs)

    def load(self, node: Node, batch, spatial, channel) -> ir.Expr:
        """`node` (a tensor in the op's layout) at a channels-last index."""
        return ir.load(node, self.spec.layout.index(batch, spatial, channel))

    def out_shape(self, channels) -> tuple:
        return (self.batch,) + self.outs + (channels,)

    def trivial_window(self) -> bool:
        """A 1x1 window read at every position (stride 1, no padding): the im2col matrix
        is the input itself."""
        return all(ir.is_const(k, 1) for k in self.windows) and \
            all(s == 1 for s in self.spec.strides) and \
            all(ir.is_const(b, 0) for b in self.befores)

    def taps(self, out_axes, tap_axes):
        """(inside condition, clamped input positions) of window taps `tap_axes` at output
        positions `out_axes`."""
        spec = self.spec
        positions = [lw.input_position(o, k, s, d, b) for o, k, s, d, b in
                     zip(out_axes, tap_axes, spec.strides, spec.dilations, self.befores)]
        if spec.padding is lw.Padding.VALID:   # every tap lies inside the input
            return ir.const(True, "bool"), positions
        cond = lx.all_of(lw.inside(p, n) for p, n in zip(positions, self.in_sizes))
        return cond, [lx.clamp(p, n) for p, n in zip(positions, self.in_sizes)]


def to_layout(node: Node, layout: lw.Layout) -> Node:
    """A channels-last node in `layout` (a transposing copy for channels-first)."""
    if layout.channels_last:
        return node
    rank = len(node.shape)
    shape = (node.shape[0], node.shape[-1]) + tuple(node.shape[1:-1])
    axes = ir.axis_vars(rank)
    return ir.compute(node.dtype, shape, axes,
                      ir.load(node, (axes[0],) + tuple(axes[2:]) + (axes[1],)))


def channels_last(g: ConvGeometry, node: Node) -> Node:
    """A tensor in the op's layout as a channels-last node (itself for channels-last)."""
    if g.spec.layout.channels_last:
        return node
    rank = len(node.shape)
    shape = (node.shape[0],) + tuple(node.shape[2:]) + (node.shape[1],)
    axes = ir.axis_vars(rank)
    return ir.compute(node.dtype, shape, axes,
                      ir.load(node, (axes[0], axes[-1]) + tuple(axes[1:-1])))


def zero(dtype) -> ir.Expr:
    return ir.const(0, dtype)


def value(e: ir.Expr, dtype) -> ir.Expr:
    return cast(e, dtype)


# --- im2col, col2im ----------------------------------------------------------------------------


def patches(g: ConvGeometry, x: Node, dtype) -> Node:
    """(N, OH, OW, KH, KW, C): the input each output position reads at each window tap, 0
    in the padding."""
    r = len(g.outs)
    shape = (g.batch,) + g.outs + g.windows + (g.channels,)
    axes = ir.axis_vars(len(shape))
    n, outs, taps, c = axes[0], axes[1:1 + r], axes[1 + r:1 + 2 * r], axes[-1]
    cond, positions = g.taps(outs, taps)
    body = lx.select(cond, value(g.load(x, n, positions, c), dtype), zero(dtype))
    return ir.compute(dtype, shape, axes, body)


def im2col(g: ConvGeometry, x: Node, dtype) -> Node:
    """The (N*OH*OW, KH*KW*C) matrix of window inputs (the input itself for a trivial
    window in channels-last layout)."""
    depth = lx.product(g.windows + (g.channels,))
    if g.trivial_window() and g.spec.layout.channels_last:
        return ir.reshape(cast_node(x, dtype), (g.rows, depth))
    return ir.reshape(patches(g, x, dtype), (g.rows, depth))




def col2im(g: ConvGeometry, cols: Node) -> Node:
    """(N, H, W, C): each input position's sum of the window gradients `cols` (shaped
    (N, OH, OW, KH, KW, C)) of the outputs that read it, a REDUCE over the taps."""
    r = len(g.outs)
    shape = (g.batch,) + g.in_sizes + (g.channels,)
    axes, taps = ir.axis_vars(len(shape)), [ir.reduce_var(j) for j in range(r)]
    n, ins, c = axes[0], axes[1:1 + r], axes[-1]
    found = [lw.source_output(i, k, s, d, b, o) for i, k, s, d, b, o in
             zip(ins, taps, g.spec.strides, g.spec.dilations, g.befores, g.outs)]
    index = (n,) + tuple(f[1] for f in found) + tuple(taps) + (c,)
    body = lx.select(lx.all_of(f[0] for f in found), ir.load(cols, index), zero(cols.dtype))
    return ir.reduce(cols.dtype, shape, axes, taps, g.windows, body, Combiner.ADD)


# --- the convolutions ---------------------------------------------------------------------------


def conv_forward(g: ConvGeometry, x: Node, w: Node, out_channels) -> Node:
    """Conv2D as im2col @ the filter matrix: (N, OH, OW, OC), channels-last, in the
    compute dtype."""
    dtype = compute_dtype(x.dtype)
    cols = im2col(g, x, dtype)
    depth = cols.shape[1]
    filt = ir.reshape(cast_node(w, dtype), (depth, out_channels))
    product = ir.matmul(cols, filt, False, False, (g.rows, out_channels))
    return ir.reshape(product, g.out_shape(out_channels))


def conv_filter_grad(g: ConvGeometry, x: Node, dy: Node, out_channels) -> Node:
    """Conv2DBackpropFilter: dy^T @ im2col(x), an (OC, KH*KW*C) product (measured faster
    than im2col(x)^T @ dy: the GEMM packs the long transposed operand element by element),
    transposed to (KH, KW, C, OC)."""
    dtype = compute_dtype(x.dtype)
    cols = im2col(g, x, dtype)
    rows = ir.reshape(cast_node(channels_last(g, dy), dtype), (g.rows, out_channels))
    product = ir.matmul(rows, cols, True, False, (out_channels, cols.shape[1]))
    view = ir.reshape(product, (out_channels,) + g.windows + (g.channels,))
    shape = g.windows + (g.channels, out_channels)
    axes = ir.axis_vars(len(shape))
    return ir.compute(dtype, shape, axes, ir.load(view, (axes[-1],) + tuple(axes[:-1])))


def conv_input_grad(g: ConvGeometry, w: Node, dy: Node, out_channels) -> Node:
    """Conv2DBackpropInput as (N, H, W, C) channels-last.  With unit strides, a forward
    convolution of dy: the windows of dy each input position gathers (dy[n, i + before -
    k * d, oc] at tap k, 0 outside dy) times the filter with its channel axes swapped, one
    GEMM; with larger strides, dy @ W^T (window gradients) summed back by col2im (the
    windows of dy would be mostly zeros).  The gather compiles to one loop nest like the
    forward's im2col, where col2im's reduction over the taps compiled several times
    slower."""
    dtype = compute_dtype(w.dtype)
    if all(s == 1 for s in g.spec.strides) and not g.trivial_window():
        return _gathered_input_grad(g, w, channels_last(g, dy), out_channels, dtype)
    depth = lx.product(g.windows + (g.channels,))
    rows = ir.reshape(cast_node(channels_last(g, dy), dtype), (g.rows, out_channels))
    filt = ir.reshape(cast_node(w, dtype), (depth, out_channels))
    product = ir.matmul(rows, filt, False, True, (g.rows, depth))
    if g.trivial_window():
        return ir.reshape(product, g.out_shape(g.channels))
    cols = ir.reshape(product, (g.batch,) + g.outs + g.windows + (g.channels,))
    return col2im(g, cols)


def _gathered_input_grad(g: ConvGeometry, w: Node, dy: Node, out_channels, dtype) -> Node:
    """dx = windows of dy (N*H*W, KH*KW*OC) @ the filter as (KH*KW*OC, C), unit strides."""
    r = len(g.outs)
    shape = (g.batch,) + g.in_sizes + g.windows + (out_channels,)
    axes = ir.axis_vars(len(shape))
    n, ins, taps, oc = axes[0], axes[1:1 + r], axes[1 + r:1 + 2 * r], axes[-1]
    positions = [lx.sub(lx.add(i, b), lx.mul(k, d)) for i, k, b, d in
                 zip(ins, taps, g.befores, g.spec.dilations)]
    cond = lx.all_of(lw.inside(p, o) for p, o in zip(positions, g.outs))
    index = (n,) + tuple(lx.clamp(p, o) for p, o in zip(positions, g.outs)) + (oc,)
    body = lx.select(cond, value(ir.load(dy, index), dtype), zero(dtype))
    windows = ir.compute(dtype, shape, axes, body)
    rows = lx.product((g.batch,) + g.in_sizes)
    depth = lx.product(g.windows + (out_channels,))
    faxes = ir.axis_vars(r + 2)     # the filter as (KH, KW, OC, C)
    swapped = ir.compute(dtype, g.windows + (out_channels, g.channels), faxes, value(
        ir.load(w, tuple(faxes[:r]) + (faxes[-1], faxes[-2])), dtype))
    product = ir.matmul(ir.reshape(windows, (rows, depth)),
                        ir.reshape(swapped, (depth, g.channels)), False, False,
                        (rows, g.channels))
    return ir.reshape(product, (g.batch,) + g.in_sizes + (g.channels,))


# --- depthwise ----------------------------------------------------------------------------------


def depthwise_forward(g: ConvGeometry, x: Node, w: Node, multiplier) -> Node:
    """out[n, o, c * M + m] = sum over taps k of x[n, o * s + k * d - before, c] *
    w[k, c, m]: (N, OH, OW, C * M) channels-last."""
    dtype = compute_dtype(x.dtype)
    r = len(g.outs)
    shape = g.out_shape(lx.mul(g.channels, multiplier))
    axes, taps = ir.axis_vars(len(shape)), [ir.reduce_var(j) for j in range(r)]
    n, outs, j = axes[0], axes[1:1 + r], axes[-1]
    c, m = _split_channel(j, multiplier)
    cond, positions = g.taps(outs, taps)
    product = ir.make(S.MUL, dtype, (value(g.load(x, n, positions, c), dtype),
                                     value(ir.load(w, tuple(taps) + (c, m)), dtype)))
    body = lx.select(cond, product, zero(dtype))
    return ir.reduce(dtype, shape, axes, taps, g.windows, body, Combiner.ADD)


def depthwise_input_grad(g: ConvGeometry, w: Node, dy: Node, multiplier) -> Node:
    """dx[n, i, c] = sum over taps k and m of dy[n, o, c * M + m] * w[k, c, m] for the
    outputs o that read input i at tap k: (N, H, W, C) channels-last."""
    dtype = compute_dtype(w.dtype)
    r = len(g.outs)
    shape = (g.batch,) + g.in_sizes + (g.channels,)
    axes = ir.axis_vars(len(shape))
    rvars = [ir.reduce_var(j) for j in range(r + 1)]
    taps, m = rvars[:r], rvars[r]
    n, ins, c = axes[0], axes[1:1 + r], axes[-1]
    found = [lw.source_output(i, k, s, d, b, o) for i, k, s, d, b, o in
             zip(ins, taps, g.spec.strides, g.spec.dilations, g.befores, g.outs)]
    cond = lx.all_of(f[0] for f in found)
    channel = lx.add(lx.mul(c, multiplier), m)
    product = ir.make(S.MUL, dtype, (value(g.load(dy, n, [f[1] for f in found], channel),
                                           dtype),
                                     value(ir.load(w, tuple(taps) + (c, m)), dtype)))
    body = lx.select(cond, product, zero(dtype))
    return ir.reduce(dtype, shape, axes, rvars, g.windows + (multiplier,), body,
                     Combiner.ADD)


def depthwise_filter_grad(g: ConvGeometry, x: Node, dy: Node, multiplier) -> Node:
    """dw[k, c, m] = sum over n and output positions o of x[n, o * s + k * d - before, c]
    * dy[n, o, c * M + m]: (KH, KW, C, M)."""
    dtype = compute_dtype(x.dtype)
    r = len(g.outs)
    shape = g.windows + (g.channels, multiplier)
    axes = ir.axis_vars(len(shape))
    rvars = [ir.reduce_var(j) for j in range(r + 1)]
    n, outs = rvars[0], rvars[1:]
    taps, c, m = axes[:r], axes[r], axes[r + 1]
    cond, positions = g.taps(outs, taps)
    channel = lx.add(lx.mul(c, multiplier), m)
    product = ir.make(S.MUL, dtype, (value(g.load(x, n, positions, c), dtype),
                                     value(g.load(dy, n, outs, channel), dtype)))
    body = lx.select(cond, product, zero(dtype))
    return ir.reduce(dtype, shape, axes, rvars, (g.batch,) + g.outs, body, Combiner.ADD)


def _split_channel(j, multiplier):
    """(input channel, multiplier index) of depthwise output channel j."""
    if ir.is_const(multiplier, 1):
        return j, ir.index(0)
    return lx.floordiv(j, multiplier), lx.mod(j, multiplier)


def require_float(op):
    """NotLowerable unless the op computes on float32/float64 (float16 through float32)."""
    dtype = op.outputs[0].dtype
    if not dtype.is_floating:
        raise NotLowerable(f"{op.type} on {dtype.name} is not compiled")


def finish(node: Node, dtype, layout: lw.Layout) -> Node:
    """A channels-last result in the op's dtype and layout."""
    return to_layout(cast_node(node, dtype), layout)
