"""Indexing traced arrays as NumPy does: reads, views, and in-place writes.

Reads
- A basic key (ints, slices with any step, None/np.newaxis, Ellipsis) gives a VIEW: a
  StridedSlice applied to the buffer's current value, so later writes through either side
  are seen by the other, as in NumPy.
- A key with static advanced parts (lists or NumPy arrays of ints or bools) gives a copy:
  NumPy itself indexes the buffer's array of element positions with the same key, so every
  rule of advanced indexing (broadcasting of index arrays, where the advanced axes go,
  negative indices, IndexError) is NumPy's; the result is one gather of those positions.
- A traced integer array on one axis is a Gather (negative indices wrap); a traced boolean
  mask has a data-dependent size, which is a GraphBreak.

Writes (`a[key] = v`, and so `a[key] += v`)
- The positions written are NumPy's positions for the key (static keys); the value is
  broadcast to their shape and cast to the array's dtype as NumPy's setitem casts.
- When they form a box of the buffer (any basic key with step 1, the stencil case), the new
  value is `where(pad(True), pad(v), old)`: pure index arithmetic that the compiler fuses.
  Otherwise a constant table maps each element to the value element written there (the last
  write wins for repeated indices, as NumPy's assignment does).
- `a[mask] = scalar` with a traced boolean mask is `where(mask, scalar, a)`.
"""

from __future__ import annotations

import numpy as np

from . import np_dynamic_index
from .np_array import (GraphBreak, TracedArray, _Buffer, api, as_tensor, static_dims,
                       to_tensor, wrap)

