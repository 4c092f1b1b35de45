"""The dataflow graph model: `Graph`, `Operation` and `Tensor`.

A Graph is append-only: operations are added (with unique names) and never removed or
rewired, so an Operation's inputs are fixed once created and every Tensor names a real
output.  Ops are created through `Graph.create_op(op_def, inputs, attrs, name)`, which
applies the current name scope, control dependencies and device, records the user's
creation site, and runs the op definition's shape/dtype inference.  The graph knows op
definitions only through that duck-typed `op_def` object (see `ops/registry.py`); it does
not import `ops/`.

Context managers (`name_scope`, `control_dependencies`, `device`, `as_default`) mirror
TensorFlow 1.x; the default-graph stack is per thread, with one process-wide default graph.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading

from .. import dtypes as _dtypes
from ..errors import describe_op
from .shapes import TensorShape, as_shape

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")


class GraphKeys:
    """Standard collection names (TensorFlow's)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    UPDATE_OPS = "update_ops"
    SUMMARIES = "summaries"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    QUEUE_RUNNERS = "queue_runners"
    TRAIN_OP = "train_op"
    GLOBAL_STEP = "global_step"
    INIT_OP = "init_op"


_LIBRARY_PARTS = ("compiler", "ops", "runtime", "targets", "__init__.py", "dtypes.py",
                  "errors.py")
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))
_internal_cache: dict[str, bool] = {}


def _is_internal(filename: str) -> bool:
    """True for flowjit's own library files (not tests, examples or the demo)."""
    hit = _internal_cache.get(filename)
    if hit is None:
        rel = os.path.relpath(os.path.abspath(filename), _PACKAGE_DIR)
        hit = (rel.split(os.sep, 1)[0] in _LIBRARY_PARTS or filename.startswith("<frozen")
               or (os.path.abspath(filename).startswith(_STDLIB_DIR)
                   and "site-packages" not in filename))
        _internal_cache[filename] = hit
    return hit


def _user_frames(limit: int = 8):
    """The innermost frames of the calling code that lie outside flowjit's library."""
    frames = []
    f = sys._getframe(2)
    while f is not None and len(frames) < limit:
        filename = f.f_code.co_filename
        if not _is_internal(filename):
            frames.append((filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return tuple(frames)


class Tensor:
    """A symbolic handle to one output of an Operation (TensorFlow 1.x `tf.Tensor`).

    Python operators (+ - * / // % ** @, comparisons, indexing) are installed by
    `ops/operators.py`; `==` keeps identity semantics as in TensorFlow 1.x.
    """

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_id", "__weakref__")
    __array_priority__ = 100
    __array_ufunc__ = None  # make NumPy defer to our reflected operators

    def __init__(self, op: Operation, value_index: int, dtype, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape)
        self._id = op.graph._next_tensor_id()

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self):
        return self._dtype

    @property
    def graph(self) -> Graph:
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape):
        """Refine the static shape; ValueError if incompatible with what is known."""
        try:
            self._shape = self._shape.merge_with(as_shape(shape))
        except ValueError:
            raise ValueError(f"Tensor {self.name} has shape {self._shape}, which is not "
                             f"compatible with the requested shape {as_shape(shape)}; "
                             f"producer {describe_op(self._op)}") from None

    def consumers(self):
        return [op for op in self.graph._operations if self in op._inputs]

    def eval(self, feed_dict=None, session=None):
        """Run this tensor in `session` (default: the default session) and return its value."""
        from ..runtime.session import _session_for  # runtime sits above compiler

        return _session_for(session, self.graph).run(self, feed_dict)

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError(f"Using a flowjit Tensor ({self.name}) as a Python bool is not "
                        "allowed: its value is only known when the graph runs. Use "
                        "flowjit.cond / where, or evaluate it with Session.run first.")

    def __iter__(self):
        raise TypeError(f"Tensor {self.name} is not iterable in graph mode; use "
                        "flowjit.unstack to split it along a dimension.")

    def __len__(self):
        raise TypeError(f"len() of a symbolic Tensor ({self.name}) is not defined; use "
                        "tensor.shape[0] or flowjit.shape(tensor)[0].")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert the symbolic Tensor {self.name} to a NumPy array; "
                        "run it in a Session to get its value.")


