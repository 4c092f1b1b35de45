"""The kernel-level IR: scalar expressions over loop indices, and tensor nodes built from them.

Two small, closed sets of node kinds (DESIGN.md principle 1):

- `Scalar` — the scalar operations an `Expr` may apply: constants, loop variables, runtime
  sizes of inputs, loads, arithmetic, comparisons, selects, casts and the transcendental
  functions.  Index arithmetic uses the same nodes with dtype int64.
- `Node` — what a tensor value is: an INPUT of the cluster, a COMPUTE (one scalar `body`
  per output element, written over the output's loop variables `axes`), a REDUCE (a body
  over output axes plus reduction axes, combined with ADD/MUL/MAX/MIN/AND/OR or an
  ARGMAX/ARGMIN pair), a MATMUL (BLAS), a RESHAPE view of a materialized input, a SCATTER
  of rows, or a LIBCALL (a library routine over whole matrices or rows: sorting, LAPACK).

Every Expr and Node is immutable and interned: building the same expression twice returns
the same object, so common subexpressions are shared by construction (DESIGN.md principle 2)
and passes return new nodes instead of mutating.  Loads name the producing Node directly;
whether that node is inlined into its consumer (fused) or materialized in a buffer is a
scheduling decision made by the passes, not part of the IR.

Shapes are tuples of int64 Exprs (constants, or DIM(input, axis) of a cluster input, or
arithmetic on those): sizes are runtime values, so one compiled kernel serves every size.
"""

from __future__ import annotations

import enum
import itertools
import weakref

from ... import dtypes as _dtypes


class Scalar(enum.Enum):
    """Scalar operation kinds of the kernel IR."""

    CONST = "const"      # attr: Python value
    VAR = "var"          # loop index; attr: unique id
    DIM = "dim"          # runtime size; attr: (input position, axis)
    LOAD = "load"        # attr: Node; args: one index Expr per axis
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"          # true division (floats); integer division truncates? no: see FLOORDIV
    FLOORDIV = "floordiv"
    MOD = "mod"          # floor modulo (sign of divisor)
    POW = "pow"
    MAX = "max"          # NaN-propagating maximum (np.maximum)
    MIN = "min"
    NEG = "neg"
    ABS = "abs"
    SIGN = "sign"
    SQRT = "sqrt"
    EXP = "exp"
    EXPM1 = "expm1"
    LOG = "log"
    LOG1P = "log1p"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    ERF = "erf"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    ATAN2 = "atan2"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"      # half to even
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"          # logical
    OR = "or"
    NOT = "not"
    SELECT = "select"    # args: condition, if_true, if_false
    BITAND = "bitand"    # integers, bit by bit
    BITOR = "bitor"
    BITXOR = "bitxor"
    BITNOT = "bitnot"
    SHL = "shl"          # counts outside [0, width): 0
    SHR = "shr"          # arithmetic for signed; counts outside [0, width): 0 or -1
    CAST = "cast"        # to self.dtype
    ISNAN = "isnan"
    ISINF = "isinf"


UNARY_FLOAT = frozenset({Scalar.SQRT, Scalar.EXP, Scalar.EXPM1, Scalar.LOG, Scalar.LOG1P,
                         Scalar.TANH, Scalar.SIGMOID, Scalar.ERF, Scalar.SIN, Scalar.COS,
                         Scalar.TAN})
TRANSCENDENTAL = UNARY_FLOAT - {Scalar.SQRT}
COMPARISONS = frozenset({Scalar.EQ, Scalar.NE, Scalar.LT, Scalar.LE, Scalar.GT, Scalar.GE})
COMMUTATIVE = frozenset({Scalar.ADD, Scalar.MUL, Scalar.MAX, Scalar.MIN, Scalar.EQ,
                         Scalar.NE, Scalar.AND, Scalar.OR})

INDEX = _dtypes.int64


class Expr:
    """An interned scalar expression.  Build with the functions below, never directly."""

    __slots__ = ("op", "dtype", "args", "attr", "_hash", "__weakref__")

    def __repr__(self):
        from .ir_text import expr_text

        return f"Expr({expr_text(self)})"


_EXPRS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _attr_key(attr):
    if isinstance(attr, float):
        return ("f", attr.hex()) if attr == attr else ("f", "nan")
    if isinstance(attr, Node):
        return ("n", id(attr))
    return attr


def make(op: Scalar, dtype, args=(), attr=None) -> Expr:
    """The unique Expr with these fields (interned)."""
    dtype = _dtypes.as_dtype(dtype)
    args = tuple(args)
    key = (op, dtype, tuple(id(a) for a in args), _attr_key(attr))
    e = _EXPRS.get(key)
    if e is None:
        e = Expr()
        e.op, e.dtype, e.args, e.attr = op, dtype, args, attr
        e._hash = hash(key)
        _EXPRS[key] = e
    return e


