"""NumPy reductions and scans on traced arrays, with NumPy's dtypes and edge cases.

sum/prod/mean accumulate in the dtype NumPy picks (int32 sums in int64, float32 stays
float32: asked of NumPy on a one-element array); max/min of an empty axis raise NumPy's
ValueError; argmax/argmin return the first NaN's index when there is one (NumPy's rule,
not TensorFlow's); var/std take `ddof`; cumsum is a log-step scan of shifted adds, which
the compiler fuses; norm covers vector and Frobenius norms.
"""

from __future__ import annotations

import numpy as np
from numpy.exceptions import AxisError

from ..ops import api as op_api
from ..ops.check_ops import ensure_non_empty
from .np_array import (GraphBreak, NeedsStaticShapes, TracedArray, api, as_tensor, to_tensor,
                       wrap)


def normalize_axes(axis, ndim: int) -> tuple:
    """NumPy's axis argument as a sorted tuple of non-negative axes (AxisError if bad)."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            raise AxisError(a, ndim)
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _traced(x) -> TracedArray:
    if isinstance(x, TracedArray):
        return x
    t = as_tensor(x)
    return wrap(t if t is not None else to_tensor(x, np.asarray(x).dtype))


_TF = {"sum": op_api.reduce_sum, "prod": op_api.reduce_prod, "max": op_api.reduce_max,
       "min": op_api.reduce_min, "mean": op_api.reduce_mean, "any": op_api.reduce_any,
       "all": op_api.reduce_all}


def reduce(kind: str, x, axis=None, dtype=None, keepdims=False, out=None, **kwargs):
    """np.sum/prod/max/min/mean/any/all(x, axis, dtype, keepdims); sum/prod/max/min also
    with `initial=` and `where=` (see `_masked_reduce`)."""
    kwargs = {k: v for k, v in kwargs.items() if v is not np._NoValue}
    if kwargs.get("where", True) is not True or kwargs.get("initial", None) is not None:
        if kind not in ("sum", "prod", "max", "min"):
            raise GraphBreak(f"np.{kind}(..., where=)")
        return _finish(_masked_reduce(kind, x, axis, dtype, keepdims, **kwargs), out)
    x = _traced(x)
    axes = normalize_axes(axis, x.ndim)
    sample = np.zeros((1,) * x.ndim, x.dtype)
    if kind in ("any", "all"):
        rdt = np.dtype(bool)
    elif kind in ("max", "min"):
        rdt = x.dtype
        t = x._as_graph_tensor()
        dims = t.shape.as_list() if t.shape.ndims else []
        message = (f"zero-size array to reduction operation "
                   f"{'maximum' if kind == 'max' else 'minimum'} which has no identity")
        if any(dims[a] == 0 for a in axes):
            raise ValueError(message)
        x = _non_empty(x, [a for a in axes if dims[a] is None], message)
    else:
        rdt = getattr(np, kind)(sample, dtype=dtype).dtype
    t = to_tensor(x, rdt)
    if not axes:
        result = t
    else:
        result = _reducer(kind, rdt)(t, axis=list(axes), keepdims=bool(keepdims))
    return _finish(wrap(result), out)


def _reducer(kind: str, dtype: np.dtype):
    """The TF-level reduction for np.`kind` over values of `dtype`: the max/min of booleans
    are any/all (TF's Max/Min have no boolean kernels)."""
    tf = api()
    if kind in ("max", "min") and dtype.kind == "b":
        return tf.reduce_any if kind == "max" else tf.reduce_all
    return _TF[kind]


def _masked_reduce(kind, x, axis, dtype, keepdims, initial=None, where=True):
    """np.sum/prod/max/min(x, ..., initial=, where=): the reduction of where(mask, x,
    identity) combined with `initial` as NumPy converts it (the reduction of an empty array
    with that initial), so an empty or fully masked slice gives `initial`. NumPy first runs
    the call on zero-stride stand-ins of the same shapes and dtypes, so its errors (max/min
    with where= but no initial, a mask that does not broadcast to x or is not boolean, an
    initial out of the dtype's range) are NumPy's own."""
    from .np_functions import where as select
    from .np_ufuncs import call

    if as_tensor(initial) is not None:
        raise GraphBreak(f"np.{kind}(..., initial=<a traced value>)")
    x = _traced(x)
    masked = where is not True
    mask = _traced(where) if as_tensor(where) is not None else np.asarray(where)
    fn = getattr(np, kind)
    extra = {} if initial is None else {"initial": initial}
    if kind in ("sum", "prod"):
        extra["dtype"] = dtype
    shape = x.shape if masked else (1,) * x.ndim   # (sizes are read only for a mask)
    with np.errstate(all="ignore"):
        probe = fn(np.broadcast_to(np.zeros((), x.dtype), shape), axis=axis, keepdims=keepdims,
                   where=np.broadcast_to(np.zeros((), mask.dtype), mask.shape), **extra)
    rdt = np.asarray(probe).dtype
    values = wrap(to_tensor(x, rdt))
    if masked:
        values = select(mask, values, _identity(kind, rdt))
    t = values._as_graph_tensor()
    axes = normalize_axes(axis, x.ndim)
    op = _reducer(kind, rdt)
    result = wrap(op(t, axis=list(axes), keepdims=bool(keepdims)) if axes else t)
    if initial is not None:
        init = fn(np.zeros((0,), x.dtype), **extra)
        combine = {"sum": np.add, "prod": np.multiply, "max": np.maximum,
                   "min": np.minimum}[kind]
        result = call(combine, (np.asarray(init), result))
    return result


def _non_empty(x, axes, message):
    """`x`, with a run-time check that none of `axes` (of runtime length) is empty."""
    if not axes:
        return x
    return wrap(ensure_non_empty(x._as_graph_tensor(), axes, message))


def _finish(result, out):
    if out is not None:
        out[...] = result
        return out
    return result


def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, std=False, **kwargs):
    """np.var / np.std."""
    if kwargs.get("where", True) is not True or kwargs.get("mean") is not None:
        raise GraphBreak("np.var/np.std with where= or mean=")
    x = _traced(x)
    if x.dtype.kind == "c":
        raise GraphBreak("np.var/np.std of complex values (|x - mean|**2 is not traced)")
    tf = api()
    axes = normalize_axes(axis, x.ndim)
    rdt = np.var(np.zeros((1,) * x.ndim, x.dtype), dtype=dtype).dtype
    t = to_tensor(x, rdt)
    shape = x.shape
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    mean = tf.reduce_mean(t, axis=list(axes), keepdims=True) if axes else t
    d = tf.subtract(t, mean)
    total = tf.reduce_sum(tf.multiply(d, d), axis=list(axes), keepdims=bool(keepdims)) \
        if axes else tf.multiply(d, d)
    result = tf.truediv(total, tf.constant(max(count - ddof, 0), dtype=total.dtype))
    if std:
        result = tf.sqrt(result)
    return _finish(wrap(result), out)


