"""IR-to-IR passes: constant folding, algebraic simplification, CSE, DCE.

Each pass is a function `Program -> Program` (DESIGN.md principle 3) listed by name in
`compiler/pipeline.py`.  Nodes are immutable, so a pass rebuilds every node whose body or
producers changed (`rewrite_program`) and interning shares whatever comes out equal.
"""

from __future__ import annotations

import math

import numpy as np

from .core import ir
from .core.ir import NodeKind, Scalar


def rewrite_program(program: ir.Program, expr_fn) -> ir.Program:
    """Rebuild every node with `expr_fn(expr)` applied bottom-up to its body and shape."""
    node_map: dict = {}
    expr_memo: dict = {}

    def rw(e):
        hit = expr_memo.get(id(e))
        if hit is not None:
            return hit
        # bottom-up without recursing (docs/architecture.md, "The path of a computation"):
        # a fused chain of a million operations is one expression this deep
        for x in ir.postorder(e, known=expr_memo):
            if x.op is Scalar.LOAD:
                node = new_node(x.attr)
                out = ir.load(node, tuple([expr_memo[id(a)] for a in x.args]))
            elif x.args:
                out = ir.make(x.op, x.dtype, tuple([expr_memo[id(a)] for a in x.args]),
                              x.attr)
            else:
                out = x
            expr_memo[id(x)] = expr_fn(out)
        return expr_memo[id(e)]

    def new_node(n):
        # the nodes are rebuilt in program order, producers first (below), so a node's
        # producers (its inputs, the nodes its loads read) are always found here: no
        # recursion from node to node
        hit = node_map.get(id(n))
        if hit is not None:
            return hit
        shape = tuple(rw(d) for d in n.shape)
        if n.kind is NodeKind.INPUT:
            out = n
        elif n.kind is NodeKind.COMPUTE:
            body = rw(n.body)
            out = _forwarded(body, n, shape) or ir.compute(n.dtype, shape, n.axes, body)
        elif n.kind is NodeKind.REDUCE:
            out = _reduce_without_unit_axes(n.dtype, shape, n.axes,
                                            tuple(rw(d) for d in n.rshape), rw(n.body),
                                            n.attr)
        elif n.kind is NodeKind.MATMUL:
            a, b = (new_node(x) for x in n.inputs)
            out = ir.matmul(a, b, n.attr[0], n.attr[1], shape)
        elif n.kind is NodeKind.SCATTER:
            out = ir.scatter_rows(*(new_node(x) for x in n.inputs), n.attr)
        elif n.kind is NodeKind.LIBCALL:
            out = ir.libcall(n.attr, [new_node(x) for x in n.inputs], n.dtype, shape)
        elif n.kind is NodeKind.WHILE:   # the same rewrite inside the condition and body
            spec = n.attr
            spec = ir.WhileSpec(rewrite_program(spec.cond, expr_fn),
                                rewrite_program(spec.body, expr_fn), spec.n_carried)
            ins = [new_node(x) for x in n.inputs]
            out = ir.while_loop(ins[:spec.n_carried], ins[spec.n_carried:], spec)[0].inputs[0]
        elif n.kind is NodeKind.WHILE_OUT:
            out = ir.while_loop_output(new_node(n.inputs[0]), n.attr)
        else:
            out = ir.reshape(new_node(n.inputs[0]), shape)
        node_map[id(n)] = out
        return out

    for n in program.nodes():
        new_node(n)
    outputs = [new_node(o) for o in program.outputs]
    checks = []
    for cond, msg in program.checks:
        c = rw(cond)
        if ir.is_const(c, True):
            continue
        if ir.is_const(c, False):
            raise ValueError(msg)
        checks.append((c, msg))
    return ir.Program(program.inputs, outputs, checks, program.donated)