def const(value, dtype) -> Expr:
    """A constant of `dtype` (Python value normalized to int/float/bool)."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_bool:
        value = bool(value)
    elif dtype.is_integer:
        value = int(value)
    elif dtype.is_complex:
        value = complex(value)
    else:
        value = float(value)
    return make(Scalar.CONST, dtype, (), value)


def index(value: int) -> Expr:
    return const(value, INDEX)


def axis_var(k: int) -> Expr:
    """The loop variable of output dimension k.  Every COMPUTE/REDUCE uses the same
    canonical variables (a body is closed over its own node's axes), so structurally equal
    nodes intern to one object."""
    return make(Scalar.VAR, INDEX, (), ("a", k))


def reduce_var(k: int) -> Expr:
    """The loop variable of reduction dimension k of a REDUCE."""
    return make(Scalar.VAR, INDEX, (), ("r", k))


def axis_vars(n: int) -> tuple:
    return tuple(axis_var(k) for k in range(n))


def dim(input_position: int, axis: int) -> Expr:
    """The runtime size of axis `axis` of cluster input `input_position`."""
    return make(Scalar.DIM, INDEX, (), (input_position, axis))


def load(node: Node, indices) -> Expr:
    indices = tuple(indices)
    if len(indices) != len(node.shape):
        raise ValueError(f"load of a rank-{len(node.shape)} node with {len(indices)} indices")
    return make(Scalar.LOAD, node.dtype, indices, node)


def is_const(e: Expr, value=None) -> bool:
    return e.op is Scalar.CONST and (value is None or e.attr == value)


# --- tensor nodes ------------------------------------------------------------------------------


class NodeKind(enum.Enum):
    INPUT = "input"
    COMPUTE = "compute"
    REDUCE = "reduce"
    MATMUL = "matmul"
    RESHAPE = "reshape"
    SCATTER = "scatter"
    LIBCALL = "libcall"
    WHILE = "while"          # a structured while loop (WhileSpec): one node per loop
    WHILE_OUT = "while_out"  # the final value of one of a WHILE's loop variables


class Routine(enum.Enum):
    """The library routines a LIBCALL node runs, each over the last axis (SORT, ARGSORT) or
    the last two axes (the rest) of its inputs, for every index of the leading axes."""

    SORT = "sort"            # ascending, NaNs last (NumPy's order)
    ARGSORT = "argsort"      # int64 positions that sort ascending; stable (ties keep order)
    INV = "inv"              # matrix inverse
    DET = "det"              # determinant (the output drops the last two axes)
    SOLVE = "solve"          # solve(a, b): a (..., n, n), b (..., n, k)
    CHOLESKY = "cholesky"    # lower-triangular L with L @ L.T = a (a's lower triangle read)


class Combiner(enum.Enum):
    """How a REDUCE combines values."""

    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"
    AND = "and"
    OR = "or"
    ARGMAX = "argmax"   # index (int) of the first maximum; NaN counts as the maximum
    ARGMIN = "argmin"


class Node:
    """An interned tensor value of the kernel IR.

    Fields by kind:
      INPUT:   attr = (position, static shape tuple with None for runtime sizes)
      COMPUTE: axes = loop vars (one per output dim), body = Expr over them
      REDUCE:  axes = output loop vars, raxes = reduction vars, rshape = their extents,
               body = Expr over axes+raxes, attr = Combiner
      MATMUL:  inputs = (a, b), attr = (transpose_a, transpose_b)   [rank 2 or batched]
      RESHAPE: inputs = (x,)   (a view of x, which must be materialized C-contiguous)
      SCATTER: inputs = (base, rows, updates): base with base[rows[r]] = updates[r] for
               r in order (the last write of a row wins); rows is 1-D integer, updates has
               shape [len(rows)] + base.shape[1:]; a row out of range fails the kernel;
               attr = None, or Combiner.ADD: base[rows[r]] += updates[r] (repeated rows
               add up)
      LIBCALL: inputs = the routine's operands (materialized), attr = Routine; a singular
               or not positive-definite matrix fails the kernel (np.linalg.LinAlgError)
      WHILE:   inputs = initial values of the loop variables, then the captured values
               (materialized), attr = WhileSpec; its own dtype/shape (bool[]) mean nothing:
               only its WHILE_OUT nodes are read
      WHILE_OUT: inputs = (the WHILE,), attr = loop variable position k; the value of loop
               variable k when the condition first fails (its initial value's shape)
    """

    __slots__ = ("kind", "dtype", "shape", "axes", "body", "raxes", "rshape", "inputs",
                 "attr", "name", "_hash", "__weakref__")

    def __repr__(self):
        dims = ", ".join(_short(d) for d in self.shape)
        return f"<{self.kind.value} {self.name} {self.dtype.name}[{dims}]>"


def _short(e: Expr) -> str:
    from .ir_text import expr_text

    return expr_text(e)


_NODES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_node_names = itertools.count()


def _node(kind, dtype, shape, axes=(), body=None, raxes=(), rshape=(), inputs=(),
          attr=None) -> Node:
    dtype = _dtypes.as_dtype(dtype)
    shape, axes, raxes, rshape, inputs = (tuple(shape), tuple(axes), tuple(raxes),
                                          tuple(rshape), tuple(inputs))
    key = (kind, dtype, tuple(map(id, shape)), tuple(map(id, axes)), id(body),
           tuple(map(id, raxes)), tuple(map(id, rshape)), tuple(map(id, inputs)), attr)
    n = _NODES.get(key)
    if n is None:
        n = Node()
        n.kind, n.dtype, n.shape, n.axes, n.body = kind, dtype, shape, axes, body
        n.raxes, n.rshape, n.inputs, n.attr = raxes, rshape, inputs, attr
        n.name = f"t{next(_node_names)}"
        n._hash = hash(key)
        _NODES[key] = n
    return n


def input_node(position: int, dtype, static_shape) -> Node:
    """Cluster input `position`; static_shape has ints where known (e.g. 1) and None."""
    static_shape = tuple(static_shape)
    shape = [index(d) if d is not None else dim(position, a) for a, d in enumerate(static_shape)]
    return _node(NodeKind.INPUT, dtype, shape, attr=(position, static_shape))


def compute(dtype, shape, axes, body: Expr) -> Node:
    """out[axes] = body, for every index in shape."""
    if len(axes) != len(shape):
        raise ValueError("compute needs one loop variable per output dimension")
    return _node(NodeKind.COMPUTE, dtype, shape, axes, body)


def reduce(dtype, shape, axes, raxes, rshape, body: Expr, combiner: Combiner) -> Node:
    """out[axes] = combine over raxes in rshape of body."""
    return _node(NodeKind.REDUCE, dtype, shape, axes, body, raxes, rshape, attr=combiner)


def matmul(a: Node, b: Node, transpose_a: bool, transpose_b: bool, shape) -> Node:
    return _node(NodeKind.MATMUL, a.dtype, shape, inputs=(a, b),
                 attr=(bool(transpose_a), bool(transpose_b)))


def reshape(x: Node, shape) -> Node:
    return _node(NodeKind.RESHAPE, x.dtype, shape, inputs=(x,))


def scatter_rows(base: Node, rows: Node, updates: Node, combine: Combiner | None = None) -> Node:
    """base with its rows rows[r] replaced by updates[r], in order, or with updates[r] added
    to them (`combine=Combiner.ADD`; see Node)."""
    if combine not in (None, Combiner.ADD):
        raise ValueError(f"a SCATTER replaces rows or adds to them, not {combine}")
    return _node(NodeKind.SCATTER, base.dtype, base.shape, inputs=(base, rows, updates),
                 attr=combine)


def libcall(routine: Routine, inputs, dtype, shape) -> Node:
    """`routine` applied to `inputs` (see Routine), giving a `dtype` tensor of `shape`."""
    return _node(NodeKind.LIBCALL, dtype, shape, inputs=tuple(inputs), attr=routine)


class WhileSpec:
    """The condition and body of a WHILE node: two closed sub-programs over the same inputs
    (the loop variables by position 0..n_carried-1, then the captured values).  `cond`
    returns one bool scalar; `body` returns the next value of every loop variable, each of
    its variable's dtype and shape (docs/architecture.md, "Control flow").  Compared by
    identity: two loops never intern to one node."""

    __slots__ = ("cond", "body", "n_carried", "__weakref__")

    def __init__(self, cond: Program, body: Program, n_carried: int):
        if len(cond.outputs) != 1 or len(body.outputs) != n_carried:
            raise ValueError("a while loop's condition returns one value and its body one "
                             "per loop variable")
        self.cond, self.body, self.n_carried = cond, body, n_carried

    def __repr__(self):
        return f"WhileSpec({self.n_carried} loop variables)"


def while_loop(inits, captured, spec: WhileSpec) -> list:
    """The final values of a structured while loop (one WHILE_OUT node per loop variable):
    starting from `inits`, `while spec.cond(vars, captured): vars = spec.body(vars,
    captured)`."""
    inits, captured = tuple(inits), tuple(captured)
    if len(inits) != spec.n_carried:
        raise ValueError(f"the loop has {spec.n_carried} variables, got {len(inits)} values")
    loop = _node(NodeKind.WHILE, _dtypes.bool_, (), inputs=inits + captured, attr=spec)
    return [while_loop_output(loop, k) for k in range(len(inits))]


def while_loop_output(loop: Node, k: int) -> Node:
    """The WHILE_OUT node of loop variable `k` of WHILE node `loop`."""
    init = loop.inputs[k]
    return _node(NodeKind.WHILE_OUT, init.dtype, init.shape, inputs=(loop,), attr=k)


def producers(node: Node) -> list:
    """The nodes `node` reads (through loads in its body, or as direct inputs)."""
    out = list(node.inputs)
    if node.body is not None:
        seen = set()
        for e in walk(node.body):
            if e.op is Scalar.LOAD and id(e.attr) not in seen:
                seen.add(id(e.attr))
                out.append(e.attr)
    for d in node.shape + node.rshape:
        for e in walk(d):
            if e.op is Scalar.LOAD and e.attr not in out:
                out.append(e.attr)
    return out


def walk(expr: Expr):
    """Every distinct sub-expression of `expr`, children before parents."""
    seen = set()
    stack = [(expr, False)]
    while stack:
        e, expanded = stack.pop()
        if id(e) in seen:
            continue
        if expanded:
            seen.add(id(e))
            yield e
        else:
            stack.append((e, True))
            for a in e.args:
                if id(a) not in seen:
                    stack.append((a, False))


def postorder(expr: Expr, known=None, descend=None) -> list:
    """Every distinct sub-expression of `expr`, children before parents and arguments left to
    right: the order in which a recursive walk would finish them, without recursing (a chain
    of a million operations must not exhaust Python's stack: docs/architecture.md, "The path
    of a computation").  Sub-expressions whose id is in `known` are left out, and so is what
    lies only below them; `descend(e)` False keeps `e` but not its arguments."""
    order, seen = [], set()
    stack = [(expr, False)]
    while stack:
        e, finished = stack.pop()
        if finished:
            order.append(e)
            continue
        if id(e) in seen or (known is not None and id(e) in known):
            continue
        seen.add(id(e))
        stack.append((e, True))
        if descend is None or descend(e):
            for a in reversed(e.args):
                if id(a) not in seen:
                    stack.append((a, False))
    return order


def substitute(expr: Expr, mapping: dict) -> Expr:
    """`expr` with sub-expressions replaced per `mapping` (keyed by id of Expr)."""
    memo: dict = {}
    for e in postorder(expr, descend=lambda x: id(x) not in mapping):
        r = mapping.get(id(e))
        if r is not None:
            out = r
        elif not e.args:
            out = e
        else:
            new_args = tuple([memo[id(a)] for a in e.args])
            out = e if all(x is y for x, y in zip(new_args, e.args)) else \
                make(e.op, e.dtype, new_args, e.attr)
        memo[id(e)] = out
    return memo[id(expr)]


class Program:
    """A cluster in kernel IR: typed inputs and the nodes it must return."""

    __slots__ = ("inputs", "outputs", "checks", "donated")

    def __init__(self, inputs, outputs, checks=(), donated=()):
        self.inputs = tuple(inputs)     # INPUT nodes, by position
        self.outputs = tuple(outputs)   # Nodes to return, in order
        self.checks = tuple(checks)     # (Expr bool, message): runtime size checks
        # (input position, output index) pairs: the caller hands that input's array over to
        # be overwritten with that output (flowjit.jit's arguments a function mutates), so a
        # SCATTER producing the output may write in place into the input
        self.donated = tuple(sorted(donated))

    def nodes(self) -> list:
        """Every node reachable from the outputs, producers before consumers."""
        order, seen = [], set()

        def visit(n):
            stack = [(n, False)]
            while stack:
                node, done = stack.pop()
                if id(node) in seen:
                    continue
                if done:
                    seen.add(id(node))
                    order.append(node)
                    continue
                stack.append((node, True))
                for p in producers(node):
                    if id(p) not in seen:
                        stack.append((p, False))

        for o in self.outputs:
            visit(o)
        for c, _ in self.checks:
            for e in walk(c):
                if e.op is Scalar.LOAD:
                    visit(e.attr)
        return order

    def replace(self, outputs=None, checks=None) -> Program:
        return Program(self.inputs, self.outputs if outputs is None else outputs,
                       self.checks if checks is None else checks, self.donated)
