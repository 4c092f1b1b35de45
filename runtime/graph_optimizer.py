"""Graph rewrites of a Session's plan before it runs (the 2015 TensorFlow paper, §5.1).

Owns the graph-level optimizations a plan gets once, when it is built: common-subexpression
elimination (`eliminate_common_subexpressions`), constant folding (`fold_constants`) and
pruning what the rewrites left unneeded (`prune`).  Each is a small function from a
`PlanGraph` to a `PlanGraph`; `optimize` runs them in that order, as runtime/config.py's
`GraphRewrites` (TensorFlow's OptimizerOptions) asks.

A `PlanGraph` is a *view*: the plan's nodes (runtime/executor.py: Operations and steps)
plus what the rewrites decided.  The user's Graph is never touched: no op is created or
changed, so `graph.get_operations()` is the same before and after.  Decisions are tables:
- `aliases`: output of a merged duplicate -> the survivor's output.  A run's values resolve
  them (executor.AliasedValues), so fetching or reading the duplicate's tensor gives the
  survivor's value;
- `merged`: duplicate op -> survivor op: who waited on the duplicate (its control edges
  included) waits on the survivor;
- `preset`: tensor -> read-only array computed here with the ops' NumPy reference kernels;
  a run starts with them as with feeds;
- `folded`: ops whose work was done here (who waited on them waits on nothing).

Order, as in TensorFlow, where XLA's auto-clustering runs before the graph optimizer:
clusters are formed first (runtime/clustering.py) and are opaque nodes here; inside them
the compiler does its own CSE and constant folding on the kernel IR (compiler/passes.py).
The rewrites act on the plan's plain ops, and clusters profit at their boundary (an input
that became a constant or the survivor of a merge).

Invariants: ops with the STATEFUL, RUNTIME_VALUE, BLOCKING or COMMUNICATION trait, or that
take a variable reference, are never merged nor folded; neither is an op producing a fed
tensor, and a fed tensor is never constant (the plan is per set of feeds).  An op with
control inputs is not folded (its ordering stays), and a kernel that raises is left to run
(and raise) in the step, with the executor's error contract.  A folded result larger than
`GraphRewrites.max_constant_bytes` is not kept, and the op runs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..compiler.core.node import Operation
from ..ops.conversion import CONST
from ..ops.registry import Trait
from .config import GraphRewrites
from .executor import run_op

_EFFECTS = frozenset({Trait.STATEFUL, Trait.RUNTIME_VALUE, Trait.BLOCKING,
                      Trait.COMMUNICATION})
_MAX_KEYED_ATTR_BYTES = 1 << 16   # larger array attributes make an op not worth keying


@dataclasses.dataclass(frozen=True)
class Report:
    """What the rewrites of one plan did (Session.explain() sums them)."""

    merged: int = 0       # duplicate ops merged into an identical one
    folded: int = 0       # ops evaluated when the plan was built
    constants: int = 0    # the constants they left that the plan reads or fetches
    pruned: int = 0       # nodes no longer needed after the rewrites

    def __add__(self, other: "Report") -> "Report":
        return Report(*(a + b for a, b in zip(dataclasses.astuple(self),
                                              dataclasses.astuple(other))))

    def describe(self) -> str:
        return (f"merged {self.merged} duplicate ops, folded {self.folded} ops into "
                f"{self.constants} constants, pruned {self.pruned} nodes")


@dataclasses.dataclass(frozen=True)
class PlanGraph:
    """A plan's nodes and what the rewrites decided about them (module docstring)."""

    nodes: tuple
    fetches: tuple
    targets: tuple
    fed: frozenset
    aliases: dict = dataclasses.field(default_factory=dict)
    merged: dict = dataclasses.field(default_factory=dict)
    preset: dict = dataclasses.field(default_factory=dict)
    folded: frozenset = frozenset()
    report: Report = Report()

    def resolve(self, tensor):
        """The tensor whose value `tensor` has after the merges."""
        return self.aliases.get(tensor, tensor)


def optimize(nodes, fetches, targets, fed, options: GraphRewrites) -> PlanGraph:
    """The plan's nodes after the rewrites `options` switches on."""
    view = PlanGraph(tuple(nodes), tuple(fetches), tuple(targets), frozenset(fed))
    if options.cse:
        view = eliminate_common_subexpressions(view)
    if options.constant_folding:
        view = fold_constants(view, options.max_constant_bytes)
    if view.aliases or view.folded:
        view = prune(view)
    return view


def _members(node) -> tuple:
    return (node,) if type(node) is Operation else node.ops


def _pure(op) -> bool:
    op_def = op.op_def
    return not (op_def.traits & _EFFECTS or op_def.ref_inputs)


# --- common-subexpression elimination ------------------------------------------------------


def eliminate_common_subexpressions(view: PlanGraph) -> PlanGraph:
    """Merge plain pure ops of the same type, inputs (after earlier merges), attributes,
    control inputs and device into the first of them (graph order: nodes are topological)."""
    aliases, merged = dict(view.aliases), dict(view.merged)
    survivors, nodes = {}, []
    for node in view.nodes:
        key = _signature(node, aliases, merged, view.fed) if type(node) is Operation else None
        if key is None:
            nodes.append(node)
            continue
        survivor = survivors.setdefault(key, node)
        if survivor is node:
            nodes.append(node)
            continue
        merged[node] = survivor
        aliases.update(zip(node.outputs, survivor.outputs))
    count = len(merged) - len(view.merged)
    return dataclasses.replace(view, nodes=tuple(nodes), aliases=aliases, merged=merged,
                               report=view.report + Report(merged=count))


