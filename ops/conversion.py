"""Turning Python and NumPy values into graph tensors, and reading static values back.

Owns the Const op (`constant_from_array`; `basic_ops.constant` is its public function and
`basic_ops.OP_DEFS` lists it), `convert_to_tensor` (TensorFlow's strict typing: a Python or
NumPy value takes the requested dtype when it converts without loss of kind, never
silently truncating a float to an int), `constant_array` (the NumPy array a `constant` op
will hold), `static_value` (the value of a tensor when it is known while the graph is being
built, used by shape inference) and `static_shape_from_tensor` (a partially known shape
held in a 1-D int tensor).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Operation, Tensor, get_default_graph
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import TensorShape, unknown_shape
from .registry import OpDef, Trait, not_differentiable

_STATIC_LIMIT = 4096  # elements: static evaluation is for shape arithmetic, not big data


# --- Const: a value held by the graph (listed in basic_ops.OP_DEFS) -------------------


def _const_infer(op):
    value = op.get_attr("value")
    return [(op.get_attr("dtype"), value.shape)]


def _const_kernel(ctx, inputs, attrs):
    return [attrs["value"]]


def _lower_const(ctx, op, inputs):
    value = op.get_attr("value")
    dtype = op.get_attr("dtype")
    if dtype is _dtypes.string:
        raise NotLowerable(f"{dtype.name} constants are not compiled")
    if value.size == 1:
        shape = [ir.index(d) for d in value.shape]
        return [ir.compute(dtype, shape, ir.axis_vars(len(shape)),
                           ir.const(value.reshape(()).item(), dtype))]
    return [ctx.constant(value)]


CONST = OpDef("Const", _const_infer, _const_kernel, traits={Trait.SOURCE},
              gradient=not_differentiable, lower=_lower_const)


def constant_from_array(arr: np.ndarray, name="Const", graph=None):
    """A Const op holding `arr` (already of a flowjit dtype); returns its tensor."""
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    dtype = _dtypes.as_dtype(arr.dtype)
    graph = graph or get_default_graph()
    return graph.create_op(CONST, [], {"value": arr, "dtype": dtype}, name).outputs[0]


def _contains_tensor(value) -> bool:
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_tensor"):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def first_tensor_dtype(value):
    """The dtype of the first Tensor (or Variable) in a possibly nested list, else None."""
    if hasattr(value, "_as_graph_tensor"):
        value = value._as_graph_tensor()
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (list, tuple)):
        for v in value:
            d = first_tensor_dtype(v)
            if d is not None:
                return d
    return None


def _default_dtype(arr: np.ndarray, value):
    """TensorFlow's choice of dtype for a Python value (float -> float32, int -> int32...)."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return _dtypes.as_dtype(arr.dtype)
    kind = arr.dtype.kind
    if kind == "f":
        return _dtypes.float32
    if kind in "iu":
        if arr.size and (arr.min() < -2**31 or arr.max() > 2**31 - 1):
            return _dtypes.int64
        return _dtypes.int32
    if kind == "c":
        return _dtypes.complex128
    if kind == "b":
        return _dtypes.bool_
    if kind in "SUO":
        return _dtypes.string
    raise TypeError(f"Cannot convert {value!r} (NumPy kind {kind!r}) to a Tensor.")


def _to_bytes_array(arr: np.ndarray) -> np.ndarray:
    out = np.empty(arr.shape, dtype=object)
    flat = arr.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, str):
            v = v.encode("utf-8")
        if not isinstance(v, bytes):
            raise TypeError(f"Expected a string or bytes, got {v!r} of type "
                            f"'{type(v).__name__}'.")
        out.reshape(-1)[i] = v
    return out


def constant_array(value, dtype=None) -> np.ndarray:
    """The array a constant of `value` holds: TensorFlow's default dtypes, lossless casts only."""
    try:
        arr = np.asarray(value)
    except ValueError as e:
        raise ValueError(f"Cannot convert {value!r} to a Tensor: {e} (ragged nested lists are "
                         "not rectangular tensors).") from None
    if arr.dtype.kind == "O" and arr.size and not all(isinstance(v, (bytes, str))
                                                      for v in arr.reshape(-1)):
        raise TypeError(f"Cannot convert {value!r} to a Tensor: unsupported element type.")
    target = _dtypes.as_dtype(dtype) if dtype is not None else _default_dtype(arr, value)
    src = arr.dtype.kind
    if target is _dtypes.string:
        if src not in "SUO" and arr.size:
            raise TypeError(f"Expected string, got {value!r} of type '{type(value).__name__}'.")
        return _to_bytes_array(arr)
    if src in "SUO":
        raise TypeError(f"Expected {target.name}, got {value!r} of type "
                        f"'{type(value).__name__}' instead.")
    lossy = ((target.is_integer and src in "fc") or (target.is_bool and src != "b")
             or (target.is_floating and src == "c"))
    if lossy and arr.size:
        raise TypeError(f"Expected {target.name}, got {value!r} of type "
                        f"'{type(value).__name__}' instead: converting {arr.dtype} values to "
                        f"{target.name} would lose information; use flowjit.cast.")
    if target.is_integer and src in "iu" and arr.size:
        info = np.iinfo(target.np_dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise ValueError(f"Value {value!r} is out of range for {target.name} "
                             f"[{info.min}, {info.max}].")
    return np.asarray(arr, dtype=target.np_dtype)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None,
                      dtype_hint=None) -> Tensor:
    """Return `value` as a Tensor of the default graph (constants for Python/NumPy values).

    A Tensor of another dtype than `dtype` is a TypeError naming both.  Lists that contain
    tensors are stacked (TensorFlow's auto-packing).
    """
    preferred_dtype = preferred_dtype or dtype_hint
    if hasattr(value, "_as_graph_tensor"):
        value = value._as_graph_tensor()
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not _dtypes.as_dtype(dtype):
            raise TypeError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} "
                            f"for Tensor '{value.name}' with dtype {value.dtype.name}.")
        return value
    if isinstance(value, Operation):
        raise TypeError(f"Cannot use Operation '{value.name}' as a Tensor; use "
                        f"'{value.name}.outputs[0]' or the tensor it produces.")
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        # Auto-packing builds a Pack op, whose module converts its inputs with this
        # function: the one cycle between the shared builders and an op module, so the
        # import waits until a list that holds tensors is converted.
        from .join_ops import stack

        if dtype is None:
            dtype = first_tensor_dtype(value)
        parts = [convert_to_tensor(v, dtype=dtype) for v in value]
        return stack(parts, name=name or "packed")
    if dtype is None and preferred_dtype is not None:
        try:
            arr = constant_array(value, preferred_dtype)
        except (TypeError, ValueError):
            arr = constant_array(value)
    else:
        arr = constant_array(value, dtype)
    return constant_from_array(arr, name=name or "Const")


