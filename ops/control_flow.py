"""TensorFlow 1.x control flow built from the dataflow primitives: `cond`, `case` and
`while_loop` (2015 paper §4.4; ops/control_flow_ops.py holds the primitives).

Ops are built inside a *context* — a cond branch (`CondContext`) or a while loop
(`WhileContext`) — set on the graph while the user's branch or body function runs
(Graph._control_flow_context).  The graph shows every new op's inputs to the innermost
context first (`prepare_inputs`), which brings values from outside in as TensorFlow does:
- into a cond branch through `Switch(value, pred)` (the output of the branch's side), so
  the ops of the branch not taken see dead inputs and do not run;
- into a while loop through `Enter(value, is_constant=True)` (a loop invariant, the same
  value in every iteration).
An op built in a context with no input from inside it (a constant) gets a control input
from the context's *pivot* (a branch: the identity of Switch(pred, pred); a loop: the loop
counter's value in the current iteration), so it runs in that branch, or once per
iteration.  External control inputs of ops inside a loop are dropped: they apply to the
loop's Enter ops, which are built outside it.

Every while loop carries a hidden int32 counter (its first loop variable): it implements
`maximum_iterations`, and its exit value is the trip count the gradient's backward loop
runs (ops/while_gradient.py).
"""

from __future__ import annotations

import weakref

from .. import dtypes as _dtypes
from ..compiler.core.graph import Operation, Tensor, get_default_graph
from ..compiler.core.shapes import TensorShape, as_shape
from . import basic_ops, control_flow_ops as cf, math_ops
from .builder import to_tensor
from .nest import flatten, pack, same_structure as _same_structure


class ControlFlowContext:
    """What the ops of one cond branch or while loop share (module docstring)."""

    def __init__(self, graph, outer):
        self.graph = graph
        self.outer = outer
        self.all_ops: dict = {}        # ops built in this context or a nested one
        self.values: set = set()       # tensors usable inside besides those of its ops
        self.captured: dict = {}       # outside tensor -> the tensor standing for it here
        self.pivot: Operation | None = None

    def contains(self, op) -> bool:
        """Whether `op` was built in this context or one nested in it."""
        c = op._cf_context
        while c is not None:
            if c is self:
                return True
            c = c.outer
        return False

    def add_op(self, op) -> None:
        """Record `op` (the graph calls this for every op built in the context)."""
        c = self
        while c is not None:
            c.all_ops[op] = None
            c = c.outer

    def prepare_inputs(self, op_def, inputs, controls):
        """(inputs, control inputs) of a new op: outside values brought in; the pivot as a
        control input when nothing that varies inside (a branch's or an iteration's value)
        reaches the op, so it runs only in its branch, once per iteration."""
        inputs = [self.internal(t) for t in inputs]
        inside = [c for c in controls if self.contains(c)]
        crossing = [c for c in controls if c not in inside and self._across_a_frame(c)]
        controls = [c for c in controls if c not in crossing]
        varying = any(self.contains(t.op) and not _is_invariant(t) for t in inputs)
        if self.pivot is not None and not varying and not inside:
            controls = controls + [self.pivot]
        if crossing:   # ops outside an enclosing loop: a token after them enters the loop
            controls = controls + [self._token_after(crossing).op]
        return inputs, controls

    def _across_a_frame(self, op) -> bool:
        """Whether `op` lies outside a while loop this context is in (so a control edge
        from it would cross a frame)."""
        c = self
        while c is not None:
            if isinstance(c, WhileContext) and not c.contains(op):
                return True
            c = c.outer
        return False

    def _token_after(self, ops) -> Tensor:
        """A tensor, valid here, that exists only after `ops` ran: a constant built after
        them in the nearest enclosing context that holds them all, brought in as every
        captured value is (TensorFlow moves such control edges to the loop's entry)."""
        home = self.outer
        while home is not None and not all(home.contains(op) for op in ops):
            home = home.outer
        with self.graph._control_flow_context(home), self.graph.control_dependencies(ops):
            marker = to_tensor(0, name="control_token")
        return self.internal(marker)

    def internal(self, t: Tensor) -> Tensor:
        """The tensor standing for `t` inside this context (captured once)."""
        if t in self.values or self.contains(t.op):
            return t
        hit = self.captured.get(t)
        if hit is not None:
            return hit
        outer_t = self.outer.internal(t) if self.outer is not None else t
        # a capture belongs to the outer context: control inputs meant for the op being
        # built inside (`control_dependencies` there) must not reach it
        with self.graph._control_flow_context(self.outer), self.graph.control_dependencies(None):
            inner = self._capture(outer_t)
        self.captured[t] = inner
        self.values.add(inner)
        return inner


