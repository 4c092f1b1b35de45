"""Indexing and selection functions on traced arrays, composed from traced indexing and ufuncs.

`EXTRA_FUNCTIONS` maps each NumPy function to its traced implementation; np_functions merges
it into `FUNCTIONS` (the table `__array_function__` dispatches on and docs/numpy_support.md
lists). It includes np_functions_numeric.NUMERIC_FUNCTIONS (kron, polyval, trapezoid,
linspace, gradient, convolve, cov, corrcoef), split off for size.

Owned here: take (mode='raise'), take_along_axis, select, nan_to_num, isin, fill_diagonal
and unravel_index. Each follows NumPy's own code step by step, so result dtypes (NEP 50),
shapes and the errors for bad arguments are NumPy's. Static index arrays are indexed by
NumPy itself (np_indexing: IndexError while tracing); traced ones become gathers, whose
out-of-range indices fail when the compiled code runs (errors.InvalidArgumentError, not
NumPy's IndexError/ValueError). Forms not followed exactly raise GraphBreak, so the call
runs as plain NumPy: take with mode 'wrap'/'clip' or `out=`, nan_to_num of complex numbers
or with array replacement values, isin with assume_unique=True (NumPy's answer for repeated
values is then not the membership test), kind='table' with traced test elements, or
uint64 against signed integers, and unravel_index of shapes with no valid index.

fill_diagonal and nan_to_num(copy=False) write with `a[...] = ...` (np_indexing), so views
and the write-back of mutated arguments behave as in NumPy. unravel_index has no NumPy-level
way to check its indices without wrapping negative ones, so it gathers from a broadcast
zero vector (GatherV2's own range check) and adds the zeros to every coordinate.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from . import np_reductions as red
from .np_array import GraphBreak, TracedArray, as_tensor, to_tensor, wrap
from .np_functions_numeric import NUMERIC_FUNCTIONS
from .np_ufuncs import call


def _traced(x) -> TracedArray:
    return red._traced(x)


def _array(x):
    """`x` as NumPy's asarray sees it: a TracedArray if traced, else a NumPy array."""
    return _traced(x) if as_tensor(x) is not None else np.asarray(x)


def _index_array(indices, casting: str, error):
    """`indices` as intp (traced or NumPy), after NumPy's cast check (`error(dtype)`)."""
    from .np_functions import astype

    idx = _array(indices)
    if not np.can_cast(idx.dtype, np.intp, casting):
        raise error(idx.dtype)
    if idx.dtype != np.intp:   # (a bool array would otherwise be a mask)
        idx = astype(idx, np.intp) if isinstance(idx, TracedArray) else idx.astype(np.intp)
    return idx


def take(a, indices, axis=None, out=None, mode="raise"):
    """np.take(a, indices, axis): a gather along `axis` (the flattened array for None)."""
    from .np_functions import ravel

    if mode != "raise":
        raise GraphBreak(f"np.take(..., mode={mode!r})")
    if out is not None:
        raise GraphBreak("np.take(..., out=)")
    a = _traced(a)
    if axis is None or a.ndim == 0:
        red.normalize_axes(axis, a.ndim)   # (a 0-d array takes axis 0, as in NumPy)
        a, ax = ravel(a), 0
    else:
        ax = red.normalize_axes(axis, a.ndim)[0]
    idx = _index_array(indices, "same_kind", lambda dt: TypeError(
        f"Cannot cast array data from {dt!r} to {np.dtype(np.intp)!r} according to the "
        "rule 'same_kind'"))
    # static: NumPy indexes the element positions (always a copy, even for one index)
    return a[(slice(None),) * ax + (idx,)]


