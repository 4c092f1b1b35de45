"""Samples for ops/slicing_ops.py, ops/gather_ops.py and ops/segment_ops.py: Slice,
StridedSlice, GatherV2, GatherNd, UnsortedSegmentSum.

Oracles are NumPy basic indexing (`a[key]` for a drawn Python key), `np.take`-free loops for
gathers, and plain Python slices for Slice.  Inputs are sometimes placeholders of unknown
shape and index vectors sometimes fed, so inference with unknown values is exercised too.
`python_index(shape)` is shared with tests/test_slicing_ops.py.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, shapes

# Mostly non-empty arrays: an empty one hides most indexing mistakes.
_SHAPES = st.one_of(shapes(min_side=1, max_dims=4), shapes(min_side=1, max_dims=4),
                    shapes(max_dims=4))

_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.bool_)


def _bound(d):
    return st.integers(-d - 3, d + 3)


@st.composite
def _slice_entry(draw, d):
    start = draw(st.none() | _bound(d))
    stop = draw(st.none() | _bound(d))
    step = draw(st.sampled_from([None, -1, -1, -2, -3, 1, 2, 3]))
    return slice(start, stop, step)


@st.composite
def python_index(draw, shape):
    """A valid NumPy basic-indexing key for `shape`: ints, slices (any step, None bounds),
    None (new axis) and at most one Ellipsis; sometimes a bare entry instead of a tuple."""
    rank = len(shape)
    n_real = draw(st.integers(0, rank))
    kinds = ["dim"] * n_real + ["new"] * draw(st.integers(0, 2))
    kinds = list(draw(st.permutations(kinds)))
    if draw(st.booleans()):
        kinds.insert(draw(st.integers(0, len(kinds))), "...")
    if "..." in kinds:
        at = kinds.index("...")
        before = sum(k == "dim" for k in kinds[:at])
        after = sum(k == "dim" for k in kinds[at + 1:])
        dims = list(range(before)) + list(range(rank - after, rank))
    else:
        dims = list(range(n_real))
    key, dims = [], iter(dims)
    for kind in kinds:
        if kind == "...":
            key.append(Ellipsis)
        elif kind == "new":
            key.append(None)
        else:
            d = shape[next(dims)]
            if d > 0 and draw(st.integers(0, 2)) == 0:
                key.append(draw(st.integers(-d, d - 1)))
            else:
                key.append(draw(_slice_entry(d)))
    if len(key) == 1 and draw(st.booleans()):
        return key[0]
    return tuple(key)


@st.composite
def _spec_for(draw, key):
    """TF's begin/end/strides/masks for `key`, with junk where TF must ignore a value and
    redundant mask bits where a stronger bit wins (ellipsis > new axis > shrink > begin/end)."""
    key = key if isinstance(key, tuple) else (key,)
    junk = st.integers(-9, 9)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                           "shrink_axis_mask"), 0)

    def maybe(name, bit):
        if draw(st.booleans()):
            masks[name] |= bit

    for i, e in enumerate(key):
        bit = 1 << i
        if e is Ellipsis:
            begin.append(draw(junk))
            end.append(draw(junk))
            strides.append(draw(junk))
            masks["ellipsis_mask"] |= bit
            for name in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask"):
                maybe(name, bit)
        elif e is None:
            begin.append(draw(junk))
            end.append(draw(junk))
            strides.append(1)
            masks["new_axis_mask"] |= bit
            for name in ("begin_mask", "end_mask", "shrink_axis_mask"):
                maybe(name, bit)
        elif isinstance(e, int):
            begin.append(e)
            end.append(draw(junk))
            strides.append(draw(st.integers(1, 3)))
            masks["shrink_axis_mask"] |= bit
            maybe("begin_mask", bit), maybe("end_mask", bit)
        else:
            for bound, values, name in ((e.start, begin, "begin_mask"),
                                        (e.stop, end, "end_mask")):
                values.append(draw(junk) if bound is None else bound)
                if bound is None:
                    masks[name] |= bit
            strides.append(1 if e.step is None else e.step)
    stray = 1 << len(key)  # bits past the last entry are ignored (except for ellipsis)
    for name in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask"):
        maybe(name, stray)
    return begin, end, strides, masks


def _maybe_placeholder(draw, value, name):
    """(tensor builder, feeds): a constant, or a placeholder with unknown dims fed `value`."""
    mode = draw(st.sampled_from(["const", "unknown_dims", "unknown_rank"]))
    if mode == "const":
        return (lambda: tf.constant(value)), {}
    dtype = tf.as_dtype(value.dtype)
    shape = None if mode == "unknown_rank" else [None] * value.ndim
    return (lambda: tf.placeholder(dtype, shape, name=name)), {name: value}


@st.composite
def _strided_slice(draw):
    a = draw(arrays(draw(st.sampled_from(_DTYPES)), draw(_SHAPES)))
    key = draw(python_index(a.shape))
    begin, end, strides, masks = draw(_spec_for(key))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    begin, end, strides = (np.array(v, dtype=index_dtype) for v in (begin, end, strides))
    x, feeds = _maybe_placeholder(draw, a, "x")
    b, b_feeds = _maybe_placeholder(draw, begin, "begin")
    feeds.update(b_feeds)
    return OpCase(lambda: [tf.strided_slice(x(), b(), end, strides, **masks)], feeds,
                  lambda f: [a[key]])


@st.composite
def _getitem(draw):
    a = draw(arrays(np.float32, draw(_SHAPES)))
    key = draw(python_index(a.shape))
    x, feeds = _maybe_placeholder(draw, a, "x")
    return OpCase(lambda: [x()[key]], feeds, lambda f: [a[key]])


@st.composite
def _slice(draw):
    a = draw(arrays(draw(st.sampled_from(_DTYPES)), draw(shapes(max_dims=4))))
    begin = [draw(st.integers(0, d)) for d in a.shape]
    size = [draw(st.integers(-1, d - b)) for d, b in zip(a.shape, begin)]
    expected = a[tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))]
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    begin, size = np.array(begin, index_dtype), np.array(size, index_dtype)
    x, feeds = _maybe_placeholder(draw, a, "x")
    s, s_feeds = _maybe_placeholder(draw, size, "size")
    feeds.update(s_feeds)
    return OpCase(lambda: [tf.slice(x(), begin, s())], feeds, lambda f: [expected])


def _gather_oracle(params, indices, axis, batch_dims):
    """Element-by-element definition of GatherV2 (independent of np.take)."""
    out_shape = (params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:])
    out = np.empty(out_shape, dtype=params.dtype)
    n_ind = indices.ndim - batch_dims
    for o in np.ndindex(*out_shape):
        batch, pre = o[:batch_dims], o[batch_dims:axis]
        ind, post = o[axis:axis + n_ind], o[axis + n_ind:]
        out[o] = params[batch + pre + (indices[batch + ind],) + post]
    return out


@st.composite
def _gather(draw):
    params = draw(arrays(draw(st.sampled_from(_DTYPES)), draw(shapes(min_dims=1, max_dims=3))))
    rank = params.ndim
    axis = draw(st.integers(0, rank - 1))
    batch_dims = draw(st.integers(0, axis))
    extra = draw(shapes(max_dims=2, max_side=3))
    limit = params.shape[axis]
    ind_shape = params.shape[:batch_dims] + extra
    if limit == 0:
        ind_shape = ind_shape if 0 in ind_shape else ind_shape + (0,)
    indices = draw(arrays(draw(st.sampled_from([np.int32, np.int64])), ind_shape,
                          elements=st.integers(0, max(limit - 1, 0))))
    expected = _gather_oracle(params, indices, axis, batch_dims)
    given_axis = axis - rank if draw(st.booleans()) else axis
    if batch_dims == 0 and given_axis == 0 and draw(st.booleans()):
        given_axis = None  # the default
    x, feeds = _maybe_placeholder(draw, params, "params")
    i, i_feeds = _maybe_placeholder(draw, indices, "indices")
    feeds.update(i_feeds)
    return OpCase(lambda: [tf.gather(x(), i(), axis=given_axis, batch_dims=batch_dims)],
                  feeds, lambda f: [expected])


@st.composite
def _gather_nd(draw):
    params = draw(arrays(draw(st.sampled_from(_DTYPES)), draw(shapes(max_dims=3))))
    k = draw(st.integers(0, params.ndim))
    if 0 in params.shape[:k]:
        k = 0
    lead = draw(shapes(max_dims=2, max_side=3))
    cols = [draw(arrays(np.int64, lead, elements=st.integers(0, params.shape[j] - 1)))
            for j in range(k)]
    indices = np.stack(cols, axis=-1) if k else np.zeros(lead + (0,), np.int64)
    indices = indices.astype(draw(st.sampled_from([np.int32, np.int64])))
    expected = np.empty(lead + params.shape[k:], dtype=params.dtype)
    for o in np.ndindex(*lead):
        expected[o] = params[tuple(int(v) for v in indices[o])]
    x, feeds = _maybe_placeholder(draw, params, "params")
    return OpCase(lambda: [tf.gather_nd(x(), indices)], feeds, lambda f: [expected])


@st.composite
def _unsorted_segment_sum(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    data = draw(arrays(dtype, draw(shapes(max_dims=3, max_side=4))))
    k = draw(st.integers(0, data.ndim))
    num = draw(st.integers(0, 5))
    ids = draw(arrays(draw(st.sampled_from([np.int32, np.int64])), data.shape[:k],
                      elements=st.integers(-1, num - 1)))
    expected = np.zeros((num,) + data.shape[k:], dtype=dtype)
    for i in np.ndindex(*ids.shape):
        if ids[i] >= 0:
            expected[ids[i]] += data[i]
    x, feeds = _maybe_placeholder(draw, data, "data")
    return OpCase(lambda: [tf.unsorted_segment_sum(x(), ids, num)], feeds,
                  lambda f: [expected], rtol=1e-5, atol=1e-5)


@st.composite
def _tensor_scatter_update(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    tensor = draw(arrays(dtype, draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))))
    k = draw(st.integers(1, tensor.ndim))
    lead = draw(shapes(max_dims=2, max_side=3))
    cols = [draw(arrays(np.int64, lead, elements=st.integers(0, tensor.shape[j] - 1)))
            for j in range(k)]
    indices = np.stack(cols, axis=-1).astype(draw(st.sampled_from([np.int32, np.int64])))
    updates = draw(arrays(dtype, lead + tensor.shape[k:]))
    expected = tensor.copy()
    for o in np.ndindex(*lead):   # in order: a repeated index keeps the last update
        expected[tuple(int(v) for v in indices[o])] = updates[o]
    x, feeds = _maybe_placeholder(draw, tensor, "tensor")
    return OpCase(lambda: [tf.tensor_scatter_nd_update(x(), indices, updates)], feeds,
                  lambda f: [expected])


@st.composite
def _strided_slice_update(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    a = draw(arrays(dtype, draw(_SHAPES)))
    key = draw(python_index(a.shape))
    begin, end, strides, masks = draw(_spec_for(key))
    value = draw(arrays(dtype, a[key].shape))
    expected = a.copy()
    expected[key] = value
    begin, end, strides = (np.array(v, dtype=np.int64) for v in (begin, end, strides))
    x, feeds = _maybe_placeholder(draw, a, "x")
    b, b_feeds = _maybe_placeholder(draw, begin, "begin")
    feeds.update(b_feeds)
    return OpCase(lambda: [tf.tensor_strided_slice_update(x(), b(), end, strides, value,
                                                          **masks)],
                  feeds, lambda f: [expected])


SAMPLES = {
    "Slice": _slice(),
    "TensorStridedSliceUpdate": _strided_slice_update(),
    "StridedSlice": st.one_of(_strided_slice(), _getitem()),
    "GatherV2": _gather(),
    "GatherNd": _gather_nd(),
    "TensorScatterUpdate": _tensor_scatter_update(),
    "UnsortedSegmentSum": _unsorted_segment_sum(),
}
