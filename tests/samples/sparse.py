"""Samples for the sparse-update ops: ops/variable_scatter_ops.py (ScatterUpdate, ScatterAdd,
ScatterSub, ScatterMul, ScatterDiv, ScatterMax, ScatterMin), ops/sparse_training_ops.py
(SparseApplyMomentum, SparseApplyAdagrad) and ops/unique_ops.py (Unique, UniqueWithCounts).

Indices repeat often (drawn from few rows), updates may be a scalar; the oracles walk the
indices one by one in plain Python/NumPy, in order, from the ops' definitions.
"""

import math

import numpy as np
from hypothesis import strategies as st

import flowjit as tf
from flowjit.ops import sparse_training_ops

from . import OpCase
from .strategies import arrays, shapes

_SCATTERS = {
    "ScatterUpdate": ("scatter_update", lambda a, u: u),
    "ScatterAdd": ("scatter_add", lambda a, u: a + u),
    "ScatterSub": ("scatter_sub", lambda a, u: a - u),
    "ScatterMul": ("scatter_mul", lambda a, u: a * u),
    "ScatterDiv": ("scatter_div", None),   # by dtype: see _divide
    "ScatterMax": ("scatter_max", np.maximum),
    "ScatterMin": ("scatter_min", np.minimum),
}


def _divide(a, u):
    if a.dtype.kind in "iu":   # truncated towards zero, element by element
        return np.array([math.trunc(int(x) / int(y)) for x, y in
                         zip(np.ravel(a), np.ravel(u))], a.dtype).reshape(np.shape(a))
    with np.errstate(all="ignore"):
        return a / u


@st.composite
def _scatter(draw, op_type):
    fn, combine = _SCATTERS[op_type]
    combine = combine or _divide
    dtype = draw(st.sampled_from((np.float32, np.float64, np.int32)))
    rows = draw(st.integers(1, 4))
    rest = draw(shapes(max_dims=2, max_side=3))
    start = draw(arrays(dtype, (rows,) + rest))
    index_shape = draw(shapes(max_dims=2, max_side=3))
    indices = draw(arrays(np.int32, index_shape, st.integers(0, rows - 1)))
    nonzero = st.integers(-9, 9).filter(lambda v: v != 0)
    elements = nonzero if op_type == "ScatterDiv" and dtype == np.int32 else None
    scalar = draw(st.booleans()) and draw(st.booleans())
    updates = draw(arrays(dtype, () if scalar else index_shape + rest, elements))

    def build():
        v = tf.Variable(start, name="v")
        u = tf.placeholder(tf.as_dtype(dtype), updates.shape, name="u")
        with tf.control_dependencies([v.initializer]):
            return [getattr(tf, fn)(v, indices, u)]

    def expected(f):
        out = start.copy()
        flat = indices.reshape(-1)
        rows_of = np.broadcast_to(updates, index_shape + rest).reshape((flat.size,) + rest)
        for r, row in enumerate(flat):   # in order: a repeated index is updated again
            out[row] = np.asarray(combine(out[row], rows_of[r]), dtype)
        return [out]

    tol = 1e-5 if dtype == np.float32 else 1e-12
    return OpCase(build, {"u": updates}, expected, rtol=tol, atol=tol)


@st.composite
def _sparse_apply(draw, op_type):
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    rows = draw(st.integers(1, 4))
    rest = draw(shapes(max_dims=2, max_side=3))
    var = draw(arrays(dtype, (rows,) + rest))
    accum = draw(arrays(dtype, (rows,) + rest, st.floats(0.5, 5, width=np.dtype(dtype).itemsize
                                                          * 8)))
    k = draw(st.integers(0, 5))
    indices = draw(arrays(np.int64, (k,), st.integers(0, rows - 1)))
    grad = draw(arrays(dtype, (k,) + rest))
    lr, momentum = (np.array(draw(st.floats(0.05, 0.95)), dtype) for _ in range(2))
    nesterov = draw(st.booleans())

    def build():
        v, a = tf.Variable(var, name="var"), tf.Variable(accum, name="accum")
        g = tf.placeholder(tf.as_dtype(dtype), grad.shape, name="grad")
        with tf.control_dependencies([v.initializer, a.initializer]):
            if op_type == "SparseApplyMomentum":
                return [sparse_training_ops.sparse_apply_momentum(
                    v, a, lr, g, indices, momentum, use_nesterov=nesterov)]
            return [sparse_training_ops.sparse_apply_adagrad(v, a, lr, g, indices)]

    def expected(f):
        w, acc = var.astype(np.float64), accum.astype(np.float64)
        rate, mu = float(lr), float(momentum)
        for i, row in enumerate(indices):
            g = grad[i].astype(np.float64)
            if op_type == "SparseApplyMomentum":
                acc[row] = acc[row] * mu + g
                w[row] -= g * rate + acc[row] * mu * rate if nesterov else acc[row] * rate
            else:
                acc[row] += g * g
                w[row] -= rate * g / np.sqrt(acc[row])
        return [w.astype(dtype)]

    tol = 1e-4 if dtype == np.float32 else 1e-10
    return OpCase(build, {"grad": grad}, expected, rtol=tol, atol=tol)


def _first_appearance(x):
    values, idx, counts, seen = [], [], [], {}
    for v in x.tolist():
        key = ("nan", len(values)) if v != v else v   # every NaN is new
        if key not in seen:
            seen[key] = len(values)
            values.append(v)
            counts.append(0)
        idx.append(seen[key])
        counts[seen[key]] += 1
    return values, idx, counts


@st.composite
def _unique(draw, op_type):
    dtype = draw(st.sampled_from((np.int32, np.int64, np.float32, np.float64)))
    pool = [0, 3, -2, 7] + ([np.nan, 0.5] if np.dtype(dtype).kind == "f" else [])
    x = np.array(draw(st.lists(st.sampled_from(pool), max_size=9)), dtype)
    out_dtype, np_out = draw(st.sampled_from(((tf.int32, np.int32), (tf.int64, np.int64))))

    def build():
        p = tf.placeholder(tf.as_dtype(dtype), [None], name="x")
        if op_type == "Unique":
            return list(tf.unique(p, out_idx=out_dtype))
        return list(tf.unique_with_counts(p, out_idx=out_dtype))

    def expected(f):
        values, idx, counts = _first_appearance(x)
        out = [np.array(values, dtype), np.array(idx, np_out)]
        return out + ([np.array(counts, np_out)] if op_type == "UniqueWithCounts" else [])

    return OpCase(build, {"x": x}, expected)


SAMPLES = {
    **{k: _scatter(k) for k in _SCATTERS},
    **{k: _sparse_apply(k) for k in ("SparseApplyMomentum", "SparseApplyAdagrad")},
    **{k: _unique(k) for k in ("Unique", "UniqueWithCounts")},
}
