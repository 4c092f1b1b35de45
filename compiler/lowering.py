"""Graph → kernel IR: lower a cluster of graph ops into a `Program`.

`lower_cluster` walks the cluster's ops in graph order and calls each op definition's
`lower(ctx, op, inputs)` (inputs are IR Nodes, one per op input) to get one Node per
output.  An op without a lowering, or whose lowering raises `NotLowerable`, cannot be
compiled; the clustering step keeps such ops with the executor.

`LowerContext` gives lowerings what they need beyond their input nodes: static values of
small int inputs (axes, permutations) and *symbolic* values of shape vectors (so
`reshape(x, [shape(x)[0], -1])` lowers without knowing sizes), extra inputs for array
constants, and runtime checks (two unknown sizes that must agree, or any bool condition,
possibly on computed values).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ops.conversion import static_value
from .core import ir
from .core.ir import Expr, Node, Scalar
from .core.ir_build import NotLowerable
from .lower_loops import lower_ops


class LowerContext:
    """State of one lowering: tensor → node map, extra constant inputs, runtime checks."""

    def __init__(self, input_tensors, input_specs, parent=None):
        self.nodes: dict = {}            # graph Tensor -> ir.Node
        self.checks: list = []           # (bool Expr, message)
        self.constants: list = []        # arrays passed as extra inputs, by position
        self.inputs: list = []           # ir INPUT nodes, by position
        # a while loop's condition and body (lower_loops.py): the context the loop is in,
        # and per input after the loop variables, the parent's node passed in for it
        self.parent = parent
        self.outer_values: list = []
        for t, (dtype, static_shape) in zip(input_tensors, input_specs):
            node = ir.input_node(len(self.inputs), dtype, static_shape)
            self.inputs.append(node)
            self.nodes[t] = node

    # --- values lowerings may ask for ----------------------------------------------------------
    def static(self, tensor, what: str = "argument") -> np.ndarray:
        """The value of a graph tensor known while compiling, else NotLowerable."""
        value = static_value(tensor)
        if value is None:
            raise NotLowerable(f"{what} ({tensor.name}) must be known when compiling")
        return value

    def symbolic_ints(self, tensor) -> list:
        """A rank-0/1 int tensor as a list of int64 Exprs (sizes may be runtime values)."""
        value = static_value(tensor)
        if value is not None:
            return [ir.index(int(v)) for v in np.asarray(value).reshape(-1)]
        node = self.nodes.get(tensor)
        if node is not None and node.kind is ir.NodeKind.INPUT:
            # computed outside the cluster (a Shape op the executor ran, a fed vector): its
            # elements are read from the input at run time; the producer's inputs are not
            # the cluster's to look at
            return self._input_ints(tensor, node)
        op = tensor.op
        if op.type in ("Shape", "Size") and op.inputs[0] not in self.nodes:
            raise NotLowerable(f"the sizes {tensor.name} describe {op.inputs[0].name}, which "
                               "the cluster does not receive")
        if op.type == "Shape":
            return list(self.node_of(op.inputs[0]).shape)
        if op.type == "Size":
            return [_product(self.node_of(op.inputs[0]).shape)]
        if op.type == "Pack" and op.get_attr("axis") == 0:
            out = []
            for t in op.inputs:
                out.extend(self.symbolic_ints(t))
            return out
        if op.type in ("Cast", "Identity"):
            return self.symbolic_ints(op.inputs[0])
        if op.type == "ConcatV2" and static_value(op.inputs[-1]) is not None and \
                int(np.asarray(static_value(op.inputs[-1]))) in (0, -1):
            out = []
            for t in op.inputs[:-1]:
                out.extend(self.symbolic_ints(t))
            return out
        if op.type == "StridedSlice" and op.get_attr("shrink_axis_mask") == 1 \
                and static_value(op.inputs[1]) is not None:
            vec = self.symbolic_ints(op.inputs[0])
            begin = int(np.asarray(static_value(op.inputs[1])).reshape(-1)[0])
            return [vec[begin]]
        if op.type in ("Mul", "Add", "AddV2", "Sub", "FloorDiv"):
            a, b = (self.symbolic_ints(t) for t in op.inputs)
            if len(a) == len(b) == 1:
                kind = {"Mul": Scalar.MUL, "Add": Scalar.ADD, "AddV2": Scalar.ADD,
                        "Sub": Scalar.SUB, "FloorDiv": Scalar.FLOORDIV}[op.type]
                return [ir.make(kind, ir.INDEX, (a[0], b[0]))]
        node = self.nodes.get(tensor)
        if node is not None:   # computed in the cluster (a traced index in a loop): its
            return self._input_ints(tensor, node)   # elements, read at run time
        raise NotLowerable(f"the integer vector {tensor.name} (from {op.type}) is not known "
                           "while compiling")

    def _input_ints(self, tensor, node: Node) -> list:
        """The elements of a rank-0/1 integer node (a cluster input, or computed) as Exprs;
        its length must be static (in the graph: shape inference's contract with every run,
        feeds included)."""
        dims = tensor.shape.as_list() if tensor.shape.ndims is not None else None
        if not tensor.dtype.is_integer or dims is None or len(dims) > 1 or None in dims:
            raise NotLowerable(f"the integer vector {tensor.name} has no static length")
        sizes = tensor.op.type in ("Shape", "Size")   # never negative: say so (max with 0)
        values = []
        for idx in ([()] if not dims else [(ir.index(k),) for k in range(dims[0])]):
            value = ir.make(Scalar.CAST, ir.INDEX, (ir.load(node, idx),))
            values.append(ir.make(Scalar.MAX, ir.INDEX, (value, ir.index(0))) if sizes
                          else value)
        return values

    def node_of(self, tensor) -> Node:
        return self.nodes[tensor]

    def constant(self, value: np.ndarray) -> Node:
        """An array constant: passed to the compiled function as an extra input."""
        # a private, writable copy: numba types read-only arrays differently, which would
        # compile the kernel a second time for the same signature
        value = np.array(value, copy=True, order="C")
        if self.parent is not None:   # inside a loop: the kernel's constant, passed in
            return self.capture(None, self.parent.constant(value))
        position = len(self.inputs)
        node = ir.input_node(position, dtypes.as_dtype(value.dtype), value.shape)
        self.inputs.append(node)
        self.constants.append((position, value))
        return node

    def capture(self, tensor, outer: Node) -> Node:
        """A loop's next input, standing for the parent context's node `outer` (and for
        graph tensor `tensor`, when given: a value entering the loop)."""
        static_shape = tuple(int(d.attr) if ir.is_const(d) else None for d in outer.shape)
        node = ir.input_node(len(self.inputs), outer.dtype, static_shape)
        self.inputs.append(node)
        self.outer_values.append(outer)
        if tensor is not None:
            self.nodes[tensor] = node
        return node

    def check_equal(self, a: Expr, b: Expr, message: str):
        """Require two sizes to be equal at run time (skipped when provably equal)."""
        if a is b:
            return
        if ir.is_const(a) and ir.is_const(b):
            if a.attr != b.attr:
                raise ValueError(message)
            return
        self.checks.append((ir.make(Scalar.EQ, "bool", (a, b)), message))

    def check(self, cond: Expr, message: str):
        """Require the bool scalar `cond` to hold at run time (else ValueError(message)).

        `cond` may load computed nodes: a data-dependent check, e.g. a REDUCE saying whether
        every gather index is in range.  Codegen evaluates it as soon as the nodes it loads
        exist; a lowering that must not run its loads before the check passes makes them
        depend on the checked node (see gather_ops)."""
        if ir.is_const(cond, True):
            return
        if ir.is_const(cond, False):
            raise ValueError(message)
        self.checks.append((cond, message))


def _product(dims) -> Expr:
    out = ir.index(1)
    for d in dims:
        out = d if ir.is_const(out, 1) else ir.make(Scalar.MUL, ir.INDEX, (out, d))
    return out


def lower_cluster(ops, input_tensors, input_specs, output_tensors):
    """Lower `ops` (in graph order) given cluster inputs; returns (Program, constants)."""
    ctx = LowerContext(input_tensors, input_specs)
    # which dtypes a target renders (float16: not on the CPU) is the target's to say (its
    # capabilities, checked by compiler/pipeline.py; docs/architecture.md); a while loop's
    # ops lower together, into one WHILE node (lower_loops.py)
    lower_ops(ctx, ops)
    program = ir.Program(ctx.inputs, [ctx.nodes[t] for t in output_tensors], ctx.checks)
    return program, ctx.constants
