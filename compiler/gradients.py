"""Automatic differentiation: `gradients(ys, xs)` extends the graph with gradient ops (TF 2015
paper §4.1), TensorFlow 1.x semantics.

Reverse-mode accumulation over the ops that lie between `xs` and `ys`: reachable forward from
an x (through any tensors) and backward from a y.  Because a graph is append-only, creation
order is a topological order, so those ops are visited in reverse creation order; each op's
`OpDef.gradient(op, *output_grads)` (defined with the op, see ops/__init__.py) maps the
gradients of its outputs to gradients of its inputs.  Contributions reaching one tensor
over several paths are summed with AddN.

Invariants and rules:
- Only floating-point tensors carry gradients; integer, bool, string and complex tensors
  get None (so shape computations, indices and comparisons never need a gradient).
- An x not connected to any y (or connected only through non-float tensors, StopGradient
  ops or `stop_gradients`) gets None.
- When some float outputs of a multi-output op have a gradient and others do not, the
  others get zeros, so gradient functions see a tensor for every float output.
- An op on a differentiable path whose OpDef has no gradient is a LookupError naming it;
  an op declared not differentiable (`registry.not_differentiable` as its gradient, as
  TensorFlow's `ops.NotDifferentiable`: random numbers, one-hot, ranges) stops the path
  instead, so what reaches the ys only through it gets None.
- Every gradient op is created under the name scope `name` ("gradients/..."), one sub-scope
  per differentiated op ("gradients/<op name>_grad/...").
- A `Variable` in xs stands for its variable tensor: ops read a variable through that tensor
  (directly or via its "read" Identity), so its gradient is that of the variable's value.
- Sparse gradients (ops/indexed_slices.py): a gradient function may return an IndexedSlices
  (a leading-axis gather does, for its params).  Contributions to one tensor that are all
  IndexedSlices aggregate by concatenating their values and indices; a mix with dense
  tensors is made dense and summed.  An op whose gradient takes IndexedSlices as they are
  (`_TAKES_SLICES`: Identity, which reads a variable) gets them; every other op gets its
  output gradients dense.  An x whose gradient is IndexedSlices gets an IndexedSlices, as in
  TensorFlow (an embedding table's gradient holds only the looked-up rows).
"""

from __future__ import annotations

from ..ops import indexed_slices
from ..ops.array_ops import ones_like, zeros_like
from ..ops.registry import Trait
from ..ops.while_gradient import while_loop_gradient
from ..ops.builder import to_tensor
from ..ops.math_binary import add_n
from .core.graph import Tensor


def _as_tensor(value, what: str) -> Tensor:
    if hasattr(value, "_as_graph_tensor"):
        value = value._as_graph_tensor()
    if not isinstance(value, Tensor):
        raise TypeError(f"gradients: every element of {what} must be a Tensor or Variable, "
                        f"got {value!r}.")
    return value


def _as_list(values, what: str) -> list:
    if isinstance(values, (list, tuple)):
        return [_as_tensor(v, what) for v in values]
    return [_as_tensor(values, what)]


def _differentiable(t: Tensor) -> bool:
    return t.dtype.is_floating


def _consumers(graph) -> dict:
    """Tensor -> the ops that take it as an input (one pass over the graph)."""
    out: dict = {}
    for op in graph.get_operations():
        for t in op.inputs:
            out.setdefault(t, []).append(op)
    return out


def _unit_finder(graph):
    """op -> the node gradients treat it as: the op itself, or the outermost while loop
    (ops/control_flow.py WhileContext) it lies in below the context gradients are built in;
    a loop is differentiated as a whole (ops/while_gradient.py)."""
    here = graph._get_control_flow_context()

    def unit(op):
        found, c = op, op._cf_context
        while c is not None and c is not here:
            if hasattr(c, "unit_outputs"):
                found = c
            c = c.outer
        return found

    return unit


