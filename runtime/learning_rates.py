"""TF 1.x learning-rate schedules (`tf.train.exponential_decay`, ...), built from graph ops.

Each returns a tensor of the learning rate's dtype (float32 for a Python number), computed
from `global_step` cast to it, as TensorFlow's Python function of the same name builds it,
so it changes as the global step advances.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..ops import math_ops as mo
from ..ops.builder import to_tensor


def _floats(learning_rate, *values):
    """The learning rate and the other values, all in the learning rate's dtype (float32
    for a Python number), as TF1's schedules compute."""
    lr = to_tensor(learning_rate)
    dtype = lr.dtype if lr.dtype.is_floating else _dtypes.float32
    # Python numbers convert straight to that dtype (0.7 as float64, not float32 widened)
    rest = [to_tensor(v, dtype) if isinstance(v, (int, float, np.number, np.ndarray))
            else mo.cast(v, dtype) for v in values]
    return [mo.cast(lr, dtype)] + rest


def _name_scope(name, default, global_step):
    return to_tensor(global_step).graph.name_scope(name or default)


def _decay(kind, formula):
    """A schedule lr * formula(decay_rate, p) (p = global_step / decay_steps, floored when
    `staircase`), as TF1's exponential/inverse-time/natural-exp decays are built."""
    def schedule(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                 name=None):
        if global_step is None:
            raise ValueError(f"global_step is required for {schedule.__name__}.")
        with _name_scope(name, kind, global_step):
            lr, step, steps, rate = _floats(learning_rate, global_step, decay_steps, decay_rate)
            p = mo.truediv(step, steps)
            if staircase:
                p = mo.floor(p)
            return mo.multiply(lr, formula(rate, p))
    return schedule


exponential_decay = _decay("ExponentialDecay", lambda rate, p: mo.pow(rate, p))
exponential_decay.__name__ = "exponential_decay"
exponential_decay.__doc__ = ("learning_rate * decay_rate ** (global_step / decay_steps) (the "
                             "exponent floored when `staircase`).")
inverse_time_decay = _decay("InverseTimeDecay", lambda rate, p: mo.reciprocal(
    mo.add(mo.cast(1.0, rate.dtype), mo.multiply(rate, p))))
inverse_time_decay.__name__ = "inverse_time_decay"
inverse_time_decay.__doc__ = "learning_rate / (1 + decay_rate * global_step / decay_steps)."
natural_exp_decay = _decay("NaturalExpDecay",
                           lambda rate, p: mo.exp(mo.negative(mo.multiply(rate, p))))
natural_exp_decay.__name__ = "natural_exp_decay"
natural_exp_decay.__doc__ = "learning_rate * exp(-decay_rate * global_step / decay_steps)."


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(lr - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end; with `cycle`
    decay_steps grows to the next multiple of itself past the step."""
    if global_step is None:
        raise ValueError("global_step is required for polynomial_decay.")
    with _name_scope(name, "PolynomialDecay", global_step):
        lr, step, steps, end, pw = _floats(learning_rate, global_step, decay_steps,
                                           end_learning_rate, power)
        one = mo.cast(1.0, lr.dtype)
        if cycle:
            multiplier = mo.where_v2(mo.equal(step, mo.cast(0.0, lr.dtype)), one,
                                     mo.ceil(mo.truediv(step, steps)))
            steps = mo.multiply(steps, multiplier)
        else:
            step = mo.minimum(step, steps)
        fraction = mo.subtract(one, mo.truediv(step, steps))
        return mo.add(mo.multiply(mo.subtract(lr, end), mo.pow(fraction, pw)), end)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] after the last boundary."""
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"piecewise_constant: {len(values)} values for {len(boundaries)} "
                         "boundaries; there must be one more value than boundaries.")
    x = to_tensor(x)
    with x.graph.name_scope(name or "PiecewiseConstant"):
        result = to_tensor(values[-1])
        for bound, value in zip(reversed(boundaries), reversed(values[:-1])):
            below = mo.less_equal(x, mo.cast(to_tensor(bound), x.dtype))
            result = mo.where_v2(below, mo.cast(to_tensor(value), result.dtype), result)
        return result
