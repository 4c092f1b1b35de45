"""The graph optimizer (runtime/graph_optimizer.py): CSE, constant folding and pruning of a
Session's plan, switched by OptimizerOptions; effects are never merged or folded, feeds win,
control edges hold and the user's graph is unchanged.  Sessions run without clusters
(jit="never") unless a test is about clusters, which then use the reference target."""

from __future__ import annotations

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops.registry import OpDef, Trait
from flowjit.runtime.clustering import ClusterStep
from flowjit.runtime.config import graph_rewrites

OO = tf.OptimizerOptions


def config(jit="never", **options):
    return tf.ConfigProto(jit=jit, graph_options=tf.GraphOptions(
        optimizer_options=OO(**options)))


ON = config()                                  # opt_level L1, TensorFlow's default
OFF = config(opt_level=OO.L0)
CSE_ONLY = config(opt_level=OO.L0, do_common_subexpression_elimination=True)
FOLD_ONLY = config(opt_level=OO.L0, do_constant_folding=True)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def only_plan(sess):
    [plan] = sess._plans.values()
    return plan


def last_plan(sess):
    """The plan the session built last (an initializer's run builds one of its own)."""
    return list(sess._plans.values())[-1]


def plan_types(sess) -> list:
    return sorted(node.type for node in only_plan(sess).ops)


# --- the switches -----------------------------------------------------------------------------


def test_options_follow_tensorflow_defaults_and_levels():
    default = graph_rewrites(tf.ConfigProto())
    assert default.cse and default.constant_folding
    assert default.max_constant_bytes == 10 * 1024 * 1024
    assert OO().opt_level is OO.Level.L1 and OO.L0 == -1
    off = graph_rewrites(OFF)
    assert not off.cse and not off.constant_folding and not off.enabled
    cse = graph_rewrites(CSE_ONLY)
    assert cse.cse and not cse.constant_folding
    fold = graph_rewrites(FOLD_ONLY)
    assert fold.constant_folding and not fold.cse
    assert graph_rewrites(config(max_folded_constant_in_bytes=64)).max_constant_bytes == 64
    with pytest.raises(ValueError):
        OO(opt_level=5)


def test_switched_off_the_plan_is_the_pruned_graph_and_explain_says_so():
    x = tf.placeholder(tf.float32, [None])
    y = tf.exp(x) + tf.exp(x) + tf.constant(2.0) * 3.0
    with tf.Session(config=OFF) as sess:
        sess.run(y, {x: np.ones(2, np.float32)})
        assert plan_types(sess) == ["Add", "Add", "Const", "Const", "Exp", "Exp", "Mul"]
        assert only_plan(sess).rewrites is None
        assert sess.explain().splitlines()[0] == "graph optimizer: off (OptimizerOptions)"


# --- common-subexpression elimination ---------------------------------------------------------


def test_cse_merges_chains_of_duplicates_with_the_unoptimized_results():
    x = tf.placeholder(tf.float32, [None])
    a, b = tf.exp(x), tf.exp(x)
    ya, yb = a * 2.0, b * 2.0       # each `* 2.0` makes its own Const: merged, then the Muls
    total = ya + yb
    feed = {x: np.array([0.5, -1.0, 2.0], np.float32)}
    with tf.Session(config=OFF) as sess:
        want = sess.run([total, ya, yb, b], feed)
    with tf.Session(config=CSE_ONLY) as sess:
        got = sess.run([total, ya, yb, b], feed)     # fetching merged tensors works
        rewrites = only_plan(sess).rewrites
        assert rewrites.merged == 3 and rewrites.folded == 0
        assert plan_types(sess) == ["Add", "Const", "Exp", "Mul"]
        assert "merged 3 duplicate ops" in sess.explain().splitlines()[0]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    got[3][0] = 99.0                               # the caller's copy, not the survivor's
    with tf.Session(config=CSE_ONLY) as sess:
        np.testing.assert_array_equal(sess.run(b, feed), want[3])


def test_cse_keeps_ops_apart_that_differ_in_attributes_inputs_or_commuted_order():
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.placeholder(tf.float32, [2, 3])
    sums = [tf.reduce_sum(x, axis=0), tf.reduce_sum(x, axis=1), tf.reduce_sum(y, axis=0)]
    zero, neg_zero = tf.constant(0.0), tf.constant(-0.0)
    signs = [tf.add(x, zero), tf.add(x, neg_zero)]
    commuted = [x - y, y - x, x * y, y * x]        # Sub is not commutative, Mul is
    feed = {x: np.arange(6, dtype=np.float32).reshape(2, 3), y: np.ones((2, 3), np.float32)}
    with tf.Session(config=CSE_ONLY) as sess:
        got = sess.run(sums + signs + commuted, feed)
        # only y * x (into x * y) and the two `axis=0` constants merge
        assert only_plan(sess).rewrites.merged == 2
        types = plan_types(sess)
        assert [types.count(t) for t in ("Sum", "Add", "Sub", "Mul")] == [3, 2, 2, 1]
    with tf.Session(config=OFF) as sess:
        want = sess.run(sums + signs + commuted, feed)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_random_ops_are_never_merged():
    a = tf.random_uniform([1000])
    b = tf.random_uniform([1000])
    assert a.op.get_attr("T") == b.op.get_attr("T") and a.op._attrs == b.op._attrs
    with tf.Session(config=ON) as sess:
        va, vb = sess.run([a, b])
        assert plan_types(sess).count("RandomUniform") == 2
    assert not np.array_equal(va, vb)