def static_value(tensor: Tensor):
    """The NumPy value of `tensor` if it is known while building the graph, else None.

    Evaluates constant subgraphs of small, stateless ops with their reference kernels (so
    `reshape(x, [2, -1])` and `reshape(x, shape(y))` both get static shapes).  Values of
    feedable sources (placeholders) are never assumed.
    """
    cache = tensor.op.__dict__.setdefault("_static_values", {})
    if tensor.value_index in cache:
        return cache[tensor.value_index]
    # the inputs' values first, from an explicit stack, not by recursion (docs/
    # architecture.md, "The path of a computation"): a chain of a million constant ops
    # must not exhaust Python's stack; inputs are looked at in order, as far as needed
    stack, active = [tensor], {id(tensor)}
    while stack:
        t = stack[-1]
        cache = t.op.__dict__.setdefault("_static_values", {})
        if t.value_index in cache:
            stack.pop()
            active.discard(id(t))
            continue
        missing = _missing_input(t.op)
        if missing is not None and id(missing) not in active:
            stack.append(missing)
            active.add(id(missing))
            continue
        # (an input on the stack already: a loop's back edge, never a known value)
        cache[t.value_index] = None if missing is not None else \
            _compute_static(t.op, t.value_index)
        stack.pop()
        active.discard(id(t))
    return tensor.op.__dict__["_static_values"][tensor.value_index]


def _static_inputs(op: Operation) -> bool:
    """Whether `op`'s value may be known from its inputs' values (stateless, no control
    inputs, not a runtime value)."""
    op_def = op.op_def
    return not (Trait.STATEFUL in op_def.traits or Trait.RUNTIME_VALUE in op_def.traits
                or op.control_inputs or Trait.SHAPE_ONLY in op_def.traits)


def _missing_input(op: Operation):
    """The first input of `op` whose static value `_compute_static` needs and that is not
    known yet (None: none), stopping where `_compute_static` would stop."""
    if not _static_inputs(op):
        return None
    for t in op.inputs:
        cache = t.op.__dict__.get("_static_values")
        if cache is None or t.value_index not in cache:
            return t
        v = cache[t.value_index]
        if v is None or getattr(v, "size", 0) > _STATIC_LIMIT:
            return None
    return None


_ROUTING = frozenset({"Enter", "Merge", "Switch", "Exit", "NextIteration", "LoopCond"})


def _compute_static(op: Operation, index: int):
    op_def = op.op_def
    if Trait.STATEFUL in op_def.traits or Trait.RUNTIME_VALUE in op_def.traits:
        return None
    if op.type == "Enter" and op.get_attr("is_constant"):   # a loop invariant: the
        return static_value(op.inputs[0])                    # same in every iteration
    if op.type in _ROUTING:   # a loop variable's value changes per iteration (a Merge
        return None           # built before its back edge shows only the initial value)
    if op.control_inputs and op.type != "Const":   # a constant inside a loop or branch
        return None          # has a control input from its pivot; its value is the same
    if Trait.SHAPE_ONLY in op_def.traits:
        if not all(t.shape.is_fully_defined() for t in op.inputs):
            return None
        inputs = [np.zeros(t.shape.as_tuple(), dtype=np.bool_) for t in op.inputs]
    else:
        inputs = []
        for t in op.inputs:
            v = static_value(t)   # known already (static_value computed inputs first)
            if v is None or getattr(v, "size", 0) > _STATIC_LIMIT:
                return None
            inputs.append(v)
    for t in op.outputs:
        n = t.shape.num_elements()
        if n is None or n > _STATIC_LIMIT:
            return None
    try:
        outs = op_def.kernel(None, inputs, op._attrs)
    except Exception:
        return None  # an error here surfaces, with its message, when the graph runs
    return np.asarray(outs[index])


def static_shape_from_tensor(tensor: Tensor) -> TensorShape:
    """The (partially) known shape described by a 1-D integer tensor, -1 meaning unknown."""
    value = static_value(tensor)
    if value is not None:
        return TensorShape([None if int(d) == -1 else int(d) for d in value.reshape(-1)])
    op = tensor.op
    if op.type == "Shape":
        return op.inputs[0].shape
    if op.type == "Pack" and op.get_attr("axis") == 0:
        dims = []
        for t in op.inputs:
            v = static_value(t)
            dims.append(None if v is None or int(v) < 0 else int(v))
        return TensorShape(dims)
    if tensor.shape.dims is not None and len(tensor.shape.dims) == 1:
        return unknown_shape(tensor.shape.dims[0])
    return unknown_shape()

