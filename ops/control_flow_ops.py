"""The control-flow primitives of the 2015 paper (§4.4): Switch, Merge, Enter, Exit,
NextIteration and LoopCond, and the stacks that keep a loop's forward values for its
gradient (StackV2, StackPushV2, StackPopV2).

These ops route values rather than compute them.  Which of a Switch's two outputs carries
its input, which input a Merge forwards, the frame and iteration an Enter, Exit or
NextIteration moves a value to: that is decided by the control-flow executor
(runtime/control_flow_executor.py), which runs every graph holding one of these ops and
propagates *dead* values through the branch a Switch did not take.  Their kernels here
give the value computation the executor delegates (the data a routing op forwards); run
on their own they still say what they are.

Traits: every primitive has `Trait.CONTROL_FLOW` (no cluster, graph optimizer or
constant folding touches it); Enter and Switch pass variable references through
(`ref_inputs`), so a variable captured by a loop or branch is read where it is used.
The builders below are low level; `ops/control_flow.py` builds `cond` and `while_loop`
from them with TensorFlow's contexts.  Gradients: Switch's is a Merge of its outputs'
gradients, a cond Merge's is a Switch of its gradient on the cond's predicate; a while
loop is differentiated as a whole (ops/while_gradient.py), so its Enter, Exit, Merge and
NextIteration have no gradient of their own.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.shapes import TensorShape, scalar
from ..errors import InvalidArgumentError
from .builder import make_op
from .registry import OpDef, Trait

_CF = frozenset({Trait.CONTROL_FLOW})
_CF_STATE = frozenset({Trait.CONTROL_FLOW, Trait.STATEFUL})


def _forward_kernel(ctx, inputs, attrs):
    return [inputs[0]]


def _same_as_input(op):
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


# --- Switch -----------------------------------------------------------------------------------

def _switch_infer(op):
    data, pred = op.inputs
    if pred.dtype is not _dtypes.bool_:
        raise TypeError(f"Switch's predicate must be a bool tensor, got {pred.dtype.name} "
                        f"({pred.name}).")
    if not pred.shape.is_compatible_with(scalar()):
        raise ValueError(f"Switch's predicate must be a scalar, got shape {pred.shape} "
                         f"({pred.name}).")
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


def _switch_kernel(ctx, inputs, attrs):
    # the executor marks the untaken output dead; the values forwarded are the data's
    return [inputs[0], inputs[0]]


def _switch_gradient(op, grad_false, grad_true):
    # the branch not taken sends a dead gradient: the Merge forwards the live one
    return [merge([grad_false, grad_true], name="cond_grad")[0], None]


SWITCH = OpDef("Switch", _switch_infer, _switch_kernel, traits=_CF, ref_inputs={0},
               gradient=_switch_gradient,
               doc="Forwards `data` to output 1 when `pred` is true, else to output 0; the "
                   "other output is dead.")


def switch(data, pred, name=None):
    """(output_false, output_true): `data` on the output `pred` selects, dead on the other."""
    op = make_op(SWITCH, [data, pred], {}, name or "Switch")
    return op.outputs[0], op.outputs[1]


# --- Merge ------------------------------------------------------------------------------------

def _merge_infer(op):
    if not op.inputs:
        raise ValueError("Merge needs at least one input.")
    dtype = op.inputs[0].dtype
    shape = op.inputs[0].shape
    for t in op.inputs[1:]:
        if t.dtype is not dtype:
            raise TypeError(f"Merge's inputs must have one dtype: {op.inputs[0].name} is "
                            f"{dtype.name}, {t.name} is {t.dtype.name}.")
        shape = _common_shape(shape, t.shape)
    if "_shape_invariant" in op._attrs:   # a loop variable's Merge: every iteration's shape
        dims = op._attrs["_shape_invariant"]
        shape = TensorShape(None if dims is None else list(dims))
    return [(dtype, shape), (_dtypes.int32, scalar())]


def _common_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape both `a` and `b` have (unknown where they differ)."""
    if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


def _merge_kernel(ctx, inputs, attrs):
    return [inputs[0], np.array(0, np.int32)]


def _merge_gradient(op, grad, grad_index):
    context = getattr(op, "_cf_merge_of", None)
    if context is None:
        raise LookupError(f"Merge '{op.name}' is not the output of a cond; a while loop is "
                          "differentiated as a whole (ops/while_gradient.py).")
    grad_false, grad_true = switch(grad, context.pred, name="cond_grad")
    return [grad_false, grad_true] + [None] * (len(op.inputs) - 2)


MERGE = OpDef("Merge", _merge_infer, _merge_kernel, traits=_CF, gradient=_merge_gradient,
              doc="Forwards the first of its inputs to become available (live), with its index.")


def merge(inputs, name=None, shape_invariant=None):
    """(output, value_index): whichever input is live.  `shape_invariant`: the output's
    shape for a loop variable's Merge (kept in the `_shape_invariant` attribute, which
    TensorFlow ignores as an internal one)."""
    attrs = {}
    if shape_invariant is not None:
        dims = TensorShape(shape_invariant).dims
        attrs["_shape_invariant"] = None if dims is None else list(dims)
    op = make_op(MERGE, list(inputs), attrs, name or "Merge")
    return op.outputs[0], op.outputs[1]


