"""The reference interpreter: a kernel-IR `Program` evaluated node by node with NumPy.

`run(program, schedule, arrays)` is what a reference kernel does when called.  Every node
is computed whole, in program order (producers first), into its own array:
- INPUT: the argument (by the position in its `attr`; the kernel's arguments follow
  `program.inputs`, whose positions may skip dropped constants);
- COMPUTE: the body evaluated once over index grids (loop variable k of an n-d node is
  `arange(size_k)` shaped to broadcast along axis k), so each scalar operation is one NumPy
  call over the whole tensor (scalars.py);
- REDUCE: the body over the grid of output and reduction axes, combined over the reduction
  axes, accumulating in the body's dtype and cast to the node's, as the CPU does; ARGMAX and
  ARGMIN keep the first extreme, skipping NaNs (all NaN or nothing: index 0);
- MATMUL: `np.matmul` (operands transposed by the node's flags); RESHAPE: a reshape;
  SCATTER: a copy of the base with rows replaced in order (the last write of a row wins),
  or with the rows added (`np.add.at`: repeated rows add up);
  LIBCALL: np.sort / argsort (stable) / np.linalg (singular: np.linalg.LinAlgError);
  WHILE: its condition and body sub-programs run by `run` itself, iteration after
  iteration (the loop variables as the arguments); WHILE_OUT: one of the final values.
Shapes are Exprs evaluated to ints first (they may read runtime sizes and computed values).

Run-time checks: each `(condition, message)` of `program.checks` is evaluated as soon as the
nodes it loads exist (checks on sizes alone: before any node), and a false one raises
ValueError(message), as the CPU kernel does.  A load outside its node's shape is a bug in
the IR (lowerings clamp the indices of loads whose values are discarded: ops/lower_index.py)
and raises `IRIndexError`, except that any read of an empty node gives zeros (a clamped
index into an empty input, discarded).

Donation and in-place writes, as a caller can see them: where the schedule lets a node take
a donated input's array (`schedule.reuse` ending at an INPUT: compiler/schedule.py), the
result is written into that argument at the end of the run and the output IS that argument.
Every other output is a new C-contiguous array of its node's dtype (never an argument, a
view of one, or another output).
"""

from __future__ import annotations

import numpy as np

from ...compiler.core import ir
from ...compiler.core.ir import Combiner, NodeKind, Routine, Scalar
from ...compiler.core.ir_build import identity_value
from . import scalars
from .scalars import np_dtype


class IRIndexError(IndexError):
    """A load or scatter outside its node's shape: the IR broke its own contract."""


def run(program: ir.Program, schedule, arrays) -> tuple:
    """The outputs of `program` for the argument `arrays` (one per `program.inputs`)."""
    if len(arrays) != len(program.inputs):
        raise TypeError(f"the kernel takes {len(program.inputs)} arrays, got {len(arrays)}")
    by_position, values = {}, {}
    for node, a in zip(program.inputs, arrays):
        a = np.asarray(a)
        if a.dtype != np_dtype(node.dtype) or a.ndim != len(node.shape):
            raise TypeError(f"argument {node.attr[0]}: expected {node.dtype.name} of rank "
                            f"{len(node.shape)}, got {a.dtype} of rank {a.ndim}")
        by_position[node.attr[0]] = a
        values[id(node)] = a
    pending = list(program.checks)
    with np.errstate(all="ignore"):
        _run_ready_checks(pending, values, by_position)
        order = program.nodes()
        for node in order:
            if node.kind is not NodeKind.INPUT:
                values[id(node)] = _node_value(node, values, by_position)
                _run_ready_checks(pending, values, by_position)
    if pending:
        raise AssertionError(f"check {pending[0][1]!r} loads nodes the program never computes")
    return _outputs(program, schedule, order, values)


# --- expressions ----------------------------------------------------------------------------
class _Scope:
    """What an expression is evaluated against: computed nodes, arguments, loop grids."""

    def __init__(self, values: dict, by_position: dict, grids: dict):
        self.values = values
        self.by_position = by_position
        self.grids = grids            # id(loop variable Expr) -> index array
        self.memo: dict = {}          # id(Expr) -> value (a DAG: each node once)

    def eval(self, e: ir.Expr) -> np.ndarray:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit
        # operands first, without recursing (docs/architecture.md, "The path of a
        # computation"): a body may be a chain of a million operations
        for x in ir.postorder(e, known=self.memo):
            self.memo[id(x)] = self._value(x)
        return self.memo[id(e)]

    def _value(self, e: ir.Expr) -> np.ndarray:
        """The value of `e`, whose operands are evaluated (in `memo`)."""
        op = e.op
        if op is Scalar.CONST:
            out = np.asarray(e.attr, dtype=np_dtype(e.dtype))
        elif op is Scalar.VAR:
            out = self.grids.get(id(e))
            if out is None:
                raise AssertionError(f"loop variable {e!r} is not bound here")
        elif op is Scalar.DIM:
            position, axis = e.attr
            out = np.asarray(self.by_position[position].shape[axis], dtype=np.int64)
        elif op is Scalar.LOAD:
            out = self._load(e)
        else:
            out = scalars.apply(op, e.dtype, [self.memo[id(a)] for a in e.args])
        return out

    def _load(self, e: ir.Expr) -> np.ndarray:
        node = e.attr
        source = self.values.get(id(node))
        if source is None:
            raise AssertionError(f"{node.name} is read before it is computed")
        if not e.args:
            return source
        index = np.broadcast_arrays(*[np.asarray(self.eval(a), dtype=np.int64)
                                      for a in e.args])
        if source.size == 0:   # a clamped index into an empty node: a discarded value
            return np.zeros(index[0].shape, source.dtype)
        for axis, (ix, size) in enumerate(zip(index, source.shape)):
            if ix.size and (ix.min() < 0 or ix.max() >= size):
                raise IRIndexError(f"a load of {node.name} (shape {source.shape}) at an index "
                                   f"outside axis {axis}")
        return source[tuple(index)]


