"""The `numpy` a traced function sees: NumPy itself, except array creation.

`np.zeros((n, m))` inside a traced function must return an array the function can then
fill with traced values (`out[i] = ...`), which a real ndarray cannot hold. `traced_copy(fn)`
returns `fn` re-bound to a copy of its globals in which every name bound to the numpy module
(`np`, `numpy`, ...) is `NUMPY`, a module whose zeros/ones/empty/full/*_like and
array/asarray return traced arrays when that is needed and delegate everything else to
NumPy. Only the traced function's own globals are changed: nothing global is patched, and
helpers in other modules see NumPy unchanged.
"""

from __future__ import annotations

import types

import numpy as np

from .np_array import TracedArray, api, as_tensor, wrap
from .np_random import RANDOM


def _filled(shape, value, dtype) -> TracedArray:
    """A traced array of `shape` holding `value` (NumPy's dtype rules of np.full)."""
    tf = api()
    scalar = np.full((), value, dtype=dtype)
    dims = [int(d) for d in np.atleast_1d(shape)] if np.ndim(shape) or shape != () else []
    return wrap(tf.fill(dims, tf.constant(scalar)))


def _creator(value):
    def create(shape, dtype=float, order="C", **kwargs):
        return _filled(shape, value, dtype)
    create.__name__ = {0: "zeros", 1: "ones"}[value]
    return create


def _full(shape, fill_value, dtype=None, order="C", **kwargs):
    if as_tensor(fill_value) is not None:
        from .np_functions import astype, broadcast_to

        out = broadcast_to(fill_value, [int(d) for d in np.atleast_1d(shape)])
        return astype(out, dtype) if dtype is not None else out
    return _filled(shape, fill_value, dtype)


def _contains_traced(x) -> bool:
    if as_tensor(x) is not None:
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_traced(v) for v in x)
    return False


def _array(obj, dtype=None, *args, copy=True, **kwargs):
    from .np_functions import astype, stack

    if isinstance(obj, TracedArray):
        out = obj.copy() if copy else obj
        return astype(out, dtype) if dtype is not None else out
    if as_tensor(obj) is not None:
        return wrap(as_tensor(obj)) if dtype is None else astype(wrap(as_tensor(obj)), dtype)
    if isinstance(obj, (list, tuple)) and _contains_traced(obj):
        parts = [_array(v, copy=False) if isinstance(v, (list, tuple)) else v for v in obj]
        out = stack(parts)
        # np.array's own dtype rule: Python numbers in a list count as float64/int64 (not
        # weak as in arithmetic), so [f32_scalar, 3.0] is float64
        dtype = dtype if dtype is not None else np.array(_dtype_stand_ins(obj)).dtype
        return astype(out, dtype) if np.dtype(dtype) != out.dtype else out
    return np.array(obj, dtype, *args, copy=copy, **kwargs)


def _dtype_stand_ins(obj):
    """`obj` (nested lists) with every traced value replaced by a 0-d value of its dtype."""
    if isinstance(obj, (list, tuple)):
        return [_dtype_stand_ins(v) for v in obj]
    traced = as_tensor(obj)
    if traced is not None:
        return np.zeros((), traced.dtype.np_dtype)[()]
    return obj


def _asarray(obj, dtype=None, *args, **kwargs):
    return _array(obj, dtype, copy=False) if _contains_traced(obj) else \
        np.asarray(obj, dtype, *args, **kwargs)


class _TracingNumpy(types.ModuleType):
    """numpy, with array creation that can hold traced values."""

    def __getattr__(self, name):
        return getattr(np, name)


NUMPY = _TracingNumpy("numpy")
NUMPY.zeros = _creator(0)
NUMPY.ones = _creator(1)
NUMPY.empty = _creator(0)   # contents unspecified: zeros are as good as any
NUMPY.full = _full
NUMPY.array = _array
NUMPY.asarray = _asarray
NUMPY.ascontiguousarray = _asarray
NUMPY.__doc__ = np.__doc__
NUMPY.random = RANDOM   # drawing random numbers is a graph break (np_random.py)


def traced_copy(fn):
    """`fn` with numpy in its globals replaced by NUMPY (fn itself if it names no numpy)."""
    code_globals = getattr(fn, "__globals__", None)
    if code_globals is None or not any(v is np for v in code_globals.values()):
        return fn
    g = {k: (NUMPY if v is np else v) for k, v in code_globals.items()}
    new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    return new
