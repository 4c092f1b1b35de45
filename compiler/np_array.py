"""`TracedArray`: a NumPy-compatible stand-in for an array while `flowjit.jit` traces a function.

An ordinary NumPy function called with TracedArrays records graph ops instead of computing:
NumPy hands every ufunc to `__array_ufunc__` (NEP 13) and every array function to
`__array_function__` (NEP 18); operators, methods and attributes are defined here. Dtypes
follow NumPy 2 exactly (np_ufuncs.py resolves each call with NumPy itself, NEP 50 weak
Python scalars included); the graph ops underneath are flowjit's TF-typed ops, fed with
explicitly cast inputs.

Mutation. A TracedArray is a view of a `_Buffer` (the traced value of one piece of memory,
its current graph tensor) through a chain of view steps (basic indexing, transposes,
view-reshapes). Reading applies the chain to the buffer's current tensor; writing
(`a[i] = v`, `a += v`, `out=`) replaces the buffer's tensor by an updated one
(np_indexing.py), so every view of the buffer sees the write, as in NumPy. Buffers of
function arguments remember their position; the tracer writes mutated ones back.

What tracing cannot represent raises `GraphBreak` (a Python `if` on a traced value,
`float(x)`, unsupported functions, data-dependent shapes); `NeedsStaticShapes` asks the
tracer to retrace with exact sizes when code reads a size that is not part of the signature.
"""

from __future__ import annotations

import sys

import contextlib

import numpy as np

from .. import dtypes as _dtypes
from ..ops import api as _op_api
from ..ops.builder import DtypeNotAllowed
from .core.graph import Tensor
from .core.node import user_site


class GraphBreak(Exception):
    """A construct tracing cannot represent; `construct` says which, `site` where."""

    def __init__(self, construct: str, hint: str = ""):
        self.construct = construct
        self.site = user_site()
        self.hint = hint
        where = f" at {self.site}" if self.site else ""
        super().__init__(f"{construct}{where}" + (f": {hint}" if hint else ""))


class NeedsStaticShapes(Exception):
    """Raised when traced code reads a size the shape-generic signature does not fix."""

    def __init__(self, what: str):
        self.what = what
        self.site = user_site()
        super().__init__(f"{what} at {self.site}" if self.site else what)


# How often a flowjit op itself (a module of ops/, as in `tf.tanh(x)`) was handed a traced
# array, rather than the NumPy front end converting it: a trace that saw this is not plain
# NumPy code, so runtime/jit.py never runs that function as plain Python.
OP_INPUTS = [0]
_OPS_PACKAGE = __name__.rsplit(".compiler.", 1)[0] + ".ops."


class _Buffer:
    """The traced contents of one array's memory."""

    __slots__ = ("tensor", "arg", "version", "_positions")

    def __init__(self, tensor: Tensor, arg=None):
        self.tensor = tensor
        self.arg = arg          # argument position (for write-back) or None
        self.version = 0        # bumped by every write
        self._positions = None

    def positions(self) -> np.ndarray:
        """Flat element positions of the whole buffer (static shapes only)."""
        if self._positions is None:
            shape = static_dims(self.tensor, "writing into an array")
            self._positions = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
        return self._positions


def static_dims(t: Tensor, what: str) -> tuple:
    dims = t.shape.as_list() if t.shape.dims is not None else None
    if dims is None or any(d is None for d in dims):
        raise NeedsStaticShapes(what)
    return tuple(dims)