def _int(e: ir.Expr, values: dict, by_position: dict) -> int:
    return int(_Scope(values, by_position, {}).eval(e))


def _shape(exprs, values: dict, by_position: dict) -> tuple:
    shape = tuple(_int(d, values, by_position) for d in exprs)
    if any(d < 0 for d in shape):   # as allocating the CPU's buffer fails
        raise ValueError(f"negative dimensions are not allowed: {shape}")
    return shape


def _grids(variables, sizes) -> dict:
    """Index arrays for `variables`: variable k varies along axis k of len(sizes) axes."""
    rank = len(sizes)
    grids = {}
    for k, (v, n) in enumerate(zip(variables, sizes)):
        grids[id(v)] = np.arange(n, dtype=np.int64).reshape((1,) * k + (n,) +
                                                            (1,) * (rank - k - 1))
    return grids


def _run_ready_checks(pending: list, values: dict, by_position: dict) -> None:
    for item in list(pending):
        cond, message = item
        loaded = [e.attr for e in ir.walk(cond) if e.op is Scalar.LOAD]
        if all(id(n) in values for n in loaded):
            pending.remove(item)
            if not bool(np.all(_Scope(values, by_position, {}).eval(cond))):
                raise ValueError(message)


# --- nodes ----------------------------------------------------------------------------------
def _node_value(node: ir.Node, values: dict, by_position: dict) -> np.ndarray:
    if node.kind is NodeKind.WHILE:
        return _while(node, values)
    shape = _shape(node.shape, values, by_position)
    kind = node.kind
    if kind is NodeKind.COMPUTE:
        scope = _Scope(values, by_position, _grids(node.axes, shape))
        out = np.broadcast_to(scope.eval(node.body), shape)
    elif kind is NodeKind.REDUCE:
        out = _reduce(node, shape, values, by_position)
    elif kind is NodeKind.MATMUL:
        a, b = (values[id(x)] for x in node.inputs)
        ta, tb = node.attr
        out = np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
    elif kind is NodeKind.RESHAPE:
        out = values[id(node.inputs[0])].reshape(shape)
    elif kind is NodeKind.SCATTER:
        out = _scatter(node, values)
    elif kind is NodeKind.LIBCALL:
        out = _libcall(node, [values[id(x)] for x in node.inputs])
    elif kind is NodeKind.WHILE_OUT:
        out = values[id(node.inputs[0])][node.attr]
    else:
        raise AssertionError(f"no reference code for {kind.value} nodes")
    out = np.asarray(out)
    if out.shape != shape:
        raise AssertionError(f"{node.name}: computed shape {out.shape}, expected {shape}")
    if kind is NodeKind.RESHAPE:
        return out   # a view, as on the CPU; outputs copy it (_outputs)
    out = out.astype(np_dtype(node.dtype), order="C", copy=False)
    return out if out.flags.writeable else out.copy()   # a broadcast view: its own array


def _while(node: ir.Node, values: dict) -> tuple:
    """A WHILE node's final loop variables: its condition and body sub-programs run by this
    interpreter, iteration after iteration."""
    spec = node.attr
    carried = [np.array(values[id(x)], copy=True) for x in node.inputs[:spec.n_carried]]
    captured = [values[id(x)] for x in node.inputs[spec.n_carried:]]
    while bool(run(spec.cond, None, carried + captured)[0]):
        carried = list(run(spec.body, None, carried + captured))
    return tuple(carried)


