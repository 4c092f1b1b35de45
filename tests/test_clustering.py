"""Auto-clustering in Session.run (runtime/clustering.py): partition, policy, results, errors.

Compiles are the cost here (~0.5-1.5 s of numba each on a cold kernel cache; the lowerings
themselves are tested op by op through `flowjit.jit` in tests/test_lower_*.py), so tests use
few distinct cluster signatures.  The per-op differential test draws ONE case per registered
op type (hypothesis, derandomized: the same case every run, so the on-disk kernel cache
makes later runs cheap), preferring a case the compiler lowers, and compares every fetched
value with clustering on against clustering off (the reference interpreter).  Every op's
case is partitioned and run as a cluster with the reference kernels; every lowerable op's
COMPILED kernel is compared with its reference kernel by tests/test_compiled_ops.py (a few
big clusters, under the compile-always policy, so few numba compiles).
"""

import inspect
import logging
import time

import numpy as np
import pytest

import flowjit as tf
from flowjit import dtypes
from flowjit.compiler.lowering import NotLowerable, lower_cluster
from flowjit.ops import registry
from flowjit.ops.registry import OpDef, Trait
from flowjit.runtime import clustering, compile_queue
from flowjit.runtime.clustering import ClusterStep
from flowjit.runtime.config import jit_options
from samples import all_samples, draw_cases

FORCE = tf.JitOptions(policy="always", min_ops=1)  # = always()
OFF = tf.ConfigProto(jit=False)


def on(**kwargs):
    """A config with clustering on and every cluster compiled on its first run."""
    return tf.ConfigProto(jit=FORCE, **kwargs)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    """Compiler failures (other than NotLowerable) fail the test instead of falling back."""
    monkeypatch.setattr(clustering, "STRICT", True)


def cluster_steps(sess):
    return [n for plan in sess._plans.values() for n in plan.ops if isinstance(n, ClusterStep)]


def compiled(step) -> bool:
    return any(e is not None for e in step.kernels.entries.values())


def _same_as_input(op):
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


# A stateless op with no lowering: it stays with the executor, between clusters.
OPAQUE = OpDef("TestOpaque", _same_as_input, lambda ctx, inputs, attrs: [inputs[0] + 1])


def opaque(x):
    return x.graph.create_op(OPAQUE, [x], {}, "opaque").outputs[0]


def _sleep_kernel(ctx, inputs, attrs):
    time.sleep(0.05)
    return [inputs[0]]


SLEEPY = OpDef("TestSleepy", _same_as_input, _sleep_kernel)


# --- every op: clustering on == clustering off ----------------------------------------------
SAMPLES = all_samples()
_BLOCKED = {Trait.STATEFUL, Trait.RUNTIME_VALUE, Trait.BLOCKING, Trait.COMMUNICATION}
OP_TYPES = sorted(n for n in SAMPLES if not registry.lookup(n).traits & _BLOCKED)
# clustered, but always run with the reference kernels
INTERPRET = tf.JitOptions(from_cache=False, background_after_seconds=float("inf"), min_ops=1)


def _draw(name, examples=4) -> list:
    """A few derandomized cases of op `name`, the minimal (first) example last."""
    drawn = draw_cases(SAMPLES[name], examples)
    return drawn[1:] + drawn[:1]


def _build(case):
    """Build `case` in a new graph: (graph, fetches, feeds, whether all of it compiles)."""
    graph = tf.Graph()
    with graph.as_default():
        fetches = list(case.build())
    feeds = {graph.get_tensor_by_name(k + ":0"): v for k, v in case.feeds.items()}
    ops = [op for op in graph.get_operations() if op.type != "Placeholder"]
    if not all(clustering.clusterable(op, set()) for op in ops) or any(
            t.op.type == "Placeholder" for t in fetches) or all(
            Trait.SOURCE in op.op_def.traits for op in ops):  # a lone Const is no cluster
        return graph, fetches, feeds, False
    specs = [(dtypes.as_dtype(a.dtype), tuple(1 if d == 1 else None for d in a.shape))
             for a in feeds.values()]
    try:
        lower_cluster(ops, list(feeds), specs, fetches)
    except NotLowerable:
        return graph, fetches, feeds, False
    return graph, fetches, feeds, True


