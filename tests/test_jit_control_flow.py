"""Python control flow in @jit functions becomes graph control flow (compiler/autograph.py,
docs/architecture.md "Python control flow in @jit"): differential tests against plain
NumPy, the trace's size independent of the trip count, and the loop really a graph loop."""

import logging

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import flowjit
from flowjit.compiler.tracing import live_ops, trace
from flowjit.compiler.core.ir import NodeKind
from flowjit.runtime.jit import _Compiled, _Interpreted, _Python, _Trial


def go_fast(a):   # numba's five-minute guide
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def loop_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def recurrence(x, a):
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + x[i]
    return y


def forward_solve(lower, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - lower[i, :i] @ x[:i]) / lower[i, i]
    return x


def lu_in_place(a):
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def lu_no_return(a):
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])


def nested(a):
    t = 0.0
    for i in range(a.shape[0]):
        for j in range(i + 1):
            t += a[i, j] * j
    return t


def newton_sqrt(x):
    y = x.copy()
    steps = 0
    while np.max(np.abs(y * y - x)) > 1e-12:
        y = 0.5 * (y + x / y)
        steps += 1
    return y, steps


def branches(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += x[i]
        else:
            s -= 2 * x[i]
    if s > 3:
        out = x * 2
    else:
        out = x - 1
    return out, s


def break_continue(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        if s > 2:
            break
        s += x[i]
    return s


def while_break(x):
    i = 0
    total = 0.0
    while i < x.shape[0]:
        if x[i] > 1.5:
            break
        total += x[i]
        i += 1
    return total, i


def returns_in_loop(x):
    for i in range(x.shape[0]):
        if i == 2:
            return x * i
    return x


def _jit_run(fn, *args):
    f = flowjit.jit(fn)
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = f(*copies)
    return f, got, copies


def _entry(f):
    (entry,) = f._entries.values()
    return entry


def _assert_graph_loop(f, caplog):
    """The function's loop or branch stayed one graph loop or cond: compiled into one kernel
    (a kernel-IR WHILE node, or a cond's select), or else run by the Session."""
    entry = _entry(f)
    if isinstance(entry, _Trial):
        entry = entry.compiled
    if isinstance(entry, _Compiled):
        types = {op.type for op in live_ops(entry.trace)}
        assert "Merge" in types
        kinds = {n.kind for n in entry.cluster.schedule.program.nodes()}
        if "Enter" in types:   # a loop: one WHILE node of the kernel IR (a cond: a select)
            assert NodeKind.WHILE in kinds
    else:
        assert isinstance(entry, _Interpreted), getattr(entry, "reason", entry)
        types = {op.type for op in live_ops(entry.trace)}
        assert "Merge" in types
    assert not [r for r in caplog.records if "graph break" in r.getMessage()]


def _close(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)


def _op_count(fn, *args):
    tr = trace(fn, args, {}, (), exact_shapes=True)
    return len(live_ops(tr))


def test_five_minute_guide(caplog):
    a = np.arange(10000.0).reshape(100, 100) / 10000.0
    f, got, _ = _jit_run(go_fast, a)
    _close(got, go_fast(a))
    _assert_graph_loop(f, caplog)


def test_trace_does_not_grow_with_trip_count():
    small = _op_count(go_fast, np.ones((10, 10)))
    large = _op_count(go_fast, np.ones((1000, 1000)))
    assert small == large < 100
    assert _op_count(lu_in_place, np.eye(4)) == _op_count(lu_in_place, np.eye(300))
    assert _op_count(loop_sum, np.ones(3)) == _op_count(loop_sum, np.ones(5000))


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 40))
def test_sum_loop_trip_counts(n):
    x = np.linspace(-1.0, 1.0, n) if n else np.zeros(0)
    _, got, _ = _jit_run(loop_sum, x)
    _close(got, loop_sum(x))


@settings(max_examples=5, deadline=None)
@given(st.integers(1, 30), st.floats(-0.9, 0.9))
def test_recurrence(n, a):
    x = np.random.default_rng(n).standard_normal(n)
    _, got, _ = _jit_run(recurrence, x, a)
    _close(got, recurrence(x, a))


def test_forward_solve(caplog):
    rng = np.random.default_rng(1)
    n = 7
    lower = np.tril(rng.standard_normal((n, n))) + 4 * np.eye(n)
    b = rng.standard_normal(n)
    f, got, _ = _jit_run(forward_solve, lower, b)
    _close(got, forward_solve(lower, b))
    _assert_graph_loop(f, caplog)


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 12))
def test_lu_in_place(n):
    a = np.random.default_rng(n).standard_normal((n, n)) + n * np.eye(n)
    want = lu_in_place(a.copy())
    _, got, (given_a,) = _jit_run(lu_in_place, a)
    _close(got, want)
    _close(given_a, want)   # the argument is written back


def test_lu_mutation_written_back(caplog):
    a = np.random.default_rng(3).standard_normal((6, 6)) + 6 * np.eye(6)
    want = a.copy()
    lu_no_return(want)
    f = flowjit.jit(lu_no_return)
    got = a.copy()
    assert f(got) is None
    _close(got, want)
    _assert_graph_loop(f, caplog)


def test_nested_loops(caplog):
    a = np.random.default_rng(4).standard_normal((6, 6))
    f, got, _ = _jit_run(nested, a)
    _close(got, nested(a))
    _assert_graph_loop(f, caplog)