# --- Enter, Exit, NextIteration, LoopCond ---------------------------------------------------

ENTER = OpDef("Enter", _same_as_input, _forward_kernel, traits=_CF, ref_inputs={0},
              doc="Moves a value into frame `frame_name` (iteration 0; every iteration when "
                  "`is_constant`).")
EXIT = OpDef("Exit", _same_as_input, _forward_kernel, traits=_CF,
             doc="Moves a value out of its frame to the parent frame.")
NEXT_ITERATION = OpDef("NextIteration", _same_as_input, _forward_kernel, traits=_CF,
                       doc="Moves a value to the next iteration of its frame.")


def _loop_cond_infer(op):
    t = op.inputs[0]
    if t.dtype is not _dtypes.bool_ or not t.shape.is_compatible_with(scalar()):
        raise TypeError(f"A while loop's condition must be a scalar bool, got "
                        f"{t.dtype.name} of shape {t.shape} ({t.name}).")
    return [(t.dtype, scalar())]


LOOP_COND = OpDef("LoopCond", _loop_cond_infer, _forward_kernel, traits=_CF,
                  doc="The predicate of a while loop (an Identity the executor recognizes).")


def enter(data, frame_name: str, is_constant=False, parallel_iterations=10, name=None):
    """`data` inside frame `frame_name`."""
    return make_op(ENTER, [data], {"frame_name": frame_name, "is_constant": bool(is_constant),
                                   "parallel_iterations": int(parallel_iterations)},
                   name or "Enter").outputs[0]


def exit(data, name=None):  # noqa: A001 - TensorFlow's name
    """`data` leaving its frame."""
    return make_op(EXIT, [data], {}, name or "Exit").outputs[0]


def next_iteration(data, name=None):
    """`data` for the next iteration of its frame."""
    return make_op(NEXT_ITERATION, [data], {}, name or "NextIteration").outputs[0]


def loop_cond(pred, name=None):
    """The predicate of a while loop."""
    return make_op(LOOP_COND, [pred], {}, name or "LoopCond").outputs[0]


# --- stacks: a loop's forward values, kept for its gradient ---------------------------------

class _Stack(list):
    """The values a StackV2 holds during one run (a Python list; pushes never copy, since
    kernels never mutate their inputs)."""

    __slots__ = ("name",)


def _handle(stack) -> np.ndarray:
    h = np.empty((), dtype=object)
    h[()] = stack
    return h


def _stack_infer(op):
    return [(_dtypes.string, scalar())]


def _stack_kernel(ctx, inputs, attrs):
    stack = _Stack()
    stack.name = attrs["stack_name"]
    return [_handle(stack)]


STACK = OpDef("StackV2", _stack_infer, _stack_kernel, traits=_CF_STATE,
              doc="A new, empty stack for each run (its handle is a scalar string tensor, as "
                  "TensorFlow 1.x's stack handle).")


def _push_infer(op):
    t = op.inputs[1]
    return [(t.dtype, t.shape)]


def _push_kernel(ctx, inputs, attrs):
    inputs[0][()].append(inputs[1])
    return [inputs[1]]


STACK_PUSH = OpDef("StackPushV2", _push_infer, _push_kernel, traits=_CF_STATE,
                   doc="Pushes its value onto the stack and forwards it.")


def _pop_infer(op):
    return [(_dtypes.as_dtype(op.get_attr("elem_type")), TensorShape(op.get_attr("shape")))]


def _pop_kernel(ctx, inputs, attrs):
    stack = inputs[0][()]
    if not stack:
        raise InvalidArgumentError(None, ctx.op, f"Stack '{stack.name}' is empty: popped more "
                                                 "values than were pushed.")
    return [stack.pop()]


STACK_POP = OpDef("StackPopV2", _pop_infer, _pop_kernel, traits=_CF_STATE,
                  doc="Pops the value pushed last.")


def stack(elem_type, stack_name: str, name=None):
    """A handle to a new stack of `elem_type` values."""
    from ..compiler.core.graph import get_default_graph  # the default graph, as make_op's
    return get_default_graph().create_op(STACK, [], {"elem_type": _dtypes.as_dtype(elem_type).name,
                                                     "stack_name": stack_name},
                                         name or "Stack").outputs[0]


def stack_push(handle, value, name=None):
    """Push `value`; returns `value` (after the push)."""
    return make_op(STACK_PUSH, [handle, value], {}, name or "StackPush").outputs[0]


def stack_pop(handle, elem_type, shape, name=None):
    """The value pushed last (removed from the stack)."""
    dims = None if TensorShape(shape).dims is None else list(TensorShape(shape).dims)
    return make_op(STACK_POP, [handle], {"elem_type": _dtypes.as_dtype(elem_type).name,
                                         "shape": dims}, name or "StackPop").outputs[0]


OP_DEFS = [SWITCH, MERGE, ENTER, EXIT, NEXT_ITERATION, LOOP_COND, STACK, STACK_PUSH, STACK_POP]
ROUTING_TYPES = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration"})
