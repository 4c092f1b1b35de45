"""The op registry: `OpDef`, `Trait`, and the one table from op type name to definition.

An `OpDef` is the single definition of an op: its TensorFlow type name, traits that passes
must respect, shape/dtype inference, the NumPy reference kernel that *is* its semantics, its
gradient and its lowering into the kernel IR.  All of them are given to the constructor, in
the op's own module, and an OpDef is frozen: nothing changes a definition after it is made
(docs/architecture.md, "A new op"); code that needs a variant makes a new one with
`dataclasses.replace`.  Op modules list their OpDefs in a module-level `OP_DEFS`;
`ops/__init__.py` registers every module's list in one place.

Contracts:
- `infer(op) -> [(dtype, shape), ...]`, one pair per output.  `op` is the Operation being
  built (inputs, `op.get_attr`); raise ValueError/TypeError for bad input (the graph adds
  the op name, shapes, dtypes and the user's line).
- `kernel(ctx, inputs, attrs) -> sequence of outputs` (NumPy arrays, or runtime values such
  as variable references).  Inputs listed in `ref_inputs` arrive as the producer's raw value
  (e.g. a `VariableRef`); all others arrive as NumPy arrays.  Kernels must not mutate inputs.
- `gradient(op, *output_grads) -> [input grads]` (None where an input has no gradient),
  written with the public op functions; `gradient=None`: the op is not differentiable.
- `lower(ctx, op, inputs) -> [IR nodes]` (compiler/core/ir.py, ir_build.py), raising
  `NotLowerable` for forms it cannot compile; `lower=None`: the op never compiles.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Callable

from ..errors import NotFoundError


class Trait(enum.Enum):
    """Properties of an op that passes and the runtime must respect."""

    ELEMENTWISE = enum.auto()     # output[i] depends only on inputs[i] (after broadcasting)
    REDUCTION = enum.auto()       # reduces over axes
    COMMUTATIVE = enum.auto()     # f(a, b) == f(b, a)
    STATEFUL = enum.auto()        # reads or writes state, or is random: never merged or pruned
    COMMUNICATION = enum.auto()   # sends/receives between devices
    SOURCE = enum.auto()          # takes no tensor inputs (constants, placeholders)
    SHAPE_ONLY = enum.auto()      # result depends only on input shapes, not values
    RUNTIME_VALUE = enum.auto()   # value known only when run (placeholders): never folded
    BLOCKING = enum.auto()        # may wait on other ops or threads (queues): own pool thread
    CONTROL_FLOW = enum.auto()    # routes values between branches, frames and iterations


@dataclasses.dataclass(eq=False, frozen=True)
class OpDef:
    """One op's complete, immutable definition; identity is the key (one object per op
    type)."""

    name: str
    infer: Callable
    kernel: Callable
    traits: frozenset = frozenset()
    ref_inputs: frozenset = frozenset()
    default_name: str | None = None
    gradient: Callable | None = None
    lower: Callable | None = None
    doc: str = ""
    # start(ctx, inputs, attrs, done) -> cancel: a kernel that waits without a thread
    # (2015 paper §5.3): it calls done(error, outputs) once, maybe later from another
    # thread; cancel() withdraws it if it has not finished (False: too late).  The
    # multi-device executor uses it (runtime/device_executor.py); others call `kernel`.
    start: Callable | None = None

    def __post_init__(self):
        # frozen: normalize the fields once, here, through object.__setattr__
        object.__setattr__(self, "traits", frozenset(self.traits))
        object.__setattr__(self, "ref_inputs", frozenset(self.ref_inputs))
        if self.default_name is None:
            object.__setattr__(self, "default_name", self.name)

    def has(self, trait: Trait) -> bool:
        return trait in self.traits

    @property
    def is_stateful(self) -> bool:
        return Trait.STATEFUL in self.traits

    def __repr__(self):
        return f"OpDef({self.name})"


_REGISTRY: dict[str, OpDef] = {}


def not_differentiable(op, *output_grads) -> list:
    """The gradient of an op TensorFlow declares not differentiable (its
    `ops.NotDifferentiable`: random numbers, one-hot encodings, ranges, decoded bytes): None
    for every input, so differentiation stops at the op and `tf.gradients` gives None for
    what reaches the ys only through it, instead of a LookupError."""
    return [None] * len(op.inputs)


def register(op_def: OpDef) -> OpDef:
    """Add an op definition; a second definition under the same name is an error."""
    existing = _REGISTRY.get(op_def.name)
    if existing is not None and existing is not op_def:
        raise ValueError(f"Op type '{op_def.name}' is already registered.")
    _REGISTRY[op_def.name] = op_def
    return op_def


def lookup(name: str) -> OpDef:
    """The definition of op type `name`; NotFoundError if flowjit has no such op."""
    op_def = _REGISTRY.get(name)
    if op_def is None:
        raise NotFoundError(None, None, f"Op type not registered: '{name}'. flowjit knows "
                                        f"{len(_REGISTRY)} op types; see flowjit.ops.registry.")
    return op_def


def all_op_defs() -> list:
    """Every registered OpDef, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]