class TracedArray:
    """A traced NumPy array (see the module docstring)."""

    __array_priority__ = 1000
    __slots__ = ("_buf", "_chain", "_cache", "__weakref__")

    def __init__(self, buf: _Buffer, chain: tuple = ()):
        self._buf = buf
        self._chain = chain     # ((graph_fn, numpy_fn), ...) from the buffer to this view
        self._cache = None      # (version, tensor)

    # --- the current value ------------------------------------------------------------------
    def _as_graph_tensor(self) -> Tensor:
        if sys._getframe(1).f_globals.get("__name__", "").startswith(_OPS_PACKAGE):
            OP_INPUTS[0] += 1   # a flowjit op took this traced array (see OP_INPUTS)
        if not self._chain:
            return self._buf.tensor
        # a view read inside a loop body or cond branch is not the view outside it
        # (docs/architecture.md "Python control flow in @jit"): the cache knows its context
        context = self._buf.tensor.graph._get_control_flow_context()
        if self._cache is not None and self._cache[0] == self._buf.version and \
                self._cache[1] is context:
            return self._cache[2]
        t = self._buf.tensor
        for graph_fn, _ in self._chain:
            t = graph_fn(t)
        self._cache = (self._buf.version, context, t)
        return t

    def _positions(self) -> np.ndarray:
        p = self._buf.positions()
        for _, numpy_fn in self._chain:
            p = numpy_fn(p)
        return p

    def _view(self, graph_fn, numpy_fn) -> "TracedArray":
        return TracedArray(self._buf, self._chain + ((graph_fn, numpy_fn),))

    # --- attributes -------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._as_graph_tensor().dtype.as_numpy_dtype)

    @property
    def ndim(self) -> int:
        return self._as_graph_tensor().shape.ndims

    @property
    def shape(self) -> tuple:
        return static_dims(self._as_graph_tensor(), "reading .shape")

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def T(self) -> "TracedArray":
        return self.transpose()

    @property
    def real(self):
        if self.dtype.kind == "c":
            raise GraphBreak("complex .real")
        return self

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __getattr__(self, name: str):
        # only reached for names TracedArray does not define: an ndarray method or attribute
        # tracing does not cover (x.take, x.nonzero, x.flags, ...) is a graph break, so the
        # function runs as plain Python (or says why, with fallback=False)
        if not name.startswith("__") and hasattr(np.ndarray, name):
            raise GraphBreak(f"ndarray.{name} on a traced array",
                             "flowjit does not trace it (with fallback=True the function runs "
                             "as plain Python)")
        raise AttributeError(f"'TracedArray' object has no attribute {name!r}")

    def __repr__(self) -> str:
        t = self._as_graph_tensor()
        return f"TracedArray(shape={t.shape}, dtype={self.dtype}, tensor={t.name})"

    # --- conversions that would need the value ----------------------------------------------
    def _value_needed(self, what: str):
        raise GraphBreak(f"{what} of a traced array",
                         "its value is only known when the compiled code runs")

    def __bool__(self):
        self._value_needed("a Python `if`/`while`/`and`/`or` on the value")

    def __float__(self):
        self._value_needed("float()")

    def __int__(self):
        self._value_needed("int()")

    def __index__(self):
        self._value_needed("using the value as an index or size")

    def __complex__(self):
        self._value_needed("complex()")

    def item(self, *args):
        self._value_needed(".item()")

    def tolist(self):
        self._value_needed(".tolist()")

    def __array__(self, dtype=None, copy=None):
        self._value_needed("converting to a NumPy array (np.asarray or a NumPy function "
                           "flowjit does not trace)")

    def __hash__(self):
        return id(self)

    # --- NumPy protocols --------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from . import np_ufuncs

        return np_ufuncs.apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from . import np_functions

        return np_functions.apply_function(func, args, kwargs)

    # --- indexing ---------------------------------------------------------------------------
    def __getitem__(self, key):
        from . import np_indexing

        return np_indexing.getitem(self, key)

    def __setitem__(self, key, value):
        from . import np_indexing

        np_indexing.setitem(self, key, value)


MAX_TRACED_OPS = 20000   # a graph this big almost always means an unrolled Python loop


def wrap(tensor: Tensor) -> TracedArray:
    """A fresh (unaliased) traced array holding `tensor`."""
    count = len(tensor.graph._operations)
    if count > MAX_TRACED_OPS:
        raise GraphBreak(f"a traced graph of more than {MAX_TRACED_OPS} ops",
                         "a long Python loop was unrolled while tracing; run fewer "
                         "iterations per call or vectorize the loop")
    return TracedArray(_Buffer(tensor))


def as_tensor(x) -> Tensor | None:
    """The graph tensor of a TracedArray or Tensor, else None."""
    if isinstance(x, TracedArray):
        return x._as_graph_tensor()
    if isinstance(x, Tensor):
        return x
    return None


class WeakScalar(TracedArray):
    """A traced 0-d value standing for a Python int/float/complex (a converted loop's index,
    a loop variable that started as a Python number): NumPy's promotion sees it as weak
    (NEP 50), as it would the Python number."""

    __slots__ = ("weak",)

    def __init__(self, buf: _Buffer, weak: type):
        super().__init__(buf)
        self.weak = weak


def np_dtype_of(x):
    """The dtype NumPy's promotion sees for an operand: Python int/float/complex stay weak
    (their type), bool and NumPy values are strong dtypes."""
    if isinstance(x, WeakScalar):
        return x.weak
    if isinstance(x, TracedArray):
        return x.dtype
    if isinstance(x, Tensor):
        return np.dtype(x.dtype.as_numpy_dtype)
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, (int, float, complex)):
        return type(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    return np.asarray(x).dtype


def to_tensor(x, dtype) -> Tensor:
    """Operand `x` as a graph tensor of NumPy dtype `dtype` (a Cast when it differs)."""
    tf = api()
    dtype = np.dtype(dtype)
    t = as_tensor(x)
    if t is None:
        value = np.asarray(x, dtype=dtype) if not isinstance(x, np.ndarray) else x
        if value.dtype != dtype:
            value = value.astype(dtype)
        return tf.constant(value, dtype=_dtypes.as_dtype(dtype))
    if np.dtype(t.dtype.as_numpy_dtype) != dtype:
        return tf.cast(t, _dtypes.as_dtype(dtype))
    return t


@contextlib.contextmanager
def dtype_breaks(what: str):
    """Turn an op's unsupported-dtype TypeError (complex max, sort, ...) into a graph break:
    NumPy may support what flowjit's ops do not, so the function runs as plain Python."""
    try:
        yield
    except DtypeNotAllowed as e:
        raise GraphBreak(f"{what} at this dtype ({e})") from None


def api():
    """flowjit's op functions under their TF1 names (ops/api.py)."""
    return _op_api


def is_traced(x) -> bool:
    return isinstance(x, (TracedArray, Tensor))
