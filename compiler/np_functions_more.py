"""More NumPy functions on traced arrays, composed from the ufuncs and functions already traced.

`MORE_FUNCTIONS` maps each NumPy function to its traced implementation; np_functions merges
it into `FUNCTIONS` (the table `__array_function__` dispatches on and docs/numpy_support.md
lists). Covered: nansum/nanmean/nanmax/nanmin (NumPy's results for all-NaN slices: 0 for
nansum, nan for the others), count_nonzero, ptp, average (weights must be NumPy values, not
traced: NumPy raises ZeroDivisionError when they sum to zero, a check on the data), cross of
3-vectors along the last axis, meshgrid, sinc and tensordot. Arguments these cannot follow
exactly (average(returned=True), cross of 2-vectors or other axes, `out=`/`where=` on the
nan-reductions) raise GraphBreak.
"""

from __future__ import annotations

import numpy as np

from . import np_linalg as la
from . import np_reductions as red
from .np_array import GraphBreak, TracedArray, as_tensor, to_tensor, wrap
from .np_ufuncs import call


def _traced(x) -> TracedArray:
    return red._traced(x)


def _no_extras(name, out=None, **kwargs):
    if out is not None or kwargs.get("where", True) is not True or \
            kwargs.get("initial", np._NoValue) is not np._NoValue:
        raise GraphBreak(f"np.{name}(..., out=/where=/initial=)")


