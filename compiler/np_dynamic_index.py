"""Basic indexing of traced arrays with TRACED scalar indices and slice bounds.

Inside a loop converted to a graph loop (compiler/autograph.py, docs/architecture.md
"Python control flow in @jit") the loop index is a traced int64 scalar, so `a[i, i]`,
`x[i] = v`, `a[k+1:, k] /= a[k, k]` and `a[k+1:, k+1:] -= np.outer(...)` index with traced
values. NumPy reads such keys as BASIC indexing (a view), so this module keeps them views:

- Reading `arr[key]` is one StridedSlice whose begin/end are Packs of the traced scalars
  (ops/getitem_ops.py); the sizes of sliced axes are unknown while tracing (they depend on
  the data), the rank is known.  The view's step in the TracedArray chain is a `DynamicKey`
  that remembers the key, since the static element positions the other writes use
  (np_indexing.py) cannot be computed.
- Writing (`arr[key] = v`, and so every in-place operator on such a view) is one
  TensorStridedSliceUpdate of the buffer (ops/slice_update_ops.py: compiled, a box written
  in place) when every entry is an index or a slice with a static step, else one
  TensorScatterNdUpdate at the positions of the key's elements, computed from NumPy's
  slice rules with graph arithmetic (negative bounds count from the end, bounds clamp to
  the axis); the value is broadcast to the view's (traced) shape and cast to the array's
  dtype as NumPy's setitem casts.
Writes through a view of a view are supported when the first key holds only integers
(`a[i][j] = v`); other compositions are a GraphBreak (the function runs as plain Python).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from .np_array import GraphBreak, TracedArray, api, as_tensor, to_tensor

_INT_KINDS = "iu"


def _traced_scalar(x) -> bool:
    t = as_tensor(x)
    return t is not None and t.shape.ndims == 0 and \
        np.dtype(t.dtype.as_numpy_dtype).kind in _INT_KINDS


def _static_part(x) -> bool:
    return x is None or (isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)))


def is_dynamic_basic(key: tuple) -> bool:
    """Whether `key` is basic indexing (ints, slices, None, ...) with at least one traced
    integer scalar (as an index or a slice bound)."""
    traced = False
    for k in key:
        if isinstance(k, slice):
            for b in (k.start, k.stop, k.step):
                if _traced_scalar(b):
                    traced = True
                elif not _static_part(b):
                    return False
        elif _traced_scalar(k):
            traced = True
        elif not (_static_part(k) or k is Ellipsis):
            return False
    return traced


class DynamicKey:
    """The numpy-side step of a view with a traced key: positions cannot be computed
    (writes go through `dynamic_setitem` instead)."""

    __slots__ = ("key",)

    def __init__(self, key: tuple):
        self.key = key

    def __call__(self, positions):
        raise GraphBreak("this use of a view indexed with traced values",
                         "flowjit writes through such views only as a whole")


def is_dynamic_view(arr: TracedArray) -> bool:
    """Whether some step of view `arr` was indexed with traced values."""
    return any(isinstance(numpy_fn, DynamicKey) for _, numpy_fn in arr._chain)


def getitem(arr: TracedArray, key: tuple) -> TracedArray:
    """`arr[key]` for a dynamic basic key: a view (one StridedSlice)."""
    tf = api()
    k = tuple(_as_index(x) for x in key)
    k = k if len(k) != 1 else k[0]
    return arr._view(lambda t: tf.tensor_getitem(t, k), DynamicKey(key))


def _as_index(x):
    if isinstance(x, slice):
        return slice(*(_as_index(b) for b in (x.start, x.stop, x.step)))
    t = as_tensor(x)
    return to_tensor(t, np.int64) if t is not None else x


def write_target(arr: TracedArray, key: tuple):
    """(buffer, key into the buffer) of `arr[key] = v` when `arr` or `key` is dynamic,
    else None (the static paths apply).  GraphBreak for compositions not supported."""
    chain = arr._chain
    dynamic = [i for i, (_, numpy_fn) in enumerate(chain) if isinstance(numpy_fn, DynamicKey)]
    if not dynamic:
        return (arr._buf, key) if is_dynamic_basic(key) else None
    if len(chain) != 1:
        raise GraphBreak("writing through a view of a view indexed with traced values")
    first = chain[0][1].key
    if all(k is Ellipsis or _full_slice(k) for k in key):
        return arr._buf, first
    if all(_traced_scalar(k) or _static_part(k) and k is not None for k in first) and \
            not any(k is Ellipsis for k in first) and \
            (is_dynamic_basic(key) or _plain_basic(key)):
        return arr._buf, tuple(first) + tuple(key)
    raise GraphBreak("writing into part of a view indexed with traced values")


def _full_slice(k) -> bool:
    return isinstance(k, slice) and k.start is None and k.stop is None and k.step is None


def _plain_basic(key) -> bool:
    return all(isinstance(k, slice) and all(_static_part(b) for b in (k.start, k.stop, k.step))
               or _static_part(k) or k is Ellipsis for k in key)


def _i64(x):
    tf = api()
    t = as_tensor(x)
    if t is not None:
        return to_tensor(t, np.int64)
    return tf.constant(np.int64(x))


def _axis_positions(entry, n):
    """(positions tensor [len] or scalar index tensor, keeps_axis) of one key entry on an
    axis of size `n` (an int64 scalar tensor), by NumPy's rules."""
    tf = api()
    zero, one = tf.constant(np.int64(0)), tf.constant(np.int64(1))
    if not isinstance(entry, slice):
        i = _i64(entry)
        return tf.where_v2(tf.less(i, zero), tf.add(i, n), i), False
    step = 1 if entry.step is None else entry.step
    if as_tensor(step) is not None:
        raise GraphBreak("a slice with a traced step")
    step = int(step)
    if step == 0:
        raise ValueError("slice step cannot be zero")

    def bound(b, default, low, high):
        if b is None:
            return default
        b = _i64(b)
        b = tf.where_v2(tf.less(b, zero), tf.add(b, n), b)
        return tf.minimum(tf.maximum(b, low), high)

    if step > 0:
        start = bound(entry.start, zero, zero, n)
        stop = bound(entry.stop, n, zero, n)
        span = tf.subtract(stop, start)
    else:
        last, minus = tf.subtract(n, one), tf.constant(np.int64(-1))
        start = bound(entry.start, last, minus, last)
        stop = bound(entry.stop, minus, minus, last)
        span = tf.subtract(start, stop)
    a = abs(step)
    length = tf.maximum(tf.floordiv(tf.add(span, tf.constant(np.int64(a - 1))),
                                    tf.constant(np.int64(a))), zero)
    steps = tf.range(zero, length, one)
    return tf.add(start, tf.multiply(steps, tf.constant(np.int64(step)))), True


