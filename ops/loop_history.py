"""Loops that record each iteration's loop variables, so that their gradient needs no stacks.

The gradient of a `while_loop` (ops/while_gradient.py) recomputes every iteration's body
from the values the iteration started with.  By default the forward loop pushes those
values onto stacks: stateful ops, which keep the loop out of the compiler
(runtime/loop_steps.py compiles loops of pure ops only), so every loop that has a gradient
runs op by op, forward and backward.

`recorded_while_loop` is `while_loop` with a bound on the trip count (`max_iterations`, a
scalar tensor): it is the loop's `maximum_iterations`, and each loop variable gets a hidden
companion of shape `[max_iterations, *shape]` whose row k receives the value iteration k
started with (a TensorStridedSliceUpdate: once compiled, a donated loop variable updated in
place).  The gradient's backward loop reads row k of the final buffer (a StridedSlice)
where it would pop a stack.  Both loops then hold pure ops and compile whole; when nothing
asks for a gradient the companions are read by nothing and pruned from the plan.

*Write-only* loop variables (`write_only`, indices into the flattened loop variables):
buffers the body only writes rows into, such as dynamic_rnn's outputs.  The body's gradient
never reads their values (the gradient of a slice update with respect to the updated array
is the incoming gradient with the slice zeroed), so they get no companion and the
recomputed body starts from the loop's final buffer: any array of the right shape gives the
same gradient.  The builder checks the claim: each such variable may only flow, through
input 0 of TensorStridedSliceUpdates, into its own next value.
"""

from __future__ import annotations

import dataclasses

from .. import dtypes as _dtypes
from ..compiler.core.graph import get_default_graph
from . import fill_ops, join_ops, reshape_ops, shape_ops, slice_update_ops, slicing_ops
from .builder import to_tensor
from .nest import flatten, pack, same_structure


@dataclasses.dataclass(frozen=True)
class LoopHistory:
    """What a recorded loop's gradient needs (kept on its WhileContext as `history`).

    `body_fn` and `structure` are the user's body and loop variables; `count` is their
    number (loop variables 1..count of the WhileContext, after the hidden counter);
    `rows[j]` is the loop-variable position (in the WhileContext's body inputs) of variable
    j's companion buffer, or None for a write-only variable."""

    body_fn: object
    structure: object
    count: int
    rows: tuple

    def iteration_values(self, loop, index) -> list:
        """The values the user's loop variables had when forward iteration `index` (a scalar
        int32 tensor of the current context) started; a write-only variable's final value
        stands in for its own."""
        values = []
        here = loop.graph._get_control_flow_context()
        for j in range(self.count):
            row = self.rows[j]
            if row is None:
                exit_value = loop.exits[1 + j]
                values.append(here.internal(exit_value) if here is not None else exit_value)
            else:
                values.append(slicing_ops.strided_slice(
                    loop.exits[row], [index], [index + 1], [1], shrink_axis_mask=1,
                    name="recorded"))
        return values


def recorded_while_loop(cond, body, loop_vars, max_iterations, write_only=(),
                        shape_invariants=None, parallel_iterations=10, name=None):
    """`while_loop(cond, body, loop_vars, maximum_iterations=max_iterations)` whose gradient
    reads each iteration's loop variables from buffers the loop fills (module docstring).

    `write_only` lists the positions (in the flattened `loop_vars`) of variables the body
    only writes rows into.  Returns the final values in `loop_vars`' structure."""
    from . import control_flow  # lazy, as in while_gradient.py (it imports names of nest)

    graph = get_default_graph()
    leaves = [to_tensor(v) for v in flatten(loop_vars)]
    write_only = frozenset(int(j) for j in write_only)
    if not write_only <= set(range(len(leaves))):
        raise ValueError(f"recorded_while_loop: write_only {sorted(write_only)} names no loop "
                         f"variable of {len(leaves)}.")
    invariants = (flatten(shape_invariants) if shape_invariants is not None
                  else [v.shape for v in leaves])
    bound = to_tensor(max_iterations, dtype=_dtypes.int32, name="max_iterations")
    recorded = [j for j in range(len(leaves)) if j not in write_only]
    buffers = [_empty_rows(bound, leaves[j]) for j in recorded]
    n = len(leaves)
    holder = {}

    def wrapped_cond(*all_vars):
        return control_flow._call(cond, pack(loop_vars, list(all_vars[:n])))

    def wrapped_body(*all_vars):
        loop = graph._get_control_flow_context()
        holder["loop"] = loop
        k = loop.body_inputs[0]
        produced = control_flow._call(body, pack(loop_vars, list(all_vars[:n])))
        if not same_structure(loop_vars, produced) and not (
                isinstance(loop_vars, (list, tuple)) and len(loop_vars) == 1
                and len(flatten(produced)) == 1):
            raise ValueError(f"recorded_while_loop: body returned {produced!r}, which does "
                             f"not have the structure of loop_vars {loop_vars!r}.")
        new_rows = [slice_update_ops.tensor_strided_slice_update(
            buf, [k], [k + 1], [1], all_vars[j], shrink_axis_mask=1, name="record")
            for buf, j in zip(all_vars[n:], recorded)]
        return list(flatten(produced)) + new_rows

    all_invariants = list(invariants) + [b.shape for b in buffers]
    results = control_flow.while_loop(
        wrapped_cond, wrapped_body, leaves + buffers, shape_invariants=all_invariants,
        parallel_iterations=parallel_iterations, name=name, maximum_iterations=bound,
        return_same_structure=True)
    loop = holder["loop"]
    _check_write_only(loop, write_only)
    rows = [None] * n
    for position, j in enumerate(recorded):
        rows[j] = 1 + n + position
    loop.history = LoopHistory(body, loop_vars, n, tuple(rows))
    return pack(loop_vars, results[:n])


def _empty_rows(bound, value):
    """A zero buffer of shape [bound, *value.shape], built outside the loop (the sizes the
    graph knows stay static, so the rows read back have the variable's static shape)."""
    if value.shape.ndims is None:
        dims = shape_ops.shape(value, out_type=_dtypes.int32)
        shape = join_ops.concat([reshape_ops.reshape(bound, [1]), dims], 0)
    else:
        known = value.shape.as_list()
        dynamic = shape_ops.shape(value, out_type=_dtypes.int32) if None in known else None
        shape = join_ops.stack([bound] + [d if d is not None else dynamic[i]
                                          for i, d in enumerate(known)])
    return fill_ops.fill(shape, to_tensor(0, dtype=value.dtype), name="history")


def _check_write_only(loop, write_only) -> None:
    """ValueError unless each write-only variable only flows, through input 0 of
    TensorStridedSliceUpdates, into its own next value (module docstring)."""
    readers_of: dict = {}
    for op in loop.all_ops:
        for i, x in enumerate(op.inputs):
            readers_of.setdefault(x, []).append((op, i))
    for j in write_only:
        target = loop.nexts[1 + j].op.inputs[0]
        frontier = [loop.body_inputs[1 + j]]
        while frontier:
            t = frontier.pop()
            readers = readers_of.get(t, [])
            for op, i in readers:
                if op.type == "TensorStridedSliceUpdate" and i == 0:
                    frontier.append(op.outputs[0])
                elif not (op.type == "NextIteration" and t is target):
                    raise ValueError(
                        f"recorded_while_loop: loop variable {j} was declared write-only, "
                        f"but {op.name} ({op.type}) reads its value in the body.")
