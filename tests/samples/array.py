"""Samples for ops/array_ops.py and the modules it re-exports (join_ops, fill_ops, pad_ops).

Inputs are fed through placeholders whose static shape is drawn fully known, partially
known or of unknown rank, so both static inference and the run-time path are exercised.
Oracles are plain NumPy written independently of the kernels: index maps for tile and
mirror padding, arange comparisons for one_hot, explicit -1 resolution for reshape/split.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, shapes

DTYPES = (np.float32, np.float64, np.int32, np.int64, np.bool_)


@st.composite
def _static(draw, shape):
    """A static shape for a placeholder holding an array of `shape`."""
    kind = draw(st.sampled_from(("full", "partial", "unknown")))
    if kind == "full":
        return list(shape)
    if kind == "unknown":
        return None
    return [d if draw(st.booleans()) else None for d in shape]


@st.composite
def _fed(draw, shape=None, dtype=None, name="x", max_dims=4):
    """(make_placeholder, value) for a drawn array."""
    shape = draw(shapes(max_dims=max_dims)) if shape is None else tuple(shape)
    dtype = draw(st.sampled_from(DTYPES)) if dtype is None else dtype
    value = draw(arrays(dtype, shape))
    static = draw(_static(shape))
    tf_dtype = tf.as_dtype(value.dtype)
    return (lambda: tf.placeholder(tf_dtype, static, name=name)), value


def _index_arg(draw, values, name="s"):
    """A list argument as a Python list, an int64 constant, or a fed int32 tensor."""
    how = draw(st.sampled_from(("list", "int64", "fed")))
    arr = np.array(values, dtype=np.int32 if how != "int64" else np.int64).reshape(-1)
    if how == "list":
        return (lambda: list(values)), {}
    if how == "int64":
        return (lambda: tf.constant(arr)), {}
    return (lambda: tf.placeholder(tf.int32, [None], name=name)), {name: arr}


# --- reshape-like -------------------------------------------------------------------------


@st.composite
def _reshape(draw):
    make, x = draw(_fed())
    groups, dims = [], list(x.shape)
    while dims:  # regroup consecutive dims, sometimes adding size-1 dims
        k = draw(st.integers(1, len(dims)))
        groups.append(int(np.prod(dims[:k], dtype=np.int64)))
        dims = dims[k:]
        if draw(st.booleans()):
            groups.append(1)
    sizes = list(groups)
    if sizes and draw(st.booleans()):
        i = draw(st.integers(0, len(sizes) - 1))
        if int(np.prod(sizes[:i] + sizes[i + 1:], dtype=np.int64)) > 0:
            sizes[i] = -1
    shape_arg, feeds = _index_arg(draw, sizes)
    return OpCase(lambda: [tf.reshape(make(), shape_arg())], {"x": x, **feeds},
                  lambda f: [f["x"].reshape(groups)])


@st.composite
def _transpose(draw):
    make, x = draw(_fed())
    rank = x.ndim
    perm = draw(st.permutations(list(range(rank)))) if rank else []
    perm = [p - rank if draw(st.booleans()) else p for p in perm]
    default = draw(st.booleans())
    expected = np.transpose(x) if default else x.transpose([p % rank for p in perm])
    return OpCase(lambda: [tf.transpose(make(), None if default else perm)], {"x": x},
                  lambda f: [expected])


@st.composite
def _conjugate_transpose(draw):
    shape = draw(shapes(max_dims=3))
    x = (draw(arrays(np.float32, shape)) + 1j * draw(arrays(np.float32, shape)))
    x = np.asarray(x, dtype=np.complex64)
    static = draw(_static(shape))
    expected = np.conj(x.T)
    return OpCase(lambda: [tf.transpose(tf.placeholder(tf.complex64, static, name="x"),
                                        conjugate=True)],
                  {"x": x}, lambda f: [expected])


@st.composite
def _expand_dims(draw):
    make, x = draw(_fed())
    axis = draw(st.integers(-x.ndim - 1, x.ndim))
    new_shape = list(x.shape)
    new_shape.insert(axis % (x.ndim + 1), 1)
    return OpCase(lambda: [tf.expand_dims(make(), axis)], {"x": x},
                  lambda f: [f["x"].reshape(new_shape)])


@st.composite
def _squeeze(draw):
    shape = draw(shapes(max_dims=4, max_side=3))
    make, x = draw(_fed(shape=shape))
    ones = [i for i, d in enumerate(shape) if d == 1]
    if draw(st.booleans()):
        axes = None
        kept = [d for d in shape if d != 1]
    else:
        chosen = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True)) if ones else []
        axes = [a - len(shape) if draw(st.booleans()) else a for a in chosen]
        kept = [d for i, d in enumerate(shape) if i not in chosen or not chosen and d != 1]
    return OpCase(lambda: [tf.squeeze(make(), axes)], {"x": x},
                  lambda f: [f["x"].reshape(kept)])


@st.composite
def _reverse(draw):
    make, x = draw(_fed())
    rank = x.ndim
    axes = draw(st.lists(st.integers(0, rank - 1), unique=True)) if rank else []
    axes_arg = [a - rank if draw(st.booleans()) else a for a in axes]
    index = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(rank))
    return OpCase(lambda: [tf.reverse(make(), axes_arg)], {"x": x},
                  lambda f: [f["x"][index]])


# --- joins and splits ------------------------------------------------------------------------


@st.composite
def _concat(draw):
    base = list(draw(shapes(min_dims=1, max_dims=3)))
    dtype = draw(st.sampled_from(DTYPES))
    axis = draw(st.integers(-len(base), len(base) - 1))
    n = draw(st.integers(2, 4))
    makers, values = [], []
    for i in range(n):
        shape = list(base)
        shape[axis] = draw(st.integers(0, 3))
        make, v = draw(_fed(shape=shape, dtype=dtype, name=f"x{i}"))
        makers.append(make)
        values.append(v)
    expected = np.concatenate(values, axis=axis)
    return OpCase(lambda: [tf.concat([m() for m in makers], axis)],
                  {f"x{i}": v for i, v in enumerate(values)}, lambda f: [expected])


@st.composite
def _stack(draw):
    shape = draw(shapes(max_dims=3))
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(1, 4))
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    pairs = [draw(_fed(shape=shape, dtype=dtype, name=f"x{i}")) for i in range(n)]
    out_shape = list(shape)
    out_shape.insert(axis % (len(shape) + 1), n)
    expected = np.empty(out_shape, dtype)
    for i, (_, v) in enumerate(pairs):
        index = [slice(None)] * len(out_shape)
        index[axis % (len(shape) + 1)] = i
        expected[tuple(index)] = v
    return OpCase(lambda: [tf.stack([m() for m, _ in pairs], axis=axis)],
                  {f"x{i}": v for i, (_, v) in enumerate(pairs)}, lambda f: [expected])


@st.composite
def _unstack(draw):
    shape = list(draw(shapes(min_dims=1, max_dims=3)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    shape[axis] = draw(st.integers(1, 4))
    x = draw(arrays(draw(st.sampled_from(DTYPES)), shape))
    static = draw(_static(shape))
    num = shape[axis] if static is None or static[axis] is None else None
    tf_dtype = tf.as_dtype(x.dtype)
    parts = [np.asarray(np.take(x, i, axis=axis)) for i in range(shape[axis])]
    return OpCase(lambda: tf.unstack(tf.placeholder(tf_dtype, static, name="x"), num=num,
                                     axis=axis),
                  {"x": x}, lambda f: parts)


@st.composite
def _split(draw):
    shape = list(draw(shapes(min_dims=1, max_dims=3)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    num = draw(st.integers(1, 4))
    shape[axis] = num * draw(st.integers(0, 2))
    make, x = draw(_fed(shape=shape))
    step = shape[axis] // num
    parts = [np.take(x, np.arange(i * step, (i + 1) * step), axis=axis) for i in range(num)]
    return OpCase(lambda: tf.split(make(), num, axis=axis), {"x": x}, lambda f: parts)


@st.composite
def _split_v(draw):
    shape = list(draw(shapes(min_dims=1, max_dims=3)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    shape[axis] = sum(sizes)
    make, x = draw(_fed(shape=shape))
    arg = list(sizes)
    if draw(st.booleans()):
        arg[draw(st.integers(0, len(sizes) - 1))] = -1
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    parts = [np.take(x, np.arange(starts[i], starts[i + 1]), axis=axis)
             for i in range(len(sizes))]
    sizes_arg, feeds = _index_arg(draw, arg)
    return OpCase(lambda: tf.split(make(), sizes_arg(), axis=axis, num=len(sizes)),
                  {"x": x, **feeds}, lambda f: parts)


# --- made from a shape ---------------------------------------------------------------------


@st.composite
def _fill(draw):
    dims = list(draw(shapes(max_dims=3)))
    dtype = draw(st.sampled_from(DTYPES))
    value = draw(arrays(dtype, ()))
    dims_arg, feeds = _index_arg(draw, dims)
    return OpCase(lambda: [tf.fill(dims_arg(), value)], feeds,
                  lambda f: [np.full(dims, value, dtype)])


@st.composite
def _like(draw, fn_name, fill_value):
    shape = draw(shapes(max_dims=3))
    x = draw(arrays(draw(st.sampled_from(DTYPES)), shape))
    static = [None] + list(shape[1:]) if shape else None  # not fully known: the op is built
    tf_dtype = tf.as_dtype(x.dtype)
    fn = getattr(tf, fn_name)
    return OpCase(lambda: [fn(tf.placeholder(tf_dtype, static, name="x"))], {"x": x},
                  lambda f: [np.full(x.shape, fill_value, x.dtype)])


@st.composite
def _range(draw):
    dtype = draw(st.sampled_from((np.int32, np.int64, np.float32, np.float64)))
    start = draw(st.integers(-10, 10))
    delta = draw(st.sampled_from((1, 2, 3, -1, -2) if dtype in (np.int32, np.int64)
                                 else (0.25, 0.5, 1.5, -0.5, -1.0)))
    limit = start + int(np.sign(delta)) * draw(st.integers(0, 12))
    expected = np.array([start + i * delta
                         for i in range(int(np.ceil((limit - start) / delta)))], dtype)
    fed = draw(st.booleans())
    tf_dtype = tf.as_dtype(dtype)
    feeds = {"start": np.array(start, dtype)} if fed else {}

    def build():
        s = tf.placeholder(tf_dtype, [], name="start") if fed else start
        return [tf.range(s, limit, delta, dtype=tf_dtype)]

    return OpCase(build, feeds, lambda f: [expected])


@st.composite
def _one_hot(draw):
    idx_dtype = draw(st.sampled_from((np.int32, np.int64, np.uint8)))
    depth = draw(st.integers(0, 5))
    low = 0 if idx_dtype == np.uint8 else -2
    shape = draw(shapes(max_dims=3))
    idx = draw(arrays(idx_dtype, shape, elements=st.integers(low, depth + 2)))
    static = draw(_static(shape))

    def make():
        return tf.placeholder(tf.as_dtype(idx_dtype), static, name="x")

    axis = draw(st.sampled_from([None, -1] + list(range(len(shape) + 1))))
    out_dtype = draw(st.sampled_from((np.float32, np.int32, np.float64)))
    on, off = draw(arrays(out_dtype, ())), draw(arrays(out_dtype, ()))
    hot = idx.astype(np.int64)[..., None] == np.arange(depth)
    expected = np.where(hot, on, off).astype(out_dtype)
    if axis not in (None, -1):
        expected = np.moveaxis(expected, -1, axis)
    return OpCase(lambda: [tf.one_hot(make(), depth, on_value=on, off_value=off, axis=axis)],
                  {"x": idx}, lambda f: [expected])


# --- padding, tiling, broadcasting ----------------------------------------------------------


def _mirror_map(n_out, before, size, mode):
    """For each output position along one dim, the input index mirror padding reads.

    REFLECT mirrors about the edge element (not repeated); SYMMETRIC about the edge itself
    (the edge element is repeated)."""
    edge = 0 if mode == "REFLECT" else 1
    out = []
    for j in range(n_out):
        i = j - before
        if i < 0:
            i = -i - edge
        elif i >= size:
            i = 2 * (size - 1) - i + edge
        out.append(i)
    return out


def _pads_arg(draw, pads):
    """paddings as a nested list, an int64 constant or a fed [None, 2] int32 tensor."""
    arr = np.array(pads, dtype=np.int32).reshape(-1, 2)
    how = draw(st.sampled_from(("list", "int64", "fed")))
    if how == "list":
        return (lambda: arr.tolist() if arr.size else arr), {}
    if how == "int64":
        return (lambda: tf.constant(arr.astype(np.int64))), {}
    return (lambda: tf.placeholder(tf.int32, [None, 2], name="p")), {"p": arr}


@st.composite
def _pad(draw, kind):
    mode = {"Pad": "CONSTANT", "PadV2": "CONSTANT"}.get(kind) or draw(
        st.sampled_from(("REFLECT", "SYMMETRIC")))
    min_side = 0 if mode == "CONSTANT" else (2 if mode == "REFLECT" else 1)
    shape = draw(shapes(max_dims=3, min_side=min_side, max_side=4))
    dtype = draw(st.sampled_from(DTYPES if kind == "Pad" else DTYPES[:4]))
    make, x = draw(_fed(shape=shape, dtype=dtype))
    most = [3 if mode == "CONSTANT" else d - (1 if mode == "REFLECT" else 0) for d in shape]
    pads = [[draw(st.integers(0, m)), draw(st.integers(0, m))] for m in most]
    pads_arg, feeds = _pads_arg(draw, pads)
    value = draw(arrays(dtype, ())) if kind == "PadV2" else np.zeros((), dtype)
    if kind == "PadV2" and value == 0:
        value = np.ones((), dtype)
    spelled = draw(st.sampled_from((mode, mode.lower(), mode.capitalize())))
    if x.ndim == 0:
        expected = x
    elif mode == "CONSTANT":
        expected = np.pad(x, pads, constant_values=value)
    else:
        maps = [_mirror_map(d + b + a, b, d, mode) for d, (b, a) in zip(shape, pads)]
        expected = x[np.ix_(*maps)]
    return OpCase(lambda: [tf.pad(make(), pads_arg(), spelled, constant_values=value)],
                  {"x": x, **feeds}, lambda f: [expected])


@st.composite
def _tile(draw):
    make, x = draw(_fed(max_dims=3))
    reps = [draw(st.integers(0, 3)) for _ in x.shape]
    maps = [np.arange(d * m) % max(d, 1) for d, m in zip(x.shape, reps)]
    expected = x[np.ix_(*maps)] if maps else x
    reps_arg, feeds = _index_arg(draw, reps)
    return OpCase(lambda: [tf.tile(make(), reps_arg())], {"x": x, **feeds},
                  lambda f: [expected])


@st.composite
def _broadcast_to(draw):
    target = list(draw(shapes(max_dims=4)))
    k = draw(st.integers(0, len(target)))
    shape = [1 if draw(st.booleans()) else d for d in target[len(target) - k:]]
    dtype = draw(st.sampled_from(DTYPES[:4]))
    make, x = draw(_fed(shape=shape, dtype=dtype))
    target_arg, feeds = _index_arg(draw, target)
    return OpCase(lambda: [tf.broadcast_to(make(), target_arg())], {"x": x, **feeds},
                  lambda f: [x + np.zeros(target, dtype)])


SAMPLES = {
    "Reshape": _reshape(),
    "Transpose": _transpose(),
    "ConjugateTranspose": _conjugate_transpose(),
    "ExpandDims": _expand_dims(),
    "Squeeze": _squeeze(),
    "ReverseV2": _reverse(),
    "ConcatV2": _concat(),
    "Pack": _stack(),
    "Unpack": _unstack(),
    "Split": _split(),
    "SplitV": _split_v(),
    "Fill": _fill(),
    "ZerosLike": _like("zeros_like", 0),
    "OnesLike": _like("ones_like", 1),
    "Range": _range(),
    "OneHot": _one_hot(),
    "Pad": _pad("Pad"),
    "PadV2": _pad("PadV2"),
    "MirrorPad": _pad("MirrorPad"),
    "Tile": _tile(),
    "BroadcastTo": _broadcast_to(),
}