def dynamic_setitem(buf, key: tuple, value, dtype) -> None:
    """`buf[key] = value` for a dynamic basic key: one TensorScatterNdUpdate."""
    from .np_indexing import _replace

    tf = api()
    root = buf.tensor
    rank = root.shape.ndims
    if rank is None or any(k is None for k in key):
        raise GraphBreak("assignment with np.newaxis and traced indices")
    ellipses = [i for i, k in enumerate(key) if k is Ellipsis]   # (`in` would compare
    if len(ellipses) > 1:                                         # traced values with ==)
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        at = ellipses[0]
        key = key[:at] + (slice(None),) * (rank - len(key) + 1) + key[at + 1:]
    if len(key) > rank:
        raise IndexError(f"too many indices for array: array is {rank}-dimensional, but "
                         f"{len(key)} were indexed")
    key = tuple(key) + (slice(None),) * (rank - len(key))
    if all(not isinstance(k, slice) or as_tensor(k.step) is None for k in key):
        _replace(buf, _slice_update(root, key, value, dtype))
        return
    sizes = tf.cast(tf.shape(root), _dtypes.int64)
    axes = [_axis_positions(k, sizes[d]) for d, k in enumerate(key)]
    kept = [p for p, keep in axes if keep]
    view_shape = tf.stack([tf.shape(p, out_type=_dtypes.int64)[0] for p in kept]) if kept \
        else tf.constant(np.zeros(0, np.int64))
    grids, j = [], 0
    for p, keep in axes:
        if keep:
            shape = [1] * len(kept)
            shape[j] = -1
            grids.append(tf.broadcast_to(tf.reshape(p, shape), view_shape))
            j += 1
        else:
            grids.append(tf.broadcast_to(p, view_shape))
    points = tf.reshape(tf.stack(grids, axis=-1), [-1, rank])
    v = to_tensor(value, dtype)
    v = tf.reshape(tf.broadcast_to(v, view_shape), [-1])
    _replace(buf, tf.tensor_scatter_nd_update(root, points, v))


def _slice_update(root, key: tuple, value, dtype):
    """`root` with `root[key] = value` (one index or static-step slice per axis) as one
    TensorStridedSliceUpdate (ops/slice_update_ops.py: compiled as an in-place box write)."""
    tf = api()
    begin, end, strides = [], [], []
    begin_mask = end_mask = shrink = 0
    zero = tf.constant(np.int64(0))
    for d, k in enumerate(key):
        if isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            begin.append(zero if k.start is None else _i64(k.start))
            end.append(zero if k.stop is None else _i64(k.stop))
            begin_mask |= (k.start is None) << d
            end_mask |= (k.stop is None) << d
            strides.append(step)
        else:
            i = _i64(k)
            begin.append(i)
            end.append(tf.add(i, tf.constant(np.int64(1))))
            strides.append(1)
            shrink |= 1 << d
    b, e = tf.stack(begin), tf.stack(end)
    s = tf.constant(np.array(strides, np.int64))
    masks = dict(begin_mask=begin_mask, end_mask=end_mask, shrink_axis_mask=shrink)
    view = tf.strided_slice(root, b, e, s, **masks)
    v = tf.broadcast_to(to_tensor(value, dtype), tf.shape(view))
    return tf.tensor_strided_slice_update(root, b, e, s, v, **masks)


def setitem(arr: TracedArray, key: tuple, value) -> bool:
    """`arr[key] = value` when the key or the view is dynamic (True), else False."""
    target = write_target(arr, key)
    if target is None:
        return False
    buf, full = target
    dynamic_setitem(buf, full, value, arr.dtype)
    return True
