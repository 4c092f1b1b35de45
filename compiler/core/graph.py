"""The dataflow graph: `Graph`, the default-graph stack and the graph-building contexts.

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
import re
import threading

from ... import dtypes as _dtypes
from ...errors import describe_op
from .device_spec import DeviceSpec
from .node import Operation, Tensor, _as_operation, _user_frames
from .shapes import as_shape

__all__ = ["Graph", "GraphKeys", "Operation", "Tensor", "get_default_graph",
           "reset_default_graph", "name_scope", "control_dependencies", "device", "colocate_with",
           "add_to_collection", "get_collection", "get_collection_ref"]

_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")


class GraphKeys:
    """Standard collection names (TensorFlow's)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
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
    SAVERS = "savers"
    LOCAL_INIT_OP = "local_init_op"


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
            s.colocation = []  # lists of op names new ops are colocated with
            s.cf_context = None  # the cond branch or while loop ops are being built in
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

    def _current_device(self, op=None) -> str:
        """The device the scopes ask for `op`, applied innermost first as in TensorFlow: a
        name merges under what inner scopes set (an inner '/cpu:1' inside '/job:worker'
        gives '/job:worker/device:CPU:1'); a function is called with the op, its `device`
        being what the inner scopes set so far, and its answer replaces that (a device
        function such as `train.replica_device_setter` merges it itself); None, or a
        function's empty answer, clears the outer scopes."""
        spec = DeviceSpec()
        for d in reversed(self._state().device):
            if callable(d):
                if op is not None:
                    op._device = spec.to_string()
                d = d(op)
                if d is None or d == "":
                    break
                spec = DeviceSpec.parse(d)
                continue
            if d is None or d == "":
                break
            spec = DeviceSpec.parse(d).merged_with(spec)
        return spec.to_string()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops created inside are placed on the same device as `op` (an Operation, a Tensor
        or a Variable); they carry the colocation as TensorFlow's `_class` attribute
        ('loc:@name').  None clears it, as `ignore_existing` clears outer ones."""
        state = self._state()
        if op is None:
            frame = None
        else:
            target = _as_operation(getattr(op, "op", op) if not isinstance(op, Operation)
                                   else op)
            frame = [target.name]
        saved = state.colocation
        if ignore_existing or frame is None:
            state.colocation = [] if frame is None else [frame]
        else:
            state.colocation = saved + [frame]
        try:
            yield
        finally:
            state.colocation = saved

    def _current_colocation(self) -> tuple:
        names = []
        for frame in self._state().colocation:
            for n in frame:
                if n not in names:
                    names.append(n)
        return tuple(names)

    # --- building -----------------------------------------------------------------------------
    def create_op(self, op_def, inputs, attrs=None, name=None, control_inputs=()) -> Operation:
        """Add an op: name it, attach context, infer its outputs. Returns the Operation."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        attrs = dict(attrs or {})
        inputs = [t._as_graph_tensor() if hasattr(t, "_as_graph_tensor") else t
                  for t in inputs]
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
            for c in list(self._current_control_inputs()) + [_as_operation(c)
                                                             for c in control_inputs]:
                if c not in controls:
                    controls.append(c)
            context = self._state().cf_context
            if context is not None:   # values from outside a branch or loop enter it
                inputs, controls = context.prepare_inputs(op_def, inputs, controls)
            input_ops = {t.op for t in inputs}
            controls = [c for c in controls if c not in input_ops]
            op = Operation(self, op_def, op_name, inputs, attrs, controls, "",
                           _user_frames())
            op._device = self._current_device(op)
            op._cf_context = context
            colocation = self._current_colocation()
            if colocation:
                op._colocation = colocation
            outputs = _infer(op_def, op)
            op._outputs = tuple(Tensor(op, i, dt, shp) for i, (dt, shp) in enumerate(outputs))
            self._operations.append(op)
            self._by_name[op_name] = op
            self._version += 1
            if context is not None:
                context.add_op(op)
        return op

    # --- control-flow contexts (ops/control_flow.py builds them) ------------------------
    def _get_control_flow_context(self):
        """The cond branch or while loop that ops created now belong to (None: the top)."""
        return self._state().cf_context

    @contextlib.contextmanager
    def _control_flow_context(self, context):
        """Create ops inside `context` (a cond branch or while loop, or None for the top
        level): the context sees each op's inputs first (it brings outside values in through
        Switch or Enter ops) and records the op."""
        state = self._state()
        old = state.cf_context
        state.cf_context = context
        try:
            yield context
        finally:
            state.cf_context = old

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
        from .graph_def import GRAPH_DEF_VERSION

        return {"producer": GRAPH_DEF_VERSION}

    def as_graph_def(self, from_version=None, add_shapes=False):
        """Serialize this graph to a `GraphDef` (see compiler/core/graph_def.py)."""
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

    def _repr_html_(self):
        """Jupyter's rich display: the HTML of the renderer registered for graphs
        (compiler/core/display.py; the root package registers client/graph_view.py's), or
        None, which makes Jupyter show the plain repr."""
        from .display import html_for

        return html_for(self)


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
    """Ops created inside the block ask for this device (a name, or a function of the op)."""
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing=False):
    """Ops created inside the block are placed with `op` (Graph.colocate_with)."""
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)
