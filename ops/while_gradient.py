"""The gradient of a `while_loop`, built as a second loop that runs the iterations
backwards (TensorFlow's design, with recomputation of each iteration's body).

`tf.gradients` treats a forward loop as one unit (compiler/gradients.py): the gradients
of its Exit values come in, the gradients of what entered it go out.  Here:
1. *Stacks.*  The first gradient adds, inside the forward loop, one StackPushV2 per loop
   variable: each iteration pushes the values its body started from (the stacks are made
   fresh by every run).  The pushes are control inputs of the loop counter's
   NextIteration, so the loop's final Exit values wait for every push.  A loop built by
   `recorded_while_loop` (ops/loop_history.py) already wrote those values into buffers,
   row by row: the backward loop reads the rows instead, and no stack is added (the
   loops stay free of stateful ops, so both compile whole).
2. *The backward loop* runs the forward trip count (the hidden counter's Exit value) of
   iterations.  Each pops the values of the matching forward iteration, rebuilds the
   user's body on them (recomputation: the body function is called again inside the
   backward loop, so any op a body holds, nested loops and conds included, is
   differentiated by the ordinary rules), and takes `gradients(body outputs, body inputs
   + the outside tensors the body captured, grad_ys=the running gradients)`.  The running
   gradients of the loop variables are its loop variables; the gradients of captured
   outside tensors (weights) are summed over iterations in accumulators.
3. The backward loop's results are the gradients of the forward loop's initial values and
   of its captured tensors.

Recomputation reruns the body's ops, so a body holding random or state-changing ops
(the second run would draw other numbers or apply an update twice) is refused with an
error naming the op.  A loop built with `back_prop=False` passes no gradient.
"""

from __future__ import annotations

from ..compiler.core.shapes import TensorShape
from ..errors import InvalidArgumentError
import numpy as np

from . import control_flow_ops as cf
from . import slice_update_ops, slicing_ops
from .conversion import static_value
from .fill_ops import zeros_like
from .registry import Trait

_RECOMPUTE_SAFE = frozenset({"StackPushV2", "StackV2", "StackPopV2", "VariableV2",
                             "Variable"})


def _floating(t) -> bool:
    return t.dtype.is_floating


def _add_stacks(loop) -> list:
    """Per user loop variable: the handle of the stack its forward values go to."""
    if loop.gradient_stacks is not None:
        return loop.gradient_stacks
    graph = loop.graph
    handles = []
    with graph._control_flow_context(loop.outer):
        for j, var in enumerate(loop.body_inputs[1:]):
            handles.append(cf.stack(var.dtype, f"{loop.frame_name}/stack_{j}",
                                    name=f"{loop.frame_name}/grad_stack_{j}"))
    with graph._control_flow_context(loop):
        pushes = [cf.stack_push(h, var, name="grad_push")
                  for h, var in zip(handles, loop.body_inputs[1:])]
    counter_next = loop.nexts[0].op
    for p in pushes:
        counter_next._add_control_input(p.op)
    loop.gradient_stacks = handles
    return handles


def _check_recomputable(loop) -> None:
    for op in loop.all_ops:
        if op.op_def.has(Trait.STATEFUL) and op.type not in _RECOMPUTE_SAFE:
            raise InvalidArgumentError(
                None, op, f"The gradient of while_loop '{loop.frame_name}' recomputes its body, "
                          f"which holds the stateful op '{op.name}' ({op.type}): a second run "
                          "would draw other random numbers or apply an update twice. Move it "
                          "out of the loop, or build the loop with back_prop=False.")


def _is_zeros(t) -> bool:
    if t.op.type == "ZerosLike":
        return True
    value = static_value(t)
    return value is not None and not np.any(value)


def _accumulated(acc, d):
    """acc + d.  When d is a slice written into zeros (the gradient of reading one step of
    a captured tensor, `x[t]`), only that slice of acc changes: acc with the slice replaced
    by acc[slice] + the slice's gradient, which a compiled loop updates in place."""
    op = d.op
    if op.type != "TensorStridedSliceUpdate" or not _is_zeros(op.inputs[0]):
        return acc + d
    _, begin, end, strides, value = op.inputs
    masks = {k: op.get_attr(k) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                          "new_axis_mask", "shrink_axis_mask")}
    old = slicing_ops.strided_slice(acc, begin, end, strides, **masks)
    return slice_update_ops.tensor_strided_slice_update(acc, begin, end, strides, old + value,
                                                        **masks)


