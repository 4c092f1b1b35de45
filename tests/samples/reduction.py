"""Samples for ops/reduction_ops.py: Sum, Mean, Prod, Max, Min, Any, All, ArgMax, ArgMin.

Inputs come from a constant or a placeholder of unknown shape; axes are None, an int, or a
list (negative and repeated axes included), given statically or fed through a placeholder,
with keepdims on or off.  Each oracle is written directly in NumPy (integer means by
truncating float division, empty max/min by explicit identities).
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf
from flowjit.ops.sum_to_shape import sum_to_shape_of

from . import OpCase
from .strategies import FLOAT_DTYPES, INT_DTYPES, arrays, shapes

_FN = {"Sum": tf.reduce_sum, "Mean": tf.reduce_mean, "Prod": tf.reduce_prod,
       "Max": tf.reduce_max, "Min": tf.reduce_min, "Any": tf.reduce_any, "All": tf.reduce_all}


def _normalized(axis, rank):
    if axis is None:
        return tuple(range(rank))
    return tuple(sorted({a % rank for a in np.atleast_1d(axis).tolist()}))


def _kept(x, axes, keep, value):
    """Reshape a result computed over `axes` to keepdims form if asked."""
    if keep:
        return np.reshape(value, [1 if i in axes else d for i, d in enumerate(x.shape)])
    return value


def _oracle(op_type, x, axes, keep):
    out_shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    count = int(np.prod([x.shape[a] for a in axes]))
    if op_type == "Sum":
        value = np.add.reduce(x, axis=axes, dtype=x.dtype) if axes else x
    elif op_type == "Prod":
        value = np.multiply.reduce(x, axis=axes, dtype=x.dtype) if axes else x
    elif op_type == "Mean":
        wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
        total = np.add.reduce(wide, axis=axes) if axes else wide
        if x.dtype.kind in "iu":
            value = np.zeros(out_shape) if count == 0 else np.trunc(total / count)
        else:
            value = total / count if count else np.full(out_shape, np.nan)
    elif op_type in ("Max", "Min"):
        if count == 0:
            if x.dtype.kind == "f":
                ident = -np.inf if op_type == "Max" else np.inf
            else:
                info = np.iinfo(x.dtype)
                ident = info.min if op_type == "Max" else info.max
            value = np.full(out_shape, ident)
        else:
            fn = np.maximum if op_type == "Max" else np.minimum
            value = fn.reduce(x, axis=axes) if axes else x
    else:
        fn = np.logical_or if op_type == "Any" else np.logical_and
        value = fn.reduce(x, axis=axes) if axes else x
    return _kept(x, axes, keep, np.asarray(value).astype(x.dtype))


def _dtypes_for(op_type):
    if op_type in ("Any", "All"):
        return (np.bool_,)
    if op_type in ("Sum", "Mean", "Prod"):
        return FLOAT_DTYPES + INT_DTYPES + (np.complex128,)
    return FLOAT_DTYPES + INT_DTYPES


@st.composite
def _axis(draw, rank):
    if rank == 0:
        return draw(st.sampled_from([None, []]))
    one = st.integers(-rank, rank - 1)
    return draw(st.one_of(st.none(), one, st.lists(one, max_size=rank + 1)))


@st.composite
def _reduction(draw, op_type):
    dtype = draw(st.sampled_from(_dtypes_for(op_type)))
    elements = None
    if op_type == "Prod":
        elements = (st.integers(-3, 3) if np.dtype(dtype).kind in "iu"
                    else st.floats(-2, 2, width=np.dtype(dtype).itemsize * 8))
    if dtype == np.complex128:
        elements = st.complex_numbers(max_magnitude=3, allow_nan=False, allow_infinity=False)
    x = draw(arrays(dtype, draw(shapes()), elements))
    axis = draw(_axis(x.ndim))
    keep = draw(st.booleans())
    fed_input = draw(st.booleans())
    fed_axis = axis is not None and draw(st.booleans())
    tf_dtype = tf.as_dtype(dtype)
    feeds = {"x": x} if fed_input else {}
    if fed_axis:
        feeds["axis"] = np.asarray(axis, np.int32)

    def build():
        inp = tf.placeholder(tf_dtype, name="x") if fed_input else tf.constant(x)
        ax = tf.placeholder(tf.int32, name="axis") if fed_axis else axis
        return [_FN[op_type](inp, axis=ax, keepdims=keep)]

    axes = _normalized(axis, x.ndim)
    # Max/Min select a value: exact; sums and products round once per term
    tol = 0.0 if op_type in ("Max", "Min") else 1e-3 if dtype == np.float32 else 1e-9
    return OpCase(build, feeds, lambda f: [_oracle(op_type, x, axes, keep)], rtol=tol,
                  atol=tol)


@st.composite
def _arg(draw, op_type):
    dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES + (np.bool_,)))
    shape = list(draw(shapes(min_dims=1)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    shape[axis] = max(shape[axis], 1)
    x = draw(arrays(dtype, tuple(shape)))
    output_type = draw(st.sampled_from((tf.int32, tf.int64)))
    fed = draw(st.booleans())

    def build():
        inp = tf.placeholder(tf.as_dtype(dtype), name="x") if fed else tf.constant(x)
        fn = tf.argmax if op_type == "ArgMax" else tf.argmin
        return [fn(inp, axis=axis, output_type=output_type)]

    def expected(f):
        moved = np.moveaxis(x, axis, -1)
        target = moved.max(axis=-1) if op_type == "ArgMax" else moved.min(axis=-1)
        # the first position holding the extreme value
        hits = moved == target[..., None]
        return [np.asarray(hits.argmax(axis=-1), output_type.np_dtype)]

    return OpCase(build, {"x": x} if fed else {}, expected)


@st.composite
def _sum_to_shape(draw):
    dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES))
    target = draw(shapes(max_dims=3, max_side=4))
    lead = draw(shapes(max_dims=2, max_side=3))
    grad_shape = tuple(lead) + tuple(d if d != 1 else draw(st.integers(1, 3)) for d in target)
    g = draw(arrays(dtype, grad_shape))
    axes = tuple(range(len(lead))) + tuple(len(lead) + i for i, d in enumerate(target)
                                           if d == 1 and grad_shape[len(lead) + i] != 1)
    expected = g.sum(axis=axes, dtype=dtype).reshape(target) if axes else g
    fed = draw(st.booleans())

    def build():
        inp = tf.placeholder(tf.as_dtype(dtype), name="g") if fed else tf.constant(g)
        return [sum_to_shape_of(inp, list(target))]

    tol = 1e-3 if dtype == np.float32 else 1e-9
    return OpCase(build, {"g": g} if fed else {}, lambda f: [expected], rtol=tol, atol=tol)


SAMPLES = {
    **{name: _reduction(name) for name in _FN},
    "ArgMax": _arg("ArgMax"),
    "ArgMin": _arg("ArgMin"),
    "SumToShape": _sum_to_shape(),
}