@pytest.mark.parametrize("op_type", OP_TYPES)
def test_every_op_gives_the_same_results_clustered_and_unclustered(op_type):
    for case in _draw(op_type):  # the first case that compiles, else the last one
        graph, fetches, feeds, lowerable = _build(case)
        if lowerable:
            break
    with tf.Session(graph=graph, config=OFF) as sess:
        expected = sess.run(fetches, feeds)
    with tf.Session(graph=graph, config=tf.ConfigProto(jit=INTERPRET)) as sess:
        got = sess.run(fetches, feeds)
        steps = cluster_steps(sess)
    clustered = {op for s in steps for op in s.ops}
    in_compiled = {op for s in steps if compiled(s) for op in s.ops}
    tested = [op for op in graph.get_operations() if op.type == op_type]
    if lowerable:
        assert tested and all(op in clustered for op in tested), "not clustered"
        assert not any(op in in_compiled for op in tested), "compiled?"
    else:
        assert not any(op in in_compiled for op in tested), "compiled unexpectedly"
    for t, e, g in zip(fetches, expected, got):
        e, g = np.asarray(e), np.asarray(g)
        where = f"{t.name} ({'clustered' if lowerable else 'plain'}), feeds {case.feeds}"
        assert g.dtype == e.dtype and g.shape == e.shape, where
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol,
                                       equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(g, e, err_msg=where)


# --- partitioning -------------------------------------------------------------------------
def _run_both(fetches, feeds, **config):
    with tf.Session(config=OFF) as sess:
        expected = sess.run(fetches, feeds)
    with tf.Session(config=on(**config)) as sess:
        got = sess.run(fetches, feeds)
        steps = cluster_steps(sess)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    return steps


def test_random_ops_never_join_a_cluster_but_variable_updates_do():
    x = tf.placeholder(tf.float32, [3])
    v = tf.Variable(np.zeros(3, np.float32))
    a = tf.exp(x) * 2.0
    update = tf.assign_add(v, a)
    b = update * 3.0 - 1.0
    r = tf.random_uniform([3], seed=7)
    c = (b + r) * 0.5 + tf.sin(a)
    feeds = {x: np.float32([0.5, -1.0, 2.0])}
    results = []
    for config in (OFF, on()):
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            results.append([sess.run([c, v], feeds) for _ in range(3)])
            steps = cluster_steps(sess)
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-6)
    members = {op for s in steps for op in s.ops}
    assert {a.op, b.op, c.op, update.op, v.op} <= members
    assert "RandomUniform" not in {op.type for op in members}
    assert all(compiled(s) for s in steps)


def test_contracting_a_cycle_is_refused():
    x = tf.placeholder(tf.float32, [None])
    a = tf.exp(x)
    b = a * 2.0                     # a and b cluster together
    side = opaque(a)                # a -> opaque -> c: c must not join a's cluster
    d = tf.sin(side) + 1.0          # its own cluster, fed by the opaque op
    c = b + d
    groups = clustering.partition(tf.get_default_graph().get_operations(), set())
    group_of = {op: i for i, g in enumerate(groups) for op in g}
    assert group_of[a.op] == group_of[b.op]
    assert group_of[c.op] != group_of[a.op]
    assert side.op not in group_of
    steps = _run_both([c], {x: np.float32([0.5, 1.5, -2.0])})
    assert len(steps) == 2


