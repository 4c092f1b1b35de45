"""TensorFlow 1.x functions that are compositions of existing ops (no op types of their own).

Owns: `atan`, `div_no_nan`, `norm`, `reduce_euclidean_norm`, `global_norm`, `clip_by_norm`,
`clip_by_global_norm`, `clip_by_average_norm`, `cumsum`, and for `tf.nn`: `l2_normalize`,
`moments`, `dropout`.
Each builds the graph TensorFlow's own Python function builds, so values, dtypes, shapes
and gradients follow from the ops used (see each docstring for the formula).
"""

from __future__ import annotations

import math

import numpy as np

from ..compiler.core.graph import Tensor
from . import math_ops as mo
from .array_ops import reshape, transpose
from .builder import graph_for, to_tensor
from .fill_ops import ones_like, zeros_like
from .fill_ops import range as range_
from .gather_ops import gather
from .indexed_slices import IndexedSlices
from .join_ops import concat
from .math_compare import greater, greater_equal, less, less_equal
from .matmul_ops import matmul
from .pad_ops import pad
from .random_ops import random_uniform
from .reduction_ops import reduce_max, reduce_mean, reduce_sum
from .shape_ops import shape as shape_of
from .shape_ops import size as size_of
from .slicing_ops import slice as slice_


def atan(x, name=None) -> Tensor:
    """arctan(x) elementwise (as atan2(x, 1))."""
    x = to_tensor(x)
    with x.graph.name_scope(name or "Atan"):
        return mo.atan2(x, ones_like(x))


def div_no_nan(x, y, name=None) -> Tensor:
    """x / y, and 0 wherever y == 0 (even for x == 0 or x infinite)."""
    graph = graph_for((x, y))
    with graph.name_scope(name or "div_no_nan"):
        x, y = to_tensor(x), to_tensor(y, dtype=to_tensor(x).dtype)
        zero = mo.equal(y, zeros_like(y))
        safe = mo.where_v2(zero, ones_like(y), y)
        quotient = mo.truediv(x, safe)
        return mo.where_v2(zero, zeros_like(quotient), quotient)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """sqrt(sum(x**2)) over `axis`."""
    x = to_tensor(input_tensor)
    with x.graph.name_scope(name or "euclidean_norm"):
        return mo.sqrt(reduce_sum(mo.square(x), axis=axis, keepdims=keepdims))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None) -> Tensor:
    """Vector norms (ord 'euclidean'/2, 1, np.inf, or any p > 0) over `axis` (None: the
    whole tensor as one vector), and the Frobenius norm ('fro'/'euclidean' over 2 axes)."""
    x = to_tensor(tensor)
    keep = bool(keepdims)
    with x.graph.name_scope(name or "norm"):
        if ord in ("euclidean", "fro", 2, 2.0) and (ord != 2 or not _two_axes(axis)):
            return mo.sqrt(reduce_sum(mo.square(x), axis=axis, keepdims=keep))
        if _two_axes(axis):
            raise ValueError(f"norm: ord={ord!r} over two axes (a matrix norm) is not "
                             "supported; use 'fro' or 'euclidean'.")
        if ord == 1:
            return reduce_sum(mo.abs(x), axis=axis, keepdims=keep)
        if ord in (np.inf, math.inf):
            return reduce_max(mo.abs(x), axis=axis, keepdims=keep)
        if isinstance(ord, (int, float)) and ord > 0:
            p = mo.cast(ord, x.dtype)
            return mo.pow(reduce_sum(mo.pow(mo.abs(x), p), axis=axis, keepdims=keep),
                          mo.truediv(mo.cast(1.0, x.dtype), p))
        raise ValueError(f"norm: 'ord' must be 'euclidean', 'fro', 1, 2, np.inf or a positive "
                         f"number, got {ord!r}.")


def _two_axes(axis) -> bool:
    return isinstance(axis, (list, tuple)) and len(axis) == 2


def _values(t) -> Tensor:
    """The tensor itself, or an IndexedSlices' values (TensorFlow's clipping reads those)."""
    return t.values if isinstance(t, IndexedSlices) else to_tensor(t)


def _like(t, values):
    """`values` in the form of `t`: an IndexedSlices with t's indices, or the tensor."""
    return IndexedSlices(values, t.indices, t.dense_shape) if isinstance(t, IndexedSlices) \
        else values


def global_norm(t_list, name=None) -> Tensor:
    """sqrt(sum of squares of every element of every tensor in `t_list`; None skipped; an
    IndexedSlices counts its values, as in TensorFlow)."""
    tensors = [_values(t) for t in t_list if t is not None]
    if not tensors:
        raise ValueError("global_norm: t_list holds no tensor.")
    with tensors[0].graph.name_scope(name or "global_norm"):
        squares = [reduce_sum(mo.square(t)) for t in tensors]
        return mo.sqrt(mo.add_n(squares) if len(squares) > 1 else squares[0])


def clip_by_norm(t, clip_norm, axes=None, name=None) -> Tensor:
    """t * clip_norm / max(l2norm(t, axes), clip_norm): unchanged when its norm is small (an
    IndexedSlices: its values clipped by their norm, as in TensorFlow)."""
    values = _values(t)
    with values.graph.name_scope(name or "clip_by_norm"):
        clip = mo.cast(clip_norm, values.dtype)
        l2 = mo.sqrt(reduce_sum(mo.square(values), axis=axes, keepdims=True))
        return _like(t, mo.truediv(mo.multiply(values, clip), mo.maximum(l2, clip)))