def _unit_outputs(node):
    return node.unit_outputs() if hasattr(node, "unit_outputs") else node.outputs


def _unit_inputs(node):
    return node.unit_inputs() if hasattr(node, "unit_inputs") else node.inputs


def _between(ys, xs, stop_ops) -> list:
    """The ops (and while loops, as units) reachable from xs that ys depend on, in reverse
    creation (topological) order."""
    consumers = _consumers(ys[0].graph)
    unit = _unit_finder(ys[0].graph)
    reached, stack = set(), [x for x in xs]
    while stack:
        for op in consumers.get(stack.pop(), ()):
            node = unit(op)
            if node not in reached:
                reached.add(node)
                stack.extend(_unit_outputs(node))
    between, stack = set(), [unit(y.op) for y in ys]
    stack = [n for n in stack if n in reached]
    while stack:
        node = stack.pop()
        if node in between:
            continue
        between.add(node)
        if node in stop_ops:
            continue
        for t in _unit_inputs(node):
            producer = unit(t.op)
            if producer in reached and producer not in between:
                stack.append(producer)
    return sorted(between, key=lambda op: op._id, reverse=True)


# op types whose gradient function passes an IndexedSlices output gradient on unchanged
_TAKES_SLICES = frozenset({"Identity"})


def _as_gradient(value, what: str):
    """A gradient function's result: an IndexedSlices as it is, anything else a Tensor."""
    if isinstance(value, indexed_slices.IndexedSlices):
        return value
    return _as_tensor(value, what)


def _sum(grads):
    """The sum of the contributions (None when there are none): IndexedSlices when all are,
    else a dense AddN."""
    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    if len(grads) == 1:
        return grads[0]
    if all(isinstance(g, indexed_slices.IndexedSlices) for g in grads):
        return indexed_slices.concat(grads)
    return add_n([indexed_slices.dense(g) for g in grads])


def _initial_grads(ys, grad_ys) -> dict:

    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"gradients: {len(grad_ys)} grad_ys for {len(ys)} ys; pass one per y "
                         "(None for ones).")
    pending: dict = {}
    for i, (y, gy) in enumerate(zip(ys, grad_ys)):
        if not _differentiable(y):
            continue
        if gy is None:
            gy = ones_like(y, name=f"grad_ys_{i}")
        else:
            gy = to_tensor(gy, dtype=y.dtype, name=f"grad_ys_{i}")
            if gy.dtype is not y.dtype:
                raise TypeError(f"gradients: grad_ys[{i}] has dtype {gy.dtype.name} but ys[{i}] "
                                f"({y.name}) has {y.dtype.name}.")
            if not gy.shape.is_compatible_with(y.shape):
                raise ValueError(f"gradients: grad_ys[{i}] has shape {gy.shape}, incompatible "
                                 f"with ys[{i}] ({y.name}) of shape {y.shape}.")
        pending.setdefault(y, []).append(gy)
    return pending


def _output_grads(op, pending) -> list | None:
    """The summed gradient of each output (zeros for float outputs left without one), or None
    when no output of `op` received a gradient."""

    outputs = _unit_outputs(op)
    grads = [_sum(pending.pop(t, [])) for t in outputs]
    if all(g is None for g in grads):
        return None
    if getattr(op, "type", None) not in _TAKES_SLICES:
        grads = [indexed_slices.dense(g) for g in grads]
    if hasattr(op, "unit_outputs"):   # a while loop: its gradient fills in what it needs
        return grads
    # zeros that depend on the output (not a constant): in a branch not taken they are
    # dead like the output, so a cond gradient's Merge forwards the live gradient
    live = not op.op_def.has(Trait.CONTROL_FLOW)
    return [zeros_like(t, optimize=live) if g is None and _differentiable(t) else g
            for t, g in zip(outputs, grads)]


