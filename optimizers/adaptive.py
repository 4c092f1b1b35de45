"""Adam, Adagrad and RMSProp (optionally centered), dense and sparse (see the package
docstring)."""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import get_default_graph
from ..ops.basic_ops import group
from ..ops.conversion import convert_to_tensor
from ..ops.gather_ops import gather
from ..ops.math_ops import cast, sqrt, square
from ..ops.sparse_training_ops import sparse_apply_adagrad
from ..ops.variable_scatter_ops import scatter_add, scatter_sub, scatter_update
from ..ops.variables import assign, assign_add, assign_sub
from .base import Optimizer


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
