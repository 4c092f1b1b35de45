"""Compiled loops: a whole `while_loop` (nested loops and conds inside included) lowers
into one kernel-IR WHILE node (compiler/lower_loops.py) that the CPU target runs inside
ONE numba function and the reference target interprets (docs/architecture.md, "Control
flow").  Differential tests: the CPU kernel against the reference target's, and both
against NumPy, on hypothesis-drawn trip counts (0, 1, many) and shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.compiler.core.ir import NodeKind
from flowjit.compiler.lowering import NotLowerable
from flowjit.compiler.pipeline import compile_cluster
from flowjit.runtime.targets import get_target


def _compile(outputs, placeholders, target):
    """The graph's ops that `outputs` need (placeholders excluded) compiled as ONE cluster
    by `target`, as flowjit.jit compiles a traced function."""
    graph = outputs[0].graph
    ops = [op for op in graph.get_operations() if op.type != "Placeholder"]
    specs = [(p.dtype, tuple(p.shape.as_list())) for p in placeholders]
    return compile_cluster(ops, placeholders, specs, outputs, target=get_target(target))


def _run_both(outputs, placeholders, feeds):
    """(CPU results, reference results); asserts the CPU program holds a WHILE node."""
    results = []
    for target in ("cpu", "reference"):
        cluster = _compile(outputs, placeholders, target)
        if target == "cpu":
            kinds = {n.kind for n in cluster.schedule.program.nodes()}
            assert NodeKind.WHILE in kinds, "the loop did not become a WHILE node"
            assert "while" in cluster.source, "the kernel has no while statement"
        results.append(cluster.kernel(*feeds, *cluster.constants))
    return results


def _recurrence(shape):
    """y <- tanh(y) * 0.5 + x - c, n times, with a captured constant and a loop variable
    the body leaves alone."""
    x = tf.placeholder(tf.float64, [None] * len(shape))
    n = tf.placeholder(tf.int32, [])
    c = tf.constant(0.25, tf.float64)
    _, y, same = tf.while_loop(lambda i, y, s: i < n,
                               lambda i, y, s: (i + 1, tf.tanh(y) * 0.5 + x - c, s),
                               [0, tf.zeros_like(x), tf.constant(7)])
    return [y, same], [x, n]


@settings(max_examples=10, deadline=None)
@given(n=st.sampled_from([0, 1, 2, 9, 40]),
       shape=st.sampled_from([(), (1,), (5,), (2, 0), (3, 4)]), seed=st.integers(0, 2**16))
def test_a_compiled_loop_equals_the_reference_target_and_numpy(n, shape, seed):
    xv = np.random.default_rng(seed).uniform(-1, 1, shape)
    with tf.Graph().as_default():
        outputs, placeholders = _recurrence(shape)
        cpu, ref = _run_both(outputs, placeholders, [xv, np.array(n, np.int32)])
    want = np.zeros_like(xv)
    for _ in range(n):
        want = np.tanh(want) * 0.5 + xv - 0.25
    for got in (cpu, ref):
        np.testing.assert_allclose(got[0], want, rtol=1e-12, atol=0)
        assert got[0].shape == want.shape and int(got[1]) == 7


def test_nested_loops_and_a_cond_inside_compile_into_one_kernel():
    """sum over i < n of (sum over j < i of j if j even else -1.0) * x: an inner loop whose
    bound is the outer counter, a cond inside it, an array loop variable."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None])
        n = tf.placeholder(tf.int32, [])

        def outer_body(i, acc):
            def inner_body(j, s):
                term = tf.cond(tf.equal(j % 2, 0), lambda: tf.cast(j, tf.float64),
                               lambda: tf.constant(-1.0, tf.float64))
                return j + 1, s + term
            _, s = tf.while_loop(lambda j, s: j < i, inner_body,
                                 [0, tf.constant(0.0, tf.float64)])
            return i + 1, acc + s * x

        _, acc = tf.while_loop(lambda i, a: i < n, outer_body, [0, tf.zeros_like(x)])
        xv = np.array([1.0, -2.0, 0.5])
        for trips in (0, 1, 6):
            cpu, ref = _run_both([acc], [x, n], [xv, np.array(trips, np.int32)])
            total = sum(sum(float(j) if j % 2 == 0 else -1.0 for j in range(i))
                        for i in range(trips))
            np.testing.assert_allclose(cpu[0], total * xv, rtol=1e-12)
            np.testing.assert_allclose(ref[0], total * xv, rtol=1e-12)


def test_a_loop_variable_that_changes_shape_is_not_compiled():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None])
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.concat([y, y], 0)),
                             [0, x], shape_invariants=[tf.TensorShape([]),
                                                       tf.TensorShape([None])])
        with pytest.raises(NotLowerable, match="change its shape"):
            _compile([y], [x], "cpu")


def test_a_session_runs_the_whole_loop_as_one_compiled_kernel(compiled_calls):
    """Under compile-always a top-level loop is one plan node whose whole-loop cluster
    serves the run: one compiled call per run, however many iterations."""
    from flowjit.runtime import loop_steps

    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        total = tf.while_loop(lambda i, s: i < n,
                              lambda i, s: (i + 1, s + tf.cast(i, tf.float64)),
                              [0, tf.constant(0.0, tf.float64)])[1]
        with tf.Session(config=tf.ConfigProto(jit=tf.JitOptions.always())) as sess:
            assert sess.run(total, {n: 100000}) == sum(range(100000))
            assert sess.run(total, {n: 0}) == 0.0
            steps = [node for plan in sess._plans.values() for node in plan.ops
                     if isinstance(node, loop_steps.LoopStep)]
            assert len(steps) == 1
            assert compiled_calls == [steps[0].whole.name] * 2


def test_a_run_with_a_deadline_runs_the_loop_iteration_by_iteration(compiled_calls):
    from flowjit.runtime import loop_steps

    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        total = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + 2), [0, 0])[1]
        with tf.Session(config=tf.ConfigProto(jit=tf.JitOptions.always())) as sess:
            options = tf.RunOptions(timeout_in_ms=60000)
            assert sess.run(total, {n: 5}, options=options) == 10
            step = next(node for plan in sess._plans.values() for node in plan.ops
                        if isinstance(node, loop_steps.LoopStep))
            assert step.whole.name not in compiled_calls
            assert compiled_calls   # the condition's and body's clusters ran compiled
