"""NumPy functions, methods and operators on traced arrays.

`FUNCTIONS` maps each supported NumPy function to its traced implementation; it is what
`TracedArray.__array_function__` dispatches on (anything else is a GraphBreak naming the
function) and the published list of supported functions (docs/numpy_support.md); it
includes np_functions_more.MORE_FUNCTIONS and np_functions_extra.EXTRA_FUNCTIONS.
`install(TracedArray)` adds the ndarray methods (`.sum()`, `.reshape()`, `.astype()`, ...)
and Python operators (each operator is its ufunc, so promotion and in-place casting rules
are NumPy's: `a += 1.5` on an int array raises as NumPy does).

Shape manipulation (transpose, reshape, squeeze, joining, ... with NumPy's view semantics)
lives in np_shape.py.
"""

from __future__ import annotations

import numpy as np

from . import np_linalg as la
from . import np_reductions as red
from .np_array import GraphBreak, TracedArray, api, as_tensor, dtype_breaks, to_tensor, wrap
from .np_functions_extra import EXTRA_FUNCTIONS
from .np_functions_more import MORE_FUNCTIONS
from .np_functions_split import SPLIT_FUNCTIONS
from .np_search import SEARCH_FUNCTIONS
from .np_shape import (  # noqa: F401 - re-exported for np_functions_* modules
    transpose, swapaxes, moveaxis, reshape, ravel, flatten, squeeze, expand_dims, flip, copy,
    astype, roll, concatenate, stack, _atleast, vstack, hstack, column_stack, _finish)
from .np_sorting import SORTING_FUNCTIONS, sort_inplace
from .np_ufuncs import _dummy, call


def _traced(x) -> TracedArray:
    return red._traced(x)


def _result_dtype(values):
    return np.result_type(*[_dummy(v) for v in values])


# --- selection and elementwise helpers ------------------------------------------------------
def where(condition, x=None, y=None):
    if x is None and y is None:
        raise GraphBreak("np.where(condition) with one argument",
                         "the number of results depends on the data")
    tf = api()
    dt = np.where(np.empty(0, bool), _dummy(x), _dummy(y)).dtype
    c = to_tensor(condition, np.dtype(bool))
    return wrap(tf.where_v2(c, to_tensor(x, dt), to_tensor(y, dt)))


def clip(a, a_min=None, a_max=None, out=None, **kwargs):
    if "min" in kwargs or "max" in kwargs:
        a_min, a_max = kwargs.pop("min", a_min), kwargs.pop("max", a_max)
    r = a
    if isinstance(a, TracedArray) and a.dtype.kind in "iu":
        # a Python int beyond the dtype's range bounds nothing (NumPy 2 clips to it)
        info = np.iinfo(a.dtype)
        a_min = None if _python_int(a_min) and a_min <= info.min else a_min
        a_max = None if _python_int(a_max) and a_max >= info.max else a_max
    if a_min is not None:
        r = call(np.maximum, (r, a_min))
    if a_max is not None:
        r = call(np.minimum, (r, a_max))
    return _finish(r if isinstance(r, TracedArray) else _traced(r), out)


def _python_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _like(fill):
    def build(a, dtype=None, order="K", subok=True, shape=None, device=None, *rest, **kw):
        tf = api()
        a = _traced(a)
        dt = np.dtype(dtype) if dtype is not None else a.dtype
        shp = list(shape) if shape is not None else list(a.shape)
        value = fill if fill is not None else (rest[0] if rest else kw.get("fill_value"))
        return wrap(tf.fill(shp, tf.constant(np.array(value).astype(dt))))
    return build


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, device=None):
    return _like(None)(a, dtype, order, subok, shape, device, fill_value)


def tri_mask(m, k, upper):
    n_rows, n_cols = m.shape[-2], m.shape[-1]
    return ~np.tri(n_rows, n_cols, k - 1, dtype=bool) if upper else \
        np.tri(n_rows, n_cols, k, dtype=bool)


def _triangle(upper):
    def build(m, k=0):
        tf = api()
        m = _traced(m)
        mask = tf.constant(tri_mask(m, k, upper))
        t = m._as_graph_tensor()
        return wrap(tf.where_v2(mask, t, tf.zeros_like(t)))
    return build


