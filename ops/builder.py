"""Helpers every op module uses to add ops to a graph with TensorFlow's typing rules.

Owns: picking the graph an op belongs to (its tensor inputs' graph, else the default),
converting arguments in that graph, the strict binary-operand rule (a Python or NumPy value
takes the other operand's dtype; two tensors of different dtypes are a TypeError naming
both), and the dtype checks used by inference functions.  Nothing here knows a specific op.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import Operation, Tensor, get_default_graph
from ..compiler.core.node import user_site
from .conversion import convert_to_tensor


def _as_tensor_like(v):
    if hasattr(v, "_as_graph_tensor"):
        return v._as_graph_tensor()
    return v


def graph_for(values):
    """The graph of the first Tensor (or Variable) among `values`, else the default graph."""
    for v in values:
        v = _as_tensor_like(v)
        if isinstance(v, Tensor):
            return v.graph
        if isinstance(v, (list, tuple)):
            for w in v:
                w = _as_tensor_like(w)
                if isinstance(w, Tensor):
                    return w.graph
    return get_default_graph()


def to_tensor(value, dtype=None, graph=None, name=None, preferred_dtype=None) -> Tensor:
    """convert_to_tensor inside `graph` (so constants land beside the op that uses them)."""
    value = _as_tensor_like(value)
    if isinstance(value, Tensor) or graph is None or graph is get_default_graph():
        return convert_to_tensor(value, dtype=dtype, name=name, preferred_dtype=preferred_dtype)
    with graph.as_default():
        return convert_to_tensor(value, dtype=dtype, name=name, preferred_dtype=preferred_dtype)


def make_op(op_def, inputs, attrs=None, name=None, graph=None) -> Operation:
    """Create an op of `op_def` on `inputs` (Tensors) in their graph."""
    graph = graph or graph_for(inputs)
    return graph.create_op(op_def, inputs, attrs or {}, name)


def binary_operands(x, y, op_type: str, names=("x", "y")):
    """Convert two operands with TensorFlow's rule; returns (x, y) tensors of one dtype."""
    x, y = _as_tensor_like(x), _as_tensor_like(y)
    graph = graph_for((x, y))
    if isinstance(x, Tensor):
        y = _convert_operand(y, x.dtype, graph, op_type, names[1])
    elif isinstance(y, Tensor):
        x = _convert_operand(x, y.dtype, graph, op_type, names[0])
    else:
        x = to_tensor(x, graph=graph, name=f"{op_type}/{names[0]}")
        y = _convert_operand(y, x.dtype, graph, op_type, names[1])
    if x.dtype is not y.dtype:
        raise TypeError(f"Input '{names[1]}' of '{op_type}' Op has type {y.dtype.name} that "
                        f"does not match type {x.dtype.name} of argument '{names[0]}' "
                        f"({x.name} is {x.dtype.name}, {y.name} is {y.dtype.name}); "
                        f"use flowjit.cast to convert one of them. (At {user_site()})")
    return x, y


def _convert_operand(value, dtype, graph, op_type, param):
    if isinstance(value, Tensor):
        return value
    try:
        # Named under the op type ("AddV2/y", as TensorFlow's "Add/y"), so a constant
        # operand never takes the name the caller asked for the op itself.
        return to_tensor(value, dtype=dtype, graph=graph, name=f"{op_type}/{param}")
    except (TypeError, ValueError) as e:
        raise TypeError(f"Cannot convert {value!r} to {dtype.name} for input '{param}' of "
                        f"'{op_type}' Op: {e} (At {user_site()})") from None


class DtypeNotAllowed(TypeError):
    """An op's input has a dtype the op does not support (TensorFlow's TypeError); NumPy
    tracing turns it into a graph break, since NumPy itself may support that dtype."""


def check_dtype(tensor: Tensor, allowed, param: str = "x"):
    """DtypeNotAllowed (a TypeError) unless tensor.dtype is in `allowed` (called from
    inference functions)."""
    if tensor.dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise DtypeNotAllowed(f"Value passed to parameter '{param}' has DataType "
                              f"{tensor.dtype.name} not in list of allowed values: {names}")


def check_same_dtype(tensors, params=None):
    """TypeError naming both when tensors disagree in dtype."""
    first = tensors[0]
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype is not first.dtype:
            p0 = params[0] if params else "input 0"
            pi = params[i] if params else f"input {i}"
            raise TypeError(f"Inputs must have one dtype: '{pi}' ({t.name}) is {t.dtype.name} "
                            f"but '{p0}' ({first.name}) is {first.dtype.name}.")


NUMERIC = _dtypes.NUMERIC_DTYPES
FLOATS = _dtypes.FLOATING_DTYPES
FLOAT_OR_COMPLEX = (*_dtypes.FLOATING_DTYPES, *_dtypes.COMPLEX_DTYPES)
REALS = _dtypes.REAL_DTYPES
INTEGERS = _dtypes.INTEGER_DTYPES
SIGNED = (_dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64, *_dtypes.FLOATING_DTYPES,
          *_dtypes.COMPLEX_DTYPES)
INDEX_TYPES = (_dtypes.int32, _dtypes.int64)
