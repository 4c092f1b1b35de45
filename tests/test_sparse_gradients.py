"""Sparse gradients (issue 30): IndexedSlices, their path through `tf.gradients`, the scatter
updates of variables, and the optimizers' sparse updates.

- TF 1.x programs (fixtures/sparse_cases.py) give TensorFlow's results, recorded by
  fixtures/record_sparse_cases.py into sparse_cases.npz: the gradient of a lookup, its
  aggregation and densification, clipping, every optimizer's sparse steps with repeated ids,
  the tf.scatter_* functions, tf.unique and the not-differentiable ops.
- A training step on a 100000 x 64 table with a batch of 32 ids updates only those rows, equals
  NumPy's dense computation, and builds no table-sized gradient; compiled, forward and
  backward pass are one kernel and the ScatterSub writes the rows into the stored table when
  nothing else holds it (a fetched snapshot keeps its values).
- IndexedSlices' attributes, conversion (with TensorFlow's warnings), fetching; finite
  differences through lookups; the gradient rules (Identity passes slices on, a gather in a
  while loop stays dense); errors at build and run time.
"""

import importlib.util
import os
import warnings

import numpy as np
import pytest

import flowjit as tf
from conftest import assert_like_recorded, recorded_result
from flowjit.errors import InvalidArgumentError
from flowjit.ops import indexed_slices
from flowjit.runtime import cluster_updates

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
OFF = tf.ConfigProto(jit=False)
ALWAYS = tf.ConfigProto(jit=tf.JitOptions.always())