_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def _key_tuple(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def _is_basic(key: tuple) -> bool:
    return all(isinstance(k, _BASIC) and not isinstance(k, (bool, np.bool_)) for k in key)


def _static_key(key: tuple) -> tuple:
    """The key with lists turned into arrays; GraphBreak if any part is traced."""
    out = []
    for k in key:
        if as_tensor(k) is not None:
            raise GraphBreak("indexing with a traced array here")
        out.append(np.asarray(k) if isinstance(k, list) else k)
    return tuple(out)


def getitem(arr: TracedArray, key):
    """`arr[key]` (see the module docstring)."""
    tf = api()
    key = _key_tuple(key)
    if np_dynamic_index.is_dynamic_basic(key):   # traced scalar indices: still a view
        return np_dynamic_index.getitem(arr, key)
    if _is_basic(key):
        k = key if len(key) != 1 else key[0]
        return arr._view(lambda t: tf.tensor_getitem(t, k), lambda p: p[k])
    traced = [i for i, k in enumerate(key) if as_tensor(k) is not None]
    if traced:
        return _dynamic_getitem(arr, key, traced)
    positions = arr._positions()[_static_key(key)]
    flat = tf.reshape(arr._buf.tensor, [-1])
    table = tf.constant(positions.reshape(-1).astype(_index_dtype(positions)))
    return wrap(tf.reshape(tf.gather(flat, table), list(positions.shape)))


def _index_dtype(positions: np.ndarray):
    return np.int32 if positions.size == 0 or positions.max() < 2**31 - 1 else np.int64


def _all_integer_arrays(arr, key) -> bool:
    if len(key) > arr.ndim or len(key) < 2:
        return False
    for k in key:
        t = as_tensor(k)
        dt = np.dtype(t.dtype.as_numpy_dtype) if t is not None else np.asarray(k).dtype
        if dt.kind not in "iu" or (t is None and not isinstance(k, (list, np.ndarray))):
            return False
    return True


def _wrapped(idx, n):
    """Index tensor `idx` with negative entries counted from the end of a size-n axis."""
    tf = api()
    size = tf.constant(np.array(n, dtype=idx.dtype.as_numpy_dtype))
    return tf.where_v2(tf.less(idx, tf.zeros_like(idx)), tf.add(idx, size), idx)


def _index_points(key, shape) -> tuple[list, list]:
    """(index tensors broadcast to their common shape, negatives counted from the end of
    their axis; that shape) for integer index arrays `key` on the leading axes of `shape`."""
    tf = api()
    idx = [to_tensor(k, np.int64) for k in key]
    shapes = [static_dims(t, "an index array") for t in idx]
    try:
        common = list(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(str(tuple(s)) for s in shapes)}") from None
    idx = [_wrapped(t if list(s) == common else tf.broadcast_to(t, common), n)
           for t, s, n in zip(idx, shapes, shape)]
    return idx, common


def _gather_points(arr, key):
    """`arr[i0, i1, ...]` with integer index arrays on the leading axes: one GatherNd."""
    idx, _ = _index_points(key, arr.shape)
    return wrap(api().gather_nd(arr._as_graph_tensor(), api().stack(idx, axis=-1)))


def _dynamic_getitem(arr, key, traced):
    tf = api()
    if _all_integer_arrays(arr, key):
        return _gather_points(arr, key)
    if len(traced) != 1 or any(isinstance(k, (type(None), type(Ellipsis))) for k in key):
        raise GraphBreak("indexing with several traced index arrays (or with None/... "
                         "beside one)")
    pos = traced[0]
    others = [i for i, k in enumerate(key) if i != pos and not (isinstance(k, slice) and
                                                               k == slice(None))]
    if others:
        return _mixed_getitem(arr, key, pos)
    idx = as_tensor(key[pos])
    kind = np.dtype(idx.dtype.as_numpy_dtype).kind
    if kind == "b":
        raise GraphBreak("boolean-mask indexing with a traced mask",
                         "the result's size depends on the data; use np.where(mask, x, 0)")
    if kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    t = arr._as_graph_tensor()
    n = tf.cast(tf.shape(t)[pos], idx.dtype)
    wrapped = tf.where_v2(tf.less(idx, tf.zeros_like(idx)), tf.add(idx, n), idx)
    return wrap(tf.gather(t, wrapped, axis=pos))


def _int_positions(key) -> list:
    """Positions in `key` holding integer indices (not bools)."""
    return [i for i, k in enumerate(key) if isinstance(k, (int, np.integer))
            and not isinstance(k, (bool, np.bool_))]


def _mixed_getitem(arr, key, pos):
    """`arr[key]` with one traced index array at `pos` beside ints and slices: the basic
    indices first, then the gather (`x[idx, 1]` is `x[:, 1][idx]`). NumPy counts the ints
    as advanced indices too: when they are not next to the array, the gathered axes come
    first."""
    ints = _int_positions(key)
    if any(not isinstance(k, slice) for i, k in enumerate(key) if i != pos and i not in ints):
        raise GraphBreak("a traced index array combined with indices other than ints and "
                         "slices")
    basic = getitem(arr, tuple(slice(None) if i == pos else k for i, k in enumerate(key)))
    at = pos - sum(1 for i in ints if i < pos)
    gathered = getitem(basic, tuple([slice(None)] * at + [key[pos]]))
    advanced = sorted(ints + [pos])
    if advanced != list(range(advanced[0], advanced[-1] + 1)) and at > 0:
        rank = len(as_tensor(key[pos]).shape)
        order = list(range(at, at + rank)) + [a for a in range(gathered.ndim)
                                              if not at <= a < at + rank]
        gathered = wrap(api().transpose(gathered._as_graph_tensor(), order))
    return gathered


def setitem(arr: TracedArray, key, value) -> None:
    """`arr[key] = value`: replaces the buffer's tensor (see the module docstring)."""
    tf = api()
    key = _key_tuple(key)
    dtype = arr.dtype
    if len(key) == 1 and key[0] is Ellipsis and not arr._chain:
        v = to_tensor(value, dtype)
        old = arr._buf.tensor
        if v.shape.is_fully_defined() and old.shape.is_fully_defined() and \
                v.shape.as_list() == old.shape.as_list():
            _replace(arr._buf, v)
            return
    if np_dynamic_index.setitem(arr, key, value):   # traced scalar indices or view
        return
    mask = [k for k in key if as_tensor(k) is not None]
    if mask:
        _masked_setitem(arr, key, value, dtype)
        return
    positions = arr._positions()[_static_key(key)]
    buf = arr._buf
    if isinstance(value, TracedArray) and value._buf is buf and value._chain and \
            np.array_equal(value._positions(), positions):
        return   # `a[k] += v` stores the updated view a[k] back onto itself: nothing to do
    root_shape = static_dims(buf.tensor, "writing into an array")
    v = to_tensor(value, dtype)
    v_shape = static_dims(v, "the value written") if v.shape.ndims else ()
    try:
        np.broadcast_shapes(v_shape, positions.shape)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {v_shape} into shape "
                         f"{positions.shape}") from None
    if positions.size == 0:
        return
    if tuple(v_shape) != positions.shape:
        v = tf.broadcast_to(v, list(positions.shape))
    box = _box_of(positions, buf.positions())
    if box is not None:
        lo, hi = box
        box_shape = [b - a for a, b in zip(lo, hi)]
        v = tf.reshape(v, box_shape)
        if tuple(box_shape) == root_shape:
            new = v
        else:
            pads = [[a, n - b] for a, b, n in zip(lo, hi, root_shape)]
            inside = _box_mask(box_shape, pads)
            new = tf.where_v2(inside, tf.pad(v, pads), buf.tensor)
    else:
        size = int(np.prod(root_shape, dtype=np.int64))
        inverse = np.full(size, -1, dtype=np.int64)
        inverse[positions.reshape(-1)] = np.arange(positions.size)
        written = inverse >= 0
        table = np.where(written, inverse, 0)
        table = table.astype(_index_dtype(table))
        gathered = tf.gather(tf.reshape(v, [-1]), tf.constant(table))
        new = tf.reshape(tf.where_v2(tf.constant(written), gathered, tf.reshape(buf.tensor, [-1])),
                         list(root_shape))
    _replace(buf, new)