def _one_axis(x, axis):
    """(traced x, its tensor, axis) for functions of one axis where None means the
    flattened array (argmax, cumsum, ...)."""
    x = _traced(x)
    t = x._as_graph_tensor()
    if axis is None:
        return x, api().reshape(t, [-1]), 0
    return x, t, normalize_axes(axis, x.ndim)[0]


def arg_extreme(x, axis=None, out=None, keepdims=False, largest=True):
    """np.argmax / np.argmin, NaN first as NumPy does."""
    tf = api()
    x, t, ax = _one_axis(x, axis)
    dims = t.shape.as_list()
    message = f"attempt to get {'argmax' if largest else 'argmin'} of an empty sequence"
    if dims[ax] == 0:
        raise ValueError(message)
    if dims[ax] is None:
        t = _non_empty(wrap(t), [ax], message)._as_graph_tensor()
    if np.dtype(t.dtype.as_numpy_dtype).kind == "b":
        t = tf.cast(t, tf.int8)
    idx = (tf.argmax if largest else tf.argmin)(t, axis=ax, output_type=tf.int64)
    if t.dtype.is_floating:
        nan = tf.is_nan(t)
        first_nan = tf.argmax(tf.cast(nan, tf.int8), axis=ax, output_type=tf.int64)
        idx = tf.where_v2(tf.reduce_any(nan, axis=ax), first_nan, idx)
    if keepdims:
        idx = tf.expand_dims(idx, ax) if axis is not None else tf.reshape(idx, [1] * x.ndim)
    return _finish(wrap(idx), out)


