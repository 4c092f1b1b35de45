"""Variable updates inside compiled clusters (runtime/cluster_updates.py).

A whole training step — forward, backward, every optimizer update — compiles into one
cluster; its results equal the reference interpreter's step after step, and the rules that
keep TensorFlow's ref semantics (no read after an update in the same kernel, one update
per variable, shape checks, uninitialized reads) hold.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowjit as tf
from flowjit.runtime import clustering
from flowjit.runtime.clustering import ClusterStep
from flowjit.runtime.config import JitOptions

OFF = tf.ConfigProto(jit=False)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setattr(clustering, "STRICT", True)


def on():
    return tf.ConfigProto(jit=JitOptions(policy="always"))


def cluster_steps(sess):
    return [n for plan in sess._plans.values() for n in plan.ops if isinstance(n, ClusterStep)]


def compiled(step) -> bool:
    return any(e is not None for e in step.kernels.entries.values())


def _mlp(optimizer):
    rng = np.random.default_rng(3)
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    y = tf.placeholder(tf.float32, [None, 3], name="y")
    w1 = tf.Variable(rng.normal(0, 0.3, (6, 5)).astype(np.float32))
    b1 = tf.Variable(np.zeros(5, np.float32))
    w2 = tf.Variable(rng.normal(0, 0.3, (5, 3)).astype(np.float32))
    out = tf.tanh(tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2))
    cost = tf.reduce_sum(tf.square(y - out))
    step = tf.train.get_or_create_global_step()
    train = optimizer.minimize(cost, global_step=step)
    feeds = {x: rng.normal(size=(7, 6)).astype(np.float32),
             y: rng.normal(size=(7, 3)).astype(np.float32)}
    return cost, train, feeds, [w1, b1, w2, step]


@pytest.mark.parametrize("make", [
    lambda: tf.train.AdamOptimizer(0.05),
    lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
], ids=["adam", "nesterov", "rmsprop"])
def test_a_training_step_is_one_compiled_cluster_equal_to_the_interpreter(make):
    cost, train, feeds, variables = _mlp(make())
    runs = []
    for config in (OFF, on()):
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            costs = [sess.run([cost, train], feeds)[0] for _ in range(6)]
            runs.append((costs, sess.run(variables)))
            steps = [s for s in cluster_steps(sess) if train in s.ops or
                     any(op.type == "AssignSub" for op in s.ops)]
    (ref_costs, ref_vars), (costs, values) = runs
    np.testing.assert_allclose(costs, ref_costs, rtol=2e-5)
    for got, want in zip(values, ref_vars):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert values[-1] == 6  # the global step advanced once per run
    assert len(steps) == 1 and compiled(steps[0])  # forward, backward, updates: one kernel
    kinds = {op.type for op in steps[0].ops}
    assert {"MatMul", "VariableV2", "NoOp"} <= kinds and kinds & {"Assign", "AssignSub"}


def test_updated_variables_are_fresh_read_only_arrays_and_fetches_are_copies():
    v = tf.Variable(np.float32([1.0, 2.0]))
    new = tf.assign(v, v * 2.0 + 1.0)
    with tf.Session(config=on()) as sess:
        sess.run(v.initializer)
        first = sess.run(new)
        second = sess.run(new)
        stored = sess._state.variables[v.op.name]
    np.testing.assert_allclose(first, [3.0, 5.0])
    np.testing.assert_allclose(second, [7.0, 11.0])
    assert not stored.flags.writeable
    assert first.flags.writeable and not np.shares_memory(second, stored)


def test_an_initializer_cluster_assigns_uninitialized_variables():
    a = tf.Variable(tf.fill([3], 2.0) * 1.5 + 1.0)
    b = tf.Variable(tf.ones([2, 2]) * 3.0 - 1.0)
    with tf.Session(config=on()) as sess:
        for _ in range(2):
            sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(a), [4.0] * 3)
        np.testing.assert_allclose(sess.run(b), np.full((2, 2), 2.0))
        assert any(compiled(s) for s in cluster_steps(sess))


def test_reading_an_uninitialized_variable_in_a_cluster_names_it():
    v = tf.Variable(np.float32([1.0, 2.0]), name="weights")
    up = tf.assign_add(v, tf.exp(v) * 0.5)
    with tf.Session(config=on()) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="weights"):
            sess.run(up)


def test_an_assignment_of_the_wrong_shape_is_the_ops_error_and_changes_nothing():
    v = tf.Variable(np.zeros((2, 3), np.float32), name="v")
    x = tf.placeholder(tf.float32, [None, 3])
    grow = tf.assign(v, tf.exp(x) * 2.0, name="grow")
    with tf.Session(config=on()) as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(grow, {x: np.zeros((2, 3), np.float32)}), 2.0)
        with pytest.raises(tf.errors.InvalidArgumentError, match="grow"):
            sess.run(grow, {x: np.zeros((4, 3), np.float32)})
        np.testing.assert_allclose(sess.run(v), 2.0)


def test_an_update_with_the_wrong_shape_is_refused():
    v = tf.Variable(np.zeros(3, np.float32), name="acc")
    x = tf.placeholder(tf.float32, [None])
    add = tf.assign_add(v, tf.exp(x) - 1.0, name="accumulate")
    with tf.Session(config=on()) as sess:
        sess.run(v.initializer)
        sess.run(add, {x: np.ones(3, np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="accumulate"):
            sess.run(add, {x: np.ones(1, np.float32)})  # broadcasting is not an update
        np.testing.assert_allclose(sess.run(v), np.e - 1.0, rtol=1e-6)


def test_a_read_ordered_after_an_update_keeps_them_in_separate_kernels():
    v = tf.Variable(np.float32([1.0, 2.0]))
    inc = tf.assign_add(v, tf.ones([2]) * 2.0)
    with tf.control_dependencies([inc]):
        after = tf.identity(v) * 3.0 + 1.0     # wants the new value
    assert not clustering.cluster_updates.updates_are_safe(
        clustering.partition(tf.get_default_graph().get_operations(), set())[-1])
    for config in (OFF, on()):
        with tf.Session(config=config) as sess:
            sess.run(v.initializer)
            got = [sess.run(after) for _ in range(3)]
        np.testing.assert_allclose(got, [[10.0, 13.0], [16.0, 19.0], [22.0, 25.0]])


def test_two_updates_of_one_variable_are_not_one_kernel():
    v = tf.Variable(np.float32([1.0]))
    first = tf.assign(v, v * 2.0)
    second = tf.assign(v, first + 1.0)
    graph_ops = tf.get_default_graph().get_operations()
    groups = clustering.partition(graph_ops, set())
    assert not all(clustering.cluster_updates.updates_are_safe(g) for g in groups)
    for config in (OFF, on()):
        with tf.Session(config=config) as sess:
            sess.run(v.initializer)
            assert [float(sess.run(second)[0]) for _ in range(3)] == [3.0, 7.0, 15.0]
