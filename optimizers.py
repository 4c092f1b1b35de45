"""Optimizers: TensorFlow 1.x's `tf.train.*Optimizer` classes, built from public ops.

Owns the `Optimizer` base class (`minimize` = `compute_gradients` + `apply_gradients`,
slot variables, non-slot variables such as Adam's beta powers) and the five concrete
optimizers: GradientDescent, Momentum (optionally Nesterov), Adam, Adagrad and RMSProp
(optionally centered).  A dense update is an Assign, AssignAdd or AssignSub on a variable,
computed with the public math ops, so the executor runs it like any other part of the graph.
An IndexedSlices gradient (an embedding table's, ops/indexed_slices.py) is applied sparsely,
as TensorFlow 1.x does: GradientDescent subtracts the scaled rows with one ScatterSub
(repeated rows add up); the others first sum the rows of repeated indices (Unique +
UnsortedSegmentSum), then Momentum and Adagrad run SparseApplyMomentum / SparseApplyAdagrad
(ops/sparse_training_ops.py) and Adam decays m and v densely and scatter-adds the new parts
(TensorFlow's `_apply_sparse`) and RMSProp updates the rows of the indices (gathered and
scattered back, TensorFlow's SparseApplyRMSProp).  A subclass without `_apply_sparse`
applies the dense value of the slices.  It lives at the package root, beside `nn.py`, because it is front-end
graph building (it imports `ops/` and `compiler/`, never `runtime/`).

Invariants:
- Every update of one `apply_gradients` waits for every gradient (a control dependency), so all
  gradients see the variables' values from before the step, whatever the executor's order.
- Updates of one variable are chained by data edges (a slot's new value feeds the variable's
  update), so each step reads each slot once and writes it once.
- Work that must follow all variable updates (Adam's beta-power decay, the global-step
  increment) has control dependencies on them; `apply_gradients` returns one op that runs it all.
- Slot and non-slot variables are non-trainable members of GLOBAL_VARIABLES, so
  `global_variables_initializer()` initializes them and a `Saver` saves them.  Slot variables
  are named `<var>/<optimizer name>` (`w/Adam`, `w/Adam_1`), as in TensorFlow.

`use_locking` is accepted and ignored: a variable update holds the session's state lock anyway.
"""

from __future__ import annotations

import contextlib
import importlib

from . import dtypes as _dtypes
from .compiler.core.graph import Tensor, get_default_graph
from .ops import indexed_slices
from .ops.basic_ops import constant, group
from .ops.conversion import convert_to_tensor
from .ops.fill_ops import fill
from .ops.math_ops import cast, sqrt, square
from .ops.indexed_slices import IndexedSlices
from .ops.shape_ops import shape as _shape
from .ops.sparse_training_ops import sparse_apply_adagrad, sparse_apply_momentum
from .ops.gather_ops import gather
from .ops.variable_scatter_ops import scatter_add, scatter_sub, scatter_update
from .ops.variables import Variable, assign, assign_add, assign_sub, trainable_variables

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "AdagradOptimizer", "RMSPropOptimizer"]