def _nan_to(a, value):
    """`a` with NaNs replaced by `value` (a itself when its dtype has no NaN)."""
    from .np_functions import where

    return where(call(np.isnan, (a,)), value, a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """np.nansum: the sum with NaNs counted as zero."""
    _no_extras("nansum", out, **kwargs)
    a = _traced(a)
    if a.dtype.kind in "fc":
        a = _nan_to(a, 0)
    return red.reduce("sum", a, axis, dtype, keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """np.nanmean: sum of the non-NaN values over their count (nan for an all-NaN slice)."""
    _no_extras("nanmean", out, **kwargs)
    a = _traced(a)
    if a.dtype.kind not in "fc":
        return red.reduce("mean", a, axis, dtype, keepdims)
    total = red.reduce("sum", _nan_to(a, 0), axis, dtype, keepdims)
    count = red.reduce("sum", call(np.logical_not, (call(np.isnan, (a,)),)), axis, np.intp,
                       keepdims)
    return wrap(to_tensor(call(np.true_divide, (total, count)), total.dtype))


def _nan_extreme(kind):
    def build(a, axis=None, out=None, keepdims=False, **kwargs):
        from .np_functions import where

        _no_extras(f"nan{kind}", out, **kwargs)
        a = _traced(a)
        if a.dtype.kind not in "f":
            return red.reduce(kind, a, axis, None, keepdims)
        fill = -np.inf if kind == "max" else np.inf
        r = red.reduce(kind, _nan_to(a, fill), axis, None, keepdims)
        all_nan = red.reduce("all", call(np.isnan, (a,)), axis, None, keepdims)
        return where(all_nan, np.nan, r)
    build.__doc__ = f"np.nan{kind}: NaNs ignored; nan for an all-NaN slice."
    return build


def count_nonzero(a, axis=None, *, keepdims=False):
    """np.count_nonzero (a 0-d intp array where NumPy returns a Python int)."""
    a = _traced(a)
    return red.reduce("sum", call(np.not_equal, (a, 0)), axis, np.intp, keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    """np.ptp: max - min in a's dtype (integers wrap, as in NumPy)."""
    if out is not None:
        raise GraphBreak("np.ptp(..., out=)")
    a = _traced(a)
    return call(np.subtract, (red.reduce("max", a, axis, None, keepdims),
                              red.reduce("min", a, axis, None, keepdims)))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """np.average; `weights` must be a NumPy value (see the module docstring)."""
    if returned:
        raise GraphBreak("np.average(..., returned=True)")
    a = _traced(a)
    if weights is None:
        return red.reduce("mean", a, axis, None, keepdims)
    if as_tensor(weights) is not None:
        raise GraphBreak("np.average with traced weights",
                         "NumPy raises ZeroDivisionError when the weights sum to zero")
    wgt = np.asanyarray(weights)
    if a.dtype.kind in "biu":
        dt = np.result_type(a.dtype, wgt.dtype, "f8")
    else:
        dt = np.result_type(a.dtype, wgt.dtype)
    if a.shape != wgt.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        axes = [red.normalize_axes(k, a.ndim)[0] for k in np.atleast_1d(axis)]
        if wgt.shape != tuple(a.shape[ax] for ax in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        wgt = wgt.transpose(np.argsort(axes)).reshape(
            tuple(s if k in axes else 1 for k, s in enumerate(a.shape)))
    wgt = np.broadcast_to(wgt, a.shape).astype(dt)
    scl = wgt.sum(axis=axis, dtype=dt, keepdims=keepdims)
    if np.any(scl == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    total = red.reduce("sum", call(np.multiply, (wrap(to_tensor(a, dt)), wgt)), axis, None,
                       keepdims)
    return call(np.true_divide, (total, np.asarray(scl, dt)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross of 3-vectors along the last axis (anything else is a GraphBreak)."""
    a, b = _traced(a), _traced(b)
    if axis is not None or (axisa, axisb, axisc) != (-1, -1, -1) or a.ndim == 0 or \
            b.ndim == 0 or a.shape[-1] != 3 or b.shape[-1] != 3:
        raise GraphBreak("np.cross other than of 3-vectors along the last axis")
    from .np_functions import astype, stack

    dt = np.promote_types(a.dtype, b.dtype)
    a, b = astype(a, dt), astype(b, dt)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]

    def term(p, q, r, s):
        return call(np.subtract, (call(np.multiply, (p, q)), call(np.multiply, (r, s))))
    return stack([term(a1, b2, a2, b1), term(a2, b0, a0, b2), term(a0, b1, a1, b0)], -1)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """np.meshgrid (a tuple, as in NumPy 2)."""
    from .np_functions import broadcast_to, reshape

    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    output = [reshape(_traced(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = reshape(output[0], (1, -1) + s0[2:])
        output[1] = reshape(output[1], (-1, 1) + s0[2:])
    if not sparse:
        shape = np.broadcast_shapes(*[o.shape for o in output])
        output = [broadcast_to(o, shape) for o in output]
    return tuple(output)


def sinc(x):
    """np.sinc, by NumPy's own formula: sin(pi y) / (pi y) with y = 1e-20 where x == 0."""
    from .np_functions import where

    x = _traced(x)
    y = call(np.multiply, (np.pi, where(call(np.equal, (x, 0)), 1.0e-20, x)))
    return call(np.true_divide, (call(np.sin, (y,)), y))


def tensordot(a, b, axes=2):
    """np.tensordot: NumPy's own transpose + reshape + 2-D dot."""
    from .np_functions import reshape, transpose

    a, b = _traced(a), _traced(b)
    try:
        iter(axes)
    except TypeError:
        axes_a, axes_b = list(range(-axes, 0)), list(range(0, axes))
    else:
        axes_a, axes_b = axes
    axes_a = [int(k) for k in np.atleast_1d(axes_a)]
    axes_b = [int(k) for k in np.atleast_1d(axes_b)]
    na, nb = len(axes_a), len(axes_b)
    as_, bs = a.shape, b.shape
    if na != nb or any(as_[axes_a[k]] != bs[axes_b[k]] for k in range(na)):
        raise ValueError("shape-mismatch for sum")
    axes_a = [k + a.ndim if k < 0 else k for k in axes_a]
    axes_b = [k + b.ndim if k < 0 else k for k in axes_b]
    notin_a = [k for k in range(a.ndim) if k not in axes_a]
    notin_b = [k for k in range(b.ndim) if k not in axes_b]
    n2 = int(np.prod([as_[k] for k in axes_a], dtype=np.int64))
    at = reshape(transpose(a, notin_a + axes_a),
                 (int(np.prod([as_[k] for k in notin_a], dtype=np.int64)), n2))
    bt = reshape(transpose(b, axes_b + notin_b),
                 (n2, int(np.prod([bs[k] for k in notin_b], dtype=np.int64))))
    res = la.dot(at, bt)
    return reshape(res, [as_[k] for k in notin_a] + [bs[k] for k in notin_b])


MORE_FUNCTIONS = {
    np.nansum: nansum, np.nanmean: nanmean, np.nanmax: _nan_extreme("max"),
    np.nanmin: _nan_extreme("min"), np.count_nonzero: count_nonzero, np.ptp: ptp,
    np.average: average, np.cross: cross, np.meshgrid: meshgrid, np.sinc: sinc,
    np.tensordot: tensordot,
}
