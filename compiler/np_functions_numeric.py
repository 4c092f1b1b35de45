"""Numerical NumPy functions on traced arrays, composed from traced ufuncs, slices and reductions.

`NUMERIC_FUNCTIONS` maps each NumPy function to its traced implementation; it is merged into
np_functions_extra.EXTRA_FUNCTIONS (and so into np_functions.FUNCTIONS). Covered: kron (any
ranks), polyval (Horner's rule, coefficients static or traced), trapezoid, linspace with
traced start/stop (NumPy's run-time choice for a zero step becomes a where()), gradient
with scalar spacings (edge_order 1 and 2), convolve of 1-D operands (a sum of shifted
slices of the longer operand times the shorter one's elements: at most
`MAX_CONVOLVE_TAPS` of them), cov and corrcoef.

Each follows NumPy's own code step by step (the same operations on the same dtypes: a Python
scalar stays weak where NumPy's code keeps it a Python scalar, an asarray'd value is
strong), so dtypes, shapes and errors are NumPy's; sums may round differently. Forms not
followed exactly raise GraphBreak: gradient with array or traced spacings, cov with
fweights/aweights, complex input or no degrees of freedom left (NumPy warns), and polyval
of poly1d objects.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import np_linalg as la
from . import np_reductions as red
from .np_array import GraphBreak, TracedArray, api, as_tensor, to_tensor, wrap
from .np_ufuncs import call

MAX_CONVOLVE_TAPS = 32   # one fused term per tap (64 taps compile in ~6 s): longer run as NumPy


def _traced(x) -> TracedArray:
    return red._traced(x)


def _array(x):
    """`x` as NumPy's asarray sees it: a TracedArray if traced, else a NumPy array."""
    return _traced(x) if as_tensor(x) is not None else np.asarray(x)


def _ndmin(x, n: int):
    """np.array(x, ndmin=n): ones prepended to the shape."""
    from .np_functions import reshape

    if x.ndim >= n:
        return x
    shape = (1,) * (n - x.ndim) + tuple(x.shape)
    return reshape(x, shape) if isinstance(x, TracedArray) else x.reshape(shape)


def _mul(a, b):
    return call(np.multiply, (a, b))


def _add(a, b):
    return call(np.add, (a, b))


def kron(a, b):
    """np.kron: NumPy's broadcast product of interleaved axes, reshaped."""
    from .np_functions import reshape

    b = _array(b)
    a = _ndmin(_array(a), b.ndim)
    nda, ndb = a.ndim, b.ndim
    if nda == 0 or ndb == 0:
        return _mul(a, b)
    as_ = (1,) * max(0, ndb - nda) + tuple(a.shape)
    bs = (1,) * max(0, nda - ndb) + tuple(b.shape)
    a_arr = reshape(a, tuple(d for k in as_ for d in (k, 1)))
    b_arr = reshape(b, tuple(d for k in bs for d in (1, k)))
    return reshape(_mul(a_arr, b_arr), tuple(int(d) for d in np.multiply(as_, bs)))