def test_control_dependencies_join_clusters_and_still_order_them():
    x = tf.placeholder(tf.float32, [None])
    a = tf.exp(x) * 2.0
    with tf.control_dependencies([a]):
        b = tf.sin(x) + 1.0
    groups = clustering.partition(tf.get_default_graph().get_operations(), set())
    assert any(a.op in g and b.op in g for g in groups)  # grown along the control edge
    _run_both([b, a], {x: np.float32([1.0, 2.0])})
    v = tf.Variable([1.0, 2.0])
    inc = tf.assign_add(v, [1.0, 1.0])
    with tf.control_dependencies([inc]):
        after = v * 10.0 + 1.0        # must read v after the update that runs outside it
    with tf.Session(config=on()) as sess:
        sess.run(v.initializer)
        for k in range(1, 4):
            np.testing.assert_allclose(sess.run(after), [10.0 * (1 + k) + 1, 10.0 * (2 + k) + 1])


def test_variables_are_read_at_the_cluster_boundary():
    v = tf.Variable([1.0, 2.0])
    y = v * 2.0 + 1.0
    update = tf.assign(v, [5.0, 6.0])
    with tf.Session(config=on()) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [3.0, 5.0])
        sess.run(update)
        np.testing.assert_allclose(sess.run(y), [11.0, 13.0])
        assert all(compiled(s) for s in cluster_steps(sess))


def test_independent_clusters_run_from_the_inter_op_pool():
    rng = np.random.default_rng(0)
    xs = [tf.placeholder(tf.float64, [None]) for _ in range(4)]
    ys = [tf.sqrt(tf.exp(x * 0.5) + 1.0) for x in xs]  # four clusters, one kernel
    feeds = {x: rng.normal(size=70_000) for x in xs}   # big enough for pool and prange
    with tf.Session(config=OFF) as sess:
        expected = sess.run(ys, feeds)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session(config=on(inter_op_parallelism_threads=4)) as sess:
        for _ in range(3):
            meta = tf.RunMetadata()
            got = sess.run(ys, feeds, options=options, run_metadata=meta)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-12)
        steps = cluster_steps(sess)
    assert len(steps) == 4 and all(compiled(s) for s in steps)
    assert {s.name for s in steps} == {n.node_name for n in meta.step_stats
                                       if n.op_type == "Cluster"}


# --- policy and options -------------------------------------------------------------------
def test_compiles_in_the_background_after_the_configured_runs_and_shares_kernels():
    x = tf.placeholder(tf.float32, [None])
    y = tf.exp(x) * 2.0
    config = tf.ConfigProto(jit=tf.JitOptions(background_after_runs=2,
                                              background_after_seconds=0, from_cache=False))
    with tf.Session(config=config) as sess:
        for runs in (1, 2):
            np.testing.assert_allclose(sess.run(y, {x: np.zeros(3, np.float32)}), [2.0] * 3)
            [step] = cluster_steps(sess)
            assert step.kernels.compile_count == 0 and not step.kernels.queued
        sess.run(y, {x: np.zeros(3, np.float32)})       # the third run queues the compile
        assert step.kernels.queued
        assert compile_queue.wait_idle(timeout=300)
        assert step.kernels.compile_count == 1 and step.kernels.compiled_runs == 0
        np.testing.assert_allclose(sess.run(y, {x: np.zeros(7, np.float32)}), [2.0] * 7)
        assert step.kernels.compiled_runs == 1  # swapped in; a new size: the same signature
    with tf.Session(config=config) as sess:  # another session of the graph shares the kernel
        sess.run(y, {x: np.zeros(5, np.float32)})
        [other] = cluster_steps(sess)
        assert other.kernels is step.kernels and other.kernels.compile_count == 1


def test_default_policy_leaves_small_and_short_lived_work_alone():
    x = tf.placeholder(tf.float32, [None])
    single = tf.exp(x)
    pair = tf.exp(x) * 2.0
    with tf.Session(config=tf.ConfigProto(jit=tf.JitOptions(from_cache=False))) as sess:
        for _ in range(5):
            sess.run([single, pair], {x: np.ones(4, np.float32)})
        [step] = cluster_steps(sess)  # the lone Exp is not a cluster
        assert single.op not in step.ops and pair.op in step.ops
        # 5 tiny runs spend far less than background_after_seconds: no compile is started
        assert step.kernels.compile_count == 0 and not step.kernels.queued