def update_inplace(arr: TracedArray, ufunc, other, result_dtype) -> bool:
    """`arr op= other` for a view `arr` that is a box of its buffer: the op is applied to
    the whole buffer at the SAME index (`other` padded into place), then selected inside the
    box, so successive in-place updates fuse into one loop nest instead of each reading
    the previous one at a shifted index. False when `arr` is not such a view."""
    from .np_ufuncs import call

    tf = api()
    if not arr._chain or np_dynamic_index.is_dynamic_view(arr):
        return False
    buf = arr._buf
    positions = arr._positions()
    if positions.size == 0:
        return False
    box = _box_of(positions, buf.positions())
    if box is None:
        return False
    lo, hi = box
    box_shape = [b - a for a, b in zip(lo, hi)]
    if list(positions.shape) != box_shape:   # a box, but seen with other axes (e.g. .T)
        return False
    root_shape = buf.positions().shape
    if not root_shape:    # a 0-d buffer (`x[()] += v`): the update is its whole value
        _replace(buf, to_tensor(call(ufunc, (wrap(buf.tensor), other)), result_dtype))
        return True
    pads = [[a, n - b] for a, b, n in zip(lo, hi, root_shape)]
    t = as_tensor(other)
    if t is not None or np.ndim(other):
        from .np_ufuncs import resolve

        loop, _ = resolve(ufunc, (arr, other))
        o = to_tensor(other, loop[1])
        o_shape = static_dims(o, "the value written") if o.shape.ndims else ()
        np.broadcast_shapes(o_shape, tuple(box_shape))
        o = tf.broadcast_to(o, box_shape) if tuple(o_shape) != tuple(box_shape) else o
        neutral = 1 if ufunc in (np.floor_divide, np.remainder, np.true_divide, np.power) \
            else 0
        other = wrap(tf.pad(o, pads, constant_values=neutral))
    full = call(ufunc, (wrap(buf.tensor), other))
    inside = _box_mask(box_shape, pads)
    _replace(buf, tf.where_v2(inside, to_tensor(full, result_dtype), buf.tensor))
    return True


