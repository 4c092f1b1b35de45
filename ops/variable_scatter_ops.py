"""Scatter updates of variables: ScatterUpdate, ScatterAdd, ScatterSub, ScatterMul, ScatterDiv,
ScatterMax, ScatterMin (`tf.scatter_update`, `tf.scatter_add`, ...), TensorFlow 1.x's ops on
reference variables.

`ref[indices[i], ...] = updates[i, ...]` (Update) or `ref[indices[i], ...] op= updates[i, ...]`
for every position i of `indices` (any shape; `updates` has shape indices.shape +
ref.shape[1:], or is a scalar, used for every row).  A repeated index applies every update,
in order: ScatterAdd adds all of them (so `scatter_add(var, ids, rows)` equals adding the
dense sum of the rows, as an IndexedSlices gradient means, ops/indexed_slices.py),
ScatterUpdate keeps the last one.  ScatterDiv of integers truncates towards zero, as
TensorFlow's kernel does.  An index outside [0, ref.shape[0]) is an InvalidArgumentError
naming it.  The ref input is a variable (`ref_inputs`, as for Assign in variables.py); the
op updates the variable's rows in the stored array when nothing else holds it (the cost of a
sparse step is then the rows', not the table's: `VariableRef.writable_in_place`), else in a
copy that replaces it, and outputs the new value.  `use_locking` is accepted and ignored: an update
always holds the session's state lock.

ScatterUpdate, ScatterAdd and ScatterSub lower to the kernel IR's row scatter (SCATTER,
replacing or adding rows; ScatterSub adds the negated rows) for vector indices with
updates of the full shape, so an optimizer's sparse update of a small variable compiles with
the training step (runtime/cluster_updates.py installs the new value; a compiled kernel
writes a new array, so the update of a large table stays out of clusters and runs in place);
the others, and other forms, run with their reference kernels.  TensorFlow declares
ScatterAdd, ScatterSub, ScatterMul and ScatterDiv not differentiable and registers no
gradient for the rest.
"""

from __future__ import annotations

import enum

import numpy as np

from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import NotLowerable
from ..errors import InvalidArgumentError
from . import gather_ops, variables
from . import lower_index as lx
from .builder import INDEX_TYPES, NUMERIC, REALS, check_dtype, make_op, to_tensor
from .lower_util import require_real
from .registry import OpDef, Trait, not_differentiable
from .variable_ref import VariableRef

__all__ = ["scatter_update", "scatter_add", "scatter_sub", "scatter_mul", "scatter_div",
           "scatter_max", "scatter_min"]


class Combine(enum.Enum):
    """How an update row meets the variable's row."""

    REPLACE = "update"
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MAX = "max"
    MIN = "min"


# --- inference ----------------------------------------------------------------------------------


def _infer(op):
    ref, indices, updates = op.inputs
    if variables._variable_behind(ref).op.op_def is not variables.VARIABLE_V2:
        raise TypeError(f"Input 'ref' of '{op.type}' Op requires a variable (l-value) input, "
                        f"but {ref.name} is produced by a {ref.op.type} op.")
    check_dtype(indices, INDEX_TYPES, "indices")
    check_dtype(ref, REALS if op.type in ("ScatterMax", "ScatterMin") else NUMERIC, "ref")
    if updates.dtype is not ref.dtype:
        raise TypeError(f"Input 'updates' of '{op.type}' Op has type {updates.dtype.name} that "
                        f"does not match type {ref.dtype.name} of argument 'ref'.")
    if ref.shape.ndims == 0:
        raise ValueError(f"{op.type}: the variable '{ref.op.name}' must be at least a vector, "
                         f"got a scalar.")
    if updates.shape.ndims != 0:
        want = indices.shape.concatenate(ref.shape[1:])
        if not updates.shape.is_compatible_with(want):
            raise ValueError(f"{op.type}: updates must have shape indices.shape + "
                             f"ref.shape[1:] = {want} (or be a scalar), got {updates.shape} "
                             f"(ref {ref.shape}, indices {indices.shape}).")
    return [(ref.dtype, ref.shape)]


# --- reference kernels ----------------------------------------------------------------------------


