"""Converted `for` and `while` loops: a graph `while_loop` when the loop involves traced
values, the plain Python loop otherwise (docs/architecture.md "Python control flow in @jit").

`for_range(range_fn, args, body, get_state, set_state, names, read, extra_test)` runs
`for i in range(*args): body(i)`; `for_iter` a `for` over any other iterable (a traced
array's rows loop in the graph, anything else in Python); `while_stmt(test, body, ...)` a
`while`.  A loop becomes ONE `ops/control_flow.while_loop` (a WhileContext frame: the
Session runs it as a LoopStep or on the control-flow executor, and lowering may compile it
whole) when its bounds or condition are traced, or when any value its body reads or
assigns is traced: the loop index is then a traced int64 scalar, so the trace's size does
not grow with the trip count.  Loop variables are the names the body assigns that have a
value before the loop, plus the arrays the body changes in place.  Building takes a few
attempts (`Retry`): the first finds which arrays change and the dtype each variable
settles at (NumPy's promotion: `s = 0.0; s += x[i]` with float32 `x` carries float32).
"""

from __future__ import annotations

import builtins
import logging

import numpy as np

from .. import dtypes as _dtypes
from ..ops import control_flow as _cf
from .core.shapes import TensorShape
from .np_array import GraphBreak, NeedsStaticShapes, TracedArray, api, as_tensor
from . import autograph_state as st

log = logging.getLogger("flowjit.jit")
MAX_ATTEMPTS = 6


def _python_for(iterable, body, extra_test):
    for it in iterable:
        if extra_test is not None and not _python_truth(extra_test()):
            break
        body(it)


def _python_truth(x) -> bool:
    if st.is_traced(x):
        raise GraphBreak("a `break` decided by a traced value in a loop run as Python")
    return bool(x)


def for_range(range_fn, args, body, get_state, set_state, names, read, extra_test=None,
              mutated=None, where=""):
    """`for i in range_fn(*args): body(i)` (see the module docstring)."""
    if range_fn is not builtins.range:
        return for_iter(range_fn(*args), body, get_state, set_state, names, read, extra_test,
                        mutated, where)
    traced_bounds = st.contains_traced(args)
    if not traced_bounds:
        bounds = range(*args)   # Python's own errors for bad bounds
        if not _involves_traced(get_state, read):
            return _python_for(bounds, body, extra_test)
        if len(bounds) == 0:
            return None
        why = _not_graphable(get_state, mutated)
        if why:
            log.info("flowjit.jit: the loop %s runs as Python (unrolled while tracing): %s",
                     where, why)
            return _python_for(bounds, body, extra_test)
    else:
        why = _not_graphable(get_state, mutated)
        if why:
            raise GraphBreak(f"a loop with traced bounds {where} that cannot be a graph loop",
                             why)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else \
        (args[0], args[1], 1) if len(args) == 2 else tuple(args)
    if st.is_traced(step):
        raise GraphBreak("range() with a traced step")
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    tf = api()
    start_t, stop_t = (st.to_tensor(v, np.int64) for v in (start, stop))
    step_t = tf.constant(np.int64(step))
    if not traced_bounds:
        try:
            return _graph_for(start_t, stop_t, step_t, step, body, extra_test, get_state,
                              set_state, names, read, where)
        except Aliasing as e:
            log.info("flowjit.jit: the loop %s runs as Python (unrolled while tracing): %s",
                     where, e)
            return _python_for(bounds, body, extra_test)
    return _graph_for(start_t, stop_t, step_t, step, body, extra_test, get_state, set_state,
                      names, read, where)


def _graph_for(start_t, stop_t, step_t, step, body, extra_test, get_state, set_state, names,
               read, where):
    tf = api()

    def test(i):
        go = tf.less(i, stop_t) if step > 0 else tf.greater(i, stop_t)
        if extra_test is None:
            return go
        return tf.logical_and(go, st.bool_tensor(extra_test(), "a `break`"))

    def step_fn(i):
        body(st.from_tensor(i, int))
        return tf.add(i, step_t)

    _graph_loop(test, step_fn, start_t, get_state, set_state, names, read, where)