def test_while_newton(caplog):
    x = np.array([2.0, 3.0, 10.0, 0.5])
    f, got, _ = _jit_run(newton_sqrt, x)
    _close(got, newton_sqrt(x))
    _assert_graph_loop(f, caplog)


@pytest.mark.parametrize("seed", [0, 1])
def test_if_inside_and_outside_loops(seed, caplog):
    x = np.random.default_rng(seed).standard_normal(9)
    f, got, _ = _jit_run(branches, x)
    _close(got, branches(x))
    _assert_graph_loop(f, caplog)


def test_break_continue(caplog):
    x = np.array([0.5, -1.0, 0.9, 1.2, -0.3, 0.8, 0.7])
    f, got, _ = _jit_run(break_continue, x)
    _close(got, break_continue(x))
    _assert_graph_loop(f, caplog)


def test_while_with_break(caplog):
    x = np.array([0.5, 1.0, 0.25, 2.0, 0.1])
    f, got, _ = _jit_run(while_break, x)
    _close(got, while_break(x))
    _assert_graph_loop(f, caplog)


def test_python_values_keep_python_semantics():
    def count(x, n):
        k = 0
        for i in range(n):
            if i % 2:
                k += 1
        return x * k

    x = np.ones(3)
    _, got, _ = _jit_run(count, x, 5)
    _close(got, count(x, 5))


def test_loop_not_converted_is_logged(caplog):
    x = np.arange(6.0)
    with caplog.at_level(logging.INFO, logger="flowjit.jit"):
        f, got, _ = _jit_run(returns_in_loop, x)
    _close(got, returns_in_loop(x))
    notes = [r.getMessage() for r in caplog.records if "stays a Python loop" in r.getMessage()]
    assert len(notes) == 1 and "`return` inside the loop" in notes[0]


def test_unconvertible_traced_while_falls_back(caplog):
    def counts(x):
        out = []
        i = 0
        while x[i] > 0:
            out.append(i)
            i += 1
        return len(out)

    x = np.array([1.0, 2.0, -1.0])
    f = flowjit.jit(counts)
    assert f(x) == counts(x)
    assert isinstance(_entry(f), _Python)
    breaks = [r.getMessage() for r in caplog.records if "graph break" in r.getMessage()]
    assert len(breaks) == 1 and "out" in breaks[0]


def test_functional_forms_traced(caplog):
    def with_fori(x):
        return flowjit.fori_loop(0, x.shape[0], lambda i, s: s + x[i] * i, 0.0)

    def with_while(x):
        return flowjit.while_loop(lambda v: v[0] < 10, lambda v: (v[0] + 1, v[1] * 1.5), (0, x))

    def with_cond(x):
        return flowjit.cond(x.sum() > 0, lambda a, b: a * b, lambda a, b: a - b, x, 2.0)

    x = np.linspace(-1, 2, 7)
    for fn in (with_fori, with_while, with_cond):
        f, got, _ = _jit_run(fn, x)
        _close(got, fn(x))
        _assert_graph_loop(f, caplog)


def test_functional_forms_eager():
    assert flowjit.fori_loop(0, 4, lambda i, s: s + i, 0) == 6
    assert flowjit.while_loop(lambda v: v < 5, lambda v: v + 2, np.int64(0)) == 6
    assert flowjit.cond(np.bool_(False), lambda a: a + 1, lambda a: a - 1, 3) == 2
    assert flowjit.lax.while_loop(lambda v: v < 5, lambda v: v + 2, 0) == 6


def _running_min(x, cap):
    best = x[0]
    total = 0.0
    for i in range(x.shape[0]):
        best = min(best, x[i])
        total += max(x[i], cap, 0.0)
    return best, total, min(3, 5)


def test_builtin_min_max_of_traced_values_stay_in_the_graph(caplog):
    """min/max of traced scalars inside a converted loop are np.minimum/np.maximum (a
    Python comparison of traced values would break the graph); of Python values, the
    builtins."""
    x = np.array([3.0, -1.5, 2.0, -4.0, 0.5])
    with caplog.at_level(logging.INFO, logger="flowjit.jit"):
        f, got, _ = _jit_run(_running_min, x, 0.25)
    _close(got[:2], _running_min(x, 0.25)[:2])
    assert got[2] == 3
    _assert_graph_loop(f, caplog)


def _ping_pong(u, v, steps):
    for _ in range(steps):
        v[1:-1] = u[1:-1] * 2.0 + v[1:-1]
        u, v = v, u
    return u.sum()


def _kick(pos, vel, steps):
    for _ in range(steps):
        vel += 0.5 * pos
        pos += vel


@pytest.mark.parametrize("fn", [_ping_pong, _kick])
def test_loops_that_rebind_arrays_they_change_keep_numpy_aliasing(fn, caplog):
    """A loop that assigns a name of an array it also changes in place (a swap of two
    buffers, `vel += ...` on an argument) cannot carry the array as a value: its writes
    must reach the arguments, so it runs as Python (unrolled while tracing), logged."""
    a, b = np.arange(6.0), np.linspace(1.0, 2.0, 6)
    with caplog.at_level(logging.INFO, logger="flowjit.jit"):
        f = flowjit.jit(fn, static_argnames=("steps",))
        a1, b1, a2, b2 = a.copy(), b.copy(), a.copy(), b.copy()
        got = f(a1, b1, 3)
    want = fn(a2, b2, 3)
    if want is not None:
        _close(got, want)
    _close(a1, a2)
    _close(b1, b2)
    assert any("both assigns and changes" in r.getMessage() for r in caplog.records)
