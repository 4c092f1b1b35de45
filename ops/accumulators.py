"""TF 1.x's `tf.ConditionalAccumulator`: builds an accumulator resource op
(ops/accumulator_ops.py) once and the ops on its handle on request."""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.shapes import as_shape
from . import accumulator_ops
from .builder import make_op, to_tensor


class ConditionalAccumulator:
    """Averages the gradients applied to it, dropping stale ones (ops/accumulator_ops.py).

    `shared_name` shares one accumulator between graphs of a cluster's clients (by name,
    on the task that runs it)."""

    def __init__(self, dtype, shape=None, shared_name=None, name="conditional_accumulator",
                 reduction_type="MEAN"):
        if reduction_type != "MEAN":
            raise ValueError(f"ConditionalAccumulator: reduction_type {reduction_type!r} is "
                             "not supported; flowjit's accumulators average ('MEAN').")
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape) if shape is not None else None
        attrs = {"dtype": self._dtype, "shared_name": shared_name or ""}
        if self._shape is not None and self._shape.dims is not None:
            attrs["shape"] = [d if d is not None else -1 for d in self._shape.as_list()]
        self._op = make_op(accumulator_ops.CONDITIONAL_ACCUMULATOR, [], attrs, name)
        self._ref = self._op.outputs[0]

    @property
    def accumulator_ref(self):
        """The handle tensor."""
        return self._ref

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self) -> str:
        return self._op.name

    def apply_grad(self, grad, local_step=0, name=None):
        """The op adding `grad`, computed at `local_step` (dropped if stale)."""
        grad = to_tensor(grad, dtype=self._dtype)
        step = to_tensor(local_step, dtype=_dtypes.int64)
        return make_op(accumulator_ops.APPLY_GRADIENT, [self._ref, step, grad],
                       {"dtype": self._dtype}, name or "AccumulatorApplyGradient")

    def take_grad(self, num_required, name=None):
        """The mean of `num_required` gradients (waits for them)."""
        n = to_tensor(num_required, dtype=_dtypes.int32)
        op = make_op(accumulator_ops.TAKE_GRADIENT, [self._ref, n], {"dtype": self._dtype},
                     name or "AccumulatorTakeGradient")
        return op.outputs[0]

    def set_global_step(self, new_global_step, name=None):
        """The op moving the accumulator's global step forward."""
        step = to_tensor(new_global_step, dtype=_dtypes.int64)
        return make_op(accumulator_ops.SET_GLOBAL_STEP, [self._ref, step], {},
                       name or "AccumulatorSetGlobalStep")

    def num_accumulated(self, name=None):
        """How many gradients it holds now."""
        return make_op(accumulator_ops.NUM_ACCUMULATED, [self._ref], {},
                       name or "AccumulatorNumAccumulated").outputs[0]
