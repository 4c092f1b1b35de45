"""The `Optimizer` base class of flowjit's TF 1.x optimizers (see the package docstring):
`minimize` = `compute_gradients` + `apply_gradients`, dense or sparse (IndexedSlices) updates
per variable through the subclass hooks, slot and non-slot variables, hyperparameters.
"""

from __future__ import annotations

import contextlib
import importlib

from ..compiler.core.graph import Tensor, get_default_graph
from ..ops import indexed_slices
from ..ops.basic_ops import constant, group
from ..ops.conversion import convert_to_tensor
from ..ops.fill_ops import fill
from ..ops.indexed_slices import IndexedSlices
from ..ops.math_ops import cast
from ..ops.shape_ops import shape as _shape
from ..ops.variables import Variable, assign_add, trainable_variables


def _gradients_function():
    """`flowjit.gradients`, looked up at call time (autodiff may be added after this module)."""
    root = importlib.import_module(__name__.split(".")[0])
    fn = getattr(root, "gradients", None)
    if fn is not None and not callable(fn):  # a module of that name: take its function
        fn = getattr(fn, "gradients", None)
    if fn is None:
        raise NotImplementedError("compute_gradients/minimize need flowjit.gradients, which this "
                                  "build does not have; build (gradient, variable) pairs "
                                  "yourself and call apply_gradients.")
    return fn


def _is_variable(var) -> bool:
    return isinstance(var, Variable)


def _hyper_tensor(value, dtype, name):
    """A hyperparameter (Python number, tensor, Variable or callable) as a tensor of `dtype`."""
    if callable(value) and not isinstance(value, (Tensor, Variable)):
        value = value()
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_tensor"):
        t = convert_to_tensor(value)
        return t if t.dtype is dtype else cast(t, dtype, name=name)
    return constant(value, dtype=dtype, name=name)