def _load_cases():
    spec = importlib.util.spec_from_file_location("flowjit_sparse_cases",
                                                  os.path.join(FIXTURES, "sparse_cases.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = _load_cases()
RECORDED = dict(np.load(os.path.join(FIXTURES, "sparse_cases.npz")))
# float64 programs: TensorFlow makes the optimizers' Python-number hyperparameters float32
# tensors and casts them to float64 (0.1 becomes 0.10000000149...); flowjit keeps 0.1
TOLERANCES = {np.dtype(np.float32): (2e-5, 2e-5), np.dtype(np.float64): (1e-5, 1e-8)}
# programs also run under the compile-always policy (the rest run op by op: the sparse
# updates of Momentum, Adagrad and Adam run outside clusters anyway, Unique has no lowering)
COMPILED = {"embedding_gradient", "sgd_sparse"}


def test_the_fixture_covers_every_program():
    recorded = {k.split(":")[0] for k in RECORDED if not k.startswith("_meta")}
    assert recorded == set(CASES.PROGRAMS)
    assert os.path.getsize(os.path.join(FIXTURES, "sparse_cases.npz")) < 100_000


@pytest.mark.parametrize("name", sorted(CASES.PROGRAMS))
def test_program_matches_tensorflow(name, monkeypatch):
    monkeypatch.setenv("FLOWJIT_JIT", "never")
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = CASES.run_program(tf, name)
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_program_matches_tensorflow(name, compiled_calls, monkeypatch):
    monkeypatch.setenv("FLOWJIT_JIT", "always")
    want_structure, want = recorded_result(RECORDED, name)
    got_structure, got = CASES.run_program(tf, name)
    assert compiled_calls, "no compiled kernel ran"
    assert_like_recorded(name, got_structure, got, want_structure, want, TOLERANCES)


# --- a large table ---------------------------------------------------------------------------


def _large_table_step(config):
    """One SGD step on a 100000 x 64 table through a lookup of 32 ids (some repeated)."""
    rng = np.random.default_rng(7)
    table = rng.standard_normal((100_000, 64)).astype(np.float32)
    ids = rng.integers(0, 100_000, 32).astype(np.int32)
    ids[[3, 17, 30]] = ids[5]   # a row looked up four times
    target = rng.standard_normal((32, 64)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        emb = tf.Variable(table, name="emb")
        ids_in = tf.placeholder(tf.int32, [32], name="ids")
        rows = tf.nn.embedding_lookup(emb, ids_in)
        loss = 0.5 * tf.reduce_sum(tf.square(rows - target))
        (grad,) = tf.gradients(loss, emb)
        step = tf.train.GradientDescentOptimizer(0.1).apply_gradients([(grad, emb)])
        with tf.Session(config=config) as sess:
            sess.run(emb.initializer)
            sess.run(step, {ids_in: ids})
            after = sess.run(emb)
    return graph, grad, table, ids, target, after


@pytest.mark.parametrize("config", [OFF, ALWAYS], ids=["op_by_op", "compiled"])
def test_a_step_on_a_large_table_updates_only_the_looked_up_rows(config):
    graph, grad, table, ids, target, after = _large_table_step(config)
    assert isinstance(grad, tf.IndexedSlices)
    # NumPy's dense computation: the gradient of every lookup added into its row
    dense_grad = np.zeros_like(table)
    np.add.at(dense_grad, ids, table[ids] - target)
    expected = table - np.float32(0.1) * dense_grad
    np.testing.assert_allclose(after, expected, rtol=1e-6, atol=1e-6)
    untouched = np.setdiff1d(np.arange(table.shape[0]), ids)
    np.testing.assert_array_equal(after[untouched], table[untouched])
    # nothing but the variable's own ops and its update has the table's shape: no dense
    # gradient
    table_sized = [t.name for op in graph.get_operations() for t in op.outputs
                   if t.shape.as_tuple() == table.shape and not op.name.startswith("emb/")]
    assert sorted(table_sized) == ["GradientDescent/update_emb/ScatterSub:0", "emb:0"]
    assert not any(op.type == "UnsortedSegmentSum" for op in graph.get_operations())


def test_the_compiled_large_table_step_updates_the_rows_in_place(compiled_calls):
    """Forward and backward pass compile; the ScatterSub of the large table stays out of
    the kernels (runtime/cluster_updates.py) and writes the rows in the stored array."""
    graph = _large_table_step(ALWAYS)[0]
    # the initializer, the step's values (lookup, gradient, scaling) and its ids' reshape
    assert len(compiled_calls) == 3
    [scatter] = [op for op in graph.get_operations() if op.type == "ScatterSub"]
    assert not cluster_updates.is_update(scatter)


def test_a_sparse_step_writes_in_place_unless_someone_holds_the_table():
    table = np.arange(2000 * 40, dtype=np.float32).reshape(2000, 40)   # over the threshold
    with tf.Graph().as_default():
        emb = tf.Variable(table, name="emb")
        step = tf.scatter_sub(emb, [3, 1999, 3], np.ones((3, 40), np.float32)).op
        with tf.Session(config=OFF) as sess:
            sess.run(emb.initializer)
            sess.run(step)
            stored = id(sess._state.variables["emb"])   # its id: a reference would hold it
            sess.run(step)
            assert id(sess._state.variables["emb"]) == stored   # in place: nobody held it
            with sess._state.running_step():                 # another step running: a copy
                sess.run(step)
            assert id(sess._state.variables["emb"]) != stored
            snapshot = sess.run(emb)                         # a fetched value holds it
            before = snapshot.copy()
            sess.run(step)
            np.testing.assert_array_equal(snapshot, before)  # the snapshot did not change
            after = sess.run(emb)
            assert not sess._state.variables["emb"].flags.writeable   # read-only again
    expected = table.copy()
    expected[3] -= 8.0   # four steps, row 3 twice in each
    expected[1999] -= 4.0
    np.testing.assert_array_equal(after, expected)


# --- IndexedSlices ---------------------------------------------------------------------------


def test_indexed_slices_attributes_and_fetch():
    with tf.Graph().as_default() as g, tf.device("/cpu:0"):
        values = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="vals")
        s = tf.IndexedSlices(values, tf.constant([2, 0]), tf.constant([4, 2]))
        assert (s.values, s.dtype, s.name, s.op, s.graph) == (values, tf.float32, "vals:0",
                                                                values.op, g)
        assert s.device == values.device and s.shape.as_list() == [4, 2]
        assert s.indices.dtype is tf.int32 and s.dense_shape.dtype is tf.int32
        neg = -s
        assert isinstance(neg, tf.IndexedSlices) and neg.indices is s.indices
        dense = tf.convert_to_tensor(s)
        assert tf.convert_to_tensor(s) is dense   # one conversion per context
        assert dense.shape.as_list() == [4, 2]
        with tf.Session(config=OFF) as sess:
            got, dense_value, neg_value = sess.run([s, dense, neg])
    assert isinstance(got, tf.IndexedSlicesValue)
    np.testing.assert_array_equal(got.values, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(got.indices, [2, 0])
    np.testing.assert_array_equal(dense_value, [[3, 4], [0, 0], [1, 2], [0, 0]])
    np.testing.assert_array_equal(indexed_slices.value_to_dense(got), dense_value)
    np.testing.assert_array_equal(neg_value.values, -got.values)


def test_conversion_warns_like_tensorflow_and_needs_a_dense_shape():
    with tf.Graph().as_default():
        rows = tf.placeholder(tf.float32, [None, 3])
        ids = tf.placeholder(tf.int64, [None])
        unknown = tf.IndexedSlices(rows, ids, tf.placeholder(tf.int64, [2]))
        with pytest.warns(UserWarning, match="unknown shape"):
            tf.convert_to_tensor(unknown)
        big = tf.IndexedSlices(rows, ids, [50_000_000, 3])
        with pytest.warns(UserWarning, match="150000000 elements"):
            tf.identity(big)   # any op input converts
        small = tf.IndexedSlices(rows, ids, [10, 3])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tf.convert_to_tensor(small)
        with pytest.raises(ValueError, match="without dense_shape"):
            tf.convert_to_tensor(tf.IndexedSlices(rows, ids))
        with pytest.raises(TypeError, match="int32 or int64"):
            tf.IndexedSlices(rows, tf.placeholder(tf.float32, [None]), [10, 3])
        with pytest.raises(ValueError, match="one row per index"):
            tf.IndexedSlices(tf.zeros([2, 3]), tf.constant([0, 1, 2]), [10, 3])
        assert tf.convert_to_tensor_or_indexed_slices(small) is small
        with pytest.raises(ValueError, match="float64"):
            tf.convert_to_tensor_or_indexed_slices(small, dtype=tf.float64)


def test_gradient_rules_for_slices():
    table = np.arange(12.0).reshape(6, 2)
    with tf.Graph().as_default():
        emb = tf.Variable(table, name="emb")
        through_read = tf.gather(emb.value(), [4, 1, 4])   # Identity passes slices on
        (g_read,) = tf.gradients(tf.reduce_sum(through_read), emb)
        assert isinstance(g_read, tf.IndexedSlices)
        (g_identity,) = tf.gradients(tf.reduce_sum(tf.gather(tf.identity(emb), [0])), emb)
        assert isinstance(g_identity, tf.IndexedSlices)
        # a consumer without slice support gets the dense value: square(gather(2 * emb))
        doubled = tf.gather(emb * 2.0, [1, 1])
        (g_dense,) = tf.gradients(tf.reduce_sum(tf.square(doubled)), emb)
        assert isinstance(g_dense, tf.Tensor)

        def body(i, acc):   # a gather inside a loop: its gradient stays dense there
            return i + 1, acc + tf.reduce_sum(tf.gather(emb, [i, i]))

        _, total = tf.while_loop(lambda i, acc: i < 3, body,
                                 [tf.constant(0), tf.constant(0.0, tf.float64)])
        (g_loop,) = tf.gradients(total, emb)
        with tf.Session(config=OFF) as sess:
            sess.run(emb.initializer)
            read_v, dense_v, loop_v = sess.run([tf.convert_to_tensor(g_read), g_dense, g_loop])
    np.testing.assert_array_equal(read_v, [[0, 0], [1, 1], [0, 0], [0, 0], [2, 2], [0, 0]])
    expected = np.zeros_like(table)
    expected[1] = 2 * 2 * (2 * 2 * table[1])   # d/de of 2 * (2e)^2, looked up twice
    np.testing.assert_allclose(dense_v, expected)
    np.testing.assert_array_equal(loop_v, [[2, 2], [2, 2], [2, 2], [0, 0], [0, 0], [0, 0]])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_lookups_give_each_shard_its_slices(strategy):
    """Three shards of a 7-row table (sizes 3, 2, 2): each shard's gradient is IndexedSlices,
    dense it is the table's gradient split into the shards; an id past the table fails."""
    full = np.arange(14.0).reshape(7, 2)
    ids = np.array([6, 0, 3, 3, 5])
    if strategy == "mod":
        parts = [full[p::3] for p in range(3)]
    else:
        parts = [full[:3], full[3:5], full[5:]]
    with tf.Graph().as_default():
        shards = [tf.Variable(part, name=f"shard{k}") for k, part in enumerate(parts)]
        ids_in = tf.placeholder(tf.int32, [None], name="ids")
        rows = tf.nn.embedding_lookup(shards, ids_in, partition_strategy=strategy)
        weights = np.arange(10.0).reshape(5, 2)
        grads = tf.gradients(tf.reduce_sum(rows * weights), shards)
        assert all(isinstance(g, tf.IndexedSlices) for g in grads)
        with tf.Session(config=OFF) as sess:
            sess.run(tf.global_variables_initializer())
            looked_up, *dense = sess.run([rows] + [tf.convert_to_tensor(g) for g in grads],
                                         {ids_in: ids})
            with pytest.raises(InvalidArgumentError, match=r"= 7 is not in \[0, 7\)"):
                sess.run(rows, {ids_in: [1, 7]})
    np.testing.assert_array_equal(looked_up, full[ids])
    table_grad = np.zeros_like(full)
    np.add.at(table_grad, ids, weights)
    expected = [table_grad[p::3] for p in range(3)] if strategy == "mod" else \
        [table_grad[:3], table_grad[3:5], table_grad[5:]]
    for got, want in zip(dense, expected):
        np.testing.assert_array_equal(got, want)


def test_lookup_gradients_match_finite_differences():
    rng = np.random.default_rng(11)
    table = rng.standard_normal((5, 3))
    ids = np.array([4, 0, 4, 2])
    with tf.Graph().as_default():
        t = tf.placeholder(tf.float64, [5, 3], name="t")
        rows = tf.nn.embedding_lookup(t, ids)
        w = tf.constant(rng.standard_normal((3, 2)))
        loss = tf.reduce_sum(tf.tanh(tf.matmul(rows, w))) + \
            tf.reduce_sum(tf.square(tf.gather(t, [1, 4])))
        (grad,) = tf.gradients(loss, t)
        assert isinstance(grad, tf.IndexedSlices)
        dense = tf.convert_to_tensor(grad)
        with tf.Session(config=OFF) as sess:
            analytic = sess.run(dense, {t: table})
            numeric = np.zeros_like(table)
            for idx in np.ndindex(table.shape):
                plus, minus = table.copy(), table.copy()
                plus[idx] += 1e-6
                minus[idx] -= 1e-6
                numeric[idx] = (sess.run(loss, {t: plus}) - sess.run(loss, {t: minus})) / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)


# --- optimizers with IndexedSlices ----------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: tf.train.GradientDescentOptimizer(0.5),
    lambda: tf.train.MomentumOptimizer(0.5, 0.9),
    lambda: tf.train.AdagradOptimizer(0.5),
    lambda: tf.train.AdamOptimizer(0.5),
    lambda: tf.train.RMSPropOptimizer(0.5),
], ids=["sgd", "momentum", "adagrad", "adam", "rmsprop"])
def test_apply_gradients_takes_slices_and_sums_repeated_rows(make):
    """A first step by slices with a repeated index equals the step by their dense value
    (every optimizer's first step on a row depends only on that row's summed gradient)."""
    table = np.arange(8.0).reshape(4, 2)
    rows = np.array([[1.0, -1.0], [0.5, 2.0], [3.0, 1.0]])
    ids = np.array([2, 0, 2])
    dense = np.zeros_like(table)
    np.add.at(dense, ids, rows)
    results = []
    for grad_of in (lambda: tf.IndexedSlices(tf.constant(rows), tf.constant(ids), [4, 2]),
                    lambda: tf.constant(dense)):
        with tf.Graph().as_default():
            var = tf.Variable(table, name="var")
            step = make().apply_gradients([(grad_of(), var)])
            with tf.Session(config=OFF) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(step)
                results.append(sess.run(var))
    np.testing.assert_allclose(results[0][[0, 2]], results[1][[0, 2]], rtol=1e-12)
    np.testing.assert_array_equal(results[0][[1, 3]], table[[1, 3]])  # rows without slices


