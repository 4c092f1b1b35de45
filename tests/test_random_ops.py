"""Random ops: TensorFlow 1.x seed rules, per-session sequences, distributions, shapes."""

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops import random_ops
from flowjit.ops.conversion import static_value


def _two_fresh_sessions(t, runs=1):
    out = []
    for _ in range(2):
        with tf.Session() as sess:
            out.append([sess.run(t) for _ in range(runs)])
    return out


# --- seeds --------------------------------------------------------------------------------------


def test_get_seed_rules():
    assert tf.get_seed(None) == (None, None)
    assert tf.get_seed(5) == (random_ops.DEFAULT_GRAPH_SEED, 5)
    tf.set_random_seed(3)
    tf.constant(1.0)
    tf.constant(2.0)
    assert tf.get_seed(None) == (3, 2)  # the number of ops already in the graph
    assert tf.get_seed(7) == (3, 7)
    tf.set_random_seed(0)
    assert tf.get_seed(0) == (0, 2**31 - 1)  # (0, 0) would mean "nondeterministic"
    tf.set_random_seed(None)
    assert tf.get_seed(None) == (None, None)


def test_set_random_seed_sets_default_graph_seed():
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(42)
    assert g.seed == 42
    assert tf.get_default_graph().seed is None


def test_seed_attrs_are_stored_on_the_op():
    x = tf.random_normal([2], seed=9, name="x")
    op = tf.get_default_graph().get_operation_by_name("x/RandomStandardNormal")
    assert (op.get_attr("seed"), op.get_attr("seed2")) == (random_ops.DEFAULT_GRAPH_SEED, 9)
    assert x.op.name == "x"
    y = tf.random_uniform([2])
    rop = tf.get_default_graph().get_operation_by_name("random_uniform/RandomUniform")
    assert (rop.get_attr("seed"), rop.get_attr("seed2")) == (0, 0)
    assert y.op.name == "random_uniform"


@pytest.mark.parametrize("graph_seed,op_seed", [(1234, None), (None, 77), (1234, 77)])
def test_seeded_ops_repeat_in_every_new_session(graph_seed, op_seed):
    if graph_seed is not None:
        tf.set_random_seed(graph_seed)
    t = tf.random_normal([50], seed=op_seed)
    first, second = _two_fresh_sessions(t, runs=3)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    # Successive runs in one session continue the sequence.
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[1], first[2])


def test_rebuilding_the_same_seeded_graph_repeats_values():
    values = []
    for _ in range(2):
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(5)
            a = tf.random_uniform([20])
            b = tf.truncated_normal([20])
            with tf.Session() as sess:
                values.append(sess.run([a, b]))
    np.testing.assert_array_equal(values[0][0], values[1][0])
    np.testing.assert_array_equal(values[0][1], values[1][1])


def test_unseeded_ops_differ_between_sessions():
    t = tf.random_normal([50])
    first, second = _two_fresh_sessions(t)
    assert not np.array_equal(first[0], second[0])


def test_different_ops_with_one_graph_seed_differ():
    tf.set_random_seed(11)
    a = tf.random_normal([50])
    b = tf.random_normal([50])
    with tf.Session() as sess:
        va, vb = sess.run([a, b])
    assert not np.array_equal(va, vb)


def test_same_op_seed_gives_same_values_in_one_run():
    a = tf.random_uniform([30], seed=3)
    b = tf.random_uniform([30], seed=3)
    with tf.Session() as sess:
        va, vb = sess.run([a, b])
    np.testing.assert_array_equal(va, vb)


def test_random_ops_are_stateful_and_never_folded():
    t = tf.random_uniform([3], seed=1)
    raw = tf.get_default_graph().get_operation_by_name("random_uniform/RandomUniform")
    assert raw.op_def.is_stateful
    assert static_value(raw.outputs[0]) is None
    assert static_value(t) is None


# --- distributions --------------------------------------------------------------------------


def test_normal_statistics():
    x = tf.random_normal([100_000], mean=3.0, stddev=2.0, seed=1)
    v = tf.Session().run(x)
    assert v.dtype == np.float32 and v.shape == (100_000,)
    assert abs(v.mean() - 3.0) < 0.05
    assert abs(v.std() - 2.0) < 0.05


def test_truncated_normal_bounds_and_statistics():
    x = tf.truncated_normal([100_000], mean=-1.0, stddev=0.5, seed=2)
    v = tf.Session().run(x)
    assert np.all(np.abs(v + 1.0) <= 2 * 0.5 + 1e-6)
    assert abs(v.mean() + 1.0) < 0.02
    # A standard normal truncated to [-2, 2] has standard deviation 0.8796.
    assert abs(v.std() - 0.5 * 0.8796) < 0.01


def test_uniform_range_and_statistics():
    x = tf.random_uniform([100_000], minval=-2.0, maxval=3.0, seed=3)
    v = tf.Session().run(x)
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.05
    assert abs(v.std() - 5 / np.sqrt(12)) < 0.05


