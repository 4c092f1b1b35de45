"""An IR pass: elementwise consumers of a matrix product viewed with more dims are computed
over the product's own two dims, so the GEMM can take them as its epilogue.

A convolution lowers to `reshape(matmul(cols, filter), (N, OH, OW, OC))` (ops/lower_conv.py),
and its bias add and relu are then nests over the 4-D view: the GEMM's epilogue
(compiler/gemm_epilogue.py) matches only a nest over the product itself, and memory planning
never writes into a view's buffer.  This pass rewrites such a chain

    E1 = view(P) + bias[i3]          E2 = max(E1, 0)        (4-D, P = matmul (M, OC))
into
    E1' = P[i, j] + bias[j]          E2' = max(E1', 0)      (2-D, the product's shape)
    E2  = reshape(E2', (N, OH, OW, OC))

so `E2'` is `relu(P + bias)` over P, which the schedule finds as an epilogue (E1' has one
reader and is inlined).  A COMPUTE E of rank >= 3 is rewritten when every load in its body
either reads, at E's own index, a view `reshape(X, E.shape)` of a 2-D X whose second size is
E's last (X a MATMUL, or a node this pass made whose only reader is E), or reads any node at
an index that depends only on E's last axis (a bias vector); at least one load is of the
first kind; and E has X's dtype (a comparison of the product is no epilogue).  Consumers of a rewritten node read the view of its 2-D form, and a reshape of
that view is a reshape of the 2-D node.  The chain stops at a node with several readers, so
nothing that was fused into its readers becomes materialized.  Programs holding while loops
are left as they are.
"""

from __future__ import annotations

import collections

from .core import ir
from .equal_dims import SizeClasses
from .core.ir import NodeKind, Scalar


def flatten_product_epilogues(program: ir.Program) -> ir.Program:
    """The program with product epilogue chains computed over the product's 2-D shape."""
    nodes = program.nodes()
    if not any(n.kind is NodeKind.MATMUL for n in nodes) or \
            any(n.kind in (NodeKind.WHILE, NodeKind.WHILE_OUT) for n in nodes):
        return program
    readers = collections.Counter()
    for n in nodes:
        for p in {id(p) for p in ir.producers(n)}:
            readers[p] += 1
    for o in program.outputs:
        readers[id(o)] += 1
    sizes = SizeClasses(program)
    new: dict = {}       # id(old node) -> its replacement
    single: set = set()  # ids of 2-D nodes made here with exactly one reader
    changed = False
    for n in nodes:
        rebuilt = _rebuild(n, new)
        flat = _flat(rebuilt, single, sizes) if rebuilt.kind is NodeKind.COMPUTE \
            else None
        if flat is None:
            new[id(n)] = rebuilt
            continue
        changed = True
        if readers[id(n)] == 1:
            single.add(id(flat))
        new[id(n)] = ir.reshape(flat, rebuilt.shape)
    if not changed:
        return program
    rw = _expr_rewriter(new)
    checks = [(rw(c), m) for c, m in program.checks]
    return ir.Program(program.inputs, [new[id(o)] for o in program.outputs], checks,
                      program.donated)


def _flat(node: ir.Node, single: set, sizes: SizeClasses):
    """The 2-D form of COMPUTE `node` (module docstring), or None."""
    rank = len(node.shape)
    if rank < 3:
        return None
    last = node.axes[-1]
    mapping, source = {}, None
    for e in ir.walk(node.body):
        if e.op is not Scalar.LOAD:
            continue
        x = _viewed_product(e, node, single, sizes)
        if x is not None:
            if source is not None and tuple(x.shape) != tuple(source.shape):
                return None
            source = x
            mapping[id(e)] = ir.load(x, ir.axis_vars(2))
        elif not all(_uses_only(a, last) for a in e.args):
            return None
    if source is None or source.dtype is not node.dtype:
        return None
    outside = [e for e in _outside_loads(node.body, mapping)
               if e.op is Scalar.VAR and e is not last]
    if outside:
        return None
    mapping[id(last)] = ir.axis_var(1)
    body = ir.substitute(node.body, mapping)
    return ir.compute(node.dtype, source.shape, ir.axis_vars(2), body)


def _viewed_product(load, node: ir.Node, single: set, sizes: SizeClasses):
    """The 2-D node X when `load` reads `reshape(X, node.shape)` at node's own index and X
    may be read in its own shape (a MATMUL, or a single-reader node of this pass).  Sizes
    the program's checks prove equal count as equal (a bias add's shape may be spelled
    with the bias's length)."""
    view = load.attr
    if view.kind is not NodeKind.RESHAPE or tuple(load.args) != tuple(node.axes):
        return None
    x = view.inputs[0]
    if len(x.shape) != 2 or not sizes.same(x.shape[1], view.shape[-1]) or \
            not sizes.same_shape(tuple(view.shape), tuple(node.shape)) or \
            x.dtype is not view.dtype:
        return None
    if x.kind is NodeKind.MATMUL or id(x) in single:
        return x
    return None


def _uses_only(e, var) -> bool:
    """Whether index expression `e` reads no loop variable but `var` (loads inside it are
    not allowed either: they could read anything)."""
    return all((x.op is not Scalar.VAR or x is var) and x.op is not Scalar.LOAD
               for x in ir.walk(e))


def _outside_loads(body, replaced: dict) -> list:
    """Every sub-expression of `body` that is not inside a replaced load."""
    return ir.postorder(body, known={k for k in replaced})


def _expr_rewriter(new: dict):
    """A function rebuilding an expression with its loads reading the new nodes."""
    memo: dict = {}

    def rw(expr):
        for x in ir.postorder(expr, known=memo):
            args = tuple(memo[id(a)] for a in x.args)
            if x.op is Scalar.LOAD:
                memo[id(x)] = ir.load(new.get(id(x.attr), x.attr), args)
            elif x.args:
                memo[id(x)] = x if all(a is b for a, b in zip(args, x.args)) else \
                    ir.make(x.op, x.dtype, args, x.attr)
            else:
                memo[id(x)] = x
        return memo[id(expr)]

    return rw


def _rebuild(n: ir.Node, new: dict) -> ir.Node:
    """Node `n` reading the replacements of its producers (itself when none changed)."""
    if not any(id(p) in new and new[id(p)] is not p for p in ir.producers(n)):
        return n
    rw = _expr_rewriter(new)
    shape = tuple(rw(d) for d in n.shape)
    ins = [new.get(id(p), p) for p in n.inputs]
    if n.kind is NodeKind.COMPUTE:
        return ir.compute(n.dtype, shape, n.axes, rw(n.body))
    if n.kind is NodeKind.REDUCE:
        return ir.reduce(n.dtype, shape, n.axes, n.raxes, tuple(rw(d) for d in n.rshape),
                         rw(n.body), n.attr)
    if n.kind is NodeKind.MATMUL:
        return ir.matmul(ins[0], ins[1], n.attr[0], n.attr[1], shape)
    if n.kind is NodeKind.RESHAPE:
        src = ins[0]
        if src.kind is NodeKind.RESHAPE:       # a view of a view: of the materialized node
            src = src.inputs[0]
        return src if tuple(src.shape) == shape else ir.reshape(src, shape)
    if n.kind is NodeKind.SCATTER:
        return ir.scatter_rows(*ins)
    if n.kind is NodeKind.LIBCALL:
        return ir.libcall(n.attr, ins, n.dtype, shape)
    return n