def diff(a, n=1, axis=-1, prepend=None, append=None):
    if prepend is not None or append is not None:
        raise GraphBreak("np.diff with prepend/append")
    a = _traced(a)
    ax = red.normalize_axes(axis, a.ndim)[0]
    for _ in range(n):
        hi = tuple(slice(1, None) if k == ax else slice(None) for k in range(a.ndim))
        lo = tuple(slice(None, -1) if k == ax else slice(None) for k in range(a.ndim))
        a = call(np.not_equal if a.dtype == bool else np.subtract, (a[hi], a[lo]))
    return a


def around(a, decimals=0, out=None):
    """np.round / np.around: half to even at `decimals` places; integers stay integers
    (unchanged for decimals >= 0, rounded to a multiple of 10**-decimals otherwise)."""
    dtype = np.asarray(a).dtype if not isinstance(a, TracedArray) else a.dtype
    if dtype.kind in "iu":
        if decimals >= 0:
            return _finish(call(np.positive, (a,)), out)
        scale = 10.0 ** -decimals
        rounded = call(np.multiply, (call(np.rint, (call(np.true_divide, (a, scale)),)), scale))
        return _finish(wrap(to_tensor(rounded, dtype)), out)
    if decimals == 0:
        return _finish(call(np.rint, (a,)), out)
    scale = 10.0 ** decimals
    return _finish(call(np.true_divide, (call(np.rint, (call(np.multiply, (a, scale)),)),
                                         scale)), out)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    diff_ = call(np.absolute, (call(np.subtract, (a, b)),))
    bound = call(np.add, (atol, call(np.multiply, (rtol, call(np.absolute, (b,))))))
    # (x + 0.0: integers compare as floats, as NumPy's isclose converts them)
    finite = call(np.logical_and, (call(np.isfinite, (call(np.add, (a, 0.0)),)),
                                   call(np.isfinite, (call(np.add, (b, 0.0)),))))
    near = call(np.logical_and, (finite, call(np.less_equal, (diff_, bound))))
    r = call(np.logical_or, (near, call(np.equal, (a, b))))   # inf only equals inf
    if equal_nan:
        both = call(np.logical_and, (call(np.isnan, (a,)), call(np.isnan, (b,))))
        r = call(np.logical_or, (r, both))
    return r


def broadcast_to(array, shape, subok=False):
    return wrap(api().broadcast_to(_traced(array)._as_graph_tensor(), list(shape)))


def _moved(fn, fills: bool = False):
    """Pure data movement done by NumPy on the positions array: one gather. `fills`: `fn`
    also creates zeros (np.diag of a vector): positions count from 1 and the gather reads
    the zeros from an extra leading 0."""
    def build(a, *args, **kwargs):
        tf = api()
        a = _traced(a)
        flat = tf.reshape(a._buf.tensor, [-1])
        if fills:
            positions = fn(a._positions() + 1, *args, **kwargs)
            flat = tf.concat([tf.zeros([1], flat.dtype), flat], 0)
        else:
            positions = fn(a._positions(), *args, **kwargs)
        table = tf.constant(np.ascontiguousarray(positions).reshape(-1))
        return wrap(tf.reshape(tf.gather(flat, table), list(positions.shape)))
    return build


def pad(array, pad_width, mode="constant", **kwargs):
    """np.pad: constant mode as a Pad op; the modes that only rearrange elements (edge,
    reflect, symmetric, wrap, empty) by NumPy itself on the element positions, then one
    gather; the modes that compute values (maximum, mean, linear_ramp, ...) break."""
    a = _traced(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (a.ndim, 2)).tolist()
    if mode == "constant":
        tf = api()
        value = kwargs.pop("constant_values", 0)
        if kwargs or np.ndim(value):
            raise GraphBreak("np.pad(mode='constant') with per-axis constant_values")
        fill = np.array(value).astype(a.dtype)
        return wrap(tf.pad(a._as_graph_tensor(), widths, constant_values=fill))
    if callable(mode):
        raise GraphBreak("np.pad with a function as mode")
    if mode not in _MOVING_PAD_MODES or kwargs.get("reflect_type", "even") != "even":
        # maximum, mean, linear_ramp, ... compute new values: not a rearrangement
        raise GraphBreak(f"np.pad(mode={mode!r}" + "".join(f", {k}=..." for k in kwargs) + ")")
    kwargs.pop("reflect_type", None)
    if kwargs:
        raise GraphBreak(f"np.pad(mode={mode!r}) with {sorted(kwargs)}")
    return _moved(lambda p: np.pad(p, widths, mode=mode))(a)