def test_the_option_and_its_spellings(monkeypatch):
    monkeypatch.delenv("FLOWJIT_JIT", raising=False)
    OO = tf.OptimizerOptions
    assert jit_options(tf.ConfigProto()).enabled
    assert not jit_options(tf.ConfigProto(jit=False)).enabled
    level = tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=OO(global_jit_level=OO.OFF)))
    assert not jit_options(level).enabled
    monkeypatch.setenv("FLOWJIT_JIT", "0")
    assert not jit_options(tf.ConfigProto()).enabled
    on_1 = tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=OO(global_jit_level=OO.ON_1)))
    assert jit_options(on_1).enabled  # an explicit setting beats the environment
    x = tf.placeholder(tf.float32, [None])
    y = tf.exp(x) * 2.0
    with tf.Session() as sess:
        sess.run(y, {x: np.ones(2, np.float32)})
        assert cluster_steps(sess) == []
    with tf.Session(config=on_1) as sess:
        sess.run(y, {x: np.ones(2, np.float32)})
        assert len(cluster_steps(sess)) == 1


def test_compile_always_compiles_every_cluster_before_its_first_run(monkeypatch):
    assert tf.JitOptions.always() == FORCE
    assert jit_options(tf.ConfigProto(jit="always")) == FORCE
    monkeypatch.setenv("FLOWJIT_JIT", "always")
    assert jit_options(tf.ConfigProto()) == FORCE
    assert not jit_options(tf.ConfigProto(jit=False)).enabled  # explicit settings still win
    monkeypatch.setenv("FLOWJIT_JIT", "1")
    assert jit_options(tf.ConfigProto()) == tf.JitOptions()
    for spelling, policy in (("auto", tf.JitPolicy.AUTO), ("never", tf.JitPolicy.NEVER)):
        monkeypatch.setenv("FLOWJIT_JIT", spelling)
        assert jit_options(tf.ConfigProto()).policy is policy
        assert jit_options(tf.ConfigProto(jit=spelling)).policy is policy
    assert not jit_options(tf.ConfigProto(jit="never")).enabled
    with pytest.raises(ValueError, match="unknown jit policy 'sometimes'"):
        jit_options(tf.ConfigProto(jit="sometimes"))
    monkeypatch.setenv("FLOWJIT_JIT", "always")
    x = tf.placeholder(tf.float32, [None])
    y = tf.exp(x)                     # one op: a cluster under this policy only
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.zeros(3, np.float32)}), np.ones(3))
        [step] = cluster_steps(sess)
    assert step.kernels.compile_count == 1 and step.kernels.compiled_runs == 1


def test_uncompilable_cluster_runs_reference_kernels_and_logs_once(caplog):
    x = tf.placeholder(tf.float32, [None])
    shape = tf.placeholder(tf.int32, [2])
    y = tf.reshape(tf.exp(x), shape) * 2.0  # a runtime target shape is not compiled
    with caplog.at_level(logging.INFO, logger="flowjit.jit"), tf.Session(config=on()) as sess:
        for _ in range(2):
            out = sess.run(y, {x: np.zeros(6, np.float32), shape: [2, 3]})
            np.testing.assert_allclose(out, np.full((2, 3), 2.0))
        [step] = cluster_steps(sess)
    assert list(step.kernels.entries.values()) == [None]
    assert len([r for r in caplog.records if "reference kernels" in r.getMessage()]) == 1


