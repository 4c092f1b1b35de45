"""Variables: persistent, mutable state that lives in a Session (2015 paper §3).

Ops: VariableV2 (produces a reference to the session's value), Assign, AssignAdd, AssignSub
(take that reference as input 0 and return the new value) and IsVariableInitialized.
Front end: the `Variable` class (TensorFlow 1.x `tf.Variable`, named ops "v", "v/Assign",
"v/read", "v/initial_value"), `assign*` functions, initializers and the variable
collections.  A variable used as an op input is read when that op runs, so a read placed
after an assignment by a control dependency sees the new value.
"""

from __future__ import annotations

import numpy as np

from . import basic_ops, variable_collections, variable_defs
from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import GraphKeys, Tensor, get_default_graph
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.session_hook import session_for
from ..compiler.core.shapes import as_shape
from ..errors import InvalidArgumentError
from .builder import make_op, to_tensor
from .lower_util import lower_as
from .registry import OpDef, Trait, not_differentiable
from .variable_ref import VariableRef

# --- ops ------------------------------------------------------------------------------------


def _variable_infer(op):
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


def _variable_kernel(ctx, inputs, attrs):
    return [VariableRef(ctx.state, ctx.op.name, ctx.op)]


VARIABLE_V2 = OpDef("VariableV2", _variable_infer, _variable_kernel,
                    traits={Trait.STATEFUL, Trait.SOURCE}, default_name="Variable")


def _variable_behind(t):
    """The tensor a variable reference came from: through the Enter and Switch ops that
    carry a variable captured by a while loop or cond (ops/control_flow.py) to the variable."""
    while t.op.type in ("Enter", "Switch"):
        t = t.op.inputs[0]
    return t


def _check_ref(op):
    ref = op.inputs[0]
    if _variable_behind(ref).op.op_def is not VARIABLE_V2:
        raise TypeError(f"Input 'ref' of '{op.op_def.name}' Op requires a variable (l-value) "
                        f"input, but {ref.name} is produced by a {ref.op.type} op.")
    value = op.inputs[1]
    if value.dtype is not ref.dtype:
        raise TypeError(f"Input 'value' of '{op.op_def.name}' Op has type {value.dtype.name} "
                        f"that does not match type {ref.dtype.name} of variable "
                        f"'{_variable_behind(ref).op.name}'.")
    return ref, value


def _assign_infer(op):
    ref, value = _check_ref(op)
    if op.get_attr("validate_shape"):
        if not ref.shape.is_compatible_with(value.shape):
            raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible: cannot "
                             f"assign a value of shape {value.shape} to variable "
                             f"'{ref.op.name}' of shape {ref.shape}.")
        return [(ref.dtype, ref.shape.merge_with(value.shape))]
    return [(ref.dtype, value.shape)]


def _update_infer(op):
    ref, value = _check_ref(op)
    if not ref.shape.is_compatible_with(value.shape):
        raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible: the update "
                         f"must have the shape of variable '{ref.op.name}'.")
    return [(ref.dtype, ref.shape)]


def _require_ref(ctx, ref):
    if type(ref) is not VariableRef:
        raise InvalidArgumentError(None, ctx.op, "Input 'ref' must be a variable reference; "
                                                 "a variable's value cannot be fed and "
                                                 "then assigned to.")
    return ref


def _assign_kernel(ctx, inputs, attrs):
    ref, value = _require_ref(ctx, inputs[0]), inputs[1]
    if attrs["validate_shape"]:
        declared = ctx.op.inputs[0].shape
        if not declared.is_compatible_with(value.shape):
            raise InvalidArgumentError(None, ctx.op, f"Assign requires shapes of both tensors to "
                                                     f"match. lhs shape= {declared} rhs shape= "
                                                     f"{value.shape}")
    with ctx.state.lock:
        return [ref.assign(value)]


def _updater(fn, verb):
    def kernel(ctx, inputs, attrs):
        ref, delta = _require_ref(ctx, inputs[0]), inputs[1]
        with ctx.state.lock:
            old = ref.read(ctx.op)
            if old.shape != delta.shape:
                raise InvalidArgumentError(None, ctx.op, f"{verb} requires the update to have "
                                                         f"the variable's shape: variable "
                                                         f"{old.shape}, update {delta.shape}")
            return [ref.assign(fn(old, delta))]

    return kernel


# --- lowerings (used when a compiled cluster holds the update: runtime/cluster_updates.py) ----


