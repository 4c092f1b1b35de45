"""`tf.keras.optimizers`: SGD, Adam, RMSprop and Adagrad with Keras' arguments and defaults.

Each wraps one of flowjit's `tf.train` optimizers (optimizers.py), which build the update
ops; where Keras' update (tf_keras 2.x, the optimizers of Keras 2.11 on) differs from TF1's,
a small subclass here writes Keras' form: RMSprop's mean square starts at 0 (TF1: 1);
Adagrad adds epsilon under the square root.  `get(identifier)` takes a name ("sgd",
"adam", "rmsprop", "adagrad"), a Keras optimizer, or a `tf.train.Optimizer` (used as is).
A model feeds the optimizer's current `learning_rate` to each training step, so changing
it (`model.optimizer.learning_rate = 1e-4`, `callbacks.LearningRateScheduler`) takes
effect at the next step without rebuilding anything.
"""

from __future__ import annotations

from .. import optimizers as _tf1
from ..ops import api as ops
from ..ops import indexed_slices
from ..ops.basic_ops import group
from ..ops.variables import assign, assign_add, assign_sub

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Adagrad", "get"]


class Optimizer:
    """A Keras optimizer: its hyperparameters, and `tf_optimizer(learning_rate)` to make the
    flowjit optimizer that applies them in one model's graph.  `learning_rate` may be
    changed between steps (a model feeds its current value to every training step), which
    is what `callbacks.LearningRateScheduler` does."""

    def __init__(self, name, learning_rate, **kwargs):
        if "lr" in kwargs:   # Keras 2's old argument name
            learning_rate = kwargs.pop("lr")
        for key in ("decay", "clipnorm", "clipvalue", "global_clipnorm"):
            if kwargs.pop(key, None):
                raise NotImplementedError(f"keras.optimizers.{name}: {key} is not supported.")
        if kwargs:
            raise TypeError(f"keras.optimizers.{name}: unknown argument(s) {sorted(kwargs)}.")
        self.name = name
        self.learning_rate = float(learning_rate)

    @property
    def feeds_learning_rate(self) -> bool:
        """Whether a model feeds `learning_rate` to its training step (not for a wrapped
        tf.train.Optimizer, which keeps its own)."""
        return True

    def tf_optimizer(self, learning_rate):
        """A new flowjit `tf.train.Optimizer` with this one's settings, its learning rate
        the scalar tensor `learning_rate` (a placeholder the model feeds)."""
        return self._make(learning_rate)

    def _make(self, learning_rate):
        raise NotImplementedError

    def get_config(self) -> dict:
        """The hyperparameters, by Keras' argument names."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __repr__(self):
        return f"<keras.optimizers.{type(self).__name__} {self.get_config()}>"


class _DenseUpdates:
    """Mixin: an IndexedSlices gradient (an embedding table's) is applied as its dense value,
    as Keras' momentum, RMSprop and Adagrad updates are: their slots decay (and the variable
    moves) in every row, not only in the rows looked up (TF1's sparse kernels touch those
    only)."""

    def _apply_sparse(self, grad, var):
        return self._apply_dense(indexed_slices.dense(grad), var)


class _KerasMomentum(_DenseUpdates, _tf1.MomentumOptimizer):
    """Momentum (optionally Nesterov) with Keras' dense update for embedding gradients."""