def _checked(ctx, old, indices, updates):
    """(row positions, update rows [k] + old.shape[1:]) after TensorFlow's checks."""
    op = ctx.op
    if old.ndim == 0:
        raise InvalidArgumentError(None, op, "params must be at least 1-D, got a scalar")
    rows = indices.reshape(-1).astype(np.intp)
    bad = (rows < 0) | (rows >= old.shape[0])
    if bad.any():
        k = int(np.argmax(bad))
        raise InvalidArgumentError(None, op, f"indices[{k}] = {rows[k]} is not in "
                                             f"[0, {old.shape[0]})")
    shape = (rows.size,) + old.shape[1:]
    if updates.ndim == 0:
        return rows, np.broadcast_to(updates, shape)
    if updates.shape != indices.shape + old.shape[1:]:
        raise InvalidArgumentError(None, op, f"updates.shape {list(updates.shape)} must equal "
                                             f"indices.shape {list(indices.shape)} + "
                                             f"params.shape[1:] {list(old.shape[1:])}")
    return rows, updates.reshape(shape)


def _replace(out, rows, upd):
    if rows.size:   # the last update of a repeated row wins
        _, last_in_reversed = np.unique(rows[::-1], return_index=True)
        keep = rows.size - 1 - last_in_reversed
        out[rows[keep]] = upd[keep]


def _divide(ctx):
    def divide(out, rows, upd):
        if out.dtype.kind not in "iu":
            np.divide.at(out, rows, upd)
            return
        if (upd == 0).any():
            raise InvalidArgumentError(None, ctx.op, "Integer division by zero in ScatterDiv")
        for r, row in enumerate(rows):   # in order: a repeated row is divided again
            a, b = out[row], upd[r]
            q = a // b
            out[row] = q + ((a % b != 0) & ((a < 0) != (b < 0)))   # towards zero
    return divide


_APPLY = {Combine.REPLACE: lambda ctx: _replace,
          Combine.ADD: lambda ctx: np.add.at, Combine.SUB: lambda ctx: np.subtract.at,
          Combine.MUL: lambda ctx: np.multiply.at, Combine.DIV: _divide,
          Combine.MAX: lambda ctx: np.maximum.at, Combine.MIN: lambda ctx: np.minimum.at}


def _kernel(combine: Combine):
    def kernel(ctx, inputs, attrs):
        ref, indices, updates = inputs
        if type(ref) is not VariableRef:
            raise InvalidArgumentError(None, ctx.op, "Input 'ref' must be a variable "
                                                     "reference; a variable's value cannot be "
                                                     "fed and then updated.")
        with ctx.state.lock:
            rows, upd = _checked(ctx, ref.read(ctx.op), indices, updates)
            # in place when nothing else holds the stored array (ops/variable_ref.py)
            new = ref.writable_in_place()
            if new is None:
                new = np.array(ref.read(ctx.op), copy=True)
            try:
                with np.errstate(all="ignore"):
                    _APPLY[combine](ctx)(new, rows, upd)
            finally:
                new.flags.writeable = False
            return [ref.install(new)]

    return kernel


# --- lowerings ------------------------------------------------------------------------------------


def _lowering(combine: Combine):
    """A vector of indices and full updates: the variable's value with the rows replaced
    (SCATTER) or added to (SCATTER with Combiner.ADD; ScatterSub adds the negated rows)."""

    def lower(ctx, op, inputs):
        require_real(op)
        old, indices, updates = inputs
        if len(indices.shape) != 1 or len(updates.shape) != len(old.shape) or not old.shape:
            raise NotLowerable(f"{op.type} compiles for a vector of indices and updates of "
                               "shape [len(indices)] + ref.shape[1:]")
        for k, (a, b) in enumerate(zip(updates.shape, list(indices.shape) + list(old.shape[1:]))):
            ctx.check_equal(a, b, f"{op.type} '{op.name}': updates.shape[{k}] must equal "
                                  f"(indices.shape + ref.shape[1:])[{k}]")
        limit = old.shape[0]
        flag = gather_ops._index_check(
            ctx, indices, lambda v, r: lx.all_of([lx.ge(v, 0), lx.lt(v, limit)]),
            f"{op.name}: an index is not in [0, ref.shape[0])")
        axes = ir.axis_vars(1)
        row = lx.index(ir.load(indices, axes))
        rows = ir.compute(ir.INDEX, [indices.shape[0]], axes,
                          gather_ops._guarded(flag, row, limit))
        if combine is Combine.SUB:
            u_axes = ir.axis_vars(len(updates.shape))
            updates = ir.compute(updates.dtype, updates.shape, u_axes,
                                 ir.make(S.NEG, updates.dtype, (ir.load(updates, u_axes),)))
        if combine is Combine.REPLACE:
            return [ir.scatter_rows(old, rows, updates)]
        return [ir.scatter_rows(old, rows, updates, ir.Combiner.ADD)]

    return lower