def take_along_axis(arr, indices, axis=-1):
    """np.take_along_axis: NumPy's fancy index of orthogonal aranges around `indices`."""
    from .np_functions import ravel

    arr, idx = _traced(arr), _array(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        arr, axis = ravel(arr), 0
    else:
        axis = normalize_axis_index(axis, arr.ndim)
    if not np.issubdtype(idx.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    if arr.ndim != idx.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ones = (1,) * idx.ndim
    fancy = [idx if d == axis else np.arange(n).reshape(ones[:d] + (-1,) + ones[d + 1:])
             for d, n in enumerate(arr.shape)]
    return arr[tuple(fancy)]


def select(condlist, choicelist, default=0):
    """np.select: nested where()s from the last condition to the first, over the default."""
    from .np_functions import broadcast_to, where
    from .np_ufuncs import _dummy

    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [c if type(c) in (int, float, complex) else _array(c)
               for c in list(choicelist) + [default]]
    try:
        dtype = np.result_type(*[_dummy(c) for c in choices])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") \
            from None
    conds = [_array(c) for c in condlist]
    cond_shape = np.broadcast_shapes(*[c.shape for c in conds])
    choice_shape = np.broadcast_shapes(*[np.shape(c) if not isinstance(c, TracedArray)
                                         else c.shape for c in choices])
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = np.broadcast_shapes(cond_shape, choice_shape)
    result = broadcast_to(wrap(to_tensor(choices[-1], dtype)), shape)
    for choice, cond in zip(choices[-2::-1], conds[::-1]):
        result = where(cond, wrap(to_tensor(choice, dtype)), result)
    return result


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """np.nan_to_num of real arrays: where()s for nan, +inf, -inf (the dtype's largest
    and smallest finite values by default); other dtypes unchanged. copy=False writes the
    result into `x` and returns it."""
    from .np_functions import copy as copy_of
    from .np_functions import where

    x = _traced(x)   # (NumPy dispatches on x alone: it is traced)
    if x.dtype.kind not in "fc":
        return copy_of(x) if copy else x
    if x.dtype.kind == "c":
        raise GraphBreak("np.nan_to_num of complex numbers")
    info = np.finfo(x.dtype)
    values = [nan, info.max if posinf is None else posinf,
              info.min if neginf is None else neginf]
    if any(np.ndim(v) for v in values):
        raise GraphBreak("np.nan_to_num with array-valued nan=/posinf=/neginf=")
    nan_v, pos_v, neg_v = (wrap(to_tensor(v, x.dtype)) for v in values)
    r = where(call(np.isnan, (x,)), nan_v, x)
    r = where(call(np.equal, (x, np.inf)), pos_v, r)
    r = where(call(np.equal, (x, -np.inf)), neg_v, r)
    if copy:
        return r
    x[...] = r
    return x


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """np.isin: any(element[..., None] == test_elements.ravel()), NumPy's `==` promotion."""
    from .np_functions import reshape

    if kind not in {None, "sort", "table"}:
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    if assume_unique:
        raise GraphBreak("np.isin(..., assume_unique=True)",
                         "NumPy's result for repeated values is not the membership test")
    element, test = _array(element), _array(test_elements)
    kinds = {element.dtype.kind, test.dtype.kind}
    if kinds - set("biuf") or (kinds >= {"i", "u"} and np.uint64 in (element.dtype,
                                                                     test.dtype)):
        raise GraphBreak(f"np.isin of {element.dtype} in {test.dtype}")
    if kind == "table":   # NumPy's errors for the table method depend on the test values
        if isinstance(test, TracedArray):
            raise GraphBreak("np.isin(..., kind='table') with traced test elements")
        np.isin(np.zeros(0, element.dtype), test, kind="table")
    if isinstance(test, TracedArray):
        flat = reshape(test, -1)
    else:   # repeated test values compare once (NaNs never match: one is enough)
        flat = np.unique(test.ravel())
    hit = call(np.equal, (_traced(element)[..., None], flat))
    found = red.reduce("any", hit, -1)
    return call(np.logical_not, (found,)) if invert else found


def fill_diagonal(a, val, wrap=False):
    """np.fill_diagonal in place: `a.flat[:end:step] = val` (val repeated or cut to fit),
    written as `a[...] = where(diagonal, values, a)` with a constant mask (elementwise once
    compiled); a traced array of several values is assigned to the diagonal's positions."""
    from .np_functions import astype, ravel, reshape, where

    if a.ndim < 2:   # (NumPy dispatches on `a` alone: it is traced)
        raise ValueError("array must be at least 2-d")
    end = None
    if a.ndim == 2:
        step = a.shape[1] + 1
        if not wrap:
            end = a.shape[1] * a.shape[1]
    else:
        if not np.all(np.diff(a.shape) == 0):
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
    flat = np.arange(a.size)[:end:step]
    traced = as_tensor(val) is not None
    if traced:
        v = ravel(_traced(val))
    elif isinstance(val, (np.ndarray, np.generic)):
        v = np.ravel(val).astype(a.dtype)
    else:   # Python values are checked against the dtype (OverflowError), as NumPy does
        v = np.ravel(np.asarray(val, dtype=a.dtype))
    if flat.size == 0 or v.size == 0:
        return None
    if traced and v.size > 1:   # the flat iterator's assignment repeats the values
        a[np.unravel_index(flat, a.shape)] = v[np.arange(flat.size) % v.size]
        return None
    if traced:
        values = reshape(astype(v, a.dtype), ())
    else:
        values = np.zeros(a.size, a.dtype)
        values[flat] = v[np.arange(flat.size) % v.size]
        values = values.reshape(a.shape) if v.size > 1 else v[0]
    mask = np.zeros(a.size, bool)
    mask[flat] = True
    a[...] = where(mask.reshape(a.shape), values, a)
    return None


def unravel_index(indices, shape, order="C"):
    """np.unravel_index of traced indices into a static shape: (index // stride) % dim per
    axis, in intp. An index outside [0, size) fails when the code runs (a checking gather)."""
    from .np_array import api

    if as_tensor(shape) is not None:
        raise GraphBreak("np.unravel_index with a traced shape")
    dims = tuple(int(d) for d in np.atleast_1d(shape))
    idx = _array(indices)
    size = int(np.prod(dims, dtype=np.int64))
    if any(d < 0 for d in dims) or size == 0:
        raise GraphBreak("np.unravel_index into a shape without elements",
                         "every index is out of bounds: NumPy's error names the index")
    # NumPy's own errors for the dtype, the order and a 0-d shape
    np.unravel_index(np.zeros((0,) if idx.ndim else (), idx.dtype), dims, order=order)
    idx = _index_array(idx, "same_kind", lambda dt: TypeError("only int indices permitted"))
    if not isinstance(idx, TracedArray):
        return np.unravel_index(idx, dims, order=order)
    tf = api()
    t = idx._as_graph_tensor()
    # gathering from `size` zeros checks 0 <= index < size (no wrapping of negatives);
    # adding the zeros makes every coordinate depend on the check
    zeros = tf.broadcast_to(tf.zeros([1], t.dtype), [size])
    checked = wrap(tf.add(t, tf.gather(zeros, t)))
    strides = np.cumprod((1,) + (dims[::-1] if order == "C" else dims)[:-1])
    strides = strides[::-1] if order == "C" else strides
    return tuple(call(np.remainder, (call(np.floor_divide, (checked, np.intp(s))), np.intp(d)))
                 for s, d in zip(strides, dims))


EXTRA_FUNCTIONS = {
    np.take: take, np.take_along_axis: take_along_axis, np.select: select,
    np.nan_to_num: nan_to_num, np.isin: isin, np.fill_diagonal: fill_diagonal,
    np.unravel_index: unravel_index,
    **NUMERIC_FUNCTIONS,   # np_functions_numeric.py: kron, polyval, linspace, cov, ...
}
