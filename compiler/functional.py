"""Functional control flow (JAX-like): `cond`, `while_loop`, `fori_loop`.

    cond(pred, true_fn, false_fn, *operands)   -> true_fn(*operands) if pred else ...
    while_loop(cond_fn, body_fn, init_val)     -> val = init_val; while cond_fn(val):
                                                  val = body_fn(val)
    fori_loop(lower, upper, body_fn, init_val) -> val = init_val; for i in range(lower,
                                                  upper): val = body_fn(i, val)

Inside a `@jit` function, with traced values (in the operands, the loop value, the bounds,
or what the functions close over), they build ONE graph cond / while_loop through the same
helpers as converted Python control flow (docs/architecture.md "Python control flow in
@jit"); with NumPy and Python values they run as the plain Python they stand for.  Values
may be nests of lists, tuples and dicts.

`flowjit.cond` and `flowjit.while_loop` are also TF1's graph-building functions: a graph
Tensor as `pred` or among the loop variables selects TF1's form (as does a call with only
Python values outside a `@jit` trace, TF1's `tf.while_loop(c, b, [0, 0])`); `flowjit.lax`
holds the JAX-like forms alone.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..ops import control_flow as _tf1
from ..ops.nest import flatten, pack
from .core.graph import Tensor
from . import autograph_branches as _branches, autograph_loops as _loops
from . import autograph_state as st, tracing


def _closure_values(*fns) -> tuple:
    out = []
    for fn in fns:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                out.append(cell.cell_contents)
            except ValueError:   # an empty cell
                pass
    return tuple(out)


class _Box:
    """The loop value as the state the helpers read and write (flattened leaves)."""

    def __init__(self, value):
        self.value = value
        self.structure = value

    def get(self):
        return tuple(flatten(self.value)) if isinstance(self.value, (list, tuple, dict)) \
            else (self.value,)

    def set(self, leaves):
        leaves = list(leaves)
        self.value = pack(self.structure, leaves) \
            if isinstance(self.structure, (list, tuple, dict)) else leaves[0]

    def put(self, value):
        """A new value from the user's function (its structure must stay the loop's)."""
        if isinstance(self.structure, (list, tuple, dict)):
            value = pack(self.structure, list(flatten(value)))
        self.value = value


def lax_cond(pred, true_fn, false_fn, *operands):
    """`true_fn(*operands)` if `pred` else `false_fn(*operands)` (JAX's `lax.cond`): a
    graph cond when `pred` is traced."""
    if not st.is_traced(pred):
        return true_fn(*operands) if pred else false_fn(*operands)
    # the result's structure, from a first call of true_fn (its ops are left unused)
    structure = true_fn(*operands)
    nested = isinstance(structure, (list, tuple, dict))
    count = len(flatten(structure)) if nested else 1
    holder = [st.Undefined("result")] * count

    def make(fn):
        def run():
            out = fn(*operands)
            leaves = flatten(out) if nested else [out]
            if len(leaves) != count or isinstance(out, (list, tuple, dict)) != nested:
                raise ValueError("cond: true_fn and false_fn must return the same structure")
            holder[:] = list(leaves)
        return run

    def put(values):
        holder[:] = list(values)

    _branches.if_stmt(pred, make(true_fn), make(false_fn), lambda: tuple(holder), put,
                      tuple(f"result[{i}]" for i in range(count)),
                      lambda: operands + _closure_values(true_fn, false_fn))
    return pack(structure, holder) if nested else holder[0]


def lax_while_loop(cond_fn, body_fn, init_val):
    """`val = init_val; while cond_fn(val): val = body_fn(val)` (JAX's `lax.while_loop`):
    a graph while_loop when the condition becomes traced."""
    box = _Box(init_val)
    names = tuple(f"val[{i}]" for i in range(len(box.get())))

    def body():
        box.put(body_fn(box.value))

    read = lambda: _closure_values(cond_fn, body_fn)   # noqa: E731
    traced = st.contains_traced(box.get()) or st.contains_traced(read())
    _loops.while_stmt(lambda: cond_fn(box.value), body, box.get, box.set, names, read,
                      graph=traced)
    return box.value


def fori_loop(lower, upper, body_fn, init_val):
    """`val = init_val; for i in range(lower, upper): val = body_fn(i, val)` (JAX's
    `lax.fori_loop`): one graph while_loop when the bounds, the value or what `body_fn`
    closes over are traced (the trace does not grow with the trip count)."""
    box = _Box(init_val)
    names = tuple(f"val[{i}]" for i in range(len(box.get())))

    def body(i):
        box.put(body_fn(i, box.value))

    _loops.for_range(builtins.range, (lower, upper), body, box.get, box.set, names,
                     lambda: _closure_values(body_fn))
    return box.value


def _has_graph_tensor(values) -> bool:
    return any(isinstance(v, Tensor) for v in values)


def _has_numpy_or_traced(values) -> bool:
    return any(isinstance(v, (np.ndarray, np.generic)) or st.is_traced(v) and
               not isinstance(v, Tensor) for v in values)


def cond(pred, true_fn=None, false_fn=None, *operands, strict=False, name=None, fn1=None,
         fn2=None):
    """TF1's `tf.cond(pred, true_fn, false_fn)` when `pred` is a graph Tensor; otherwise
    the JAX-like `cond(pred, true_fn, false_fn, *operands)` (module docstring)."""
    if isinstance(pred, Tensor):
        if operands:   # TF1's positional strict and name
            strict = operands[0]
            name = operands[1] if len(operands) > 1 else name
        return _tf1.cond(pred, true_fn, false_fn, strict=strict, name=name, fn1=fn1, fn2=fn2)
    return lax_cond(pred, true_fn if true_fn is not None else fn1,
                    false_fn if false_fn is not None else fn2, *operands)


def while_loop(cond, body, loop_vars, *args, **kwargs):
    """TF1's `tf.while_loop(cond, body, loop_vars, ...)` when a loop variable is a graph
    Tensor (or all are Python values outside a `@jit` trace); otherwise the JAX-like
    `while_loop(cond_fn, body_fn, init_val)` (module docstring)."""
    leaves = flatten(loop_vars) if isinstance(loop_vars, (list, tuple, dict)) else [loop_vars]
    if args or kwargs or _has_graph_tensor(leaves) or \
            not (_has_numpy_or_traced(leaves) or tracing.TRACING[0]):
        return _tf1.while_loop(cond, body, loop_vars, *args, **kwargs)
    return lax_while_loop(cond, body, loop_vars)


__all__ = ["cond", "while_loop", "fori_loop", "lax_cond", "lax_while_loop"]