def _check_shape(ctx, op, node, shape, what: str):
    """Kernel checks that `node` has `shape` (a TensorShape; unknown dims are not checked)."""
    if shape.rank is None:
        return
    if len(node.shape) != shape.rank:
        raise NotLowerable(f"{op.type} of a rank-{len(node.shape)} value into a rank-"
                           f"{shape.rank} variable (the reference kernel reports it)")
    for i, (size, want) in enumerate(zip(node.shape, shape.as_list())):
        if want is not None:
            ctx.check_equal(size, ir.index(want), f"{op.type} '{op.name}': {what} has size "
                                                   f"different from {want} in dimension {i}")


def _lower_assign(ctx, op, inputs):
    value = inputs[1]
    if op.get_attr("validate_shape"):
        _check_shape(ctx, op, value, op.inputs[0].shape, "the value")
    return [value]


def _lowering_of_update(kind):
    """The elementwise `kind` of the variable's value and the update, shapes checked."""
    binary = lower_as(kind)

    def lower(ctx, op, inputs):
        old, delta = inputs
        if len(old.shape) != len(delta.shape):
            raise NotLowerable(f"{op.type} with an update of another rank (the reference "
                               f"kernel reports it)")
        for i, (a, b) in enumerate(zip(old.shape, delta.shape)):
            ctx.check_equal(a, b, f"{op.type} '{op.name}' requires the update to have the "
                                  f"variable's shape (dimension {i} differs)")
        return binary(ctx, op, inputs)

    return lower


# TensorFlow declares the assignments not differentiable: a gradient stops at them
ASSIGN = OpDef("Assign", _assign_infer, _assign_kernel, traits={Trait.STATEFUL},
               ref_inputs={0}, gradient=not_differentiable, lower=_lower_assign)
ASSIGN_ADD = OpDef("AssignAdd", _update_infer, _updater(np.add, "AssignAdd"),
                   traits={Trait.STATEFUL}, ref_inputs={0}, gradient=not_differentiable,
                   lower=_lowering_of_update(S.ADD))
ASSIGN_SUB = OpDef("AssignSub", _update_infer, _updater(np.subtract, "AssignSub"),
                   traits={Trait.STATEFUL}, ref_inputs={0}, gradient=not_differentiable,
                   lower=_lowering_of_update(S.SUB))


def _is_init_kernel(ctx, inputs, attrs):
    return [np.asarray(_require_ref(ctx, inputs[0]).is_initialized())]


IS_VARIABLE_INITIALIZED = OpDef("IsVariableInitialized", lambda op: [(_dtypes.bool_, ())],
                                _is_init_kernel, traits={Trait.STATEFUL}, ref_inputs={0})

OP_DEFS = (VARIABLE_V2, ASSIGN, ASSIGN_ADD, ASSIGN_SUB, IS_VARIABLE_INITIALIZED)

# --- the Variable front end -------------------------------------------------------------------


def _ref_tensor(ref):
    if isinstance(ref, Variable):
        return ref._variable
    if isinstance(ref, Tensor) and ref.op.op_def is VARIABLE_V2:
        return ref
    raise TypeError(f"Expected a Variable, got {ref!r}.")