def _reduce_without_unit_axes(dtype, shape, axes, rshape, body, combiner):
    """A REDUCE with its reduction axes of extent 1 dropped (read at index 0): a reduction
    over (n, 1) and one over (n,) of the same loads intern to one node, and the loop nest
    has one loop less.  Arg-reductions keep theirs."""
    unit = [k for k, d in enumerate(rshape) if ir.is_const(d, 1)]
    if not unit or len(unit) == len(rshape) or combiner in (ir.Combiner.ARGMAX,
                                                             ir.Combiner.ARGMIN):
        return ir.reduce(dtype, shape, axes, ir_reduce_vars(len(rshape)), rshape, body,
                         combiner)
    kept = [k for k in range(len(rshape)) if k not in unit]
    mapping = {id(ir.reduce_var(k)): ir.index(0) for k in unit}
    mapping.update({id(ir.reduce_var(k)): ir.reduce_var(j) for j, k in enumerate(kept)})
    body = _fold_tree(ir.substitute(body, mapping))
    return ir.reduce(dtype, shape, axes, ir_reduce_vars(len(kept)),
                     tuple(rshape[k] for k in kept), body, combiner)


def ir_reduce_vars(n: int) -> tuple:
    return tuple(ir.reduce_var(k) for k in range(n))


def _forwarded(body, n, shape):
    """The producer itself when a COMPUTE only copies it element for element."""
    if body.op is not Scalar.LOAD:
        return None
    src = body.attr
    if (src.dtype is n.dtype and tuple(src.shape) == tuple(shape)
            and tuple(body.args) == tuple(n.axes)):
        return src
    return None


_FOLD = {Scalar.ADD: lambda a, b: a + b, Scalar.SUB: lambda a, b: a - b,
         Scalar.MUL: lambda a, b: a * b, Scalar.MAX: max, Scalar.MIN: min,
         Scalar.EQ: lambda a, b: a == b, Scalar.NE: lambda a, b: a != b,
         Scalar.LT: lambda a, b: a < b, Scalar.LE: lambda a, b: a <= b,
         Scalar.GT: lambda a, b: a > b, Scalar.GE: lambda a, b: a >= b,
         Scalar.AND: lambda a, b: a and b, Scalar.OR: lambda a, b: a or b}


def _fold(e):
    """CONST op CONST -> CONST, computed in the expression's dtype with NumPy; a load of a
    node whose body is a constant is that constant."""
    if e.op is Scalar.LOAD and e.attr.kind is NodeKind.COMPUTE and ir.is_const(e.attr.body):
        return e.attr.body
    if e.op is Scalar.LOAD and e.attr.kind is NodeKind.COMPUTE and e.args and \
            all(a.op is Scalar.CONST for a in e.args) and \
            not any(x.op is Scalar.LOAD for x in ir.walk(e.attr.body)):
        # a constant element of a node computed from its indices and sizes alone (a shape
        # vector's `select(i0 == 0, 100000, 64)` read at 0): that element's expression
        body = ir.substitute(e.attr.body, {id(v): i for v, i in zip(e.attr.axes, e.args)})
        return _fold_tree(body)
    if not e.args or not all(a.op is Scalar.CONST for a in e.args):
        return e
    if e.op in _FOLD and e.dtype.is_numeric or e.op in _FOLD and e.dtype.is_bool:
        with np.errstate(all="ignore"):
            vals = [np.asarray(a.attr, dtype=a.dtype.np_dtype)[()] for a in e.args]
            value = _FOLD[e.op](*vals)
            value = np.asarray(value).astype(e.dtype.np_dtype)[()]
        if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
            return ir.const(float(value), e.dtype)
        return ir.const(value.item(), e.dtype)
    if e.op is Scalar.CAST:
        with np.errstate(all="ignore"):
            value = np.asarray(e.args[0].attr, dtype=e.args[0].dtype.np_dtype)
            if e.dtype.is_bool:
                return ir.const(bool(value != 0), e.dtype)
            return ir.const(value.astype(e.dtype.np_dtype)[()].item(), e.dtype)
    if e.op is Scalar.NEG and e.dtype.is_floating:
        return ir.const(-e.args[0].attr, e.dtype)
    return e