def while_loop_gradient(loop, exit_grads: list, gradients) -> dict:
    """{tensor that entered `loop`: [its gradients]} from the gradients of the loop's Exit
    values (`exit_grads`, one per exit, None where none flows); `gradients` is the
    `tf.gradients` function that differentiates the recomputed body (passed in: the
    compiler layer, which holds it, sits above ops).  A recorded loop
    (ops/loop_history.py) gives each iteration's values from its buffers; any other loop
    pushes them onto stacks."""
    from . import control_flow  # lazy: that module builds loops with this one's help

    if not loop.back_prop:
        return {}
    _check_recomputable(loop)
    history = loop.history
    if history is None:
        handles = _add_stacks(loop)
        variables = loop.body_inputs[1:]
        body_fn, structure = loop.body_fn, loop.structure
    else:
        variables = loop.body_inputs[1:1 + history.count]
        body_fn, structure = history.body_fn, history.structure
    user_exits = loop.exits[1:1 + len(variables)]
    float_vars = [j for j, v in enumerate(variables) if _floating(v)]
    captured = [(ext, inner) for ext, inner in loop.captured.items()
                if _floating(ext) and ext.op.type != "StackV2"]
    grads0 = [exit_grads[1 + j] if exit_grads[1 + j] is not None
              else zeros_like(user_exits[j], optimize=False) for j in float_vars]
    accs0 = [zeros_like(ext, optimize=False) for ext, _ in captured]
    count = loop.exits[0]
    graph = loop.graph

    def iteration_values(k):
        """(the values forward iteration k-1 started with, the next counter value)."""
        if history is not None:
            return history.iteration_values(loop, k - 1), k - 1
        with graph.control_dependencies([k.op]):
            popped = [cf.stack_pop(h, v.dtype, TensorShape(v.shape.dims), name="grad_pop")
                      for h, v in zip(handles, variables)]
        with graph.control_dependencies([p.op for p in popped]):
            return popped, k - 1

    def body(k, *carried):
        grads, accs = carried[:len(float_vars)], carried[len(float_vars):]
        popped, k_next = iteration_values(k)
        backward = graph._get_control_flow_context()
        produced = control_flow.flatten(control_flow._call(
            body_fn, control_flow.pack(structure, popped)))
        ys = [control_flow._as_leaf_tensor(produced[j], backward, dtype=variables[j].dtype)
              for j in float_vars]
        inner = [backward.captured.get(ext) for ext, _ in captured]
        xs = [popped[j] for j in float_vars] + [t for t in inner if t is not None]
        dxs = gradients(ys, xs, grad_ys=list(grads), name="while_grad") if ys else []
        new_grads = [d if d is not None else zeros_like(popped[j], optimize=False)
                     for d, j in zip(dxs[:len(float_vars)], float_vars)]
        it = iter(dxs[len(float_vars):])
        new_accs = []
        for position, (acc, t) in enumerate(zip(accs, inner)):
            d = next(it) if t is not None else None
            if d is None:
                no_gradient.add(position)
            new_accs.append(_accumulated(acc, d) if d is not None else acc)
        return [k_next] + new_grads + new_accs

    no_gradient: set = set()   # captured tensors the body's gradient does not reach

    loop_vars = [count] + grads0 + accs0
    invariants = [TensorShape([])] + [TensorShape(None)] * (len(grads0) + len(accs0))
    out = control_flow.while_loop(lambda k, *_: k > 0, body, loop_vars,
                                  shape_invariants=invariants,
                                  parallel_iterations=loop.parallel_iterations,
                                  name=f"{loop.frame_name.split('/')[-1]}_grad",
                                  return_same_structure=True)
    results: dict = {}
    for j, g in zip(float_vars, out[1:1 + len(float_vars)]):
        results.setdefault(loop.enters[1 + j].op.inputs[0], []).append(g)
    for position, ((ext, _), g) in enumerate(zip(captured, out[1 + len(float_vars):])):
        if position not in no_gradient:
            results.setdefault(ext, []).append(g)
    return results