def test_compute_gradients_and_minimize_keep_the_slices():
    with tf.Graph().as_default():
        emb = tf.Variable(np.ones((5, 2)), name="emb")
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, [1, 3]))
        optimizer = tf.train.MomentumOptimizer(0.1, 0.5)
        [(grad, var)] = optimizer.compute_gradients(loss)
        assert isinstance(grad, tf.IndexedSlices) and var is emb
        step = optimizer.minimize(loss)
        types = {op.type for op in tf.get_default_graph().get_operations()}
        assert {"Unique", "SparseApplyMomentum"} <= types and "ApplyMomentum" not in types
        with tf.Session(config=OFF) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            np.testing.assert_allclose(sess.run(emb)[:, 0], [1, 0.9, 1, 0.9, 1])


# --- scatter updates -------------------------------------------------------------------------


def test_compiled_row_scatters_equal_the_reference_kernels(compiled_calls):
    """ScatterAdd/ScatterSub/ScatterUpdate with repeated rows, compiled by the CPU target."""
    start = np.arange(15.0, dtype=np.float32).reshape(5, 3)
    updates = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    ids = np.array([4, 1, 4, 4], np.int32)
    got = {}
    for config in (OFF, ALWAYS):
        with tf.Graph().as_default():
            v = tf.Variable(start, name="v")
            u = tf.placeholder(tf.float32, [4, 3], name="u")
            i = tf.placeholder(tf.int32, [4], name="i")
            for fn in (tf.scatter_add, tf.scatter_sub, tf.scatter_update):
                with tf.Session(config=config) as sess:
                    sess.run(v.initializer)
                    out = sess.run(fn(v, i + 0, u * 2.0), {u: updates, i: ids})
                    got.setdefault(fn.__name__, []).append(out)
    assert len(compiled_calls) >= 3
    for name, (reference, compiled) in got.items():
        np.testing.assert_allclose(compiled, reference, rtol=1e-6, err_msg=name)
    expected = start.copy()
    np.add.at(expected, ids, updates * 2.0)
    np.testing.assert_allclose(got["scatter_add"][1], expected, rtol=1e-6)


def test_scatter_errors():
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros((3, 2), np.float32), name="v")
        with pytest.raises(TypeError, match="ScatterAdd updates a variable in place"):
            tf.scatter_add(tf.identity(v), [0], [[1.0, 1.0]])
        with pytest.raises(ValueError, match="updates must have shape"):
            tf.scatter_add(v, [0], [[1.0, 1.0, 1.0]])
        with pytest.raises(TypeError, match="float64"):
            tf.scatter_sub(v, [0], tf.constant([[1.0, 1.0]], tf.float64))
        with pytest.raises(TypeError, match="indices"):
            tf.scatter_update(v, tf.constant([0.0]), [[1.0, 1.0]])
        far = tf.scatter_update(v, tf.placeholder(tf.int32, [None], name="i"), 1.0)
        with tf.Session(config=OFF) as sess:
            sess.run(v.initializer)
            with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = 3 is not in \[0, 3\)"):
                sess.run(far, {"i:0": [0, 3]})
            np.testing.assert_array_equal(sess.run(v), np.zeros((3, 2)))   # unchanged