def _box_mask(box_shape, pads):
    """True inside the box, False in the padding: index comparisons once compiled."""
    tf = api()
    return tf.pad(tf.fill(list(box_shape), tf.constant(True)), pads)


def _box_of(positions: np.ndarray, root_positions: np.ndarray):
    """(lo, hi) per buffer axis when `positions` (in C order) is exactly a box of the buffer
    in C order, else None."""
    if root_positions.ndim == 0:     # a 0-d buffer: its one element (`x[()] = v`)
        return ([], []) if positions.size == 1 else None
    coords = np.unravel_index(positions.reshape(-1), root_positions.shape)
    lo = [int(c.min()) for c in coords]
    hi = [int(c.max()) + 1 for c in coords]
    box = root_positions[tuple(slice(a, b) for a, b in zip(lo, hi))]
    if box.size != positions.size or not np.array_equal(box.reshape(-1),
                                                        positions.reshape(-1)):
        return None
    return lo, hi


def _masked_setitem(arr, key, value, dtype) -> None:
    tf = api()
    if len(key) != 1:
        _mixed_setitem(arr, key, value, dtype)
        return
    mask = as_tensor(key[0])
    if np.dtype(mask.dtype.as_numpy_dtype).kind in "iu":
        _scatter_rows(arr, mask, value, dtype)
        return
    if np.dtype(mask.dtype.as_numpy_dtype).kind != "b":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    current = arr._as_graph_tensor()
    k, n = mask.shape.ndims, current.shape.ndims
    _check_mask_dims(mask, current)
    v = to_tensor(value, dtype)
    if v.shape.ndims > n - k:
        raise GraphBreak("a[mask] = array with a traced mask",
                         "the number of elements written depends on the data")
    for _ in range(n - k):   # the mask selects along the leading axes: whole rows, ...
        mask = tf.expand_dims(mask, -1)
    _write_view(arr, tf.where_v2(mask, tf.broadcast_to(v, tf.shape(current)), current))


def _check_mask_dims(mask, current) -> None:
    """NumPy's IndexError for a boolean mask whose shape is not the leading part of the
    array's (a size-1 mask axis does not broadcast); sizes unknown on both sides are
    compared when the kernel runs."""
    k, n = mask.shape.ndims, current.shape.ndims
    if k > n:
        raise IndexError(f"too many indices for array: array is {n}-dimensional, but {k} "
                         "were indexed")
    for axis, (m, a) in enumerate(zip(mask.shape.as_list(), current.shape.as_list())):
        # an unknown size in a signature is never 1 (sizes 1 are part of the signature)
        if (m is not None and a is not None and m != a) or (m == 1) != (a == 1):
            raise IndexError(f"boolean index did not match indexed array along axis {axis}; "
                             f"size of axis is {'?' if a is None else a} but size of "
                             f"corresponding boolean axis is {'?' if m is None else m}")


def _mixed_setitem(arr, key, value, dtype) -> None:
    """`arr[key] = value` with one traced integer index array beside ints and slices, as
    the row scatter into a view: `x[idx, 1] = v` is `x[:, 1][idx] = v` (NumPy's layout of
    the written value is the same when the array's axis comes first after the ints and
    slices before it are applied); integer index arrays on all the leading axes
    (`p[np.arange(n), y] -= 1`) are one point scatter."""
    if _all_integer_arrays(arr, key):
        _scatter_points(arr, key, value, dtype)
        return
    traced = [i for i, k in enumerate(key) if as_tensor(k) is not None]
    if len(traced) != 1 or any(isinstance(k, (type(None), type(Ellipsis))) for k in key):
        raise GraphBreak("assignment through several traced indices (or None/... beside one)")
    pos = traced[0]
    idx = as_tensor(key[pos])
    if np.dtype(idx.dtype.as_numpy_dtype).kind not in "iu":
        raise GraphBreak("assignment through a traced mask combined with other indices")
    ints = _int_positions(key)
    if any(not isinstance(k, slice) for i, k in enumerate(key) if i != pos and i not in ints):
        raise GraphBreak("assignment through a traced index combined with indices other "
                         "than ints and slices")
    advanced = sorted(ints + [pos])
    at = pos - sum(1 for i in ints if i < pos)
    if at != 0 or advanced != list(range(advanced[0], advanced[-1] + 1)):
        raise GraphBreak("assignment through a traced index that is not on the first "
                         "remaining axis")
    view = getitem(arr, tuple(slice(None) if i == pos else k for i, k in enumerate(key)))
    _scatter_rows(view, idx, value, dtype)