def _value_tensor(value, ref):
    """A Python/NumPy value converts to the variable's dtype; a tensor of another dtype is left
    for the op's inference to reject, so the TypeError names the op and the user's line."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_tensor"):
        return to_tensor(value, graph=ref.graph)
    return to_tensor(value, dtype=ref.dtype, graph=ref.graph)


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """Set variable `ref` to `value`; returns a tensor holding the new value."""
    ref = _ref_tensor(ref)
    value = _value_tensor(value, ref)
    return make_op(ASSIGN, [ref, value],
                   {"validate_shape": True if validate_shape is None else bool(validate_shape),
                    "use_locking": bool(use_locking)}, name or "Assign").outputs[0]


def assign_add(ref, value, use_locking=None, name=None):
    """Add `value` to variable `ref`; returns a tensor holding the new value."""
    ref = _ref_tensor(ref)
    value = _value_tensor(value, ref)
    return make_op(ASSIGN_ADD, [ref, value], {"use_locking": bool(use_locking)},
                   name or "AssignAdd").outputs[0]


def assign_sub(ref, value, use_locking=None, name=None):
    """Subtract `value` from variable `ref`; returns a tensor holding the new value."""
    ref = _ref_tensor(ref)
    value = _value_tensor(value, ref)
    return make_op(ASSIGN_SUB, [ref, value], {"use_locking": bool(use_locking)},
                   name or "AssignSub").outputs[0]


class Variable:
    """A mutable tensor that keeps its value across `Session.run` calls of one session.

    `Variable(initial_value, trainable=True, collections=None, validate_shape=True,
    caching_device=None, name=None, dtype=None)`; the initial value may be a NumPy array, a
    Python value, a tensor, or a callable returning one.
    """

    def __init__(self, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None, variable_def=None,
                 dtype=None, expected_shape=None, import_scope=None, constraint=None,
                 use_resource=None, synchronization=None, aggregation=None, shape=None):
        if variable_def is not None:   # wrap ops already in the graph (a MetaGraphDef's)
            variable_defs.fill_from_def(self, variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified for a Variable.")
        graph = initial_value.graph if isinstance(initial_value, Tensor) else \
            get_default_graph()
        # built outside any cond branch or while loop (TensorFlow's init_scope): a cell's
        # variables made while dynamic_rnn builds its loop body belong to the graph's top
        with graph.as_default(), graph.control_dependencies(None), \
                graph._control_flow_context(None), graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                initial_value = initial_value()
            if isinstance(initial_value, Tensor):
                init = initial_value
                if dtype is not None and init.dtype is not _dtypes.as_dtype(dtype):
                    raise TypeError(f"Variable '{scope[:-1]}': initial value {init.name} has "
                                    f"dtype {init.dtype.name}, requested "
                                    f"{_dtypes.as_dtype(dtype).name}.")
            else:
                init = to_tensor(initial_value, dtype=dtype, name="initial_value")
            var_shape = as_shape(shape) if shape is not None else (
                init.shape if validate_shape else as_shape(None))
            self._variable = graph.create_op(
                VARIABLE_V2, [], {"shape": var_shape, "dtype": init.dtype, "container": "",
                                  "shared_name": ""}, scope).outputs[0]
            self._initial_value = init
            self._initializer_op = assign(self._variable, init, validate_shape=validate_shape,
                                          name="Assign").op
            self._snapshot = basic_ops.identity(self._variable, name="read")
        self._trainable = bool(trainable)
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = list(collections) + [GraphKeys.TRAINABLE_VARIABLES]
        graph.add_to_collections(collections, self)

    def to_proto(self, export_scope=None):
        """This variable's VariableDef (the names of its ops), for a MetaGraphDef."""
        return variable_defs.variable_def_of(self, export_scope)

    @staticmethod
    def from_proto(variable_def, import_scope=None):
        """The Variable a VariableDef describes, over ops already in the default graph."""
        return Variable(variable_def=variable_def, import_scope=import_scope)

    # --- conversion (operators are installed by ops/operators.py) --------------------------
    def _as_graph_element(self):
        return self._variable

    def _as_graph_tensor(self):
        return self._variable

    # --- properties -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def graph(self):
        return self._variable.graph

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self._variable.shape

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    # --- reading and writing -----------------------------------------------------------------
    def value(self) -> Tensor:
        """The snapshot tensor 'name/read' created with the variable."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A new tensor reading the variable's value where it is created."""
        return basic_ops.identity(self._variable, name="read")

    def initialized_value(self) -> Tensor:
        """The value, with the initializer forced to run first (for dependent initial values)."""
        with self.graph.as_default(), self.graph.control_dependencies([self._initializer_op]):
            return basic_ops.identity(self._variable)

    def assign(self, value, use_locking=False, name=None, read_value=True):
        t = assign(self, value, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        t = assign_add(self, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        t = assign_sub(self, delta, use_locking=use_locking, name=name)
        return t if read_value else t.op

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None):
        """Set the variable's value in `session` from a NumPy/Python value."""
        session = session_for(session, self.graph)
        session.run(self._initializer_op, {self._initial_value: value})

    def __repr__(self):
        return (f"<tf.Variable '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.name}_ref>")


# --- collections and initializers (ops/variable_collections.py) -----------------------------

global_variables = variable_collections.global_variables
all_variables = variable_collections.all_variables
trainable_variables = variable_collections.trainable_variables
local_variables = variable_collections.local_variables
variables_initializer = variable_collections.variables_initializer
initialize_variables = variable_collections.initialize_variables
global_variables_initializer = variable_collections.global_variables_initializer
initialize_all_variables = variable_collections.initialize_all_variables
local_variables_initializer = variable_collections.local_variables_initializer


def is_variable_initialized(variable) -> Tensor:
    """A bool scalar: whether `variable` has been initialized in the running session."""
    ref = _ref_tensor(variable)
    return make_op(IS_VARIABLE_INITIALIZED, [ref], {}, "IsVariableInitialized").outputs[0]