_MOVING_PAD_MODES = ("edge", "reflect", "symmetric", "wrap", "empty")


def _shape_of(a):
    return _traced(a).shape


FUNCTIONS = {
    np.sum: lambda a, axis=None, dtype=None, out=None, keepdims=False, **kw:
        red.reduce("sum", a, axis, dtype, keepdims, out, **kw),
    np.prod: lambda a, axis=None, dtype=None, out=None, keepdims=False, **kw:
        red.reduce("prod", a, axis, dtype, keepdims, out, **kw),
    np.mean: lambda a, axis=None, dtype=None, out=None, keepdims=False, **kw:
        red.reduce("mean", a, axis, dtype, keepdims, out, **kw),
    np.max: lambda a, axis=None, out=None, keepdims=False, **kw:
        red.reduce("max", a, axis, None, keepdims, out, **kw),
    np.min: lambda a, axis=None, out=None, keepdims=False, **kw:
        red.reduce("min", a, axis, None, keepdims, out, **kw),
    np.any: lambda a, axis=None, out=None, keepdims=False, **kw:
        red.reduce("any", a, axis, None, keepdims, out, **kw),
    np.all: lambda a, axis=None, out=None, keepdims=False, **kw:
        red.reduce("all", a, axis, None, keepdims, out, **kw),
    np.var: red.var, np.std: lambda *a, **k: red.var(*a, std=True, **k),
    np.argmax: red.arg_extreme,
    np.argmin: lambda a, axis=None, out=None, keepdims=False:
        red.arg_extreme(a, axis, out, keepdims, largest=False),
    np.cumsum: red.cumulative,
    np.cumprod: lambda a, axis=None, dtype=None, out=None:
        red.cumulative(a, axis, dtype, out, product=True),
    np.linalg.norm: red.norm,
    np.matmul: lambda a, b, **kw: la.matmul(a, b), np.dot: la.dot, np.vdot: la.vdot,
    np.inner: la.inner, np.outer: la.outer, np.einsum: la.einsum,
    np.transpose: transpose, np.swapaxes: swapaxes, np.moveaxis: moveaxis,
    np.reshape: reshape, np.ravel: ravel, np.squeeze: squeeze, np.expand_dims: expand_dims,
    np.flip: flip, np.copy: copy, np.roll: roll, np.concatenate: concatenate,
    np.stack: stack, np.vstack: vstack, np.hstack: hstack, np.column_stack: column_stack,
    np.where: where, np.clip: clip, np.zeros_like: _like(0), np.ones_like: _like(1),
    np.empty_like: _like(0), np.full_like: full_like, np.tril: _triangle(False),
    np.triu: _triangle(True), np.diff: diff, np.round: around, np.around: around,
    np.isclose: isclose, np.broadcast_to: broadcast_to, np.shape: _shape_of,
    np.ndim: lambda a: _traced(a).ndim, np.size: lambda a, axis=None:
        _traced(a).size if axis is None else _traced(a).shape[axis],
    np.diagonal: _moved(np.diagonal), np.diag: _moved(np.diag, fills=True),
    np.trace: lambda a, *r, **k:
        red.reduce("sum", _moved(np.diagonal)(a, *r, **k), -1),
    np.repeat: _moved(np.repeat), np.tile: _moved(np.tile), np.rot90: _moved(np.rot90),
    np.fliplr: _moved(np.fliplr), np.flipud: _moved(np.flipud), np.pad: pad,
    np.atleast_1d: lambda *a: _atleast(a[0], 1) if len(a) == 1 else [_atleast(x, 1) for x in a],
    np.atleast_2d: lambda *a: _atleast(a[0], 2) if len(a) == 1 else [_atleast(x, 2) for x in a],
    **SORTING_FUNCTIONS,   # np_sorting.py: sort, argsort, median, quantiles, np.linalg.inv/...
    **MORE_FUNCTIONS,   # np_functions_more.py: nan-reductions, average, cross, tensordot, ...
    **EXTRA_FUNCTIONS,  # np_functions_extra.py: take, select, isin, linspace, cov, convolve, ...
    **SPLIT_FUNCTIONS,  # np_functions_split.py: split/array_split, allclose, matrix_power
    **SEARCH_FUNCTIONS,  # np_search.py: searchsorted, interp
}