def polyval(p, x):
    """np.polyval by NumPy's loop: y = zeros_like(x); y = y * x + pv for each coefficient."""
    if isinstance(p, np.poly1d) or isinstance(x, np.poly1d):
        raise GraphBreak("np.polyval with a poly1d")
    p, x = _array(p), _array(x)
    y = wrap(api().zeros_like(x._as_graph_tensor())) if isinstance(x, TracedArray) else \
        np.zeros_like(x)
    for pv in p:   # NumPy scalars (strong) or 0-d traced arrays: the same promotion
        y = _add(_mul(y, x), pv)
    return y


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """np.trapezoid: sum(d * (y[1:] + y[:-1]) / 2.0) along `axis`."""
    from .np_functions import diff, reshape

    y = _array(y)
    if x is None:
        d = dx
    else:
        x = _array(x)
        if x.ndim == 1:
            d = diff(x) if isinstance(x, TracedArray) else np.diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = reshape(d, shape)
        else:
            d = diff(x, axis=axis) if isinstance(x, TracedArray) else np.diff(x, axis=axis)
    slice1 = [slice(None)] * y.ndim
    slice2 = [slice(None)] * y.ndim
    slice1[axis] = slice(1, None)
    slice2[axis] = slice(None, -1)
    mid = _add(y[tuple(slice1)], y[tuple(slice2)])
    return red.reduce("sum", call(np.true_divide, (_mul(d, mid), 2.0)), axis)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """np.linspace with traced start/stop (static num), NumPy's arithmetic step by step."""
    from .np_functions import astype, moveaxis, where

    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if device is not None:
        raise GraphBreak("np.linspace(..., device=)")
    div = (num - 1) if endpoint else num
    stand_in = [np.zeros((), x.dtype) if isinstance(x, TracedArray) else x
                for x in (_weak(start), _weak(stop))]
    with np.errstate(all="ignore"):
        dt = np.linspace(*stand_in, 2).dtype
    start, stop = _weak(start), _weak(stop)
    integer_dtype = dtype is not None and np.issubdtype(dtype, np.integer)
    dtype = dt if dtype is None else np.dtype(dtype)
    delta = call(np.subtract, (wrap(to_tensor(stop, dt)), wrap(to_tensor(start, dt))))
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = call(np.true_divide, (delta, div))
        # NumPy's run-time branch: (y / div) * delta when any step is zero (denormals)
        any_zero = red.reduce("any", call(np.equal, (step, 0)))
        y = where(any_zero, _mul(call(np.true_divide, (y, div)), delta), _mul(y, step))
    else:
        step = np.nan
        y = _mul(y, delta)
    y = astype(_add(y, start), dt)   # y += start
    if endpoint and num > 1:
        y[-1, ...] = stop
    if axis != 0:
        y = moveaxis(y, 0, normalize_axis_index(axis, y.ndim, "destination"))
    if integer_dtype:
        y = call(np.floor, (y,))
    y = astype(y, dtype)
    return (y, step) if retstep else y


def _weak(x):
    """Python int/float/complex as they are (weak in promotion), anything else asarray'd."""
    return x if type(x) in (int, float, complex) else _array(x)


def gradient(f, *varargs, axis=None, edge_order=1):
    """np.gradient with scalar spacings: central differences inside, one-sided (first or
    second order) at both ends, concatenated along each axis in NumPy's output dtype."""
    from .np_functions import astype, concatenate

    if any(as_tensor(v) is not None for v in varargs):
        raise GraphBreak("np.gradient with traced spacings")
    f = _traced(f)
    N = f.ndim
    axes = tuple(range(N)) if axis is None else normalize_axis_tuple(axis, N)
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len(axes)
    elif n == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif n == len(axes):
        dx = list(varargs)
        if any(np.ndim(d) for d in dx):
            raise GraphBreak("np.gradient with coordinate arrays as spacings")
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if otype.kind in "mM":
        raise GraphBreak("np.gradient of datetimes")
    if otype.kind not in "fc":
        if np.issubdtype(otype, np.integer):
            f = astype(f, np.float64)
        otype = np.dtype(np.float64)
    outvals = []
    for ax, ax_dx in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")

        def at(lo, hi, ax=ax):
            key = [slice(None)] * N
            key[ax] = slice(lo, hi)
            return f[tuple(key)]

        def diff_over(hi, lo, by):
            return call(np.true_divide, (call(np.subtract, (hi, lo)), by))

        interior = diff_over(at(2, None), at(None, -2), 2. * ax_dx)
        if edge_order == 1:
            first = diff_over(at(1, 2), at(0, 1), ax_dx)
            last = diff_over(at(-1, None), at(-2, -1), ax_dx)
        else:
            first = _add(_add(_mul(-1.5 / ax_dx, at(0, 1)), _mul(2. / ax_dx, at(1, 2))),
                         _mul(-0.5 / ax_dx, at(2, 3)))
            last = _add(_add(_mul(0.5 / ax_dx, at(-3, -2)), _mul(-2. / ax_dx, at(-2, -1))),
                        _mul(1.5 / ax_dx, at(-1, None)))
        outvals.append(concatenate([astype(v, otype) for v in (first, interior, last)], ax))
    return outvals[0] if len(axes) == 1 else tuple(outvals)