class CondContext(ControlFlowContext):
    """One branch of a `cond`: `pred` and `branch` (1 for the true branch, 0 for false)."""

    def __init__(self, graph, outer, pred, branch: int):
        super().__init__(graph, outer)
        self.pred, self.branch = pred, branch
        with graph._control_flow_context(outer):
            taken = cf.switch(pred, pred, name="switch_t" if branch else "switch_f")[branch]
            self.pivot = basic_ops.identity(taken, name="pivot_t" if branch else "pivot_f").op
        self.values.add(self.pivot.outputs[0])

    def _capture(self, t: Tensor) -> Tensor:
        return cf.switch(t, self.pred)[self.branch]


class WhileContext(ControlFlowContext):
    """One `while_loop`: its frame, loop variables and the tensors a gradient needs."""

    def __init__(self, graph, outer, frame_name: str, parallel_iterations: int, back_prop: bool):
        super().__init__(graph, outer)
        self.frame_name = frame_name
        self.parallel_iterations = parallel_iterations
        self.back_prop = back_prop
        self.enters, self.merges, self.body_inputs, self.nexts, self.exits = [], [], [], [], []
        self.structure = None        # the user's loop_vars structure (for the body function)
        self.body_fn = None
        self.gradient_stacks = None  # built once, by the first gradient (while_gradient.py)
        self.history = None          # a recorded loop's LoopHistory (ops/loop_history.py)

    def _capture(self, t: Tensor) -> Tensor:
        return self.enter(t, is_constant=True)

    def enter(self, t: Tensor, is_constant: bool) -> Tensor:
        """`t` (a tensor of the outer context) entering this loop's frame."""
        with self.graph._control_flow_context(self.outer):
            out = cf.enter(t, self.frame_name, is_constant, self.parallel_iterations)
        out.op._cf_context = self   # its output lives in the frame
        self.add_op(out.op)
        return out

    # --- the loop as one unit, for gradients --------------------------------------------------
    @property
    def _id(self) -> int:
        return max(e.op._id for e in self.exits)

    def unit_outputs(self) -> list:
        return list(self.exits)

    def unit_inputs(self) -> list:
        return [e.op.inputs[0] for e in self.enters] + list(self.captured)


def _as_leaf_tensor(value, context, dtype=None) -> Tensor | Operation:
    """A branch's or body's result leaf as a tensor of `context` (ops stay ops)."""
    if isinstance(value, Operation):
        return value
    if hasattr(value, "_as_graph_tensor"):
        value = value._as_graph_tensor()
    if isinstance(value, Tensor):
        return context.internal(value)
    return to_tensor(value, dtype=dtype)


# --- cond and case -----------------------------------------------------------------------------

def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """`true_fn()` if `pred` else `false_fn()` (TF1 `tf.cond`): both branches are built;
    only the taken one runs.  The branches must return the same structure of tensors of the
    same dtypes; a one-element list comes back as its element unless `strict`."""
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables (functions of no "
                        "arguments that build each branch).")
    graph = get_default_graph()
    with graph.name_scope(name or "cond"):
        pred = to_tensor(pred, dtype=_dtypes.bool_, name="pred")
        if pred.dtype is not _dtypes.bool_ or not pred.shape.is_compatible_with([]):
            raise TypeError(f"cond: pred must be a scalar bool tensor, got {pred.dtype.name} "
                            f"of shape {pred.shape} ({pred.name}).")
        outer = graph._get_control_flow_context()
        results = []
        for branch, fn in ((1, true_fn), (0, false_fn)):
            context = CondContext(graph, outer, pred, branch)
            with graph._control_flow_context(context):
                value = fn()
                leaves = [_as_leaf_tensor(v, context) for v in flatten(value)]
                leaves = [_op_as_tensor(v, context) for v in leaves]
            results.append((value, leaves, context))
        (t_value, t_leaves, t_ctx), (f_value, f_leaves, _) = results
        if not _same_structure(t_value, f_value) or len(t_leaves) != len(f_leaves):
            raise ValueError(f"cond: true_fn and false_fn must return the same structure; "
                             f"true_fn returned {t_value!r}, false_fn returned {f_value!r}.")
        merged = []
        for i, (t, f) in enumerate(zip(t_leaves, f_leaves)):
            if t.dtype is not f.dtype:
                raise TypeError(f"cond: output {i} of true_fn is {t.dtype.name} but false_fn's "
                                f"is {f.dtype.name} ({t.name}, {f.name}).")
            out = cf.merge([f, t], name="Merge")[0]
            out.op._cf_merge_of = t_ctx
            merged.append(out.op if t in _OP_STAND_INS else out)
        result = pack(t_value, merged) if not isinstance(t_value, Operation) else merged[0]
        if not strict and isinstance(result, (list, tuple)) and len(result) == 1 \
                and not hasattr(result, "_fields"):
            return result[0]
        return result