def clip_by_average_norm(t, clip_norm, name=None) -> Tensor:
    """t * clip_norm / max(l2norm(t) / size(t), clip_norm): t scaled so that its L2 norm
    divided by its number of elements is at most clip_norm (TensorFlow 1.x)."""
    t = to_tensor(t)
    with t.graph.name_scope(name or "clip_by_average_norm"):
        clip = mo.cast(clip_norm, t.dtype)
        count = mo.cast(size_of(t), t.dtype)
        inverse = mo.rsqrt(reduce_sum(mo.square(t)))
        return mo.multiply(mo.multiply(t, clip), mo.minimum(mo.multiply(inverse, count),
                                                            mo.reciprocal(clip)))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(clipped list, global norm): every tensor scaled by clip_norm / max(global_norm,
    clip_norm); None entries stay None, IndexedSlices stay IndexedSlices (values scaled)."""
    t_list = list(t_list)
    present = [t for t in t_list if t is not None]
    with _values(present[0]).graph.name_scope(name or "clip_by_global_norm"):
        total = global_norm(present) if use_norm is None else to_tensor(use_norm)
        clip = mo.cast(clip_norm, total.dtype)
        scale = mo.truediv(clip, mo.maximum(total, clip))
        clipped = [None if t is None else _like(t, mo.multiply(_values(t), mo.cast(
            scale, _values(t).dtype))) for t in t_list]
        return clipped, total


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Running sums along `axis`: prefix sums by log2(n) shifted adds when its length is
    static, else a matmul with a triangular 0/1 mask (`_cumsum_by_mask`)."""
    x = to_tensor(x)
    with x.graph.name_scope(name or "Cumsum"):
        rank = x.shape.ndims
        ax = int(axis) % rank
        n = x.shape.as_list()[ax]
        if n is None:
            return _cumsum_by_mask(x, ax, exclusive, reverse)
        t = x
        if reverse:
            t = gather(t, list(range(n - 1, -1, -1)), axis=ax)
        step = 1
        while step < n:
            begin = [0] * rank
            size = [-1] * rank
            size[ax] = n - step
            head = slice_(t, begin, size)
            pads = [[0, 0]] * rank
            pads[ax] = [step, 0]
            t = mo.add(t, pad(head, pads))
            step *= 2
        if exclusive:
            t = mo.subtract(t, x if not reverse else gather(x, list(range(n - 1, -1, -1)),
                                                             axis=ax))
        if reverse:
            t = gather(t, list(range(n - 1, -1, -1)), axis=ax)
        return t


def _cumsum_by_mask(x, ax: int, exclusive: bool, reverse: bool) -> Tensor:
    """cumsum along an axis whose length is only known at run time: x (that axis moved
    last) times the 0/1 matrix M[i, j] = (i <= j), or i < j, i >= j, i > j for the
    exclusive and reversed sums. O(n**2) work, but a matmul, with its gradient."""
    rank = x.shape.ndims
    perm = [d for d in builtins_range(rank) if d != ax] + [ax]
    moved = transpose(x, perm) if perm != list(builtins_range(rank)) else x
    n = shape_of(x)[ax]
    i = reshape(range_(n), [-1, 1])
    j = reshape(range_(n), [1, -1])
    compare = {(False, False): less_equal, (True, False): less,
               (False, True): greater_equal, (True, True): greater}[(exclusive, reverse)]
    mask = mo.cast(compare(i, j), x.dtype)
    flat = reshape(moved, [-1, n])
    summed = reshape(matmul(flat, mask), shape_of(moved))
    if perm == list(builtins_range(rank)):
        return summed
    inverse = [perm.index(d) for d in builtins_range(rank)]
    return transpose(summed, inverse)


builtins_range = range


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None) -> Tensor:
    """x / sqrt(max(sum(x**2, axis), epsilon))."""
    axis = dim if axis is None else axis
    x = to_tensor(x)
    with x.graph.name_scope(name or "l2_normalize"):
        square_sum = reduce_sum(mo.square(x), axis=axis, keepdims=True)
        return mo.multiply(x, mo.rsqrt(mo.maximum(square_sum, mo.cast(epsilon, x.dtype))))


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of `x` over `axes` (variance with the mean subtracted first)."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = to_tensor(x)
    with x.graph.name_scope(name or "moments"):
        mean = reduce_mean(x, axis=axes, keepdims=True)
        variance = reduce_mean(mo.square(mo.subtract(x, mean)), axis=axes, keepdims=True)
        if not keep:
            mean = reshape(mean, _kept_shape(x, axes))
            variance = reshape(variance, _kept_shape(x, axes))
        return mean, variance


def _kept_shape(x, axes):
    axes = {int(a) % x.shape.ndims for a in (axes if isinstance(axes, (list, tuple)) else [axes])}
    dims = shape_of(x)
    kept = [gather(dims, [k]) for k in range(x.shape.ndims) if k not in axes]
    return concat(kept, 0) if kept else []


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """x / keep_prob where a uniform draw is below keep_prob, else 0 (TF1's nn.dropout;
    `rate` = 1 - keep_prob as in TF2's signature)."""
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout: give exactly one of keep_prob and rate.")
    x = to_tensor(x)
    with x.graph.name_scope(name or "dropout"):
        keep = mo.cast(keep_prob if keep_prob is not None else 1.0 - rate, x.dtype)
        draw_shape = noise_shape if noise_shape is not None else shape_of(x)
        draw = random_uniform(draw_shape, dtype=x.dtype, seed=seed)
        kept = mo.less(draw, keep)
        return mo.where_v2(kept, mo.truediv(x, keep), zeros_like(x))
