"""Sorting and linear-algebra NumPy functions on traced arrays: sort, argsort, median,
percentile, quantile, np.linalg.inv/det/solve/cholesky.

The sorting functions sort along one axis with the Sort/ArgSort ops (ops/sort_ops.py:
ascending, NaNs last, argsort stable), moving that axis last and back.  `np.argsort` of
any `kind` gives the stable order, a valid answer for every kind and NumPy's own for the
stable ones.

median/percentile/quantile read the sorted values at static positions (the shapes are known
while tracing) with NumPy's rules: median is the mean of the middle one or two values;
percentile/quantile use NumPy's default `method='linear'` (virtual index (n - 1) q,
interpolated as NumPy's `_lerp`: `a + (b - a) t`, or `b - (b - a) (1 - t)` from t = 0.5 on);
the result dtype is the one NumPy gives for the same dtype and q (a Python-number q keeps
float32, a list of them gives float64); a slice holding a NaN gives NaN.  Other methods,
`weights=`, `out=` and empty axes are graph breaks.

np.linalg.inv/det/solve/cholesky are the MatrixInverse/MatrixDeterminant/MatrixSolve/
Cholesky ops (ops/linalg_ops.py, LAPACK in compiled code) on the dtype NumPy computes in
(integers in float64); solve follows NumPy 2 (a 1-D b is one vector, batch axes broadcast),
cholesky takes `upper=`.  A singular or not positive-definite matrix raises NumPy's
`np.linalg.LinAlgError` from the compiled function; complex matrices are graph breaks.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.sort_ops import sort_positions
from .np_array import GraphBreak, TracedArray, api, as_tensor, wrap
from .np_reductions import _traced, normalize_axes


def _along_last(x: TracedArray, axis):
    """(x with `axis` moved last, or flattened for None; a function moving it back)."""
    if axis is None:
        return x.reshape(-1), None
    (axis,) = normalize_axes(axis, x.ndim)
    if axis == x.ndim - 1:
        return x, lambda y: y
    return np.moveaxis(x, axis, -1), lambda y: np.moveaxis(y, -1, axis)


def _sort_along(name: str, a, axis, order):
    """np.sort / np.argsort (`name`) of `a` along `axis`, through tf.sort / tf.argsort."""
    if order is not None:
        raise GraphBreak(f"np.{name}(..., order=) of structured arrays")
    x = _traced(a)
    if x.ndim == 0 and axis is not None:
        raise np.exceptions.AxisError(axis, 0)
    last, back = _along_last(x, axis)
    boolean = x.dtype.kind == "b"   # (Sort has no boolean kernel: False < True as 0 < 1)
    values = last.astype(np.uint8) if boolean else last
    sorting = api().sort if name == "sort" else sort_positions
    out = wrap(sorting(as_tensor(values)))
    if boolean and name == "sort":
        out = out.astype(bool)
    return out if back is None else back(out)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """np.sort: ascending along `axis` (flattened for None), NaNs last."""
    return _sort_along("sort", a, axis, order)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """np.argsort: int64 positions sorting along `axis` (stable: ties keep their order)."""
    return _sort_along("argsort", a, axis, order)


def sort_inplace(self, axis=-1, kind=None, order=None, *, stable=None):
    """ndarray.sort: `self` sorted in place along `axis`."""
    self[...] = sort(self, axis, kind, order)


def _reduced_last(x: TracedArray, axis):
    """(x with the reduced axes merged into one last axis, the kept shape, the axes)."""
    axes = normalize_axes(axis, x.ndim)
    kept = [d for k, d in enumerate(x.shape) if k not in axes]
    moved = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim)) if axes else x
    n = math.prod(x.shape[k] for k in axes)
    return moved.reshape(tuple(kept) + (n,)), kept, axes


def _keep(result, x: TracedArray, axes, keepdims: bool, leading: int = 0):
    if not keepdims:
        return result
    shape = list(result.shape[:leading])
    for k in range(x.ndim):
        shape.append(1 if k in axes else x.shape[k])
    return result.reshape(tuple(shape))


def _nan_to_result(result, ordered, out_dtype):
    """NaN where the sorted slice ends in a NaN (NumPy's median/quantile NaN rule)."""
    if ordered.dtype.kind not in "fc":
        return result
    bad = np.isnan(ordered[..., -1])
    return np.where(bad, np.asarray(np.nan, out_dtype), result)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.median: the middle value (mean of the middle two) along `axis`; NaN if any NaN."""
    if out is not None:
        raise GraphBreak("np.median(..., out=)")
    x = _traced(a)
    ordered, _, axes = _reduced_last(x, axis)
    n = ordered.shape[-1]
    if n == 0:
        raise GraphBreak("np.median of an empty axis")
    ordered = sort(ordered, -1)
    out_dtype = np.median(np.zeros(2, x.dtype)).dtype
    if n % 2:
        mid = ordered[..., n // 2].astype(out_dtype)
    else:
        lo = ordered[..., n // 2 - 1].astype(out_dtype)
        hi = ordered[..., n // 2].astype(out_dtype)
        mid = (lo + hi) / np.asarray(2, out_dtype)
    return _keep(_nan_to_result(mid, ordered, out_dtype), x, axes, keepdims)


def _linear_positions(n: int, q: float):
    """(previous index, next index, gamma) of NumPy's 'linear' quantile method."""
    virtual = (n - 1) * q
    if virtual >= n - 1:
        return n - 1, n - 1, 0.0
    if virtual < 0:
        return 0, 0, 0.0
    previous = math.floor(virtual)
    return previous, previous + 1, virtual - previous


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """np.quantile with static q in [0, 1] and method='linear'."""
    return _quantiles("quantile", a, q, 1.0, axis, out, method, keepdims, weights,
                      interpolation)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """np.percentile with static q in [0, 100] and method='linear'."""
    return _quantiles("percentile", a, q, 100.0, axis, out, method, keepdims, weights,
                      interpolation)


def _quantiles(name, a, q, scale, axis, out, method, keepdims, weights, interpolation):
    if out is not None or weights is not None or interpolation is not None:
        raise GraphBreak(f"np.{name}(..., out=/weights=/interpolation=)")
    if method != "linear":
        raise GraphBreak(f"np.{name}(..., method={method!r})")
    if isinstance(q, TracedArray) or as_tensor(q) is not None:
        raise GraphBreak(f"np.{name} of a traced q")
    x = _traced(a)
    qs = np.asarray(q, dtype=np.float64)
    fn = np.percentile if name == "percentile" else np.quantile
    out_dtype = fn(np.zeros(2, x.dtype), q).dtype     # NumPy's own dtype rule, q weak or not
    fractions = qs / scale
    if not np.all((fractions >= 0) & (fractions <= 1)):
        raise ValueError(f"{'Percentiles' if scale == 100 else 'Quantiles'} must be in the "
                         f"range [0, {int(scale)}]")
    ordered, _, axes = _reduced_last(x, axis)
    n = ordered.shape[-1]
    if n == 0:
        raise GraphBreak(f"np.{name} of an empty axis")
    ordered = sort(ordered, -1)
    values = []
    for f in fractions.reshape(-1):
        lo, hi, gamma = _linear_positions(n, float(f))
        # NumPy's _lerp: the difference in the values' own dtype, then promoted by t
        below, above = ordered[..., lo], ordered[..., hi]
        diff = above - below
        t = np.asarray(gamma, out_dtype)
        if gamma >= 0.5:
            v = above - diff * (np.asarray(1, out_dtype) - t)
        else:
            v = below + diff * t
        values.append(_nan_to_result(v.astype(out_dtype), ordered, out_dtype))
    result = values[0] if qs.ndim == 0 else np.stack(values).reshape(
        qs.shape + tuple(values[0].shape))
    return _keep(result, x, axes, keepdims, leading=qs.ndim)


SORTING_FUNCTIONS = {np.sort: sort, np.argsort: argsort, np.median: median,
                     np.percentile: percentile, np.quantile: quantile}


# --- np.linalg: inverse, determinant, solve, Cholesky (LAPACK through the LIBCALL node) -------
def _linalg_dtype(fn, *operands) -> np.dtype:
    """The dtype NumPy's `fn` gives for operands of these dtypes (ints -> float64)."""
    samples = [np.eye(2, dtype=o.dtype) if k == 0 else np.ones((2, 1), o.dtype)
               for k, o in enumerate(operands)]
    return np.asarray(fn(*samples)).dtype


def _square(name: str, x: TracedArray) -> None:
    if x.ndim < 2:
        raise np.linalg.LinAlgError(f"{x.ndim}-dimensional array given. Array must be at "
                                    "least two-dimensional")
    if x.shape[-1] != x.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if x.dtype.kind == "c":
        raise GraphBreak(f"np.linalg.{name} of complex matrices")


def _as(x: TracedArray, dtype) -> TracedArray:
    return x if x.dtype == dtype else x.astype(dtype)


def inv(a):
    """np.linalg.inv of each matrix in the last two axes."""
    x = _traced(a)
    _square("inv", x)
    x = _as(x, _linalg_dtype(np.linalg.inv, x))
    return wrap(api().matrix_inverse(as_tensor(x)))


def det(a):
    """np.linalg.det of each matrix in the last two axes."""
    x = _traced(a)
    _square("det", x)
    x = _as(x, _linalg_dtype(np.linalg.det, x))
    return wrap(api().matrix_determinant(as_tensor(x)))


def cholesky(a, /, *, upper=False):
    """np.linalg.cholesky: lower factor (its conjugate transpose for upper=True)."""
    x = _traced(a)
    _square("cholesky", x)
    x = _as(x, _linalg_dtype(np.linalg.cholesky, x))
    lower = wrap(api().cholesky(as_tensor(x)))
    return np.swapaxes(lower, -1, -2) if upper else lower


def solve(a, b):
    """np.linalg.solve (NumPy 2: b is a vector only when 1-D; batch axes broadcast)."""
    x, rhs = _traced(a), _traced(b)
    _square("solve", x)
    if rhs.dtype.kind == "c":
        raise GraphBreak("np.linalg.solve of complex matrices")
    dtype = _linalg_dtype(np.linalg.solve, x, rhs)
    vector = rhs.ndim == 1
    if vector:
        rhs = rhs.reshape(rhs.shape + (1,))
    if rhs.shape[-2] != x.shape[-1]:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {rhs.shape[-2]} is different from {x.shape[-1]})")
    batch = np.broadcast_shapes(x.shape[:-2], rhs.shape[:-2])
    x = np.broadcast_to(_as(x, dtype), batch + x.shape[-2:])
    rhs = np.broadcast_to(_as(rhs, dtype), batch + rhs.shape[-2:])
    out = wrap(api().matrix_solve(as_tensor(x), as_tensor(rhs)))
    return out.reshape(out.shape[:-1]) if vector else out


SORTING_FUNCTIONS.update({np.linalg.inv: inv, np.linalg.det: det, np.linalg.cholesky: cholesky,
                          np.linalg.solve: solve})