def convolve(a, v, mode="full"):
    """np.convolve of 1-D operands: sum over the shorter operand's elements w[j] of w[j]
    times a slice of the zero-padded longer one (NumPy's correlate with w reversed)."""
    from .np_functions import astype, pad

    a, v = _ndmin(_array(a), 1), _ndmin(_array(v), 1)
    if len(a) == 0:
        raise ValueError("a cannot be empty")
    if len(v) == 0:
        raise ValueError("v cannot be empty")
    if len(v) > len(a):
        a, v = v, a
    # NumPy's own mode and rank errors, dtype and output length (of 3 and 2 elements)
    probe = np.correlate(np.zeros((3,) if a.ndim == 1 else (3, 3), a.dtype),
                         np.zeros((2,) if v.ndim == 1 else (2, 2), v.dtype), mode)
    n, m = len(a), len(v)
    lo, size = {2: (m - 1, n - m + 1), 3: ((m - 1) // 2, n), 4: (0, n + m - 1)}[len(probe)]
    if m > MAX_CONVOLVE_TAPS:
        raise GraphBreak(f"np.convolve with both operands longer than {MAX_CONVOLVE_TAPS}")
    a = astype(a, probe.dtype)
    w = astype(v, probe.dtype) if isinstance(v, TracedArray) else v.astype(probe.dtype)
    padded = pad(a, (m - 1, m - 1)) if lo + size > n or lo < m - 1 else a
    shift = m - 1 if padded is not a else 0
    result = None
    for j in range(m):
        start = lo + shift - j
        term = _mul(padded[start:start + size], w[j])
        result = term if result is None else _add(result, term)
    return result


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """np.cov without weights: (X - mean) @ (X - mean).T * (1 / (N - ddof)), squeezed."""
    from .np_functions import astype, concatenate, squeeze

    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if fweights is not None or aweights is not None:
        raise GraphBreak("np.cov with fweights/aweights")
    m = _array(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _array(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64) if y is None else \
            np.result_type(m.dtype, y.dtype, np.float64)
    dtype = np.dtype(dtype)
    if dtype.kind == "c" or m.dtype.kind == "c" or (y is not None and y.dtype.kind == "c"):
        raise GraphBreak("np.cov of complex numbers")
    X = _ndmin(astype(m, dtype), 2)
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = _ndmin(astype(y, dtype), 2)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        X = concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    avg = red.reduce("mean", X, 1)
    fact = X.shape[1] - ddof
    if fact <= 0:
        raise GraphBreak("np.cov with no degrees of freedom left",
                         "NumPy warns and divides by zero")
    X = call(np.subtract, (X, avg[:, None]))
    c = la.dot(X, X.T)
    c = astype(_mul(c, np.true_divide(1, fact)), c.dtype)   # c *= 1 / fact
    return squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """np.corrcoef: cov divided by the outer product of the standard deviations, clipped to
    [-1, 1] as NumPy does for real input."""
    from .np_functions import clip

    c = cov(x, y, rowvar, dtype=dtype)
    if isinstance(c, np.ndarray):   # no variables: NumPy's empty (0, 0) result
        return c
    if c.ndim == 0:
        return call(np.true_divide, (c, c))
    k = np.arange(c.shape[0])
    stddev = call(np.sqrt, (c[k, k],))
    c = call(np.true_divide, (c, stddev[:, None]))
    c = call(np.true_divide, (c, stddev[None, :]))
    return clip(c, -1, 1)


NUMERIC_FUNCTIONS = {
    np.kron: kron, np.polyval: polyval, np.trapezoid: trapezoid, np.linspace: linspace,
    np.gradient: gradient, np.convolve: convolve, np.cov: cov, np.corrcoef: corrcoef,
}
if hasattr(np, "trapz"):   # NumPy < 2.4's name
    NUMERIC_FUNCTIONS[np.trapz] = trapezoid