def for_iter(iterable, body, get_state, set_state, names, read, extra_test=None, mutated=None,
             where=""):
    """`for x in iterable: body(x)`: over a traced array's first axis a graph loop, else
    Python's `for`."""
    if not st.is_traced(iterable):
        return _python_for(iterable, body, extra_test)
    arr = iterable
    if arr.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    tf = api()
    n = tf.cast(tf.shape(as_tensor(arr))[0], _dtypes.int64)
    return for_range(builtins.range, (n,), lambda i: body(arr[i]), get_state, set_state,
                     names, lambda: tuple(read()) + (arr,), extra_test, mutated, where)


def while_stmt(test, body, get_state, set_state, names, read, mutated=None, where="",
               graph=False):
    """`while test(): body()`: in Python while the condition is a Python value, and from
    the first traced condition on as one graph loop (AutoGraph's rule); `graph`: a graph
    loop from the start (the functional form, when its value is traced)."""
    while not graph:
        c = test()
        if st.is_traced(c):
            break
        if not c:
            return None
        body()
    why = _not_graphable(get_state, mutated)
    if why:
        raise GraphBreak(f"a `while` on a traced value {where} that cannot be a graph loop",
                         why)

    def cond(_):
        return st.bool_tensor(test(), "a `while` condition")

    def step_fn(i):
        body()
        return api().add(i, api().constant(np.int64(1)))

    _graph_loop(cond, step_fn, api().constant(np.int64(0)), get_state, set_state, names,
                read, where)


def _involves_traced(get_state, read) -> bool:
    return st.contains_traced(get_state()) or st.contains_traced(read())


def _not_graphable(get_state, mutated) -> str:
    """Why the loop's state cannot be carried by a graph loop ('' if it can)."""
    for v in get_state():
        if not isinstance(v, st.Undefined) and st.value_kind(v) is None:
            return f"a loop variable holds a {type(v).__name__}, not an array or number"
    changed = st.mutated_python_object(mutated)
    if changed:
        return f"the body changes the Python object `{changed}`"
    return ""


class _Spec:
    """What one attempt carries: per state index its (dtype, weak) and shape invariant, and
    the buffers changed in place."""

    def __init__(self, init):
        self.kinds = {k: st.value_kind(v) for k, v in enumerate(init)
                      if not isinstance(v, st.Undefined)}
        self.shapes: dict = {}
        self.buffers: list = []


class Aliasing(GraphBreak):
    """A loop whose arrays' aliasing a graph loop cannot keep (unrolled when its bounds are
    static, else a graph break)."""


def _graph_loop(test, step_fn, counter0, get_state, set_state, names, read, where):
    """Build the while_loop (see the module docstring): `test(counter)` and
    `step_fn(counter) -> next counter` run with the state set from the loop variables."""
    init = list(get_state())
    read_values = list(read())
    candidates = st.buffers_of(read_values + init)
    spec = _Spec(init)
    saved = st.snapshot(candidates)
    for _ in range(MAX_ATTEMPTS):
        try:
            exits = _attempt(spec, test, step_fn, counter0, init, candidates, set_state,
                             get_state, names, read_values)
            break
        except st.Retry:
            st.restore(candidates, saved)
            set_state(init)
        except (GraphBreak, NeedsStaticShapes):
            st.restore(candidates, saved)
            set_state(init)
            raise
        except Exception as e:   # noqa: BLE001 - the plain function says what is wrong
            st.restore(candidates, saved)
            set_state(init)
            raise GraphBreak(f"the loop {where} could not be built as a graph loop",
                             f"{type(e).__name__}: {e}") from None
    else:
        raise GraphBreak(f"the loop {where}: its variables' dtypes or shapes do not settle")
    carried = sorted(spec.kinds)
    values = list(init)
    for k, t in zip(carried, exits[:len(carried)]):
        values[k] = st.from_tensor(t, spec.kinds[k][1])
    for buf, t in zip(spec.buffers, exits[len(carried):]):
        buf.tensor, buf.version = t, buf.version + 1
    set_state(values)