def _signature(op, aliases, merged, fed):
    """What makes two ops interchangeable, or None when `op` must never be merged."""
    if not _pure(op) or any(t in fed for t in op.outputs):
        return None
    attrs = _frozen(op._attrs)
    if attrs is None:
        return None
    inputs = tuple(aliases.get(t, t) for t in op.inputs)
    if len(inputs) == 2 and Trait.COMMUTATIVE in op.op_def.traits:
        inputs = tuple(sorted(inputs, key=lambda t: t._id))   # a+b is b+a, exactly
    controls = frozenset(merged.get(c, c) for c in op.control_inputs)
    return (op.op_def, inputs, attrs, controls, op.device)


def _frozen(value):
    """A hashable, exact stand-in for an attribute value (None: not comparable).  Floats by
    repr and types kept, so 0.0 and -0.0, 1 and True, 1 and 1.0 stay apart."""
    if isinstance(value, dict):
        items = [(k, _frozen(v)) for k, v in sorted(value.items())]
        return None if any(v is None for _, v in items) else ("dict", tuple(items))
    if isinstance(value, (list, tuple)):
        items = [_frozen(v) for v in value]
        return None if any(v is None for v in items) else (type(value).__name__, tuple(items))
    if isinstance(value, np.ndarray):
        if value.nbytes > _MAX_KEYED_ATTR_BYTES:
            return None
        if value.dtype.hasobject:   # strings: compare the objects, not their addresses
            return ("object array", value.shape, tuple(repr(v) for v in value.ravel()))
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, float):
        return ("float", repr(value))
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    if type(value).__name__ == "TensorShape":
        return ("TensorShape", repr(value))
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value).__name__, value)   # dtypes, enums; others compare by identity


# --- constant folding ----------------------------------------------------------------------


def fold_constants(view: PlanGraph, max_bytes: int) -> PlanGraph:
    """Evaluate plain pure ops whose inputs are all constant with their reference kernels;
    their outputs become preset read-only arrays."""
    preset, folded, nodes = dict(view.preset), set(view.folded), []
    for node in view.nodes:
        outs = _evaluate(node, view, preset, max_bytes) if type(node) is Operation else None
        if outs is None:
            nodes.append(node)
            continue
        folded.add(node)
        preset.update(zip(node.outputs, outs))
    count = len(folded) - len(view.folded)
    return dataclasses.replace(view, nodes=tuple(nodes), preset=preset,
                               folded=frozenset(folded),
                               report=view.report + Report(folded=count))


def _evaluate(op, view: PlanGraph, preset, max_bytes):
    """`op`'s outputs as read-only arrays if it folds, else None."""
    if (not op.inputs or op.control_inputs or not _pure(op) or not op.outputs
            or any(t in view.fed for t in op.outputs)
            or sum(_static_bytes(t) for t in op.outputs) > max_bytes):
        return None
    values = {}
    for t in op.inputs:
        value = _constant_value(view.resolve(t), view.fed, preset)
        if value is None:
            return None
        values[t] = value
    try:
        run_op(op, values, None, None)
    except Exception:  # noqa: BLE001 - the step runs it again and reports the error then
        return None
    outs = [values[t] for t in op.outputs]
    if not all(type(v) is np.ndarray for v in outs) or sum(v.nbytes for v in outs) > max_bytes:
        return None
    return [_read_only(v) for v in outs]


def _static_bytes(tensor) -> int:
    """The size of `tensor` as far as its static shape tells (unknown sizes count 0), so a
    result known to be too large is never computed here."""
    dims = tensor.shape.as_list() if tensor.shape.ndims is not None else []
    return int(np.prod([d or 0 for d in dims])) * tensor.dtype.np_dtype.itemsize


def _constant_value(tensor, fed, preset):
    if tensor in fed:
        return None
    value = preset.get(tensor)
    if value is None and tensor.op.op_def is CONST and not tensor.op.control_inputs:
        value = tensor.op.get_attr("value")
    return value


def _read_only(value: np.ndarray) -> np.ndarray:
    """A view no kernel or caller can write through (fetches copy it: runtime/session.py)."""
    if value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


# --- pruning -------------------------------------------------------------------------------


def prune(view: PlanGraph) -> PlanGraph:
    """Keep the nodes that fetches, target ops and stateful ops still need after the
    rewrites; preset values no kept node reads and no fetch asks for are dropped."""
    owner = {op: node for node in view.nodes for op in _members(node)}

    def producer_of_tensor(t):
        t = view.resolve(t)
        if t in view.fed or t in view.preset:
            return None
        return owner.get(t.op)

    def producer_of_op(op):
        return owner.get(view.merged.get(op, op))   # None: folded (pure: nothing to wait on)

    stack = [producer_of_tensor(t) for t in view.fetches]
    stack += [producer_of_op(op) for op in view.targets]
    stack += [node for node in view.nodes
              if any(not _pure(op) for op in _members(node))]   # effects are never pruned
    needed, read = set(), set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in needed:
            continue
        needed.add(id(node))
        for op in _members(node):
            for t in op.inputs:
                read.add(view.resolve(t))
                stack.append(producer_of_tensor(t))
            stack.extend(producer_of_op(c) for c in op.control_inputs)
    read.update(view.resolve(t) for t in view.fetches)
    nodes = tuple(node for node in view.nodes if id(node) in needed)
    preset = {t: v for t, v in view.preset.items() if t in read}
    report = view.report + Report(constants=len(preset),
                                  pruned=len(view.nodes) - len(nodes))
    return dataclasses.replace(view, nodes=nodes, preset=preset, report=report)
