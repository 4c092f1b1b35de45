"""GradientDescent and Momentum (optionally Nesterov), dense and sparse (see the package
docstring)."""

from __future__ import annotations

from ..ops.basic_ops import group
from ..ops.sparse_training_ops import sparse_apply_momentum
from ..ops.variable_scatter_ops import scatter_sub
from ..ops.variables import assign, assign_sub
from .base import Optimizer


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