def _aliased(value, init, read_values) -> bool:
    """Whether array `value` (a loop variable's value before the loop) shares its memory
    with something else the code can see: an argument (written back after the call), a
    view, or another array object on the same buffer among the loop's values."""
    if not isinstance(value, TracedArray):
        return False
    if value._buf.arg is not None or value._chain:
        return True
    objects = {id(v): v for v in list(init) + list(read_values) if isinstance(v, TracedArray)}
    return sum(v._buf is value._buf for v in objects.values()) > 1


def _attempt(spec, test, step_fn, counter0, init, candidates, set_state, get_state, names,
             read_values=()):
    carried = sorted(spec.kinds)
    tf_init = [counter0] + [st.to_tensor(init[k], spec.kinds[k][0]) for k in carried] + \
        [b.tensor for b in spec.buffers]
    invariants = [TensorShape([])] + \
        [spec.shapes.get(k, t.shape) for k, t in zip(carried, tf_init[1:])] + \
        [b.tensor.shape for b in spec.buffers]

    entered: list = []

    def enter(vals):
        values = list(init)
        for k, t in zip(carried, vals[:len(carried)]):
            values[k] = st.from_tensor(t, spec.kinds[k][1])
        for buf, t in zip(spec.buffers, vals[len(carried):]):
            buf.tensor, buf.version = t, buf.version + 1
        entered[:] = [(k, values[k], values[k]._buf.version) for k in carried
                      if isinstance(values[k], TracedArray)]
        set_state(values)

    def cond(i, *vals):
        enter(vals)
        return test(i)

    def body(i, *vals):
        enter(vals)
        versions = [b.version for b in candidates]
        nxt = step_fn(i)
        for k, value, version in entered:
            if value._buf.version != version and _aliased(init[k], init, read_values):
                # an array the loop rebinds and also changes in place (`u += ...`, a swap
                # of buffers): carried as a value, the writes would not reach the array's
                # other names (an argument, a view), so this loop keeps Python's semantics
                raise Aliasing(f"`{names[k]}` is an array the loop both assigns and changes "
                               "in place")
        new = list(get_state())
        retry = False
        outs = []
        for k in carried:
            v = new[k]
            kind = st.value_kind(v)
            if kind is None:
                raise GraphBreak(f"loop variable `{names[k]}` holds a {type(v).__name__} "
                                 "after an iteration, not an array or number")
            have = spec.kinds[k]
            settled = _settle(have, kind)
            if settled != have:
                spec.kinds[k] = settled
                retry = True
            t = st.to_tensor(v, spec.kinds[k][0])
            shape = spec.shapes.get(k, tf_init[1 + carried.index(k)].shape)
            if not _cf._fits(t.shape, shape):
                spec.shapes[k] = _relaxed(shape, t.shape)
                retry = True
            outs.append(t)
        for b, before in zip(candidates, versions):
            if b.version != before and b not in spec.buffers:
                spec.buffers.append(b)
                retry = True
        if retry:
            raise st.Retry()
        return [nxt] + outs + [b.tensor for b in spec.buffers]

    exits = _cf.while_loop(cond, body, tf_init, shape_invariants=invariants,
                           return_same_structure=True, name="loop")
    return list(exits[1:])


def _settle(have, got):
    """The kind a loop variable carries once an iteration gave it kind `got`: a Python
    number takes the first dtype NumPy gives it; otherwise NumPy's promotion."""
    (dh, wh), (dg, wg) = have, got
    if wh is not None and wg is None:      # a Python number became a NumPy value
        return np.result_type(dg, wh(0)) if dg.kind != "b" else dh, None
    if (dh, wh) == (dg, wg):
        return have
    return st.promote(have, got)


def _relaxed(shape: TensorShape, other: TensorShape) -> TensorShape:
    if shape.dims is None or other.dims is None or len(shape.dims) != len(other.dims):
        return TensorShape(None)
    return TensorShape([a if a == b else None
                        for a, b in zip(shape.as_list(), other.as_list())])