def _scatter_points(arr, key, value, dtype) -> None:
    """`arr[i0, i1, ...] = value` with integer index arrays on the leading axes: a row
    scatter into the array seen as [n0*n1*..., rest] at the linear index of each point (the
    compiled form; the last occurrence of a point wins, as in NumPy). A point outside the
    array gets the linear index n0*n1*..., so the scatter fails when it runs instead of
    writing into a neighbouring row."""
    tf = api()
    shape = list(arr.shape)
    idx, common = _index_points(key, shape)
    k = int(np.prod(common, dtype=np.int64))
    lead, rest = shape[:len(key)], shape[len(key):]
    rows = int(np.prod(lead, dtype=np.int64))
    linear, inside = idx[0], None
    for t, n in zip(idx, lead):
        fits = tf.logical_and(tf.greater_equal(t, tf.zeros_like(t)),
                              tf.less(t, tf.constant(np.int64(n))))
        inside = fits if inside is None else tf.logical_and(inside, fits)
    for t, n in zip(idx[1:], lead[1:]):
        linear = tf.add(tf.multiply(linear, tf.constant(np.int64(n))), t)
    linear = tf.where_v2(inside, linear, tf.constant(np.int64(rows)))
    points = tf.reshape(linear, [k, 1])
    v = to_tensor(value, dtype)
    target = tuple(common) + tuple(rest)
    v_shape = static_dims(v, "the value written") if v.shape.ndims else ()
    try:
        np.broadcast_shapes(v_shape, target)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {v_shape} could not be "
                         f"broadcast to indexing result of shape {target}") from None
    if k == 0:
        return
    v = tf.reshape(tf.broadcast_to(v, list(target)), [k] + rest)
    flat = tf.reshape(arr._as_graph_tensor(), [rows] + rest)
    _write_view(arr, tf.reshape(tf.tensor_scatter_nd_update(flat, points, v), shape))


def _scatter_rows(arr, idx, value, dtype) -> None:
    """`arr[idx] = value` for a traced integer array `idx` on axis 0: one
    TensorScatterUpdate (each row takes the value of the LAST occurrence of its index, as
    NumPy's assignment leaves it; an index out of range fails when it runs, as NumPy raises
    IndexError). The op runs with its NumPy kernel; the rest of the function still compiles
    as clusters around it in the Session that runs such a function."""
    tf = api()
    shape = list(arr.shape)
    n, rest = shape[0], shape[1:]
    flat = _wrapped(tf.reshape(to_tensor(idx, np.int64), [-1]), n)
    k = static_dims(flat, "an index array")[0]
    v = to_tensor(value, dtype)
    target = static_dims(idx, "an index array") + tuple(rest)
    v_shape = static_dims(v, "the value written") if v.shape.ndims else ()
    np.broadcast_shapes(v_shape, target)
    v = tf.reshape(tf.broadcast_to(v, list(target)), [k] + rest)
    new = tf.tensor_scatter_nd_update(arr._as_graph_tensor(), tf.reshape(flat, [k, 1]), v)
    _write_view(arr, new)


def _write_view(arr: TracedArray, new_value) -> None:
    """Replace the whole of view `arr` by `new_value`."""
    if not arr._chain:
        _replace(arr._buf, new_value)
    else:
        setitem(arr, Ellipsis, wrap(new_value))


def _replace(buf: _Buffer, tensor) -> None:
    buf.tensor = tensor
    buf.version += 1


__all__ = ["getitem", "setitem"]