class Optimizer:
    """Base class of optimizers: subclasses define the slots and the per-variable update.

    Subclass hooks: `_create_slots(var_list)` makes slot/non-slot variables,
    `_apply_dense(grad, var)` returns the update of one variable (a tensor or an op), and
    `_finish(update_ops, name)` returns the op that completes a step (by default a group).
    Inside the hooks `self._hyper(name, dtype)` gives a hyperparameter as a tensor of `dtype`,
    made once per `apply_gradients` call.
    """

    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("An optimizer needs a name.")
        self._use_locking = use_locking
        self._name = name
        self._hypers: dict[str, object] = {}
        self._slots: dict[str, dict] = {}  # slot name -> {variable op: slot Variable}
        self._non_slots: dict = {}  # (graph, name) -> Variable
        self._hyper_cache: dict = {}

    def get_name(self) -> str:
        """The optimizer's name (the default name scope of its ops and suffix of its slots)."""
        return self._name

    # --- the public steps ---------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """An op that takes one optimization step on `loss`; increments `global_step` if given.

        `var_list` defaults to the trainable variables.  Raises ValueError when no variable
        has a gradient.
        """
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if all(g is None for g, _ in grads_and_vars):
            raise ValueError("No gradients provided for any variable, check your graph for ops "
                             "that do not support gradients, between variables "
                             f"{[v.name for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None) -> list:
        """[(gradient, variable)] of `loss` for `var_list` (default: trainable variables).

        A gradient is None where `loss` does not depend on the variable.  Calls
        `flowjit.gradients(loss, var_list)`.
        """
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        loss = convert_to_tensor(loss)
        if not loss.dtype.is_floating:
            raise ValueError(f"Invalid type {loss.dtype.name} for {loss.name}: the loss must be "
                             "a floating-point tensor.")
        if var_list is None:
            with loss.graph.as_default():
                var_list = trainable_variables()
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not _is_variable(v):
                raise TypeError(f"compute_gradients: var_list must hold Variables, got {v!r}.")
        kwargs = {} if grad_loss is None else {"grad_ys": grad_loss}
        grads = _gradients_function()(loss, var_list, **kwargs)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One op applying every (gradient, variable) update, then incrementing `global_step`.

        Pairs whose gradient is None are skipped; a gradient may be a tensor, an IndexedSlices
        (applied sparsely) or a NumPy/Python value (converted to the variable's dtype).  The
        returned op is named `name` (default: the optimizer's name).
        """
        pairs = self._check_pairs(grads_and_vars)
        graph = pairs[0][1].graph
        with graph.as_default():
            self._create_slots([v for _, v in pairs])
            with graph.name_scope(name or self._name) as scope:
                self._hyper_cache = {}
                try:
                    with graph.control_dependencies([g.op for g, _ in pairs]):
                        update_ops = []
                        for grad, var in pairs:
                            with graph.name_scope("update_" + var.op.name):
                                update = self._apply_sparse_duplicate_indices(grad, var) \
                                    if isinstance(grad, IndexedSlices) else \
                                    self._apply_dense(grad, var)
                            update_ops.append(update.op if isinstance(update, Tensor)
                                              else update)
                        if global_step is None:
                            return self._finish(update_ops, scope)
                        with graph.control_dependencies([self._finish(update_ops, "update")]):
                            return assign_add(global_step, 1, name=scope).op
                finally:
                    self._hyper_cache = {}

    def _check_pairs(self, grads_and_vars) -> list:
        pairs, seen = [], set()
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        for pair in grads_and_vars:
            try:
                grad, var = pair
            except (TypeError, ValueError):
                raise TypeError(f"apply_gradients expects (gradient, variable) pairs, got "
                                f"{pair!r}.") from None
            if not _is_variable(var):
                raise TypeError(f"apply_gradients: {var!r} is not a Variable.")
            if var.op in seen:
                raise ValueError(f"Variable {var.name} appears more than once in "
                                 "grads_and_vars.")
            seen.add(var.op)
            if grad is None:
                continue
            if isinstance(grad, IndexedSlices):
                pass
            elif isinstance(grad, Tensor) or hasattr(grad, "_as_graph_tensor"):
                grad = convert_to_tensor(grad)
            else:
                with var.graph.as_default():
                    grad = convert_to_tensor(grad, dtype=var.dtype)
            if grad.dtype is not var.dtype:
                raise ValueError(f"Gradient {grad.name} has dtype {grad.dtype.name}, but "
                                 f"variable {var.name} has dtype {var.dtype.name}.")
            if not var.dtype.is_floating:
                raise ValueError(f"Variable {var.name} has dtype {var.dtype.name}; optimizers "
                                 "update floating-point variables only.")
            pairs.append((grad, var))
        if not pairs:
            raise ValueError("No gradients provided for any variable: "
                             f"{[v.name for _, v in grads_and_vars]}.")
        return pairs

    # --- slots and hyperparameters ------------------------------------------------------------
    def get_slot(self, var, name):
        """The slot variable `name` ("m", "momentum", ...) made for `var`, or None."""
        return self._slots.get(name, {}).get(getattr(var, "op", None))

    def get_slot_names(self) -> list:
        """The sorted names of the slots this optimizer has made."""
        return sorted(self._slots)

    def variables(self) -> list:
        """Every variable this optimizer made: slots and non-slot variables (beta powers)."""
        made = [v for slots in self._slots.values() for v in slots.values()]
        return made + list(self._non_slots.values())

    def _hyper(self, name: str, dtype):
        """Hyperparameter `name` as a tensor of `dtype`, made once per apply_gradients call."""
        key = (name, dtype)
        if key not in self._hyper_cache:
            self._hyper_cache[key] = _hyper_tensor(self._hypers[name], dtype, name)
        return self._hyper_cache[key]

    def _slot(self, var, slot_name: str, fill_value=0.0):
        """The slot `slot_name` of `var`, made on first use filled with `fill_value`."""
        slots = self._slots.setdefault(slot_name, {})
        if var.op not in slots:
            slots[var.op] = _make_slot(var, self._name, fill_value)
        return slots[var.op]

    def _non_slot(self, name: str, initial_value, dtype):
        """A per-graph variable `name` of the optimizer (not tied to one variable)."""
        graph = get_default_graph()
        key = (graph, name)
        if key not in self._non_slots:
            with graph.name_scope(None):
                self._non_slots[key] = Variable(
                    lambda: _hyper_tensor(initial_value, dtype, "initial_value"),
                    trainable=False, name=name)
        return self._non_slots[key]

    # --- subclass hooks -----------------------------------------------------------------------
    def _create_slots(self, var_list):
        """Make the slot variables `_apply_dense` will use (none by default)."""

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _apply_sparse_duplicate_indices(self, grad, var):
        """The update by IndexedSlices `grad`: the rows of repeated indices summed, then
        `_apply_sparse`."""
        return self._apply_sparse(indexed_slices.deduplicate(grad), var)

    def _apply_sparse(self, grad, var):
        """The update by IndexedSlices `grad` with distinct indices; by default the dense
        update of its dense value (TensorFlow raises NotImplementedError instead)."""
        return self._apply_dense(indexed_slices.dense(grad), var)

    def _finish(self, update_ops, name):
        return group(*update_ops, name=name)


def _make_slot(var, optimizer_name: str, fill_value):
    """A non-trainable variable shaped like `var`, named `<var>/<optimizer>[_n]`."""
    graph = var.graph
    with graph.as_default():
        with graph.name_scope(None):
            name = graph.unique_name(f"{var.op.name}/{optimizer_name}")
        device = graph.device(var.device) if var.device else contextlib.nullcontext()
        known = var.shape.is_fully_defined()

        def initial_value():
            dims = var.shape.as_list() if known else _shape(var.initialized_value())
            return fill(dims, constant(fill_value, dtype=var.dtype))

        with device:
            return Variable(initial_value, trainable=False, name=name + "/",
                            validate_shape=known)
