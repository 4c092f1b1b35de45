"""The loop IR: a kernel's loops, loads, stores and scalar statements, between the schedule
and a target's source text (docs/architecture.md, "the path of a computation").

A `LoopProgram` is one generated function: parameters, module-level constants and a body of
statements.  Statements are loops (PARALLEL, SERIAL, VECTOR) with an index variable, bounds
and a body; `while` loops; let/assign of scalar values; stores into buffers at index
expressions; accumulator steps of a reduction (`Accumulate`); structured branches (`If`,
and `Check` for a run-time condition that raises); buffer definitions (`Alloc`); calls into
library routines (`Do` of an opaque `Call`); and, while emitters are converted step by
step, `Verbatim` statements that a target wrote itself (opaque: passes move them but never
look inside, and they never contain a parallel loop).

Expressions: variables, integer literals, sizes of parameters (`Dim`), loads, scalar
operations of the kernel IR (`ScalarOp`: a `compiler.core.ir.Scalar` kind with its dtype),
plain index arithmetic (`IndexOp`), opaque calls (`Call`), the result of an accumulator
(`AccResult`), and `Source` (an opaque expression text of a not yet converted emitter).

Invariants: every node is an immutable frozen dataclass whose `kind` (an enum) says what it
is; passes dispatch on `kind` and return new nodes (loop_walk.py: `map_body`, `rename`);
names are plain strings chosen by the target's generator.  `loop_verify.verify` checks the
structure.
This module knows no target: renderers live in `targets/`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import ClassVar

from .core.ir import Combiner, Scalar


class LoopKind(enum.Enum):
    """How a loop's iterations may run."""

    PARALLEL = "parallel"   # iterations independent, spread over threads
    SERIAL = "serial"       # in order, on one thread
    VECTOR = "vector"       # in order semantically; the target may vectorize it


class LoopTag(enum.Enum):
    """What the scheduler knows about a loop that a target pass may use."""

    ROWS_OF_REDUCTIONS = "rows of one-axis reductions"   # candidate for unroll-and-jam


class IndexOpKind(enum.Enum):
    """Plain integer index arithmetic (no dtype casts)."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    FLOORDIV = "//"
    MIN = "min"
    MAX = "max"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    AND = "and"
    NOT = "not"


class ExprKind(enum.Enum):
    """What an expression node is (renderers and passes dispatch on it)."""

    VAR = "var"
    INT = "int"
    DIM = "dim"
    LOAD = "load"
    SCALAR = "scalar"
    INDEX = "index"
    CALL = "call"
    ACC_RESULT = "acc_result"
    SOURCE = "source"


class StmtKind(enum.Enum):
    """What a statement node is (renderers and passes dispatch on it)."""

    LOOP = "loop"
    WHILE = "while"
    LET = "let"
    STORE = "store"
    ACCUMULATE = "accumulate"
    IF = "if"
    CHECK = "check"
    ALLOC = "alloc"
    DO = "do"
    COMMENT = "comment"
    RETURN = "return"
    VERBATIM = "verbatim"


# --- expressions ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Var:
    """A scalar variable: a loop index, a let-bound value, an accumulator, a constant."""
    name: str
    kind: ClassVar = ExprKind.VAR


@dataclasses.dataclass(frozen=True)
class Int:
    """An integer literal."""
    value: int
    kind: ClassVar = ExprKind.INT


@dataclasses.dataclass(frozen=True)
class Dim:
    """The run-time size of axis `axis` of array `buffer`."""
    buffer: str
    axis: int
    kind: ClassVar = ExprKind.DIM


@dataclasses.dataclass(frozen=True)
class Load:
    """`buffer[indices]` (no indices: the element of a 0-d array)."""
    buffer: str
    indices: tuple
    kind: ClassVar = ExprKind.LOAD


@dataclasses.dataclass(frozen=True)
class ScalarOp:
    """A kernel-IR scalar operation with its result dtype and its arguments' dtypes."""
    op: Scalar
    dtype: object
    args: tuple
    arg_dtypes: tuple
    kind: ClassVar = ExprKind.SCALAR


@dataclasses.dataclass(frozen=True)
class IndexOp:
    """Index arithmetic on loop indices and sizes."""
    op: IndexOpKind
    args: tuple
    kind: ClassVar = ExprKind.INDEX


@dataclasses.dataclass(frozen=True)
class Call:
    """A call of a named routine (library, helper, intrinsic); opaque to passes."""
    fn: str
    args: tuple = ()
    kind: ClassVar = ExprKind.CALL


