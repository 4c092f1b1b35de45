"""Building blocks op lowerings use to express themselves in kernel IR.

Owns broadcasting (`broadcast_shape`, `load_broadcast`), elementwise nodes (`elementwise`,
`map_nodes`), reductions (`reduce_axes`), index remapping (`remap`, used by transpose,
slicing, padding...), scalar helpers (`call`, `cast`, `scalar_const`), and `NotLowerable`,
the exception a lowering raises for a form it cannot compile.  Lowerings in `ops/` compose
these; they never emit code.
"""

from __future__ import annotations

from . import ir
from .ir import Combiner, Expr, Node, Scalar
from .unit_dims import is_unit


class NotLowerable(Exception):
    """An op that cannot be compiled (no lowering, or an unsupported form); says why.

    Raised by op lowerings (ops/) and the lowering driver (compiler/lowering.py); the
    clustering step keeps such ops with the executor."""


def call(op: Scalar, dtype, *args: Expr) -> Expr:
    """A scalar operation node."""
    return ir.make(op, dtype, args)


def cast(e: Expr, dtype) -> Expr:
    from ... import dtypes as _dtypes

    dtype = _dtypes.as_dtype(dtype)
    return e if e.dtype is dtype else ir.make(Scalar.CAST, dtype, (e,))


def scalar_const(value, dtype) -> Expr:
    return ir.const(value, dtype)


def broadcast_shape(ctx, shapes, what: str = "broadcast"):
    """The NumPy broadcast of several IR shapes; records runtime checks for unknown sizes.

    A size that is 1 whenever it can be (`unit_dims.is_unit`: `x[:, :1]` of a runtime
    size) broadcasts like a constant 1, with a runtime check that it is 1 or equal to the
    size it meets (it is 0 when the sliced size is)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = [s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0]
        message = f"Incompatible shapes for {what}: dimension {k - rank} differs between operands"
        chosen, units = None, []
        for d in dims:
            if ir.is_const(d, 1):
                continue
            if is_unit(d):
                units.append(d)
            elif chosen is None:
                chosen = d
            elif d is not chosen:
                ctx.check_equal(chosen, d, message)
        if chosen is None and units:
            chosen = units[0]
        for u in units:
            if u is not chosen:
                ctx.check(ir.make(Scalar.OR, "bool", (
                    ir.make(Scalar.EQ, "bool", (u, ir.index(1))),
                    ir.make(Scalar.EQ, "bool", (u, chosen)))), message)
        out.append(chosen if chosen is not None else ir.index(1))
    return tuple(out)


def load_broadcast(node: Node, out_axes) -> Expr:
    """Load `node` at the output index `out_axes` under right-aligned broadcasting (a size
    that is 1 whenever it can be is read at index 0, see broadcast_shape)."""
    rank = len(out_axes)
    offset = rank - len(node.shape)
    idx = [ir.index(0) if is_unit(d) else out_axes[offset + k]
           for k, d in enumerate(node.shape)]
    return ir.load(node, idx)


def map_nodes(ctx, fn, inputs, dtype, what: str = "elementwise op") -> Node:
    """out = fn(*loads) elementwise over the broadcast of `inputs` (Nodes)."""
    shape = broadcast_shape(ctx, [n.shape for n in inputs], what)
    axes = ir.axis_vars(len(shape))
    body = fn(*[load_broadcast(n, axes) for n in inputs])
    return ir.compute(dtype, shape, axes, body)


def elementwise(ctx, op: Scalar, inputs, dtype, what: str = "elementwise op") -> Node:
    """out = op(*inputs) with broadcasting."""
    return map_nodes(ctx, lambda *xs: ir.make(op, dtype, xs), inputs, dtype, what)


def remap(node: Node, shape, index_fn, dtype=None) -> Node:
    """out[i] = node[index_fn(i)] for i over `shape` (transpose, slice, tile, ...)."""
    axes = ir.axis_vars(len(shape))
    return ir.compute(dtype or node.dtype, shape, axes, ir.load(node, index_fn(axes)))


_IDENTITY = {Combiner.ADD: 0, Combiner.MUL: 1, Combiner.AND: True, Combiner.OR: False}


def reduce_axes(node: Node, axes, keepdims: bool, combiner: Combiner, dtype=None,
                body_fn=None) -> Node:
    """Reduce `node` over `axes` (non-negative ints), optionally transforming each element
    with body_fn(load) first (fused into the reduction)."""
    axes = sorted(set(axes))
    rank = len(node.shape)
    out_dims = [k for k in range(rank) if k not in axes]
    out_shape = [ir.index(1) if k in axes else node.shape[k] for k in range(rank)] \
        if keepdims else [node.shape[k] for k in out_dims]
    avars = ir.axis_vars(len(out_shape))
    rvars = [ir.reduce_var(j) for j in range(len(axes))]
    idx = []
    for k in range(rank):
        if k in axes:
            idx.append(rvars[axes.index(k)])
        else:
            pos = k if keepdims else out_dims.index(k)
            # a size-1 output dim reads index 0: the schedule drops trailing size-1 dims
            # from a reduction's loops, so its loop variable must not appear in the body
            idx.append(ir.index(0) if ir.is_const(node.shape[k], 1) else avars[pos])
    body = ir.load(node, idx)
    if body_fn is not None:
        body = body_fn(body)
    out_dtype = dtype or (body.dtype if combiner not in (Combiner.ARGMAX, Combiner.ARGMIN)
                          else None)
    return ir.reduce(out_dtype, out_shape, avars, rvars, [node.shape[k] for k in axes], body,
                     combiner)


def identity_value(combiner: Combiner, dtype):
    """The value a reduction over nothing produces (-inf for max of floats, ...)."""
    if combiner in _IDENTITY:
        return _IDENTITY[combiner]
    import numpy as np

    if combiner is Combiner.MAX:
        return -np.inf if dtype.is_floating else dtype.min
    if combiner is Combiner.MIN:
        return np.inf if dtype.is_floating else dtype.max
    return 0