def test_random_ops_are_never_folded():
    r = tf.random_uniform([4]) * 2.0      # constant shape, but a stateful source
    with tf.Session(config=ON) as sess:
        first, second = sess.run(r), sess.run(r)
        assert "RandomUniform" in plan_types(sess)
    assert not np.array_equal(first, second)


def test_stateful_updates_are_never_merged():
    v = tf.Variable(0.0)
    one, two = tf.assign_add(v, 1.0), tf.assign_add(v, 1.0)
    both = tf.group(one, two)
    with tf.Session(config=ON) as sess:
        sess.run(v.initializer)
        sess.run(both)
        assert sess.run(v) == 2.0
        sess.run(both)
        assert sess.run(v) == 4.0


RUNS = []
# a test-only stateful op without variable references: only its trait keeps it apart
COUNT = OpDef("TestCount", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
              lambda ctx, inputs, attrs: RUNS.append(ctx.op.name) or [inputs[0]],
              traits={Trait.STATEFUL})


def counted(x, name):
    return x.graph.create_op(COUNT, [x], {}, name).outputs[0]


def test_stateful_ops_are_never_merged_nor_folded():
    c = tf.constant(2.0)
    first, second = counted(c, "first"), counted(c, "second")
    with tf.Session(config=ON) as sess:
        RUNS.clear()
        assert sess.run(first + second) == 4.0
        assert sorted(RUNS) == ["first", "second"]       # both ran, in the step
        assert sess.run(first + second) == 4.0
        assert len(RUNS) == 4
        assert last_plan(sess).rewrites.merged == last_plan(sess).rewrites.folded == 0


def test_placeholders_are_never_merged():
    p, q = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
    with tf.Session(config=ON) as sess:
        assert sess.run(p - q, {p: 5.0, q: 2.0}) == 3.0


# --- constant folding ---------------------------------------------------------------------------


def test_constant_folding_replaces_constant_subgraphs_with_identical_numerics():
    c = tf.constant(np.linspace(-2, 2, 12).reshape(3, 4))
    d = tf.reduce_sum(tf.tanh(c) * tf.exp(c), axis=1) / 3.0
    x = tf.placeholder(tf.float64, [3])
    y = x * d
    feed = {x: np.array([1.0, -2.0, 0.5])}
    with tf.Session(config=OFF) as sess:
        want_y, want_d = sess.run([y, d], feed)
    with tf.Session(config=FOLD_ONLY) as sess:
        got_y, got_d = sess.run([y, d], feed)
        rewrites = only_plan(sess).rewrites
        assert rewrites.folded == 5 and rewrites.merged == 0   # Tanh Exp Mul Sum RealDiv
        assert rewrites.constants == 1                         # d, read by y and fetched
        assert plan_types(sess) == ["Mul"]                     # x is fed
        got_d[0] = 123.0                                       # a copy: the plan's stays
        np.testing.assert_array_equal(sess.run(d), want_d)
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_array_equal(got_d[1:], want_d[1:])
    assert got_d.dtype == want_d.dtype == np.float64


def test_folding_respects_the_size_cap():
    big = tf.fill([100, 100], 1.5) * 2.0
    with tf.Session(config=config(max_folded_constant_in_bytes=1000)) as sess:
        value = sess.run(big)
        assert only_plan(sess).rewrites.folded == 0
        assert "Fill" in plan_types(sess)
    with tf.Session(config=ON) as sess:
        np.testing.assert_array_equal(sess.run(big), value)
        assert only_plan(sess).rewrites.folded == 2 and plan_types(sess) == []


# a test-only pure op that counts its kernel's calls
COPY = OpDef("TestCopy", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
             lambda ctx, inputs, attrs: RUNS.append(ctx.op.name) or [inputs[0] + 0])


def test_a_result_statically_over_the_cap_is_not_computed_when_planning():
    big = tf.constant(np.ones((100, 100)))
    copy = big.graph.create_op(COPY, [big], {}, "copy").outputs[0]
    small = tf.constant([1.0, 2.0])
    small_copy = small.graph.create_op(COPY, [small], {}, "small_copy").outputs[0]
    with tf.Session(config=config(max_folded_constant_in_bytes=1000)) as sess:
        RUNS.clear()
        sess.run([copy, small_copy])
        assert sorted(RUNS) == ["copy", "small_copy"]      # small_copy: when planning
        sess.run([copy, small_copy])
        assert sorted(RUNS) == ["copy", "copy", "small_copy"]