# --- errors -------------------------------------------------------------------------------
def test_compiled_errors_name_the_op_and_the_users_line():
    a = tf.placeholder(tf.int32, [None])
    b = tf.placeholder(tf.int32, [None])
    line = inspect.currentframe().f_lineno + 1
    q = tf.floordiv(a, b) + 1
    with tf.Session(config=on()) as sess:
        np.testing.assert_array_equal(sess.run(q, {a: [7, 2], b: [2, 2]}), [4, 2])
        assert all(compiled(s) for s in cluster_steps(sess))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=rf"(?s)division by zero.*'FloorDiv'.*test_clustering.py:{line}"):
            sess.run(q, {a: [1, 2], b: [0, 2]})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"(?s)shapes.*FloorDiv"):
            sess.run(q, {a: [1, 2], b: [1, 2, 3]})
        np.testing.assert_array_equal(sess.run(q, {a: [9], b: [3]}), [4])


def test_a_deadline_reached_before_a_cluster_names_its_first_op():
    x = tf.placeholder(tf.float32, [None])
    slow = x.graph.create_op(SLEEPY, [x], {}, "slow").outputs[0]
    y = tf.exp(slow) * 2.0
    with tf.Session(config=on(inter_op_parallelism_threads=1)) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError, match="'Exp'"):
            sess.run(y, {x: np.ones(2, np.float32)}, options=tf.RunOptions(timeout_in_ms=10))
        assert [s.ops[0] for s in cluster_steps(sess)] == [y.op.inputs[0].op]


def test_a_kernel_failure_the_reference_accepts_names_the_cluster():
    x = tf.placeholder(tf.float32, [None])
    line = inspect.currentframe().f_lineno + 1
    y = tf.exp(x) * 2.0
    with tf.Session(config=on()) as sess:
        sess.run(y, {x: np.ones(2, np.float32)})
        [step] = cluster_steps(sess)
        [entry] = step.kernels.entries.values()

        def broken(*arrays):
            raise ValueError("sizes disagree")

        entry.kernel = broken
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=rf"(?s)sizes disagree.*'Exp'.*'Mul'.*test_clustering.py:{line}"):
            sess.run(y, {x: np.ones(2, np.float32)})


def test_gradient_clusters_with_runtime_sizes_compile():
    """A Shape op the executor runs outside a cluster feeds a Reshape inside it, and a
    Range's limit is a Size computed in the cluster: the sizes are read in the kernel (the
    Shape's input is not the cluster's to look at: this was a KeyError, then a fallback)."""
    x = tf.placeholder(tf.float32, [None, 3])
    grads = [tf.gradients(tf.reduce_sum(tf.transpose(x)[1:, :]), x)[0],
             tf.gradients(tf.reduce_sum(tf.nn.log_softmax(x * 2.0)[:, 0]), x)[0]]
    for rows in (4, 7, 0):
        xs = np.random.default_rng(rows).standard_normal((rows, 3)).astype(np.float32)
        with tf.Session(config=OFF) as sess:
            want = sess.run(grads, {x: xs})
        with tf.Session(config=on()) as sess:
            got = sess.run(grads, {x: xs})
            steps = cluster_steps(sess)
            assert steps and all(compiled(s) for s in steps)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_a_range_with_a_runtime_limit_compiles_and_checks_its_direction():
    x = tf.placeholder(tf.float32, [None])
    up = tf.range(2, tf.size(x) * 2, 3) * 10 + 1
    down = tf.range(5, tf.size(x) - 7, -2) + tf.cast(tf.reduce_sum(x), tf.int32)
    with tf.Session(config=on()) as sess:
        for n in (9, 3, 1):
            xs = np.ones(n, np.float32)
            got_up = sess.run(up, {x: xs})
            np.testing.assert_array_equal(got_up, np.arange(2, 2 * n, 3) * 10 + 1)
            np.testing.assert_array_equal(sess.run(down, {x: xs}), np.arange(5, n - 7, -2) + n)
        assert all(compiled(s) for s in cluster_steps(sess))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start <= limit"):
            sess.run(up, {x: np.ones(0, np.float32)})        # range(2, 0, 3)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start >= limit"):
            sess.run(down, {x: np.ones(13, np.float32)})     # range(5, 6, -2)