def cumulative(x, axis=None, dtype=None, out=None, product=False):
    """np.cumsum / np.cumprod: Hillis-Steele scan (ceil(log2 n) shifted combines)."""
    tf = api()
    x, t, ax = _one_axis(x, axis)
    fn = np.cumprod if product else np.cumsum
    rdt = fn(np.zeros(1, x.dtype), dtype=dtype).dtype
    t = to_tensor(t, rdt)
    n = t.shape.as_list()[ax]
    if n is None:   # the scan's steps depend on the size: trace again with exact sizes
        raise NeedsStaticShapes(f"np.{fn.__name__} along an axis of runtime size")
    t = _scan(t, ax, n, tf.multiply if product else tf.add, 1 if product else 0)
    return _finish(wrap(t), out)


def _scan(t, ax: int, n: int, combine, identity):
    """Inclusive scan of `t` along `ax` (length n): ceil(log2 n) steps of combining with
    itself shifted by 1, 2, 4, ... (the shifted-in places hold `identity`)."""
    tf = api()
    rank = t.shape.ndims
    step = 1
    while step < n:
        head = [slice(None)] * rank
        head[ax] = slice(0, n - step)
        pads = [[0, 0]] * rank
        pads[ax] = [step, 0]
        shifted = tf.pad(tf.tensor_getitem(t, tuple(head)), pads, constant_values=identity)
        t = combine(t, shifted)
        step *= 2
    return t


def accumulate(ufunc, x, axis=0, dtype=None):
    """np.add/multiply/maximum/minimum.accumulate: the scan of `cumulative` with the ufunc
    (as traced, so booleans combine as NumPy's or/and) and its identity; NumPy itself,
    on a one-element array, checks the arguments and picks the dtype."""
    from .np_ufuncs import REDUCERS, call

    x = _traced(x)
    rdt = ufunc.accumulate(np.zeros((1,) * x.ndim, x.dtype), axis=axis, dtype=dtype).dtype
    ax = normalize_axes(axis, x.ndim)[0]
    t = to_tensor(x, rdt)
    n = t.shape.as_list()[ax]
    if n is None:
        raise NeedsStaticShapes(f"np.{ufunc.__name__}.accumulate along an axis of runtime size")
    identity = _identity(REDUCERS[ufunc], rdt)
    return wrap(_scan(t, ax, n, lambda a, b: call(ufunc, (wrap(a), wrap(b)))._as_graph_tensor(),
                      identity))


def _identity(kind: str, dtype):
    """The value that leaves `kind`'s result unchanged, in `dtype` (for max and min the
    dtype's lowest and highest values: -inf/inf, the integer limits, False/True)."""
    if kind in ("sum", "prod"):
        value = 0 if kind == "sum" else 1
    elif dtype.kind == "f":
        value = -np.inf if kind == "max" else np.inf
    elif dtype.kind in "iu":
        value = np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max
    else:
        value = kind == "min"
    return np.array(value).astype(dtype)


def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm for vector norms (ord None/1/2/inf/-inf/0) and the Frobenius norm."""
    tf = api()
    x = _traced(x)
    if x.dtype.kind == "c":
        raise GraphBreak("np.linalg.norm of complex values")
    rdt = np.result_type(x.dtype, np.float64) if x.dtype.kind in "biu" else x.dtype
    t = to_tensor(x, rdt)
    axes = normalize_axes(axis, x.ndim)
    matrix = len(axes) == 2
    if matrix and ord not in (None, "fro"):
        raise GraphBreak(f"np.linalg.norm(ord={ord!r}) of a matrix")
    kd = bool(keepdims)
    a = tf.abs(t)
    if ord in (None, "fro", 2):
        r = tf.sqrt(tf.reduce_sum(tf.multiply(t, t), axis=list(axes), keepdims=kd))
    elif ord == 1:
        r = tf.reduce_sum(a, axis=list(axes), keepdims=kd)
    elif ord == np.inf:
        r = tf.reduce_max(a, axis=list(axes), keepdims=kd)
    elif ord == -np.inf:
        r = tf.reduce_min(a, axis=list(axes), keepdims=kd)
    elif ord == 0:
        r = tf.reduce_sum(tf.cast(tf.not_equal(t, tf.zeros_like(t)), t.dtype),
                          axis=list(axes), keepdims=kd)
    else:
        raise GraphBreak(f"np.linalg.norm(ord={ord!r})")
    return wrap(r)