def _fold_tree(e):
    """`e` folded and simplified bottom-up (loads are left as they are)."""
    memo: dict = {}
    for x in ir.postorder(e, descend=lambda y: y.op is not Scalar.LOAD):
        if not x.args or x.op is Scalar.LOAD:
            memo[id(x)] = x
        else:
            args = tuple([memo[id(a)] for a in x.args])
            memo[id(x)] = _simplify(_fold(ir.make(x.op, x.dtype, args, x.attr)))
    return memo[id(e)]


def constant_fold(program: ir.Program) -> ir.Program:
    """Evaluate operations whose operands are all constants."""
    return rewrite_program(program, _fold)


def _additive_identity(c, negative: bool) -> bool:
    """Whether constant `c` leaves every x unchanged when added (`negative`) or subtracted:
    any integer 0; for floats only -0.0 added and +0.0 subtracted, since -0.0 + 0.0 is
    +0.0 in IEEE arithmetic (NumPy's 1 / (x*0 + 0.0) is inf where x < 0; dropping the add
    gave -inf)."""
    if not ir.is_const(c, 0):
        return False
    if not c.dtype.is_floating:
        return True
    return bool(np.signbit(c.attr)) == negative


def _simplify(e):
    op, a = e.op, e.args
    if op is Scalar.MUL:
        if ir.is_const(a[1], 1) and a[0].dtype is e.dtype:
            return a[0]
        if ir.is_const(a[0], 1) and a[1].dtype is e.dtype:
            return a[1]
        if e.dtype.is_integer and (ir.is_const(a[0], 0) or ir.is_const(a[1], 0)):
            return ir.const(0, e.dtype)
    if op is Scalar.ADD:
        if _additive_identity(a[1], negative=True) and a[0].dtype is e.dtype:
            return a[0]
        if _additive_identity(a[0], negative=True) and a[1].dtype is e.dtype:
            return a[1]
    if op is Scalar.SUB and _additive_identity(a[1], negative=False) and \
            a[0].dtype is e.dtype:
        return a[0]
    if op is Scalar.DIV and ir.is_const(a[1], 1) and a[0].dtype is e.dtype:
        return a[0]
    if op is Scalar.POW and e.dtype.is_floating and a[0].dtype is e.dtype and \
            ir.is_const(a[1], 0.5):
        # NumPy computes x ** 0.5 with a scalar exponent as sqrt(x): -inf -> nan, -0.0 ->
        # -0.0, where C's pow gives inf and 0.0 (TensorFlow's grappler rewrites it so too)
        return ir.make(Scalar.SQRT, e.dtype, (a[0],))
    if op is Scalar.NEG and a[0].op is Scalar.NEG:
        return a[0].args[0]
    if op is Scalar.CAST and a[0].dtype is e.dtype:
        return a[0]
    if op is Scalar.SELECT:
        if ir.is_const(a[0], True):
            return a[1]
        if ir.is_const(a[0], False):
            return a[2]
        if a[1] is a[2]:
            return a[1]
    return e


def fold_and_simplify(e):
    """`e` (whose operands are already folded) constant-folded, then simplified."""
    return _simplify(_fold(e))


def simplify(program: ir.Program) -> ir.Program:
    """Algebraic identities: x*1, x+0 (integers; floats: x + -0.0), x-0, x/1, x**0.5 (sqrt),
    --x, same-type casts, constant selects."""
    return rewrite_program(program, lambda e: _simplify(_fold(e)))


def eliminate_common_subexpressions(program: ir.Program) -> ir.Program:
    """Re-intern every node and expression: structurally equal ones become one object.

    Building already interns, so this only matters after passes that rewrote parts of a
    program; it is kept as a named stage so its effect can be dumped and tested."""
    return rewrite_program(program, lambda e: e)


def eliminate_dead_code(program: ir.Program) -> ir.Program:
    """Keep only nodes the outputs need (Program.nodes() walks from the outputs) and drop
    duplicate size checks."""
    seen, checks = set(), []
    for cond, msg in program.checks:
        if id(cond) not in seen:
            seen.add(id(cond))
            checks.append((cond, msg))
    return program.replace(checks=checks)