class Operation:
    """A node of the graph: an op type applied to input tensors, with attributes."""

    def __init__(self, graph: Graph, op_def, name: str, inputs, attrs: dict,
                 control_inputs, device: str, traceback):
        self._graph = graph
        self._op_def = op_def
        self._name = name
        self._inputs = tuple(inputs)
        self._attrs = dict(attrs)
        self._control_inputs = tuple(control_inputs)
        self._device = device
        self._traceback = traceback
        self._outputs: tuple[Tensor, ...] = ()
        self._id = len(graph._operations)

    # --- TensorFlow's Operation API --------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._op_def.name

    @property
    def op_def(self):
        return self._op_def

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def inputs(self) -> tuple:
        return self._inputs

    @property
    def outputs(self) -> tuple:
        return self._outputs

    def values(self) -> tuple:
        return self._outputs

    @property
    def control_inputs(self) -> tuple:
        return self._control_inputs

    @property
    def device(self) -> str:
        return self._device

    @property
    def attrs(self) -> dict:
        """A copy of this op's attributes."""
        return dict(self._attrs)

    def get_attr(self, name: str):
        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' (op: '{self.type}') has no attr named "
                             f"'{name}'; it has {sorted(self._attrs)}.")
        return self._attrs[name]

    @property
    def traceback(self):
        """(filename, lineno, function) of the user frames that created this op, innermost first."""
        return list(self._traceback)

    @property
    def creation_site(self) -> str:
        if not self._traceback:
            return ""
        filename, lineno, fn = self._traceback[0]
        return f"{filename}:{lineno} in {fn}"

    @property
    def node_def(self):
        from .graph_def import node_def_for  # serialization lives beside the model

        return node_def_for(self)

    def run(self, feed_dict=None, session=None):
        """Run this op in `session` (default: the default session)."""
        from ..runtime.session import _session_for

        _session_for(session, self._graph).run(self, feed_dict)

    def _add_control_input(self, op: Operation):
        """Used only while the op is being built (e.g. by `group`); the graph stays append-only."""
        self._control_inputs = self._control_inputs + (op,)

    def __repr__(self):
        return f"<tf.Operation '{self._name}' type={self.type}>"