def _gradients_function():
    """`flowjit.gradients`, looked up at call time (autodiff may be added after this module)."""
    root = importlib.import_module(__package__ or "flowjit")
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
        (applied sparsely) or a NumPy/Python value (converted to the variable's dtype).  The returned op is named `name` (default:
        the optimizer's name).
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


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent: `var -= learning_rate * grad`."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._hypers = {"learning_rate": learning_rate}

    def _apply_dense(self, grad, var):
        return assign_sub(var, self._hyper("learning_rate", var.dtype) * grad)

    def _apply_sparse_duplicate_indices(self, grad, var):
        """var[indices] -= learning_rate * values, repeated rows adding up (ScatterSub)."""
        return scatter_sub(var, grad.indices, grad.values * self._hyper("learning_rate",
                                                                         var.dtype))


class MomentumOptimizer(Optimizer):
    """Momentum: `accum = momentum * accum + grad; var -= lr * accum`.

    With `use_nesterov=True`: `var -= lr * grad + lr * momentum * accum` (the new accum).
    Slot: "momentum".
    """

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._hypers = {"learning_rate": learning_rate, "momentum": momentum}
        self._use_nesterov = bool(use_nesterov)

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "momentum")

    def _apply_dense(self, grad, var):
        lr, mu = self._hyper("learning_rate", var.dtype), self._hyper("momentum", var.dtype)
        accum = self.get_slot(var, "momentum")
        accum_t = assign(accum, accum * mu + grad)
        step = grad * lr + accum_t * mu * lr if self._use_nesterov else accum_t * lr
        return group(assign_sub(var, step), accum_t)

    def _apply_sparse(self, grad, var):
        return sparse_apply_momentum(
            var, self.get_slot(var, "momentum"), self._hyper("learning_rate", var.dtype),
            grad.values, grad.indices, self._hyper("momentum", var.dtype),
            use_nesterov=self._use_nesterov).op


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), in TensorFlow's "epsilon hat" form.

    With t the step number (from 1) and beta_power = beta^t:
    `lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)`, `m = beta1*m + (1-beta1)*g`,
    `v = beta2*v + (1-beta2)*g^2`, `var -= lr_t * m / (sqrt(v) + epsilon)`.
    Slots "m" and "v"; non-slot variables "beta1_power" and "beta2_power" (one pair per
    optimizer and graph, decayed after all variables are updated).
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._hypers = {"learning_rate": learning_rate, "beta1": beta1, "beta2": beta2,
                        "epsilon": epsilon}

    def _create_slots(self, var_list):
        # float32 whatever the variables' dtype, as TF1 makes them (from Python floats);
        # _apply_dense casts them to each variable's dtype
        self._non_slot("beta1_power", self._hypers["beta1"], _dtypes.float32)
        self._non_slot("beta2_power", self._hypers["beta2"], _dtypes.float32)
        for v in var_list:
            self._slot(v, "m")
            self._slot(v, "v")

    def _get_beta_accumulators(self):
        """The (beta1_power, beta2_power) variables of the default graph."""
        graph = get_default_graph()
        return self._non_slots[(graph, "beta1_power")], self._non_slots[(graph, "beta2_power")]

    def _lr_t(self, dt):
        """lr * sqrt(1 - beta2^t) / (1 - beta1^t) in dtype `dt`, once per apply_gradients."""
        if ("lr_t", dt) not in self._hyper_cache:
            p1, p2 = (convert_to_tensor(p) for p in self._get_beta_accumulators())
            p1, p2 = (p if p.dtype is dt else cast(p, dt) for p in (p1, p2))
            lr = self._hyper("learning_rate", dt)
            self._hyper_cache[("lr_t", dt)] = lr * sqrt(1 - p2) / (1 - p1)
        return self._hyper_cache[("lr_t", dt)]

    def _apply_dense(self, grad, var):
        dt = var.dtype
        b1, b2 = self._hyper("beta1", dt), self._hyper("beta2", dt)
        eps = self._hyper("epsilon", dt)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_t = assign(m, m * b1 + grad * (1 - b1))
        v_t = assign(v, v * b2 + square(grad) * (1 - b2))
        return group(assign_sub(var, self._lr_t(dt) * m_t / (sqrt(v_t) + eps)), m_t, v_t)

    def _apply_sparse(self, grad, var):
        """TensorFlow 1.x's sparse Adam: m and v decay densely, then the rows' new parts
        are scatter-added; var takes the dense step."""
        dt = var.dtype
        b1, b2 = self._hyper("beta1", dt), self._hyper("beta2", dt)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        graph = get_default_graph()
        updated = []
        for slot, beta, rows in ((m, b1, grad.values * (1 - b1)),
                                 (v, b2, grad.values * grad.values * (1 - b2))):
            decayed = assign(slot, slot * beta)
            with graph.control_dependencies([decayed]):
                updated.append(scatter_add(slot, grad.indices, rows))
        m_t, v_t = updated
        step = self._lr_t(dt) * m_t / (sqrt(v_t) + self._hyper("epsilon", dt))
        return group(assign_sub(var, step), m_t, v_t)

    def _finish(self, update_ops, name):
        p1, p2 = self._get_beta_accumulators()
        with get_default_graph().control_dependencies(update_ops):
            decay1 = assign(p1, p1 * self._hyper("beta1", p1.dtype))
            decay2 = assign(p2, p2 * self._hyper("beta2", p2.dtype))
        return group(*update_ops, decay1, decay2, name=name)


