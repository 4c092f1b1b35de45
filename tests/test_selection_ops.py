"""tf.nn.top_k, tf.nn.in_top_k and tf.nn.embedding_lookup (ops/selection_ops.py) against
NumPy references written from TensorFlow's definitions; gradients by finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit as tf

CONFIG = tf.ConfigProto(jit="never")
JIT = tf.ConfigProto(jit="always")


def _top_k_reference(x, k):
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float64, np.int32]))
def test_top_k_matches_a_stable_descending_sort(shape, data, dtype):
    # few distinct values, so ties are common
    x = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape)))), dtype).reshape(shape)
    k = data.draw(st.integers(0, shape[-1]))
    with tf.Graph().as_default():
        values, indices = tf.nn.top_k(tf.constant(x), k)
        got_v, got_i = tf.Session(config=CONFIG).run([values, indices])
    want_v, want_i = _top_k_reference(x, k)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_v, want_v)
    assert got_i.dtype == np.int32 and got_v.dtype == x.dtype


def test_top_k_gradient_flows_to_the_chosen_entries():
    x_value = np.array([[0.3, -1.2, 2.5, 0.7], [1.1, 0.4, -0.2, 0.9]])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2, 4])
        values, _ = tf.nn.top_k(x, 2)
        loss = tf.reduce_sum(values * tf.constant([[1.0, 3.0]], tf.float64))
        (grad,) = tf.gradients(loss, x)
        got = tf.Session(config=CONFIG).run(grad, {x: x_value})
    expected = np.zeros_like(x_value)
    expected[0, 2], expected[0, 3], expected[1, 0], expected[1, 3] = 1.0, 3.0, 1.0, 3.0
    np.testing.assert_array_equal(got, expected)


def test_top_k_errors_name_the_input():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="k = 5 must be in \\[0, 3\\]"):
            tf.nn.top_k(tf.zeros([2, 3]), 5)
        with pytest.raises(ValueError, match="rank >= 1"):
            tf.nn.top_k(tf.constant(1.0))


def _in_top_k_reference(p, t, k):
    target = p[np.arange(len(t)), t]
    larger = (p > target[:, None]).sum(axis=1)
    return (larger < k) & np.isfinite(target)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(batch=st.integers(1, 6), classes=st.integers(1, 5), k=st.integers(0, 6),
       data=st.data())
def test_in_top_k_counts_ties_at_the_boundary_as_in(batch, classes, k, data):
    p = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, np.nan, np.inf]),
                                    min_size=batch * classes, max_size=batch * classes)),
                 np.float32).reshape(batch, classes)
    t = np.array(data.draw(st.lists(st.integers(0, classes - 1), min_size=batch,
                                    max_size=batch)), np.int32)
    with tf.Graph().as_default():
        got = tf.Session(config=CONFIG).run(tf.nn.in_top_k(tf.constant(p), tf.constant(t), k))
    np.testing.assert_array_equal(got, _in_top_k_reference(p, t, k))


def _shards_reference(table, n, strategy):
    """The shards TensorFlow's strategies make of `table` (rows = ids)."""
    if strategy == "mod":
        return [table[p::n] for p in range(n)]
    sizes = [len(table) // n + (p < len(table) % n) for p in range(n)]
    return np.split(table, np.cumsum(sizes)[:-1])


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_embedding_lookup_over_shards_gives_the_table_rows(strategy, n):
    table = np.arange(7 * 3, dtype=np.float64).reshape(7, 3)
    ids = np.array([[6, 0, 3], [1, 1, 5]])
    with tf.Graph().as_default():
        shards = [tf.constant(s) for s in _shards_reference(table, n, strategy)]
        out = tf.nn.embedding_lookup(shards if n > 1 else shards[0], ids,
                                     partition_strategy=strategy)
        got = tf.Session(config=CONFIG).run(out)
    np.testing.assert_array_equal(got, table[ids])


def test_embedding_lookup_max_norm_and_gradient_into_a_variable():
    table = np.array([[3.0, 4.0], [0.3, 0.4], [1.0, 0.0]])
    ids = np.array([0, 2, 0])
    with tf.Graph().as_default():
        params = tf.Variable(table)
        clipped = tf.nn.embedding_lookup(params, ids, max_norm=1.0)
        loss = tf.reduce_sum(tf.nn.embedding_lookup(params, ids) *
                             tf.constant([1.0, 2.0], tf.float64))
        (grad,) = tf.gradients(loss, params)
        assert isinstance(grad, tf.IndexedSlices)   # the rows looked up, not the table
        grad = tf.convert_to_tensor(grad)
        with tf.Session(config=JIT) as sess:
            sess.run(tf.global_variables_initializer())
            got_clipped, got_grad = sess.run([clipped, grad])
    rows = table[ids]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    np.testing.assert_allclose(got_clipped, np.where(norms > 1.0, rows / norms, rows))
    np.testing.assert_array_equal(got_grad, [[2.0, 4.0], [0.0, 0.0], [1.0, 2.0]])


def test_embedding_lookup_bad_strategy():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="partition_strategy"):
            tf.nn.embedding_lookup([tf.zeros([2, 2])] * 2, [0], partition_strategy="hash")