def test_uniform_default_range_is_unit_interval():
    v = tf.Session().run(tf.random_uniform([10_000], dtype=tf.float64, seed=4))
    assert v.dtype == np.float64
    assert v.min() >= 0.0 and v.max() < 1.0


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_uniform_int_range_and_coverage(dtype):
    x = tf.random_uniform([20_000], minval=-3, maxval=4, dtype=dtype, seed=5)
    assert x.op.type == "RandomUniformInt" and x.dtype == dtype
    v = tf.Session().run(x)
    assert v.dtype == dtype.np_dtype
    assert set(np.unique(v)) == set(range(-3, 4))
    counts = np.bincount(v + 3)
    assert counts.min() > 20_000 / 7 * 0.9


def test_uniform_int_needs_maxval():
    with pytest.raises(ValueError, match="maxval"):
        tf.random_uniform([3], dtype=tf.int32)


def test_uniform_int_empty_range_fails_at_run_time():
    x = tf.random_uniform([3], minval=5, maxval=5, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="minval < maxval"):
        tf.Session().run(x)


@pytest.mark.parametrize("fn", [tf.random_normal, tf.truncated_normal, tf.random_uniform])
@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_float_dtypes(fn, dtype):
    x = fn([1000, 3], dtype=dtype, seed=6)
    assert x.dtype == dtype and x.shape.as_list() == [1000, 3]
    v = tf.Session().run(x)
    assert v.dtype == dtype.np_dtype and v.shape == (1000, 3)
    assert np.all(np.isfinite(v))
    if fn is tf.random_uniform:
        assert v.min() >= 0 and v.max() < 1
    if fn is tf.truncated_normal:
        assert np.abs(v).max() <= 2


def test_non_float_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="floating"):
        tf.random_normal([2], dtype=tf.int32)


def test_mean_and_stddev_may_be_tensors():
    mean = tf.placeholder(tf.float32, [3])
    x = tf.random_normal([2000, 3], mean=mean, stddev=0.0, seed=1)
    v = tf.Session().run(x, {mean: [1.0, -2.0, 5.0]})
    np.testing.assert_array_equal(v, np.broadcast_to([1.0, -2.0, 5.0], (2000, 3)))


# --- shapes ---------------------------------------------------------------------------------


def test_shape_from_placeholder_is_known_at_run_time():
    s = tf.placeholder(tf.int32, [2])
    x = tf.random_normal(s, seed=1)
    assert x.shape.as_list() == [None, None]
    with tf.Session() as sess:
        assert sess.run(x, {s: [3, 5]}).shape == (3, 5)
        assert sess.run(x, {s: [0, 2]}).shape == (0, 2)


def test_shape_of_unknown_rank():
    s = tf.placeholder(tf.int32)
    x = tf.random_uniform(s, maxval=10, dtype=tf.int64)
    assert x.shape.ndims is None
    assert tf.Session().run(x, {s: [2, 1, 4]}).shape == (2, 1, 4)


def test_shape_as_tensorshape_and_int64_tensor():
    x = tf.truncated_normal(tf.TensorShape([4, 2]))
    y = tf.random_normal(np.array([3], dtype=np.int64))
    assert x.shape.as_list() == [4, 2] and y.shape.as_list() == [3]
    with tf.Session() as sess:
        assert sess.run(x).shape == (4, 2) and sess.run(y).shape == (3,)


def test_negative_shape_fails_at_run_time():
    s = tf.placeholder(tf.int32, [1])
    x = tf.random_normal(s)
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        tf.Session().run(x, {s: [-2]})


def test_shape_must_be_a_vector():
    with pytest.raises(ValueError, match="rank 1"):
        tf.random_normal(tf.constant([[2, 3]]))


# --- shuffle and multinomial ----------------------------------------------------------------


def test_random_shuffle_permutes_first_dimension():
    value = np.arange(40).reshape(20, 2)
    x = tf.random_shuffle(value, seed=3)
    with tf.Session() as sess:
        a, b = sess.run(x), sess.run(x)
    for v in (a, b):
        np.testing.assert_array_equal(np.sort(v[:, 0]), value[:, 0])
        np.testing.assert_array_equal(v[:, 1], v[:, 0] + 1)  # rows stay whole
    assert not np.array_equal(a, b)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(x), a)


def test_multinomial_frequencies():
    with np.errstate(divide="ignore"):
        logits = np.log([[0.2, 0.8, 0.0], [1.0, 0.0, 0.0]])
    x = tf.multinomial(logits.astype(np.float32), 20_000, seed=4)
    assert x.dtype == tf.int64 and x.shape.as_list() == [2, 20_000]
    v = tf.Session().run(x)
    assert not np.any(v[0] == 2)  # zero probability is never drawn
    assert abs((v[0] == 1).mean() - 0.8) < 0.02
    assert np.all(v[1] == 0)