class Graph:
    """A TensorFlow 1.x dataflow graph: append-only, with unique op names and collections."""

    def __init__(self):
        self._operations: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._lock = threading.RLock()
        self._tensor_count = 0
        self._finalized = False
        self._version = 0
        self.seed = None
        self._scope_stack = threading.local()

    # --- per-thread building state --------------------------------------------------------
    def _state(self):
        s = self._scope_stack
        if not hasattr(s, "name_scope"):
            s.name_scope = ""
            s.control = []  # list of lists of Operations; None entry clears outer ones
            s.device = []
        return s

    def _next_tensor_id(self) -> int:
        self._tensor_count += 1
        return self._tensor_count

    # --- naming -----------------------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        scope = self._state().name_scope
        full = f"{scope}/{name}" if scope else name
        key = full.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = full
            while True:
                candidate = f"{base}_{count}"
                if candidate.lower() not in self._names_in_use:
                    break
                count += 1
            if mark_as_used:
                self._names_in_use[candidate.lower()] = 1
            full = candidate
        return full

    @contextlib.contextmanager
    def name_scope(self, name):
        """Push a name scope; a name ending in '/' is used verbatim (re-entering a scope)."""
        state = self._state()
        old = state.name_scope
        if name is None or name == "":
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            if not _VALID_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name.")
            new = self.unique_name(name)
        state.name_scope = new
        try:
            yield (new + "/") if new else ""
        finally:
            state.name_scope = old

    def get_name_scope(self) -> str:
        return self._state().name_scope

    # --- control dependencies and devices --------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops created inside run only after `control_inputs` (None clears outer ones)."""
        state = self._state()
        if control_inputs is None:
            frame = None
        else:
            frame = []
            for c in control_inputs:
                c = _as_operation(c)
                if c.graph is not self:
                    raise ValueError(f"Control input {c.name} is from a different graph.")
                frame.append(c)
        state.control.append(frame)
        try:
            yield
        finally:
            state.control.pop()

    def _current_control_inputs(self):
        out = []
        for frame in reversed(self._state().control):
            if frame is None:
                break
            out.extend(frame)
        return out

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        state = self._state()
        state.device.append(device_name_or_function)
        try:
            yield
        finally:
            state.device.pop()

    def _current_device(self, op_proto=None) -> str:
        dev = ""
        for d in self._state().device:
            if callable(d):
                dev = d(op_proto) or ""
            elif d is None:
                dev = ""
            else:
                dev = str(d)
        return dev

    # --- building -----------------------------------------------------------------------------
    def create_op(self, op_def, inputs, attrs=None, name=None, control_inputs=()) -> Operation:
        """Add an op: name it, attach context, infer its outputs. Returns the Operation."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        attrs = dict(attrs or {})
        inputs = list(inputs)
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"Input {i} of {op_def.name} must be a Tensor, got {t!r}.")
            if t.graph is not self:
                raise ValueError(f"Tensor {t.name} (input {i} of {op_def.name} '{name}') "
                                 "must be from the same graph as the op.")
        with self._lock:
            if name is not None and name.endswith("/"):
                op_name = name[:-1]  # an explicit, already-unique scope name
                if op_name in self._by_name:
                    raise ValueError(f"Duplicate node name in graph: '{op_name}'")
                self._names_in_use[op_name.lower()] = 1
            else:
                base = name if name else getattr(op_def, "default_name", op_def.name)
                if name and not _VALID_NAME.match(name):
                    raise ValueError(f"'{name}' is not a valid op name.")
                op_name = self.unique_name(base)
            controls = []
            input_ops = {t.op for t in inputs}
            for c in list(self._current_control_inputs()) + [_as_operation(c)
                                                             for c in control_inputs]:
                if c not in controls and c not in input_ops:
                    controls.append(c)
            op = Operation(self, op_def, op_name, inputs, attrs, controls,
                           self._current_device(), _user_frames())
            outputs = _infer(op_def, op)
            op._outputs = tuple(Tensor(op, i, dt, shp) for i, (dt, shp) in enumerate(outputs))
            self._operations.append(op)
            self._by_name[op_name] = op
            self._version += 1
        return op

    def _add_op_for_import(self, op: Operation):
        self._operations.append(op)
        self._by_name[op.name] = op

    # --- lookup -----------------------------------------------------------------------------
    def get_operations(self) -> list:
        return list(self._operations)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings, got {name!r}.")
        if name not in self._by_name:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        return self._by_name[name]

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str) or ":" not in name:
            raise ValueError(f"The name {name!r} looks like an Operation name, not a Tensor "
                             "name; Tensor names look like '<op_name>:<output_index>'.")
        op_name, _, index = name.rpartition(":")
        if not index.isdigit():
            raise ValueError(f"The name {name!r} looks like a Tensor name, but is not a valid "
                             "one; Tensor names look like '<op_name>:<output_index>'.")
        op = self.get_operation_by_name(op_name)
        if int(index) >= len(op.outputs):
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist: "
                           f"operation '{op_name}' has {len(op.outputs)} outputs.")
        return op.outputs[int(index)]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        """Resolve a Tensor, Operation, Variable or name to a Tensor or Operation of this graph."""
        if hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            raise ValueError(f"Name {obj!r} names an Operation, but a Tensor was expected.")
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{obj} is not an element of this graph.")
            if isinstance(obj, Tensor) and not allow_tensor:
                raise ValueError(f"Can not convert a Tensor into an Operation: {obj}.")
            if isinstance(obj, Operation) and not allow_operation:
                raise ValueError(f"Can not convert an Operation into a Tensor: {obj}.")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation.")

    # --- collections --------------------------------------------------------------------------
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for n in ([names] if isinstance(names, str) else names):
            self.add_to_collection(n, value)

    def get_collection(self, name, scope=None) -> list:
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    def get_collection_ref(self, name) -> list:
        return self._collections.setdefault(name, [])

    def clear_collection(self, name):
        self._collections.pop(name, None)

    def get_all_collection_keys(self) -> list:
        return sorted(self._collections)

    # --- misc ---------------------------------------------------------------------------------
    def finalize(self):
        self._finalized = True

    @property
    def finalized(self) -> bool:
        return self._finalized

    @property
    def version(self) -> int:
        return self._version

    @property
    def graph_def_versions(self):
        from .graph_def import FORMAT_VERSION

        return {"producer": FORMAT_VERSION}

    def as_graph_def(self, from_version=None, add_shapes=False):
        """Serialize this graph to a `GraphDef` (see compiler/graph_def.py)."""
        from .graph_def import graph_to_graph_def

        return graph_to_graph_def(self, add_shapes=add_shapes)

    @contextlib.contextmanager
    def as_default(self):
        _default_graph_stack().append(self)
        try:
            yield self
        finally:
            _default_graph_stack().pop()

    def __contains__(self, name):
        return name in self._by_name


def _as_operation(x) -> Operation:
    if hasattr(x, "_as_graph_element"):
        x = x._as_graph_element()
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"Control inputs must be Operations or Tensors, got {x!r}.")


def _infer(op_def, op: Operation):
    """Run the op definition's inference and turn failures into errors naming the op."""
    try:
        outputs = op_def.infer(op)
    except (ValueError, TypeError) as e:
        shapes = ", ".join(str(t.shape) for t in op.inputs)
        types = ", ".join(t.dtype.name for t in op.inputs)
        msg = (f"{e}\n  in op {describe_op(op)} with input shapes [{shapes}] and dtypes "
               f"[{types}]")
        raise type(e)(msg) from None
    return [(_dtypes.as_dtype(dt), as_shape(s)) for dt, s in outputs]


# --- the default graph ----------------------------------------------------------------------
_global_default_graph = Graph()
_thread_local = threading.local()


def _default_graph_stack() -> list:
    if not hasattr(_thread_local, "stack"):
        _thread_local.stack = []
    return _thread_local.stack


def get_default_graph() -> Graph:
    stack = _default_graph_stack()
    return stack[-1] if stack else _global_default_graph


def reset_default_graph():
    """Replace the process-wide default graph with a new, empty one."""
    global _global_default_graph
    if _default_graph_stack():
        raise AssertionError("Do not use reset_default_graph() inside a `with graph.as_default()`"
                             " block; leave the block first.")
    _global_default_graph = Graph()


def name_scope(name, default_name=None, values=None):
    """`with name_scope("layer1"):` prefixes names of ops created inside."""
    graph = get_default_graph()
    if values:
        for v in values:
            if isinstance(v, Tensor):
                graph = v.graph
                break
    return graph.name_scope(name if name is not None else default_name)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)
