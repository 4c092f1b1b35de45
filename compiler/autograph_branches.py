"""Converted `if` statements and boolean operators (docs/architecture.md "Python control
flow in @jit").

`if_stmt(cond, body, orelse, get_state, set_state, names, read)` runs `body()` or
`orelse()` as Python does when `cond` is a Python value; when it is traced both branches
are traced into ONE `ops/control_flow.cond` whose outputs are the variables either branch
assigns (defined in both, or before the `if`) and the arrays either changes in place.  A
first attempt traces the branches to learn what they assign and at which dtypes (NumPy's
promotion joins them); the second builds the cond.  `and_`, `or_` and `not_` are Python's
`and`, `or` and `not` in converted conditions: on a traced value `and`/`or` become a cond
(the right side runs only when Python would run it), `not` a logical_not.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..ops import control_flow as _cf
from .np_array import GraphBreak, NeedsStaticShapes, api
from . import autograph_state as st


def not_(x):
    """Python's `not x`, traced when x is."""
    if st.is_traced(x):
        return st.from_tensor(api().logical_not(st.truth(x, "`not`")), None)
    return not x


def builtin_minmax(fn, *args):
    """`fn(*args)` for Python's `min`/`max` of several values: with a traced argument, the
    elementwise np.minimum / np.maximum of them in order (the first of equal values, as
    the builtins keep it, is the same value); otherwise `fn` itself."""
    if fn in (builtins.min, builtins.max) and any(st.is_traced(a) for a in args):
        pick = np.minimum if fn is builtins.min else np.maximum
        out = args[0]
        for a in args[1:]:
            out = pick(out, a)
        return out
    return fn(*args)


def and_(left, right):
    """Python's `left() and right()` (thunks), a cond when `left()` is traced."""
    a = left()
    if not st.is_traced(a):
        return a and right()
    return _lazy(a, right, when_true=True)


def or_(left, right):
    """Python's `left() or right()` (thunks), a cond when `left()` is traced."""
    a = left()
    if not st.is_traced(a):
        return a or right()
    return _lazy(a, right, when_true=False)


def _lazy(a, right, when_true: bool):
    tf = api()
    pred = st.truth(a, "`and`/`or`")

    def evaluate():
        return st.bool_tensor(right(), "`and`/`or`")

    def constant():
        return tf.constant(not when_true)

    out = _cf.cond(pred, evaluate, constant) if when_true else _cf.cond(pred, constant, evaluate)
    return st.from_tensor(out, None)


def if_stmt(cond, body, orelse, get_state, set_state, names, read, mutated=None, where=""):
    """`if cond: body() else: orelse()` (see the module docstring)."""
    if not st.is_traced(cond):
        return body() if cond else orelse()
    pred = st.truth(cond, "an `if`")
    changed = st.mutated_python_object(mutated)
    if changed:
        raise GraphBreak(f"an `if` on a traced value {where} whose branches change the "
                         f"Python object `{changed}`")
    init = list(get_state())
    candidates = st.buffers_of(list(read()) + init)
    saved = st.snapshot(candidates)
    try:
        probe = _Branches(init, candidates, saved, set_state, get_state)
        _cf.cond(pred, probe.run(body, 1), probe.run(orelse, 0))
        plan = probe.plan(names)
        st.restore(candidates, saved)
        set_state(init)
        final = _Branches(init, candidates, saved, set_state, get_state, plan)
        merged = _cf.cond(pred, final.run(body, 1), final.run(orelse, 0), strict=True)
    except (GraphBreak, NeedsStaticShapes):
        st.restore(candidates, saved)
        set_state(init)
        raise
    except Exception as e:   # noqa: BLE001 - the plain function says what is wrong
        st.restore(candidates, saved)
        set_state(init)
        raise GraphBreak(f"the `if` {where} could not be built as a graph cond",
                         f"{type(e).__name__}: {e}") from None
    outs, buffers, python = plan
    values = list(init)
    for k, value in python.items():
        values[k] = value
    for (k, kind), t in zip(outs, merged[:len(outs)]):
        values[k] = st.from_tensor(t, kind[1])
    for buf, t in zip(buffers, merged[len(outs):]):
        buf.tensor, buf.version = t, buf.version + 1
    st.restore([b for b in candidates if b not in buffers],
               [s for b, s in zip(candidates, saved) if b not in buffers])
    set_state(values)
    return None


class _Branches:
    """Runs each branch of a cond from the state before the `if`; the probe records what
    each leaves (`results[branch]`), the final build returns the planned outputs."""

    def __init__(self, init, candidates, saved, set_state, get_state, plan=None):
        self.init, self.candidates, self.saved = init, candidates, saved
        self.set_state, self.get_state = set_state, get_state
        self.plan_ = plan
        self.results: dict = {}

    def run(self, fn, branch: int):
        def build():
            st.restore(self.candidates, self.saved)
            self.set_state(self.init)
            fn()
            new = list(self.get_state())
            changed = [b for b, (_, v) in zip(self.candidates, self.saved) if b.version != v]
            self.results[branch] = (new, changed)
            if self.plan_ is None:
                return []
            outs, buffers, _ = self.plan_
            tensors = [st.to_tensor(new[k], kind[0]) for k, kind in outs]
            return tensors + [b.tensor for b in buffers]
        return build

    def plan(self, names):
        """(outputs [(index, (dtype, weak))], buffers, {index: Python value}) from the
        probe's results."""
        (t_new, t_changed), (f_new, f_changed) = self.results[1], self.results[0]
        outs, python = [], {}
        for k, (a, b) in enumerate(zip(t_new, f_new)):
            if a is b:
                if a is not self.init[k]:
                    python[k] = a
                continue
            if isinstance(a, st.Undefined) or isinstance(b, st.Undefined):
                python[k] = st.Undefined(names[k])
                continue
            ka, kb = st.value_kind(a), st.value_kind(b)
            if ka is None or kb is None:
                if _same_python(a, b):
                    python[k] = a
                    continue
                raise GraphBreak(f"`{names[k]}` is set to different Python objects in the "
                                 "branches of an `if` on a traced value")
            outs.append((k, st.promote(ka, kb) if ka != kb else ka))
        buffers = [b for b in self.candidates if b in t_changed or b in f_changed]
        return outs, buffers, python


def _same_python(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:   # noqa: BLE001 - any comparison failure means "not the same"
        return False


def if_exp(cond, true_fn, false_fn):
    """`a if cond else b` (thunks): np.where-like when `cond` is traced and both sides are
    numbers or arrays, else Python's."""
    if not st.is_traced(cond):
        return true_fn() if cond else false_fn()
    pred = st.truth(cond, "a conditional expression")
    a, b = true_fn(), false_fn()
    ka, kb = st.value_kind(a), st.value_kind(b)
    if ka is None or kb is None:
        raise GraphBreak("a conditional expression on a traced value choosing between "
                         "non-array values")
    dtype, weak = st.promote(ka, kb)
    out = api().where_v2(pred, st.to_tensor(a, dtype), st.to_tensor(b, dtype))
    return st.from_tensor(out, weak)


__all__ = ["and_", "or_", "not_", "if_stmt", "if_exp"]