class AdagradOptimizer(Optimizer):
    """Adagrad: `accum += grad^2; var -= lr * grad / sqrt(accum)`.

    Slot "accumulator", starting at `initial_accumulator_value` (must be positive).
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._hypers = {"learning_rate": learning_rate}
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "accumulator", self._initial_accumulator_value)

    def _apply_dense(self, grad, var):
        accum_t = assign_add(self.get_slot(var, "accumulator"), square(grad))
        lr = self._hyper("learning_rate", var.dtype)
        return group(assign_sub(var, lr * grad / sqrt(accum_t)), accum_t)

    def _apply_sparse(self, grad, var):
        return sparse_apply_adagrad(var, self.get_slot(var, "accumulator"),
                                    self._hyper("learning_rate", var.dtype), grad.values,
                                    grad.indices).op


class RMSPropOptimizer(Optimizer):
    """RMSProp: `ms = decay*ms + (1-decay)*g^2`, `mom = momentum*mom + lr*g/sqrt(ms + eps)`,
    `var -= mom`.

    `centered=True` also tracks `mg = decay*mg + (1-decay)*g` and divides by
    `sqrt(ms - mg^2 + eps)`.  Slots "rms" (starting at 1, as in TensorFlow), "momentum" and,
    when centered, "mg".
    """

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._hypers = {"learning_rate": learning_rate, "decay": decay, "momentum": momentum,
                        "epsilon": epsilon}
        self._centered = bool(centered)

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "rms", 1.0)
            if self._centered:
                self._slot(v, "mg")
            self._slot(v, "momentum")

    def _apply_dense(self, grad, var):
        dt = var.dtype
        lr, rho = self._hyper("learning_rate", dt), self._hyper("decay", dt)
        mu, eps = self._hyper("momentum", dt), self._hyper("epsilon", dt)
        ms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        ms_t = assign(ms, ms * rho + square(grad) * (1 - rho))
        denom = ms_t + eps
        updates = [ms_t]
        if self._centered:
            mg = self.get_slot(var, "mg")
            mg_t = assign(mg, mg * rho + grad * (1 - rho))
            denom = denom - square(mg_t)
            updates.append(mg_t)
        mom_t = assign(mom, mom * mu + lr * grad / sqrt(denom))
        return group(assign_sub(var, mom_t), mom_t, *updates)

    def _apply_sparse(self, grad, var):
        """TensorFlow's SparseApplyRMSProp: the dense update on the rows of the indices
        (gathered, updated, scattered back); the other rows keep their values."""
        dt, rows, g = var.dtype, grad.indices, grad.values
        lr, rho = self._hyper("learning_rate", dt), self._hyper("decay", dt)
        mu, eps = self._hyper("momentum", dt), self._hyper("epsilon", dt)
        ms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        ms_rows = gather(ms, rows) * rho + square(g) * (1 - rho)
        updates, denom = [scatter_update(ms, rows, ms_rows)], ms_rows + eps
        if self._centered:
            mg = self.get_slot(var, "mg")
            mg_rows = gather(mg, rows) * rho + g * (1 - rho)
            updates.append(scatter_update(mg, rows, mg_rows))
            denom = denom - square(mg_rows)
        mom_rows = gather(mom, rows) * mu + lr * g / sqrt(denom)
        updates.append(scatter_update(mom, rows, mom_rows))
        return group(scatter_sub(var, rows, mom_rows), *updates)