@dataclasses.dataclass(frozen=True)
class AccResult:
    """The value of accumulator `acc` of a `combiner` reduction, as `dtype`."""
    combiner: Combiner
    acc: str
    dtype: object
    kind: ClassVar = ExprKind.ACC_RESULT


@dataclasses.dataclass(frozen=True)
class Source:
    """An expression a target wrote as text (array views, slices); opaque to passes."""
    text: str
    kind: ClassVar = ExprKind.SOURCE


# --- statements -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Loop:
    """`for var in [start, stop)`, iterations as `loop_kind` says."""
    loop_kind: LoopKind
    var: str
    start: object
    stop: object
    body: tuple
    tags: frozenset = frozenset()
    kind: ClassVar = StmtKind.LOOP


@dataclasses.dataclass(frozen=True)
class While:
    """`while cond: body`."""
    cond: object
    body: tuple
    kind: ClassVar = StmtKind.WHILE


@dataclasses.dataclass(frozen=True)
class Let:
    """Bind (or rebind) scalar `name` to `value`."""
    name: str
    value: object
    kind: ClassVar = StmtKind.LET


@dataclasses.dataclass(frozen=True)
class Store:
    """`buffer[indices] = value` (buffer: an array parameter or an `Alloc`ed name)."""
    buffer: str
    indices: tuple
    value: object
    kind: ClassVar = StmtKind.STORE


@dataclasses.dataclass(frozen=True)
class Accumulate:
    """One step of reduction accumulator `acc` (index: the reduction index, for ARGMAX/
    ARGMIN); the accumulator is defined by a `Let` before the loop."""
    combiner: Combiner
    acc: str
    value: object
    index: object
    dtype: object
    kind: ClassVar = StmtKind.ACCUMULATE


@dataclasses.dataclass(frozen=True)
class If:
    """`if cond: then else: orelse`."""
    cond: object
    then: tuple
    orelse: tuple = ()
    kind: ClassVar = StmtKind.IF


@dataclasses.dataclass(frozen=True)
class Check:
    """Raise ValueError(message) unless `cond` holds."""
    cond: object
    message: str
    kind: ClassVar = StmtKind.CHECK


@dataclasses.dataclass(frozen=True)
class Alloc:
    """Define array `name` as `value` (a new buffer, a view, a copy)."""
    name: str
    value: object
    kind: ClassVar = StmtKind.ALLOC


@dataclasses.dataclass(frozen=True)
class Do:
    """Evaluate `call` for its effect (a library routine writing into buffers)."""
    call: object
    kind: ClassVar = StmtKind.DO


@dataclasses.dataclass(frozen=True)
class Comment:
    """A note for the reader of the loop IR and of the source (a tiling decision)."""
    text: str
    kind: ClassVar = StmtKind.COMMENT


@dataclasses.dataclass(frozen=True)
class Return:
    """Return the arrays `values` (a tuple of them) from the function."""
    values: tuple
    kind: ClassVar = StmtKind.RETURN


@dataclasses.dataclass(frozen=True)
class Verbatim:
    """Statements a target wrote as text lines (relative indentation kept); `defines`: the
    names they bind.  Never holds a parallel loop."""
    lines: tuple
    defines: tuple = ()
    kind: ClassVar = StmtKind.VERBATIM


@dataclasses.dataclass(frozen=True)
class LoopProgram:
    """One generated function: `constants` are (name, literal text) pairs bound at module
    level, in the target's own literal syntax; `functions` are the programs it calls by
    name (a while loop's condition and body: compiler/core/ir.py WHILE), each generated on
    its own, defined before it in the same module."""
    name: str
    params: tuple
    constants: tuple
    body: tuple
    functions: tuple = ()


def index_op(op: IndexOpKind, *args):
    """An IndexOp, folding integer literals."""
    if all(a.kind is ExprKind.INT for a in args) and op in _FOLD:
        return Int(_FOLD[op](*(a.value for a in args)))
    return IndexOp(op, tuple(args))


_FOLD = {IndexOpKind.ADD: lambda a, b: a + b, IndexOpKind.SUB: lambda a, b: a - b,
         IndexOpKind.MUL: lambda a, b: a * b, IndexOpKind.FLOORDIV: lambda a, b: a // b,
         IndexOpKind.MIN: min, IndexOpKind.MAX: max}
