"""The state of converted control flow: what a loop or branch carries, as graph values.

Converted code (compiler/autograph.py) hands the runtime helpers (autograph_loops.py,
autograph_branches.py) two functions over the statement's variables, `get_state()` and
`set_state(values)`, and `read()`, the values of the local names the statement reads.  This
module turns those values into what `ops/control_flow.py`'s `while_loop` and `cond` carry
(docs/architecture.md "Python control flow in @jit"):

- a TracedArray, a Python number or a NumPy scalar/array becomes a tensor; a Python number
  keeps NumPy's weak-scalar promotion (`WeakScalar`) until an iteration gives it a dtype;
- an array changed in place (`x[i] = v`, `a[k+1:, k] /= ...`) is a `_Buffer` whose tensor
  is carried too (found by the buffer's version changing while the body is traced);
- a name with no value before the statement is `Undefined`: a loop's or branch's temporary.
  Using it after the statement (where Python would see its last value) is a GraphBreak.
"""

from __future__ import annotations

import types

import numpy as np

from .. import dtypes as _dtypes
from .core.graph import Tensor
from .np_array import GraphBreak, TracedArray, WeakScalar, _Buffer, api, as_tensor, wrap


class Undefined:
    """A variable with no value yet (assigned only inside a converted statement)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def _fail(self, *args, **kwargs):
        raise GraphBreak(f"variable `{self.name}` used after a loop or `if` converted to graph "
                         "control flow, which defines it only inside",
                         "define it before the statement")

    __bool__ = __call__ = __getitem__ = __setitem__ = __iter__ = __len__ = __index__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __neg__ = __lt__ = __gt__ = __le__ = __ge__ = __float__ = __int__ = _fail
    __array__ = __array_ufunc__ = __array_function__ = _fail

    def __getattr__(self, name):
        self._fail()

    def __repr__(self):
        return f"Undefined({self.name!r})"


def ld(thunk):
    """The value of a name read by a converted statement, or Undefined if it has none yet."""
    try:
        return thunk()
    except NameError:
        return Undefined("?")


def is_traced(x) -> bool:
    return as_tensor(x) is not None


def contains_traced(values) -> bool:
    """Whether any value (also inside lists, tuples and dicts) is traced."""
    for v in values:
        if is_traced(v):
            return True
        if isinstance(v, (list, tuple)) and contains_traced(v):
            return True
        if isinstance(v, dict) and contains_traced(v.values()):
            return True
    return False


def buffers_of(values) -> list:
    """The distinct buffers of the traced arrays among `values` (and in lists/tuples)."""
    found: dict = {}

    def visit(v, depth=0):
        if isinstance(v, TracedArray):
            found.setdefault(id(v._buf), v._buf)
        elif isinstance(v, (list, tuple)) and depth < 3:
            for x in v:
                visit(x, depth + 1)
        elif isinstance(v, dict) and depth < 3:
            for x in v.values():
                visit(x, depth + 1)

    for v in values:
        visit(v)
    return list(found.values())


_WEAK = (bool, int, float, complex)


def value_kind(v):
    """(numpy dtype, weak Python type or None) of a carried value; None if it is not a
    value the graph can carry (a list, None, a string, ...)."""
    if isinstance(v, WeakScalar):
        return v.dtype, v.weak
    if isinstance(v, TracedArray):
        return v.dtype, None
    if isinstance(v, Tensor):
        return np.dtype(v.dtype.as_numpy_dtype), None
    if isinstance(v, bool):
        return np.dtype(bool), None
    if isinstance(v, _WEAK):
        return np.asarray(v).dtype if not isinstance(v, int) else np.dtype(np.int64), type(v)
    if isinstance(v, (np.generic, np.ndarray)) and v.dtype.kind in "biufc":
        return v.dtype, None
    return None


def promote(a, b):
    """The (dtype, weak) two carried kinds meet at, by NumPy's rules (NEP 50)."""
    (da, wa), (db, wb) = a, b
    if wa and wb:
        return np.result_type(da, db), (complex if complex in (wa, wb) else
                                         float if float in (wa, wb) else wa)
    if wa:
        return np.result_type(db, wa(0)), None
    if wb:
        return np.result_type(da, wb(0)), None
    return np.result_type(da, db), None


def to_tensor(v, dtype) -> Tensor:
    """Carried value `v` as a tensor of `dtype` (cast when it differs)."""
    from .np_array import to_tensor as convert

    t = as_tensor(v)
    return convert(t if t is not None else v, dtype)


def from_tensor(t: Tensor, weak) -> TracedArray:
    """A fresh traced array for a carried tensor (weak when the value is still a Python
    number as far as NumPy's promotion goes)."""
    if weak is not None and t.shape.ndims == 0:
        return WeakScalar(_Buffer(t), weak)
    return wrap(t)


def truth(x, what: str) -> Tensor:
    """A traced condition as a scalar bool tensor, as Python's truth test of a NumPy value:
    a one-element array is its element's truth; a larger array is NumPy's ValueError, which
    the plain function will raise (so it is a GraphBreak here)."""
    tf = api()
    t = as_tensor(x)
    shape = t.shape.as_list() if t.shape.dims is not None else None
    if shape is None or any(d != 1 for d in shape):
        raise GraphBreak(f"{what} on a traced array that is not known to have one element")
    if shape:
        t = tf.reshape(t, [])
    if t.dtype is _dtypes.bool_:
        return t
    return tf.not_equal(t, tf.zeros_like(t))


def bool_tensor(x, what: str) -> Tensor:
    """`x` (traced or a Python/NumPy value) as a scalar bool tensor."""
    if is_traced(x):
        return truth(x, what)
    return api().constant(bool(x))


def restore(buffers: list, saved: list) -> None:
    """Put buffers back as they were before an abandoned attempt."""
    for buf, (tensor, version) in zip(buffers, saved):
        buf.tensor, buf.version = tensor, version


def snapshot(buffers: list) -> list:
    return [(b.tensor, b.version) for b in buffers]


_IMMUTABLE = (TracedArray, Tensor, np.ndarray, np.generic, Undefined, bool, int, float,
              complex, str, bytes, tuple, frozenset, type(None), type, types.ModuleType,
              types.FunctionType, types.BuiltinFunctionType)


def mutated_python_object(mutated) -> str:
    """The name of the first Python object a statement changes (`x.append(...)`,
    `x[k] = v`: `mutated()` gives (name, value) pairs) that a graph body or branch could
    not change once per run of it (a list, a dict, ...); '' if there is none."""
    if mutated is None:
        return ""
    for name, v in mutated():
        if not isinstance(v, _IMMUTABLE):
            return name
    return ""


class Retry(Exception):
    """An attempt at building a loop or cond found the carried state's kinds must change
    (a dtype promotion, an array changed in place, a shape that varies)."""