def _op_as_tensor(value, context) -> Tensor:
    """An Operation a branch returns becomes the branch pivot's value after it; cond
    returns the merged value's op in its place."""
    if not isinstance(value, Operation):
        return value
    with context.graph.control_dependencies([value]):
        out = basic_ops.identity(context.pivot.outputs[0])
    _OP_STAND_INS.add(out)
    return out


_OP_STAND_INS = weakref.WeakSet()


def _is_invariant(t: Tensor) -> bool:
    """A loop invariant: the output of a constant Enter (the same in every iteration)."""
    return t.op.type == "Enter" and bool(t.op._attrs.get("is_constant"))


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The result of the first `fn` whose `pred` is true, else `default()` (TF1 `tf.case`).
    `pred_fn_pairs`: a list of (pred, fn) pairs or a dict; without a default the last fn is
    used when no predicate holds.  `exclusive` is accepted (predicates are tried in order)."""
    del exclusive
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else \
        list(pred_fn_pairs)
    if not pairs:
        raise ValueError("case: pred_fn_pairs is empty.")
    for p, f in pairs:
        if not callable(f):
            raise TypeError(f"case: {f!r} (paired with {p}) is not callable.")
    if default is None:
        *pairs, (_, default) = pairs
        if not pairs:
            return default()

    def build(i):
        pred, fn = pairs[i]
        rest = (lambda: build(i + 1)) if i + 1 < len(pairs) else default
        return cond(pred, fn, rest, strict=strict, name=f"case_{i}" if i else "case")

    graph = get_default_graph()
    with graph.name_scope(name or "case"):
        return build(0)


# --- while_loop --------------------------------------------------------------------------------

def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` (TF1 `tf.while_loop`).

    `loop_vars`: a nest (lists, tuples, namedtuples, dicts) of tensors; `cond` returns a
    scalar bool tensor and `body` the same nest.  A variable's shape may change across
    iterations only where `shape_invariants` (the same nest of shapes) leaves it unknown.
    `maximum_iterations` caps the trip count.  `parallel_iterations` is recorded on the
    loop's Enter ops (the executor runs ready iterations as they come); `swap_memory` is
    accepted and ignored.  Returns the final values in `loop_vars`' structure (a one-element
    list or tuple comes back as its element unless `return_same_structure`)."""
    del swap_memory
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables.")
    graph = get_default_graph()
    with graph.name_scope(name or "while") as scope:
        structure = loop_vars
        initial = [to_tensor(v) for v in flatten(loop_vars)]
        if not initial:
            raise ValueError("while_loop: loop_vars is empty.")
        invariants = ([as_shape(s) for s in flatten(shape_invariants)]
                      if shape_invariants is not None else [v.shape for v in initial])
        if len(invariants) != len(initial):
            raise ValueError(f"while_loop: shape_invariants has {len(invariants)} shapes for "
                             f"{len(initial)} loop variables.")
        for v, s in zip(initial, invariants):
            if not s.is_compatible_with(v.shape):
                raise ValueError(f"while_loop: the shape invariant {s} is not compatible with "
                                 f"the initial shape {v.shape} of {v.name}.")
        outer = graph._get_control_flow_context()
        counter = to_tensor(0, dtype=_dtypes.int32, name="iteration_counter")
        limit = (to_tensor(maximum_iterations, dtype=_dtypes.int32, name="maximum_iterations")
                 if maximum_iterations is not None else None)
        loop = WhileContext(graph, outer, scope.rstrip("/"), parallel_iterations, back_prop)
        loop.structure, loop.body_fn = structure, body
        variables = [counter] + initial
        loop.enters = [loop.enter(v, is_constant=False) for v in variables]
        with graph._control_flow_context(loop):
            merges = [cf.merge([e, e], name="Merge", shape_invariant=s)[0]
                      for e, s in zip(loop.enters, [TensorShape([])] + invariants)]
            loop.merges = merges
            loop.pivot = merges[0].op
            args = pack(structure, merges[1:])
            go = _call(cond, args)
            go = to_tensor(go, dtype=_dtypes.bool_)
            if limit is not None:
                go = math_ops.logical_and(merges[0] < loop.internal(limit), go)
            go = cf.loop_cond(go)
            switches = [cf.switch(m, go) for m in merges]
            loop.exits = [cf.exit(f) for f, _ in switches]
            loop.body_inputs = [basic_ops.identity(t) for _, t in switches]
            loop.pivot = loop.body_inputs[0].op
            produced = _call(body, pack(structure, loop.body_inputs[1:]))
            if (isinstance(structure, (list, tuple)) and len(structure) == 1
                    and not isinstance(produced, (list, tuple))):
                produced = type(structure)([produced]) if not hasattr(structure, "_fields") \
                    else produced   # TF1: a body may return the one variable bare
            if not _same_structure(structure, produced):
                raise ValueError(f"while_loop: body returned {produced!r}, which does not have "
                                 f"the structure of loop_vars {structure!r}.")
            leaves = flatten(produced)
            if len(leaves) != len(initial):
                raise ValueError(f"while_loop: body returned {len(leaves)} values for "
                                 f"{len(initial)} loop variables.")
            nexts = [loop.body_inputs[0] + 1]
            for i, (value, var, shape) in enumerate(zip(leaves, initial, invariants)):
                t = _as_leaf_tensor(value, loop, dtype=var.dtype)
                if not isinstance(t, Tensor) or t.dtype is not var.dtype:
                    what = t.dtype.name if isinstance(t, Tensor) else type(t).__name__
                    raise TypeError(f"while_loop: body result {i} is {what}, but loop "
                                    f"variable {var.name} is {var.dtype.name}.")
                if not _fits(t.shape, shape):
                    raise ValueError(
                        f"while_loop: loop variable {i} ({var.name}) enters the loop with shape "
                        f"{shape}, but has shape {t.shape} after one iteration. To allow the "
                        "shape to vary across iterations, use the `shape_invariants` argument.")
                nexts.append(t)
            loop.nexts = [cf.next_iteration(t) for t in nexts]
        for m, n in zip(merges, loop.nexts):   # the back edges (the graph's one mutation)
            m.op._inputs = (m.op.inputs[0], n)
        results = pack(structure, loop.exits[1:])
        if isinstance(structure, Tensor) or not isinstance(structure, (list, tuple, dict)):
            return loop.exits[1]
        if (not return_same_structure and isinstance(results, (list, tuple))
                and len(results) == 1 and not hasattr(results, "_fields")):
            return results[0]
        return results


def _fits(shape: TensorShape, invariant: TensorShape) -> bool:
    """Whether a body result of `shape` keeps the loop's shape `invariant`: every
    dimension the invariant knows is known and equal (TensorFlow's rule)."""
    if invariant.dims is None:
        return True
    if shape.dims is None or len(shape.dims) != len(invariant.dims):
        return False
    return all(b is None or a == b for a, b in zip(shape.dims, invariant.dims))


def _call(fn, args):
    if isinstance(args, (list, tuple)) and not hasattr(args, "_fields"):
        return fn(*args)
    return fn(args)


def is_loop_op(op) -> bool:
    """Whether `op` belongs to some while loop."""
    c = op._cf_context
    while c is not None:
        if isinstance(c, WhileContext):
            return True
        c = c.outer
    return False


__all__ = ["cond", "case", "while_loop", "CondContext", "WhileContext"]