class SGD(Optimizer):
    """Gradient descent, with optional (Nesterov) momentum."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"SGD: momentum must be in [0, 1], got {momentum}.")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)

    def _make(self, learning_rate):
        if self.momentum == 0.0:
            return _tf1.GradientDescentOptimizer(learning_rate, name=self.name)
        return _KerasMomentum(learning_rate, self.momentum, name=self.name,
                              use_nesterov=self.nesterov)


class Adam(Optimizer):
    """Adam (the same update as `tf.train.AdamOptimizer`; Keras' epsilon is 1e-7)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        if amsgrad:
            raise NotImplementedError("keras.optimizers.Adam: amsgrad is not supported.")
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _make(self, learning_rate):
        return _tf1.AdamOptimizer(learning_rate, self.beta_1, self.beta_2, self.epsilon,
                                  name=self.name)


class _KerasRMSProp(_DenseUpdates, _tf1.Optimizer):
    """Keras' RMSprop: `rms = rho*rms + (1-rho)*g^2` from 0, `step = lr*g / sqrt(rms + eps)`
    (centered: `sqrt(rms - mg^2 + eps)` with `mg = rho*mg + (1-rho)*g`); with momentum
    `mom = momentum*mom + step; var -= mom`, else `var -= step`."""

    def __init__(self, learning_rate, rho, momentum, epsilon, centered, name):
        super().__init__(False, name)
        self._hypers = {"learning_rate": learning_rate, "rho": rho, "momentum": momentum,
                        "epsilon": epsilon}
        self._centered, self._has_momentum = centered, momentum > 0.0

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, "rms")
            if self._centered:
                self._slot(v, "mg")
            if self._has_momentum:
                self._slot(v, "momentum")

    def _apply_dense(self, grad, var):
        dt = var.dtype
        lr, rho = self._hyper("learning_rate", dt), self._hyper("rho", dt)
        rms = self.get_slot(var, "rms")
        rms_t = assign(rms, rms * rho + ops.square(grad) * (1 - rho))
        denom, updates = rms_t, [rms_t]
        if self._centered:
            mg = self.get_slot(var, "mg")
            mg_t = assign(mg, mg * rho + grad * (1 - rho))
            denom, updates = denom - ops.square(mg_t), updates + [mg_t]
        step = lr * grad * ops.rsqrt(denom + self._hyper("epsilon", dt))
        if self._has_momentum:
            mom = self.get_slot(var, "momentum")
            step = assign(mom, mom * self._hyper("momentum", dt) + step)
            updates.append(step)
        return group(assign_sub(var, step), *updates)


class RMSprop(Optimizer):
    """RMSprop, in Keras' form (module docstring)."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self.rho, self.momentum, self.epsilon = float(rho), float(momentum), float(epsilon)
        self.centered = bool(centered)

    def _make(self, learning_rate):
        return _KerasRMSProp(learning_rate, self.rho, self.momentum, self.epsilon,
                             self.centered, self.name)


class _KerasAdagrad(_DenseUpdates, _tf1.AdagradOptimizer):
    """Keras' Adagrad: `accum += g^2; var -= lr * g / sqrt(accum + epsilon)`."""

    def __init__(self, learning_rate, initial_accumulator_value, epsilon, name):
        super().__init__(learning_rate, initial_accumulator_value, name=name)
        self._hypers["epsilon"] = epsilon

    def _apply_dense(self, grad, var):
        accum_t = assign_add(self.get_slot(var, "accumulator"), ops.square(grad))
        lr, eps = self._hyper("learning_rate", var.dtype), self._hyper("epsilon", var.dtype)
        return group(assign_sub(var, lr * grad / ops.sqrt(accum_t + eps)), accum_t)


class Adagrad(Optimizer):
    """Adagrad, in Keras' form (module docstring)."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        super().__init__(name, learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def _make(self, learning_rate):
        return _KerasAdagrad(learning_rate, self.initial_accumulator_value, self.epsilon,
                             self.name)


class _Wrapped(Optimizer):
    """A `tf.train.Optimizer` given to `compile`, used as it is."""

    def __init__(self, tf_optimizer):
        self.name = tf_optimizer.get_name()
        self._wrapped = tf_optimizer

    @property
    def feeds_learning_rate(self) -> bool:
        return False

    def tf_optimizer(self, learning_rate=None):
        """The wrapped optimizer itself (it keeps its own learning rate)."""
        return self._wrapped

    def get_config(self) -> dict:
        return {"tf_optimizer": self._wrapped}


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier) -> Optimizer:
    """A Keras optimizer from a name (with Keras' defaults), a Keras optimizer, or a
    flowjit `tf.train.Optimizer`.  An unknown name is a ValueError listing the known ones."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, _tf1.Optimizer):
        return _Wrapped(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: {identifier!r}. Known optimizers: "
                             f"{', '.join(sorted(_BY_NAME))}, a keras.optimizers object or a "
                             "tf.train.Optimizer.")
        return cls()
    raise TypeError(f"Could not interpret optimizer identifier: {identifier!r}.")