def _op_def(name, combine, lower=False, gradient=None, doc=""):
    return OpDef(name, _infer, _kernel(combine), traits={Trait.STATEFUL}, ref_inputs={0},
                 gradient=gradient, lower=_lowering(combine) if lower else None, doc=doc)


SCATTER_UPDATE = _op_def("ScatterUpdate", Combine.REPLACE, lower=True,
                         doc="ref[indices] = updates, in place (the last of repeated rows wins)")
SCATTER_ADD = _op_def("ScatterAdd", Combine.ADD, lower=True, gradient=not_differentiable,
                      doc="ref[indices] += updates, in place (repeated rows add up)")
SCATTER_SUB = _op_def("ScatterSub", Combine.SUB, lower=True, gradient=not_differentiable,
                      doc="ref[indices] -= updates, in place (repeated rows add up)")
SCATTER_MUL = _op_def("ScatterMul", Combine.MUL, gradient=not_differentiable,
                      doc="ref[indices] *= updates, in place")
SCATTER_DIV = _op_def("ScatterDiv", Combine.DIV, gradient=not_differentiable,
                      doc="ref[indices] /= updates, in place (integers truncate)")
SCATTER_MAX = _op_def("ScatterMax", Combine.MAX,
                      doc="ref[indices] = max(ref[indices], updates), in place")
SCATTER_MIN = _op_def("ScatterMin", Combine.MIN,
                      doc="ref[indices] = min(ref[indices], updates), in place")

OP_DEFS = (SCATTER_UPDATE, SCATTER_ADD, SCATTER_SUB, SCATTER_MUL, SCATTER_DIV, SCATTER_MAX,
           SCATTER_MIN)


# --- functions ------------------------------------------------------------------------------------


def _scatter(op_def, ref, indices, updates, use_locking, name) -> Tensor:
    try:
        ref = variables._ref_tensor(ref)
    except TypeError:
        raise TypeError(f"{op_def.name} updates a variable in place: 'ref' must be a Variable "
                        f"(or its reference tensor), got {ref!r}.") from None
    indices = to_tensor(indices, graph=ref.graph, name="indices")
    if isinstance(updates, Tensor) or hasattr(updates, "_as_graph_tensor"):
        updates = to_tensor(updates, graph=ref.graph)
    else:
        updates = to_tensor(updates, dtype=ref.dtype, graph=ref.graph, name="updates")
    return make_op(op_def, [ref, indices, updates], {"use_locking": bool(use_locking)},
                   name or op_def.name).outputs[0]


def scatter_update(ref, indices, updates, use_locking=True, name=None) -> Tensor:
    """Set rows `indices` of variable `ref` to `updates` (the last of repeated rows wins);
    returns the variable's new value."""
    return _scatter(SCATTER_UPDATE, ref, indices, updates, use_locking, name)


def scatter_add(ref, indices, updates, use_locking=False, name=None) -> Tensor:
    """Add `updates` to rows `indices` of variable `ref` (repeated rows add up); returns the
    variable's new value."""
    return _scatter(SCATTER_ADD, ref, indices, updates, use_locking, name)


def scatter_sub(ref, indices, updates, use_locking=False, name=None) -> Tensor:
    """Subtract `updates` from rows `indices` of variable `ref` (repeated rows add up);
    returns the variable's new value."""
    return _scatter(SCATTER_SUB, ref, indices, updates, use_locking, name)


def scatter_mul(ref, indices, updates, use_locking=False, name=None) -> Tensor:
    """Multiply rows `indices` of variable `ref` by `updates`; returns its new value."""
    return _scatter(SCATTER_MUL, ref, indices, updates, use_locking, name)


def scatter_div(ref, indices, updates, use_locking=False, name=None) -> Tensor:
    """Divide rows `indices` of variable `ref` by `updates` (integers truncate towards zero);
    returns its new value."""
    return _scatter(SCATTER_DIV, ref, indices, updates, use_locking, name)


def scatter_max(ref, indices, updates, use_locking=False, name=None) -> Tensor:
    """Rows `indices` of variable `ref` become the elementwise maximum with `updates`;
    returns its new value."""
    return _scatter(SCATTER_MAX, ref, indices, updates, use_locking, name)


def scatter_min(ref, indices, updates, use_locking=False, name=None) -> Tensor:
    """Rows `indices` of variable `ref` become the elementwise minimum with `updates`;
    returns its new value."""
    return _scatter(SCATTER_MIN, ref, indices, updates, use_locking, name)