def test_a_kernel_error_in_a_constant_subgraph_is_still_raised_when_run():
    bad = tf.truncatediv(tf.constant(1), tf.constant(0), name="bad")
    for cfg in (OFF, ON):
        with tf.Session(config=cfg) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
                sess.run(bad)


# --- feeds --------------------------------------------------------------------------------------


def test_feeds_inside_a_constant_subgraph_override_folding():
    c = tf.constant(3.0)
    d = c * 2.0
    e = d + 1.0
    with tf.Session(config=ON) as sess:
        assert sess.run(e) == 7.0
        assert sess.run(e, {d: 10.0}) == 11.0
        assert sess.run(e, {c: 5.0}) == 11.0
        assert sess.run(d, {c: 0.5}) == 1.0
        assert sess.run([d, e]) == [6.0, 7.0]


def test_feeds_of_a_duplicate_or_its_survivor_keep_them_apart():
    x = tf.placeholder(tf.float32, [])
    a, b = tf.exp(x), tf.exp(x)
    y = a + b * 10.0
    with tf.Session(config=ON) as sess:
        assert sess.run(y, {x: 0.0}) == 11.0
        assert sess.run(y, {x: 0.0, b: 5.0}) == 51.0
        assert sess.run(y, {x: 0.0, a: 5.0}) == 15.0
        assert sess.run([a, b], {x: 0.0, a: 2.0}) == [2.0, 1.0]


# --- control dependencies -----------------------------------------------------------------------


def test_control_dependencies_of_constant_ops_still_run():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        c = tf.constant(2.0) * 3.0
    with tf.Session(config=ON) as sess:
        sess.run(v.initializer)
        assert sess.run(c) == 6.0
        assert sess.run(c) == 6.0
        assert sess.run(v) == 2.0


def test_ops_with_other_control_inputs_are_not_merged_and_order_holds():
    x = tf.placeholder(tf.float32, [])
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    plain = tf.exp(x)
    with tf.control_dependencies([inc]):
        after = tf.exp(x)
        read = v + 0.0
    with tf.Session(config=ON) as sess:
        sess.run(v.initializer)
        assert sess.run([plain, after, read], {x: 0.0}) == [1.0, 1.0, 2.0]
        assert last_plan(sess).rewrites.merged == 0
        assert [node.type for node in last_plan(sess).ops].count("Exp") == 2
        assert sess.run(v) == 2.0


def test_a_merged_op_used_as_a_control_input_orders_its_dependents():
    x = tf.placeholder(tf.float32, [])
    v = tf.Variable(5.0)
    first = tf.assign(v, x)
    second = tf.identity(first)
    again = tf.identity(first)              # merged into `second`
    with tf.control_dependencies([again.op]):
        read = v * 1.0
    with tf.Session(config=ON) as sess:
        sess.run(v.initializer)
        assert sess.run([read, second], {x: 7.0}) == [7.0, 7.0]
        assert last_plan(sess).rewrites.merged == 1


# --- the user's graph, clusters -----------------------------------------------------------------


def _snapshot(graph):
    return [(op, op.inputs, op.control_inputs, dict(op._attrs), op.outputs)
            for op in graph.get_operations()]


def test_the_users_graph_is_unchanged(fresh_graph):
    x = tf.placeholder(tf.float32, [None])
    y = tf.exp(x) + tf.exp(x) + tf.reduce_sum(tf.constant([1.0, 2.0]) * 2.0)
    before = _snapshot(fresh_graph)
    with tf.Session(config=ON) as sess:
        sess.run(y, {x: np.ones(3, np.float32)})
        assert only_plan(sess).rewrites.merged == 1 and only_plan(sess).rewrites.folded == 2
    after = _snapshot(fresh_graph)
    assert len(after) == len(before)
    for (op, ins, ctl, attrs, outs), (op2, ins2, ctl2, attrs2, outs2) in zip(before, after):
        assert op is op2 and ins == ins2 and ctl == ctl2 and outs == outs2
        assert attrs.keys() == attrs2.keys()


def test_clusters_read_merged_and_folded_tensors_at_their_boundary():
    x = tf.placeholder(tf.float64, [2])
    m1 = tf.truncatemod(x, 3.0)              # no lowering: plain ops, merged
    m2 = tf.truncatemod(x, 3.0)
    k = tf.truncatemod(tf.constant(np.array([5.0, 7.0])), 4.0)     # plain, folded
    y = tf.exp(m1) * tf.exp(m2) + k
    feed = {x: np.array([4.5, -7.25])}
    jit = tf.JitOptions.always(target="reference")
    with tf.Session(config=config(jit=jit, opt_level=OO.L0)) as sess:
        want = sess.run(y, feed)
    with tf.Session(config=config(jit=jit)) as sess:
        got = sess.run(y, feed)
        rewrites = only_plan(sess).rewrites
        assert rewrites.merged == 2 and rewrites.folded == 1   # a TruncateMod and its 3.0
        assert any(isinstance(n, ClusterStep) for n in only_plan(sess).ops)
        assert "graph optimizer (1 plans): merged 2" in sess.explain()
    np.testing.assert_allclose(got, want, rtol=1e-12)
