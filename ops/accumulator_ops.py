"""Gradient accumulators (TensorFlow's ConditionalAccumulator), the resource synchronous
replicas aggregate their gradients in (`tf.train.SyncReplicasOptimizer`).

`ConditionalAccumulator` makes the resource: a handle (a scalar string tensor whose value
is the task's `Accumulator`, made on first use and shared by `shared_name`, like a queue's:
ops/queue_ops.py).  On a handle:
- `AccumulatorApplyGradient(handle, local_step, gradient)` adds a gradient, unless it is
  stale: computed at a `local_step` older than the accumulator's global step is dropped;
- `AccumulatorTakeGradient(handle, num_required)` waits until `num_required` gradients are
  in, returns their mean, empties the accumulator and advances its global step by one (so
  gradients of the step just taken that arrive late are dropped).  It waits without a
  thread (OpDef.start, as a dequeue does); closing the accumulator with its task's
  resources wakes it with CancelledError;
- `AccumulatorSetGlobalStep(handle, new_global_step)` and `AccumulatorNumAccumulated`.
All are STATEFUL (never folded, merged or compiled) and have no gradient.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.shapes import TensorShape, scalar
from ..errors import CancelledError, DeadlineExceededError, InvalidArgumentError
from .registry import OpDef, Trait


class Accumulator:
    """The state of one accumulator (module docstring)."""

    def __init__(self, name: str, dtype, shape):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.shape = shape            # a tuple with None for unknown dims, or None
        self.cond = threading.Condition()
        self.total = None
        self.count = 0
        self.global_step = 0
        self.closed = False
        self.waiters: list = []       # (num_required, op, done) of waiting takes

    def apply(self, local_step: int, gradient: np.ndarray, op) -> None:
        gradient = np.asarray(gradient)
        if self.shape is not None and (len(self.shape) != gradient.ndim or any(
                s is not None and s != g for s, g in zip(self.shape, gradient.shape))):
            raise InvalidArgumentError(None, op, f"Accumulator '{self.name}' holds "
                                                 f"gradients of shape {list(self.shape)}; "
                                                 f"got one of shape {list(gradient.shape)}.")
        with self.cond:
            if local_step < self.global_step:
                return    # stale: computed before the last update
            if self.total is None:
                self.total = gradient.astype(self.dtype, copy=True)
            elif self.total.shape != gradient.shape:
                raise InvalidArgumentError(None, op, f"Accumulator '{self.name}': a gradient "
                                                     f"of shape {list(gradient.shape)} after "
                                                     f"ones of {list(self.total.shape)}.")
            else:
                self.total = self.total + gradient
            self.count += 1
            served = self._serve()
            self.cond.notify_all()
        for done, value in served:
            done(None, [value])

    def _take_now(self) -> np.ndarray:
        mean = self.total / self.count
        self.total, self.count = None, 0
        self.global_step += 1
        return np.asarray(mean, self.dtype)

    def _serve(self) -> list:
        """(done, value) of the waiting takes that can finish now (lock held)."""
        out = []
        while self.waiters and self.count >= max(1, self.waiters[0][0]):
            _, _, done = self.waiters.pop(0)
            out.append((done, self._take_now()))
        return out

    def take(self, num_required: int, deadline, op) -> np.ndarray:
        """The mean of `num_required` gradients, waiting for them (module docstring)."""
        with self.cond:
            while not self.closed and self.count < max(1, num_required):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise DeadlineExceededError(None, op, f"Timed out waiting for "
                                                          f"{num_required} gradients in "
                                                          f"'{self.name}'.")
                self.cond.wait(0.1 if left is None else min(left, 0.1))
            if self.closed:
                raise CancelledError(None, op, f"Accumulator '{self.name}' was closed.")
            return self._take_now()

    def take_async(self, num_required: int, op, done):
        """`take` without holding a thread: `done(error, [value])` once; returns a cancel
        function (True: withdrawn in time)."""
        entry = (num_required, op, done)
        with self.cond:
            if self.closed:
                served, error = [], CancelledError(None, op, f"Accumulator '{self.name}' "
                                                             "was closed.")
            else:
                self.waiters.append(entry)
                served, error = self._serve(), None
        if error is not None:
            done(error, None)
        for d, value in served:
            d(None, [value])

        def cancel() -> bool:
            with self.cond:
                if entry in self.waiters:
                    self.waiters.remove(entry)
                    return True
                return False
        return cancel

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        """Wake every waiting take with CancelledError (the task is closing)."""
        del cancel_pending_enqueues
        with self.cond:
            self.closed = True
            waiting, self.waiters = self.waiters, []
            self.cond.notify_all()
        for _, op, done in waiting:
            done(CancelledError(None, op, f"Accumulator '{self.name}' was closed."), None)


def _handle_infer(op):
    return [(_dtypes.string, scalar())]


def _accumulator_kernel(ctx, inputs, attrs):
    shape = attrs.get("shape")
    dims = None if shape is None else tuple(None if d < 0 else int(d) for d in shape)
    name = attrs.get("shared_name") or ctx.op.name
    handle = np.empty((), dtype=object)
    handle[()] = ctx.state.resource(
        ("accumulator", name),
        lambda: Accumulator(name, _dtypes.as_dtype(attrs["dtype"]).np_dtype, dims))
    return [handle]


def _accumulator(inputs) -> Accumulator:
    return inputs[0][()]


def _no_outputs(op):
    return []


def _apply_kernel(ctx, inputs, attrs):
    _accumulator(inputs).apply(int(inputs[1]), inputs[2], ctx.op)
    return []


def _take_infer(op):
    producer = op.inputs[0].op
    shape = producer.get_attr("shape") if producer.type == "ConditionalAccumulator" else None
    return [(_dtypes.as_dtype(op.get_attr("dtype")),
             TensorShape(None if shape is None else [None if d < 0 else d for d in shape]))]


def _take_kernel(ctx, inputs, attrs):
    return [_accumulator(inputs).take(int(inputs[1]), ctx.deadline, ctx.op)]


def _take_start(ctx, inputs, attrs, done):
    return _accumulator(inputs).take_async(int(inputs[1]), ctx.op, done)


def _set_step_kernel(ctx, inputs, attrs):
    acc = _accumulator(inputs)
    with acc.cond:
        new = int(inputs[1])
        if new < acc.global_step:
            raise InvalidArgumentError(None, ctx.op, f"Accumulator '{acc.name}': the global "
                                                     f"step cannot go back from "
                                                     f"{acc.global_step} to {new}.")
        acc.global_step = new
    return []


def _count_infer(op):
    return [(_dtypes.int32, scalar())]


def _count_kernel(ctx, inputs, attrs):
    return [np.array(_accumulator(inputs).count, np.int32)]


_RESOURCE = frozenset({Trait.STATEFUL, Trait.SOURCE})
CONDITIONAL_ACCUMULATOR = OpDef(
    "ConditionalAccumulator", _handle_infer, _accumulator_kernel, traits=_RESOURCE,
    default_name="conditional_accumulator",
    doc="A gradient accumulator: the mean of the gradients applied since the last take.")
APPLY_GRADIENT = OpDef(
    "AccumulatorApplyGradient", _no_outputs, _apply_kernel, traits={Trait.STATEFUL},
    default_name="AccumulatorApplyGradient",
    doc="Adds a gradient computed at local_step (dropped if older than the global step).")
TAKE_GRADIENT = OpDef(
    "AccumulatorTakeGradient", _take_infer, _take_kernel,
    traits={Trait.STATEFUL, Trait.BLOCKING}, default_name="AccumulatorTakeGradient",
    doc="Waits for num_required gradients and returns their mean.", start=_take_start)
SET_GLOBAL_STEP = OpDef(
    "AccumulatorSetGlobalStep", _no_outputs, _set_step_kernel, traits={Trait.STATEFUL},
    default_name="AccumulatorSetGlobalStep",
    doc="Sets the accumulator's global step (it never goes back).")
NUM_ACCUMULATED = OpDef(
    "AccumulatorNumAccumulated", _count_infer, _count_kernel, traits={Trait.STATEFUL},
    default_name="AccumulatorNumAccumulated",
    doc="How many gradients the accumulator holds now.")

OP_DEFS = [CONDITIONAL_ACCUMULATOR, APPLY_GRADIENT, TAKE_GRADIENT, SET_GLOBAL_STEP,
           NUM_ACCUMULATED]