def _apply_gradient(op, out_grads) -> list:
    fn = op.op_def.gradient
    if fn is None:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})"
                          f"; it lies on a differentiable path between xs and ys. "
                          f"Created at {op.creation_site or 'an unknown site'}.")
    in_grads = list(fn(op, *out_grads))
    if len(in_grads) != len(op.inputs):
        raise ValueError(f"The gradient of {op.type} returned {len(in_grads)} values for "
                         f"{len(op.inputs)} inputs (op '{op.name}').")
    return in_grads


class UnconnectedGradients:
    """What `gradients` returns for an x that no y depends on (TF1's enum)."""

    NONE = "none"
    ZERO = "zero"


def gradients(ys, xs, grad_ys=None, name: str = "gradients", stop_gradients=None,
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method=None, unconnected_gradients="none") -> list:
    """The symbolic derivatives of sum(ys) with respect to each x in xs (TF1 `tf.gradients`).

    `ys`, `xs`: a tensor or a list of tensors (xs may hold Variables).  `grad_ys`: one
    gradient per y (None entries mean ones_like(y)), to start from dL/dy instead of ones.
    `stop_gradients`: tensors held constant (no gradient flows through them).  Returns a list
    with one gradient tensor per x, or None where x does not affect any y (or is not a float
    tensor), or zeros shaped like x with `unconnected_gradients="zero"`
    (`UnconnectedGradients.ZERO`).  A gradient that only leading-axis gathers give (an
    embedding table's) is an IndexedSlices, as in TensorFlow.  `colocate_gradients_with_ops`,
    `gate_gradients` and `aggregation_method` are accepted for compatibility and ignored
    (dense contributions are always summed with AddN).
    """
    del colocate_gradients_with_ops, gate_gradients, aggregation_method
    unconnected = getattr(unconnected_gradients, "value", unconnected_gradients)
    if unconnected not in ("none", "zero"):
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r} "
                         "(expected 'none' or 'zero').")
    ys, xs = _as_list(ys, "ys"), _as_list(xs, "xs")
    stops = _as_list(stop_gradients, "stop_gradients") if stop_gradients is not None else []
    graph = ys[0].graph
    for t in ys + xs + stops:
        if t.graph is not graph:
            raise ValueError(f"gradients: {t.name} is from another graph than {ys[0].name}.")
    stop_ops = {t.op for t in stops}
    with graph.as_default(), graph.name_scope(name or "gradients"):
        pending = _initial_grads(ys, grad_ys)
        x_set = set(xs)
        results: dict = {}
        for op in _between(ys, xs, stop_ops):
            if hasattr(op, "unit_outputs"):   # a while loop, differentiated as a whole
                with graph.name_scope(f"{op.frame_name.split('/')[-1]}_grad"):
                    out_grads = _output_grads(op, pending)
                    if out_grads is not None:
                        for t, gs in while_loop_gradient(op, out_grads, gradients).items():
                            pending.setdefault(t, []).extend(gs)
                continue
            wanted = [t for t in op.outputs if t in x_set]
            for t in wanted:  # an x's gradient is complete once its producer is reached
                results[t] = list(pending.get(t, []))
            if op in stop_ops:
                for t in op.outputs:
                    pending.pop(t, None)
                continue
            with graph.name_scope(f"{op.name}_grad"):
                out_grads = _output_grads(op, pending)
                if out_grads is None:
                    continue
                in_grads = _apply_gradient(op, out_grads)
            for t, g in zip(op.inputs, in_grads):
                if g is None or not _differentiable(t):
                    continue
                g = _as_gradient(g, f"the gradient of {op.type}")
                if isinstance(g, Tensor) and g.shape.is_compatible_with(t.shape):
                    g.set_shape(t.shape)
                pending.setdefault(t, []).append(g)
        out = []
        for x in xs:
            grads = results[x] if x in results else pending.get(x, [])
            g = _sum(grads) if _differentiable(x) else None
            if g is None and unconnected == "zero":
                g = zeros_like(x)
            out.append(g)
        return out