def apply_function(func, args, kwargs):
    """The body of `TracedArray.__array_function__`."""
    impl = FUNCTIONS.get(func)
    if impl is None:
        raise GraphBreak(f"np.{getattr(func, '__name__', func)} (not supported by flowjit's "
                         "NumPy tracing)")
    with dtype_breaks(f"np.{func.__name__}"):
        return impl(*args, **kwargs)


# --- methods and operators ------------------------------------------------------------------
def _method(func):
    impl = FUNCTIONS[func]

    def method(self, *args, **kwargs):
        with dtype_breaks(f"ndarray.{func.__name__}"):
            return impl(self, *args, **kwargs)
    method.__name__ = func.__name__
    method.__doc__ = f"`ndarray.{func.__name__}` traced (see np.{func.__name__})."
    return method


_METHODS = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min,
            "any": np.any, "all": np.all, "var": np.var, "std": np.std, "argmax": np.argmax,
            "argmin": np.argmin, "cumsum": np.cumsum, "cumprod": np.cumprod, "dot": np.dot,
            "swapaxes": np.swapaxes, "ravel": np.ravel, "squeeze": np.squeeze, "clip": np.clip,
            "round": np.round, "repeat": np.repeat, "diagonal": np.diagonal,
            "trace": np.trace, "argsort": np.argsort}


def _reshape_method(self, *shape, order="C"):
    return reshape(self, *shape, order=order)


def _transpose_method(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = axes[0]
    return transpose(self, axes or None)


def _inplace(ufunc):
    def method(self, other):
        from .np_indexing import update_inplace
        from .np_ufuncs import resolve

        _, out_dtype = resolve(ufunc, (self, other))
        if not np.can_cast(out_dtype, self.dtype, "same_kind"):
            raise TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from "
                            f"{out_dtype!r} to {self.dtype!r} with casting rule "
                            "'same_kind'")
        if self._chain and update_inplace(self, ufunc, other, self.dtype):
            return self
        self[...] = call(ufunc, (self, other))
        return self
    return method


_OPERATORS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
              "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
              "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
              "eq": np.equal, "ne": np.not_equal, "and": np.bitwise_and,
              "or": np.bitwise_or, "xor": np.bitwise_xor, "lshift": np.left_shift,
              "rshift": np.right_shift}
_REFLECTED = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
              "lshift", "rshift")
_INPLACE = _REFLECTED


def _pow_operator(self, exponent):
    """`x ** e`. ndarray's operator squares for an exponent of 2 (np.square), which for a
    bool array gives int8 where np.power(x, 2) gives int64."""
    if self.dtype == np.bool_ and type(exponent) is int and exponent == 2:
        return call(np.square, (self,))
    return call(np.power, (self, exponent))


def install(cls) -> None:
    """Add ndarray's methods and operators to `cls` (TracedArray)."""
    for name, func in _METHODS.items():
        setattr(cls, name, _method(func))
    cls.reshape = _reshape_method
    cls.transpose = _transpose_method
    cls.flatten = flatten
    cls.copy = copy
    cls.astype = astype
    cls.fill = lambda self, value: self.__setitem__(Ellipsis, value)
    cls.sort = sort_inplace
    for name, ufunc in _OPERATORS.items():
        setattr(cls, f"__{name}__", lambda self, o, u=ufunc: call(u, (self, o)))
        if name in _REFLECTED:
            setattr(cls, f"__r{name}__", lambda self, o, u=ufunc: call(u, (o, self)))
        if name in _INPLACE:
            setattr(cls, f"__i{name}__", _inplace(ufunc))
    cls.__pow__ = _pow_operator
    cls.__matmul__ = lambda self, o: la.matmul(self, o)
    cls.__rmatmul__ = lambda self, o: la.matmul(o, self)
    cls.__imatmul__ = lambda self, o: self.__setitem__(Ellipsis, la.matmul(self, o)) or self
    cls.__divmod__ = lambda self, o: np.divmod(self, o)
    cls.__rdivmod__ = lambda self, o: np.divmod(o, self)
    cls.__neg__ = lambda self: call(np.negative, (self,))
    cls.__pos__ = lambda self: call(np.positive, (self,))
    cls.__abs__ = lambda self: call(np.absolute, (self,))
    cls.__invert__ = lambda self: call(np.invert, (self,))


install(TracedArray)
__all__ = ["FUNCTIONS", "apply_function", "install", "as_tensor"]
