"""Tracing a Python function into a dataflow graph with abstract values.

`trace(fn, args, kwargs, static_argnames)` calls `fn` once inside a fresh Graph: every
array argument becomes a placeholder of its dtype and rank whose sizes are unknown — except
sizes equal to 1, which are part of the signature so broadcasting is decided while
compiling — and Python scalars (and `static_argnames`) are passed through as constants.
The function's result (a tensor, or nested tuples/lists/dicts of tensors and constants) is
flattened into output tensors with a rebuild template.

`signature_of(args)` is the cache key: per array (dtype, rank, C-contiguity, which sizes
are 1); per Python scalar its type and value.  A new batch size keeps the key, so it never
recompiles (DESIGN.md principle 5).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import dtypes as _dtypes
from ..ops.basic_ops import placeholder
from .core.graph import Graph, Tensor


def array_key(a: np.ndarray, exact: bool = False):
    return (a.dtype.char, a.shape if exact else tuple(d == 1 for d in a.shape))


def signature_of(args, kwargs, static_names, exact_shapes: bool = False) -> tuple:
    """The cache key for a call (raises TypeError for unsupported argument types)."""
    key = []
    for a in args:
        key.append(_arg_key(a, exact_shapes))
    for k in sorted(kwargs):
        v = kwargs[k]
        key.append((k, _arg_key(v, exact_shapes) if k not in static_names
                    else ("static", _hashable(v))))
    return tuple(key)


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def _arg_key(a, exact=False):
    if isinstance(a, np.ndarray):
        return array_key(a, exact)
    if isinstance(a, (bool, int, float, complex, str, type(None))):
        return (type(a).__name__, _exact(a))
    if isinstance(a, np.generic):
        return (a.dtype.char, _exact(a.item()))
    if isinstance(a, (list, tuple)):
        return (type(a).__name__, tuple(_arg_key(x, exact) for x in a))
    raise TypeError(f"flowjit.jit cannot take an argument of type {type(a).__name__}; pass "
                    "NumPy arrays or Python scalars.")


def _exact(value):
    """A static scalar as a key equal only for the same value: 0.0 == -0.0 (a kernel baked
    with one divides to inf, with the other to -inf) and NaN != NaN (retraced every call)
    are told apart and matched by their exact text."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, complex):
        return (value.real.hex(), value.imag.hex())
    return value


@dataclasses.dataclass
class Trace:
    graph: Graph
    placeholders: list          # Tensors, one per array argument (call order)
    specs: list                 # (DType, static shape) per placeholder
    outputs: list               # output Tensors (flattened)
    template: object            # how to rebuild the result structure
    constants: list             # non-tensor outputs, by template position
    writebacks: list = dataclasses.field(default_factory=list)
    # (placeholder index, output index): arguments the function mutated; the output holds
    # the final contents to copy back into the caller's array
    numpy_code: bool = False
    # the function is ordinary NumPy code: its results came through the NumPy front end
    # (traced arrays), so calling it with NumPy arrays computes the same thing (no flowjit
    # ops building a graph; draws from captured random generators are graph breaks)


TRACING = [0]   # how many traces are in progress (the functional forms read it)


def trace(fn, args, kwargs, static_names=(), exact_shapes: bool = False) -> Trace:
    """Call fn with traced arrays (np_array.TracedArray over placeholders) for its array
    arguments inside a new graph. Sizes are unknown except 1s, or all known with
    `exact_shapes`; np_array.GraphBreak / NeedsStaticShapes propagate to the caller."""
    from . import np_array, np_functions  # noqa: F401 - installs TracedArray's methods
    from .np_array import TracedArray, _Buffer
    from .np_module import traced_copy
    from .np_random import CapturedGenerators
    from .autograph import converted

    graph = Graph()
    placeholders, specs, buffers = [], [], []

    def abstract(a, name):
        if isinstance(a, np.ndarray):
            dtype = _dtypes.as_dtype(a.dtype.newbyteorder("="))  # calls convert byte order
            shape = list(a.shape) if exact_shapes else [1 if d == 1 else None
                                                        for d in a.shape]
            t = placeholder(dtype, shape, name=name)
            buffers.append(_Buffer(t, arg=len(placeholders)))
            placeholders.append(t)
            specs.append((dtype, tuple(shape)))
            return TracedArray(buffers[-1])
        if isinstance(a, (list, tuple)):
            return type(a)(abstract(x, f"{name}_{i}") for i, x in enumerate(a))
        return a

    with graph.as_default():
        t_args = [abstract(a, f"arg{i}") for i, a in enumerate(args)]
        t_kwargs = {k: (v if k in static_names else abstract(v, k)) for k, v in kwargs.items()}
        generators = CapturedGenerators(fn)
        op_inputs = np_array.OP_INPUTS[0]
        TRACING[0] += 1
        try:   # the function with its control flow converted (docs/architecture.md)
            result = traced_copy(converted(fn))(*t_args, **t_kwargs)
        finally:
            TRACING[0] -= 1
        generators.check()
        outputs, constants = [], []
        numpy_code = _numpy_results(result) and np_array.OP_INPUTS[0] == op_inputs
        template = _flatten(result, outputs, constants)
        writebacks = []
        for buf in buffers:
            if buf.version:
                writebacks.append((buf.arg, len(outputs)))
                outputs.append(buf.tensor)
    return Trace(graph, placeholders, specs, outputs, template, constants, writebacks,
                 numpy_code)


def _numpy_results(x) -> bool:
    """Whether result `x` holds no graph tensor made by flowjit ops directly (only traced
    NumPy arrays, arrays and Python values), and at least one traced array."""
    if isinstance(x, Tensor):
        return False
    if hasattr(x, "_as_graph_tensor"):
        return True
    items = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else ()
    found = [_numpy_results(v) for v in items
             if isinstance(v, (Tensor, dict, list, tuple)) or hasattr(v, "_as_graph_tensor")]
    return bool(found) and all(found)


def _flatten(x, outputs, constants):
    if hasattr(x, "_as_graph_tensor"):
        x = x._as_graph_tensor()
    if isinstance(x, Tensor):
        outputs.append(x)
        return ("t", len(outputs) - 1)
    if isinstance(x, dict):
        return ("dict", [(k, _flatten(v, outputs, constants)) for k, v in x.items()])
    if isinstance(x, np.ndarray):   # a constant array: still an output array of its own
        constants.append(x.copy())
        return ("c", len(constants) - 1)
    if isinstance(x, (list, tuple)):
        return (type(x), [_flatten(v, outputs, constants) for v in x])
    constants.append(x)
    return ("c", len(constants) - 1)


def rebuild(template, values, constants):
    """The function's result structure with tensors replaced by `values`."""
    kind = template[0]
    if kind == "t":
        return values[template[1]]
    if kind == "c":
        c = constants[template[1]]
        return c.copy() if isinstance(c, np.ndarray) else c
    if kind == "dict":
        return {k: rebuild(v, values, constants) for k, v in template[1]}
    return kind(rebuild(v, values, constants) for v in template[1])


def live_ops(tr: Trace) -> list:
    """The ops the outputs depend on (data and control inputs), in graph order, without
    placeholders: what a graph with control flow computes (attempts at building a loop or
    cond that were abandoned, docs/architecture.md "Python control flow in @jit", leave
    ops nothing reads)."""
    seen: set = set()
    stack = [t.op for t in tr.outputs]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return [op for op in tr.graph.get_operations() if op in seen and op.type != "Placeholder"]


def has_control_flow(ops) -> bool:
    """Whether any op routes control flow (a while loop's or a cond's Merge)."""
    return any(op.type == "Merge" for op in ops)
