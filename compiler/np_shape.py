"""Shape manipulation of traced arrays: transpose, reshape, squeeze, flip, roll, joining.

Part of the NumPy functions table (np_functions.FUNCTIONS, which re-exports these).  NumPy's
view semantics are kept where they are observable: transpose, swapaxes, moveaxis, squeeze,
expand_dims, flip and a reshape NumPy would do without copying return views (writes through
them reach the base array); ravel of a non-contiguous view, flatten, copy and astype return
new arrays.  concatenate/stack/vstack/hstack/column_stack promote as NumPy does.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from . import np_reductions as red
from .np_array import GraphBreak, TracedArray, api, to_tensor, wrap
from .np_ufuncs import _dummy


def _traced(x) -> TracedArray:
    return red._traced(x)


def _result_dtype(values):
    return np.result_type(*[_dummy(v) for v in values])


def transpose(a, axes=None):
    a = _traced(a)
    perm = list(range(a.ndim))[::-1] if axes is None else \
        [int(p) % max(a.ndim, 1) for p in axes]
    if len(perm) != a.ndim or sorted(perm) != list(range(a.ndim)):
        raise ValueError("axes don't match array")
    return a._view(lambda t: api().transpose(t, perm), lambda p: np.transpose(p, perm))


def swapaxes(a, axis1, axis2):
    a = _traced(a)
    perm = list(range(a.ndim))
    i, j = red.normalize_axes(axis1, a.ndim)[0], red.normalize_axes(axis2, a.ndim)[0]
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    """np.moveaxis; bad or repeated axes raise NumPy's AxisError/ValueError."""
    a = _traced(a)
    src = list(normalize_axis_tuple(source, a.ndim, "source"))
    dst = list(normalize_axis_tuple(destination, a.ndim, "destination"))
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    rest = [k for k in range(a.ndim) if k not in src]
    out = [None] * a.ndim
    for s, d in zip(src, dst):
        out[d] = s
    it = iter(rest)
    return transpose(a, [o if o is not None else next(it) for o in out])


def _new_shape(size: int, shape) -> list:
    shape = [int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,))]
    unknown = [i for i, s in enumerate(shape) if s == -1]
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return shape


def reshape(a, *shape, order="C", newshape=None, copy=None):
    a = _traced(a)
    if order != "C":
        raise GraphBreak(f"reshape(order={order!r})")
    if newshape is not None:
        shape = (newshape,)
    shape = shape[0] if len(shape) == 1 else shape
    target = _new_shape(a.size, shape)
    if a._chain:
        view = a._positions().reshape(target)
        if not np.shares_memory(view, a._buf.positions()):
            return wrap(api().reshape(a._as_graph_tensor(), target))
    return a._view(lambda t: api().reshape(t, target), lambda p: p.reshape(target))


def ravel(a, order="C"):
    if order == "F":
        return flatten(a, "F")
    return reshape(a, -1, order=order)


def flatten(a, order="C"):
    """ndarray.flatten: a copy in C order, or in F order (the reversed-axes transpose's C
    order); 'A' and 'K' depend on the memory layout and break the graph."""
    a = _traced(a)
    if order not in ("C", "F"):
        raise GraphBreak(f"flatten(order={order!r})")
    t = a._as_graph_tensor()
    if order == "F" and a.ndim > 1:
        t = api().transpose(t, list(range(a.ndim))[::-1])
    return wrap(api().reshape(t, [-1]))


def squeeze(a, axis=None):
    a = _traced(a)
    if axis is None:
        axes = [k for k, d in enumerate(a.shape) if d == 1]
    else:
        axes = list(red.normalize_axes(axis, a.ndim))
        if any(a.shape[k] != 1 for k in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal "
                             "to one")
    if not axes:
        return a._view(lambda t: t, lambda p: p)
    return a._view(lambda t: api().squeeze(t, axes), lambda p: np.squeeze(p, tuple(axes)))


def expand_dims(a, axis):
    a = _traced(a)
    axes = red.normalize_axes(axis, a.ndim + len(np.atleast_1d(axis)))
    key = tuple(None if k in axes else slice(None) for k in range(a.ndim + len(axes)))
    return a[key]


def flip(m, axis=None):
    m = _traced(m)
    axes = list(red.normalize_axes(axis, m.ndim))
    key = tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(m.ndim))
    return m[key]


def copy(a, order="K", subok=False):
    return wrap(_traced(a)._as_graph_tensor())


def astype(a, dtype, order="K", casting="unsafe", subok=True, copy=True):
    a = _traced(a)
    dtype = np.dtype(dtype)
    if not np.can_cast(a.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {a.dtype!r} to {dtype!r} according to "
                        f"the rule {casting!r}")
    return wrap(to_tensor(a, dtype))


def roll(a, shift, axis=None):
    tf = api()
    a = _traced(a)
    if axis is None:   # the flattened array, by every shift in turn (their sum)
        return reshape(roll(ravel(a), int(np.sum(shift)), 0), a.shape)
    t = a._as_graph_tensor()
    shifts = np.broadcast_to(shift, np.shape(axis)) if np.ndim(axis) else [shift]
    for s, ax in zip(shifts, np.atleast_1d(axis)):
        ax = red.normalize_axes(int(ax), a.ndim)[0]
        n = a.shape[ax]
        s = int(s) % n if n else 0
        if s:
            tail = [slice(None)] * a.ndim
            head = [slice(None)] * a.ndim
            tail[ax], head[ax] = slice(n - s, n), slice(0, n - s)
            t = tf.concat([tf.tensor_getitem(t, tuple(tail)), tf.tensor_getitem(t, tuple(head))],
                          ax)
    return wrap(t)


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    tf = api()
    arrays = list(arrays)
    dt = np.dtype(dtype) if dtype is not None else _result_dtype(arrays)
    tensors = [to_tensor(x, dt) for x in arrays]
    if axis is None:
        tensors, axis = [tf.reshape(t, [-1]) for t in tensors], 0
    rank = tensors[0].shape.ndims
    if rank == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = red.normalize_axes(axis, rank)[0]
    return _finish(wrap(tf.concat(tensors, axis)), out)


def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    tf = api()
    arrays = list(arrays)
    dt = np.dtype(dtype) if dtype is not None else _result_dtype(arrays)
    tensors = [to_tensor(x, dt) for x in arrays]
    axis = red.normalize_axes(axis, tensors[0].shape.ndims + 1)[0]
    return _finish(wrap(tf.stack(tensors, axis)), out)


def _atleast(x, n):
    x = _traced(x)
    while x.ndim < n:
        x = x[None] if n != 3 or x.ndim != 2 else x[..., None]
    return x


def vstack(tup, dtype=None, casting="same_kind"):
    return concatenate([_atleast(x, 2) for x in tup], 0, dtype=dtype)


def hstack(tup, dtype=None, casting="same_kind"):
    arrs = [_atleast(x, 1) for x in tup]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def column_stack(tup):
    return concatenate([_atleast(x, 1)[:, None] if _atleast(x, 1).ndim == 1 else x
                        for x in tup], 1)


def _finish(result, out):
    if out is not None:
        out[...] = result
        return out
    return result
