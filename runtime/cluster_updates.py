"""Variable updates inside compiled clusters: a training step as one compiled function.

A cluster (runtime/clustering.py) may contain the variable updates Assign, AssignAdd,
AssignSub, the row scatters ScatterUpdate, ScatterAdd and ScatterSub of small variables (a
sparse optimizer step, ops/variable_scatter_ops.py; `IN_PLACE_SCATTER_ELEMENTS`) and
TensorFlow's optimizer updates of imported graphs (ApplyGradientDescent, ApplyMomentum,
ApplyAdam; `WRITES` says which output is the new value
of which variable), so
forward pass, backward pass and every optimizer update run as ONE compiled kernel, as XLA
compiles resource-variable updates into its clusters. Inside the kernel an update is plain
arithmetic: Assign yields its value, AssignAdd/AssignSub yield `old + delta` / `old - delta`
(the lowerings live with the ops in ops/variables.py). The cluster step reads every variable
once, at its start, and after the kernel returns it installs each updated value as the
variable's new array (runtime/state.py's invariant: a stored value is never mutated, it is
replaced). The kernel writes each new value once into a fresh buffer that becomes the
variable's storage: no copy of the parameters per step.

Rules that keep this equal to running the ops one by one (TensorFlow's ref semantics):
- a cluster updates a variable at most once;
- every op of the cluster that reads a variable the cluster updates must not depend, by data
  or control edges, on that update: it would need the new value but reads the old one.  (A
  consumer of the update's *output* tensor is fine: that tensor is the new value.)
- a variable that the cluster only assigns (Assign without reading the old value) is not
  read at all, so an initializer cluster works on uninitialized variables.
A partition that breaks a rule is not used: `form_clusters` partitions again with updates
kept out of clusters.
Shape rules (Assign with validate_shape, AssignAdd/AssignSub always) are checked inside the
kernel, before anything is installed; a failed check reruns the cluster's ops with the
reference kernels, which raise the exact op's error.
"""

from __future__ import annotations

import numpy as np

from ..ops.training_ops import APPLY_ADAM, APPLY_GRADIENT_DESCENT, APPLY_MOMENTUM
from ..ops.variable_scatter_ops import SCATTER_ADD, SCATTER_SUB, SCATTER_UPDATE
from ..ops.variables import ASSIGN, ASSIGN_ADD, ASSIGN_SUB

# the variable updates that may join a cluster: per op, (ref input, output) pairs, the
# output being the new value of the variable behind the ref input
WRITES = {ASSIGN: ((0, 0),), ASSIGN_ADD: ((0, 0),), ASSIGN_SUB: ((0, 0),),
          APPLY_GRADIENT_DESCENT: ((0, 0),), APPLY_MOMENTUM: ((0, 0), (1, 1)),
          APPLY_ADAM: ((0, 0), (1, 1), (2, 2)), SCATTER_UPDATE: ((0, 0),),
          SCATTER_ADD: ((0, 0),), SCATTER_SUB: ((0, 0),)}
UPDATE_OPS = frozenset(WRITES)


# A row scatter into a variable of at least this many elements (or of unknown size) stays
# out of clusters: a kernel writes the whole new value into a fresh array, while the op on its
# own updates the rows in the stored array (ops/variable_ref.py, `writable_in_place`), so a
# sparse step on an embedding table costs its rows, not a copy of the table.
IN_PLACE_SCATTER_ELEMENTS = 1 << 16
_ROW_SCATTERS = frozenset({SCATTER_UPDATE, SCATTER_ADD, SCATTER_SUB})


def is_update(op) -> bool:
    """Whether `op` is a variable update that may join a cluster."""
    if op.op_def in _ROW_SCATTERS:
        size = op.inputs[0].shape.num_elements()
        return size is not None and size < IN_PLACE_SCATTER_ELEMENTS
    return op.op_def in UPDATE_OPS


def written(op) -> list:
    """[(variable reference tensor, output with its new value)] of an update op."""
    return [(op.inputs[i], op.outputs[j]) for i, j in WRITES[op.op_def]]


def updates_are_safe(group) -> bool:
    """Whether the ops of one cluster follow the rules above."""
    updates = [op for op in group if is_update(op)]
    if not updates:
        return True
    targets = [(update, ref) for update in updates for ref, _ in written(update)]
    refs = [ref for _, ref in targets]
    if len(set(refs)) != len(refs):
        return False  # two updates of one variable in one kernel
    members = set(group)
    for update, ref in targets:
        for op in _descendants(update, members):
            if any(t is ref for t in op.inputs):
                return False
    return True


def _descendants(start, members) -> set:
    """Ops of `members` reachable from `start` by data or control edges inside them."""
    consumers = {}
    for op in members:
        for t in op.inputs:
            consumers.setdefault(t.op, []).append(op)
        for c in op.control_inputs:
            consumers.setdefault(c, []).append(op)
    seen, stack = set(), [start]
    while stack:
        for op in consumers.get(stack.pop(), ()):
            if op not in seen:
                seen.add(op)
                stack.append(op)
    return seen


def write_only_refs(ops) -> set:
    """Variable tensors that the ops only assign to (Assign's ref input), never read."""
    read, assigned = set(), set()
    for op in ops:
        for i, t in enumerate(op.inputs):
            if i == 0 and op.op_def is ASSIGN:
                assigned.add(t)
            else:
                read.add(t)
    return assigned - read


class VariableWrites:
    """The updates of one cluster: which kernel output becomes which variable's value."""

    __slots__ = ("keys", "positions")

    def __init__(self, ops, outputs):
        updates = [op for op in ops if is_update(op)]
        index = {t: i for i, t in enumerate(outputs)}
        pairs = [pair for op in updates for pair in written(op)]
        self.keys = tuple(ref.op.name for ref, _ in pairs)  # session-state keys
        self.positions = tuple(index[value] for _, value in pairs)

    def __bool__(self):
        return bool(self.keys)

    def install(self, outs, state) -> None:
        """Make each new value its variable's array (read-only from now on; fresh kernel
        outputs that nothing else writes to, so they are stored without a copy)."""
        variables = state.variables
        with state.lock:
            for key, pos in zip(self.keys, self.positions):
                value = outs[pos]
                if type(value) is np.ndarray:   # (a GPU cluster's: a device array)
                    value.setflags(write=False)
                variables[key] = value