def _reduce(node: ir.Node, shape: tuple, values: dict, by_position: dict) -> np.ndarray:
    rshape = _shape(node.rshape, values, by_position)
    full = shape + rshape
    grids = _grids(tuple(node.axes) + tuple(node.raxes), full)
    body = _Scope(values, by_position, grids).eval(node.body)
    acc = np_dtype(node.body.dtype)
    data = np.broadcast_to(np.asarray(body, dtype=acc), full)
    axes = tuple(range(len(shape), len(full)))
    comb = node.attr
    if comb in (Combiner.ARGMAX, Combiner.ARGMIN):
        return _arg_reduce(data, shape, rshape, comb)
    if not axes:
        return data
    if comb is Combiner.ADD:
        return np.sum(data, axis=axes, dtype=acc)
    if comb is Combiner.MUL:
        return np.prod(data, axis=axes, dtype=acc)
    if comb is Combiner.AND:
        return np.all(data, axis=axes)
    if comb is Combiner.OR:
        return np.any(data, axis=axes)
    initial = np.asarray(identity_value(comb, node.body.dtype)).astype(acc)
    fn = np.max if comb is Combiner.MAX else np.min
    return fn(data, axis=axes, initial=initial)


def _arg_reduce(data: np.ndarray, shape: tuple, rshape: tuple, comb: Combiner) -> np.ndarray:
    """The index (along the last reduction axis, as the CPU counts it) of the first extreme
    element in row-major order; NaNs are skipped; nothing or all NaN gives 0."""
    count = int(np.prod(rshape, dtype=np.int64)) if rshape else 1
    flat = data.reshape(shape + (count,))
    if flat.dtype == np.bool_:
        flat = flat.astype(np.int8)   # False < True, as the CPU compares them
    if count == 0:
        return np.zeros(shape, np.int64)
    valid = ~np.isnan(flat) if flat.dtype.kind == "f" else np.ones(flat.shape, bool)
    if comb is Combiner.ARGMAX:
        fill = -np.inf if flat.dtype.kind == "f" else np.iinfo(flat.dtype).min
        best = np.max(np.where(valid, flat, fill), axis=-1, keepdims=True)
    else:
        fill = np.inf if flat.dtype.kind == "f" else np.iinfo(flat.dtype).max
        best = np.min(np.where(valid, flat, fill), axis=-1, keepdims=True)
    first = np.argmax(valid & (flat == best), axis=-1)
    last_extent = rshape[-1] if rshape else 1
    return first % last_extent if last_extent else first


def _scatter(node: ir.Node, values: dict) -> np.ndarray:
    base, rows, updates = (values[id(x)] for x in node.inputs)
    out = np.array(base, copy=True)
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    if rows.size and (rows.min() < 0 or rows.max() >= base.shape[0]):
        raise IRIndexError(f"{node.name}: a scattered row is outside [0, {base.shape[0]})")
    if node.attr is ir.Combiner.ADD:   # repeated rows add up
        np.add.at(out, rows, updates)
        return out
    if rows.size:
        # the last write of a repeated row wins: keep each row's last occurrence
        _, last_in_reversed = np.unique(rows[::-1], return_index=True)
        keep = rows.size - 1 - last_in_reversed
        out[rows[keep]] = updates[keep]
    return out


def _libcall(node: ir.Node, operands) -> np.ndarray:
    routine = node.attr
    x = operands[0]
    if routine is Routine.SORT:
        return np.sort(x, axis=-1)
    if routine is Routine.ARGSORT:
        return np.argsort(x, axis=-1, kind="stable")
    if routine is Routine.INV:
        return np.linalg.inv(x)
    if routine is Routine.DET:
        return np.linalg.det(x)
    if routine is Routine.SOLVE:
        return np.linalg.solve(x, operands[1])
    if routine is Routine.CHOLESKY:
        return np.linalg.cholesky(np.tril(x))
    raise AssertionError(f"no reference code for the {routine.value} routine")


# --- results --------------------------------------------------------------------------------
def _donor(node: ir.Node, reuse: dict) -> ir.Node | None:
    """The INPUT whose array `node` is written into (following the schedule's buffer
    reuse chain), or None."""
    seen = set()
    while id(node) in reuse and id(node) not in seen:
        seen.add(id(node))
        node = reuse[id(node)]
    return node if node.kind is NodeKind.INPUT else None


def _outputs(program: ir.Program, schedule, order: list, values: dict) -> tuple:
    reuse = getattr(schedule, "reuse", None) or {}
    in_place: dict = {}   # id(INPUT) -> the last node (in program order) written into it
    for node in order:
        donor = _donor(node, reuse) if node.kind is not NodeKind.INPUT else None
        if donor is not None:
            in_place[id(donor)] = node
    for donor_id, node in in_place.items():
        donor = next(n for n in program.inputs if id(n) == donor_id)
        np.copyto(values[id(donor)], values[id(node)], casting="unsafe")
    outs, handed = [], set()
    for o in program.outputs:
        donor = _donor(o, reuse) if o.kind is not NodeKind.INPUT else None
        if donor is not None and in_place.get(id(donor)) is o and id(o) not in handed:
            outs.append(values[id(donor)])
        elif o.kind in (NodeKind.INPUT, NodeKind.RESHAPE) or id(o) in handed:
            outs.append(np.array(values[id(o)], dtype=np_dtype(o.dtype), order="C", copy=True))
        else:
            outs.append(values[id(o)])
        handed.add(id(o))
    return tuple(outs)
