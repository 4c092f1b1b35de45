"""Reductions and ArgMax/ArgMin: TensorFlow 1.x semantics the generic samples do not pin down.

Integer means truncate toward zero (summing in 64 bits), empty reductions give identities,
axes are validated at construction (ValueError) or run time (InvalidArgumentError), the
deprecated argument names work, static shapes are exact where TensorFlow's are, and
reduce_logsumexp / count_nonzero agree with NumPy.  Literal expectations marked "TF" were
recorded from TensorFlow 2.21's compat.v1 graph mode.
"""

import numpy as np
import pytest

import flowjit as tf


def run(*fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed_dict)


# --- integer means, dtypes, empty reductions -------------------------------------------------


def test_integer_mean_truncates_toward_zero():
    got = run(tf.reduce_mean([-3, 1, 1]), tf.reduce_mean([[-7, 0]], axis=1),
              tf.reduce_mean(tf.constant([-100, -100, 1], tf.int8)),
              tf.reduce_mean(tf.constant([255, 255, 1], tf.uint8)))
    assert got[0] == 0 and got[0].dtype == np.int32  # TF: 0 (floor would give -1)
    np.testing.assert_array_equal(got[1], [-3])       # TF: [-3] (-3.5 truncated)
    assert got[2] == -66 and got[2].dtype == np.int8  # TF: -66, no int8 wrap-around
    assert got[3] == 170 and got[3].dtype == np.uint8  # TF: 170


def test_integer_mean_sums_in_64_bits_but_sum_keeps_dtype():
    big = tf.constant([2**31 - 1, 2**31 - 1], tf.int32)
    mean, total = run(tf.reduce_mean(big), tf.reduce_sum(big))
    assert mean == 2**31 - 1  # TF: 2147483647
    assert total == -2 and total.dtype == np.int32  # TF: wraps to -2
    i8 = tf.constant([100, 100], tf.int8)
    assert run(tf.reduce_sum(i8))[0] == -56  # TF: -56
    assert run(tf.reduce_prod(i8))[0] == 16  # TF: 16


def test_empty_reductions_give_identities():
    f = tf.zeros([2, 0])
    i32 = tf.zeros([2, 0], tf.int32)
    i64 = tf.zeros([2, 0], tf.int64)
    got = run(tf.reduce_max(f, 1), tf.reduce_min(f, 1), tf.reduce_max(i32, 1),
              tf.reduce_min(i64, 1), tf.reduce_sum(f, 1), tf.reduce_prod(f, 1),
              tf.reduce_mean(f, 1), tf.reduce_mean(i32, 1),
              tf.reduce_all(tf.zeros([2, 0], tf.bool), 1),
              tf.reduce_any(tf.zeros([2, 0], tf.bool), 1))
    np.testing.assert_array_equal(got[0], [-np.inf, -np.inf])
    np.testing.assert_array_equal(got[1], [np.inf, np.inf])
    np.testing.assert_array_equal(got[2], [np.iinfo(np.int32).min] * 2)
    np.testing.assert_array_equal(got[3], [np.iinfo(np.int64).max] * 2)
    np.testing.assert_array_equal(got[4], [0, 0])
    np.testing.assert_array_equal(got[5], [1, 1])
    assert np.isnan(got[6]).all()
    np.testing.assert_array_equal(got[7], [0, 0])
    np.testing.assert_array_equal(got[8], [True, True])
    np.testing.assert_array_equal(got[9], [False, False])


def test_max_propagates_nan():
    assert np.isnan(run(tf.reduce_max([np.nan, 1.0]))[0])


@pytest.mark.parametrize("fn, dtype", [(tf.reduce_sum, tf.bool), (tf.reduce_mean, tf.bool),
                                       (tf.reduce_max, tf.complex64),
                                       (tf.reduce_any, tf.float32), (tf.reduce_all, tf.int32)])
def test_dtype_restrictions(fn, dtype):
    with pytest.raises(TypeError, match="DataType"):
        fn(tf.zeros([2], dtype))


# --- axes ------------------------------------------------------------------------------------


def test_out_of_range_axis_is_a_value_error_naming_the_rank():
    with pytest.raises(ValueError, match="Invalid reduction dimension 2 for input with 2"):
        tf.reduce_sum(tf.zeros([2, 3]), axis=2)
    with pytest.raises(ValueError, match="-3"):
        tf.reduce_max(tf.zeros([2, 3]), axis=[0, -3])


def test_out_of_range_fed_axis_is_an_invalid_argument_error():
    axis = tf.placeholder(tf.int32)
    total = tf.reduce_sum(tf.zeros([2, 3]), axis=axis)
    assert total.shape.ndims is None
    np.testing.assert_array_equal(run(total, feed_dict={axis: [-1]})[0], [0, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid reduction dimension 5"):
        run(total, feed_dict={axis: 5})


def test_static_shapes():
    p = tf.placeholder(tf.float32, [None, 3, 4])
    assert tf.reduce_sum(p, axis=[1, -1]).shape.as_list() == [None]
    assert tf.reduce_sum(p, axis=[1, 1, -2]).shape.as_list() == [None, 4]  # repeats allowed
    assert tf.reduce_mean(p, axis=-1, keepdims=True).shape.as_list() == [None, 3, 1]
    assert tf.reduce_max(p).shape.as_list() == []
    assert tf.reduce_max(p, axis=[]).shape.as_list() == [None, 3, 4]
    fed = tf.placeholder(tf.int32, [2])
    assert tf.reduce_sum(p, axis=fed, keepdims=True).shape.as_list() == [None] * 3
    assert tf.reduce_sum(p, axis=fed).shape.ndims is None
    assert tf.reduce_sum(tf.placeholder(tf.float32), axis=0).shape.ndims is None


def test_axis_none_on_unknown_rank_reduces_everything():
    x = tf.placeholder(tf.float32)
    total = tf.reduce_sum(x)
    value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert run(total, feed_dict={x: value})[0] == value.sum()
    kept = tf.reduce_max(x, keepdims=True)
    assert run(kept, feed_dict={x: value})[0].shape == (1, 1, 1)


def test_axis_as_int64_tensor_and_numpy_values():
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    got = run(tf.reduce_sum(x, axis=tf.constant([1], tf.int64)),
              tf.reduce_sum(x, axis=np.int64(0)), tf.reduce_sum(x, axis=(0, 1)))
    np.testing.assert_array_equal(got[0], [3, 12])
    np.testing.assert_array_equal(got[1], [3, 5, 7])
    assert got[2] == 15
    with pytest.raises(TypeError):
        tf.reduce_sum(x, axis=tf.constant([1.0]))
    with pytest.raises(TypeError):
        tf.reduce_sum(x, axis=0.5)


def test_deprecated_argument_names():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    got = run(tf.reduce_sum(x, reduction_indices=[1], keep_dims=True))[0]
    np.testing.assert_array_equal(got, [[3.0], [7.0]])
    with pytest.raises(ValueError, match="both"):
        tf.reduce_sum(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="both"):
        tf.reduce_sum(x, keepdims=True, keep_dims=True)


def test_graph_structure_matches_tensorflow():
    total = tf.reduce_sum(tf.zeros([2, 3]), axis=1, name="total")
    op = total.op
    assert op.type == "Sum" and op.name == "total"
    assert op.get_attr("keep_dims") is False
    assert op.inputs[1].dtype == tf.int32
    assert op.inputs[1].op.name == "total/reduction_indices"


def test_variables_and_python_lists_are_inputs():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(tf.reduce_sum(v)) == 10.0
    assert run(tf.reduce_prod([[1, 2], [3, 4]]))[0] == 24


# --- ArgMax / ArgMin -------------------------------------------------------------------------


def test_argmax_output_type_and_default_axis():
    x = tf.constant([[1, 5, 2], [7, 0, 7]])
    default = tf.argmax(x)
    assert default.dtype == tf.int64 and default.op.type == "ArgMax"
    narrow = tf.argmin(x, axis=1, output_type=tf.int32)
    assert narrow.dtype == tf.int32 and narrow.shape.as_list() == [2]
    got = run(default, narrow, tf.argmax(x, dimension=-1))
    np.testing.assert_array_equal(got[0], [1, 0, 1])  # axis None means 0 in TF1
    assert got[0].dtype == np.int64
    np.testing.assert_array_equal(got[1], [0, 1])
    assert got[1].dtype == np.int32
    np.testing.assert_array_equal(got[2], [1, 0])  # ties: the first index


def test_argmax_skips_nan_like_tensorflow():
    nan = np.nan
    got = run(tf.argmax([nan, 1.0, 3.0]), tf.argmax([nan, nan]),
              tf.argmax([1.0, nan, -np.inf]), tf.argmin([1.0, nan, -2.0]))
    assert [int(g) for g in got] == [2, 0, 0, 2]  # TF: 2, 0, 0, 2


def test_argmax_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Reduction axis 0 is empty"):
        run(tf.argmax(tf.zeros([0, 3]), 0))
    np.testing.assert_array_equal(run(tf.argmax(tf.zeros([0, 3]), 1))[0], np.zeros([0]))
    with pytest.raises(ValueError, match="range"):
        tf.argmax(tf.zeros([2, 2]), axis=2)
    with pytest.raises(ValueError, match="scalar"):
        tf.argmax(tf.constant(3.0))
    with pytest.raises(TypeError):
        tf.argmax(tf.zeros([2, 2]), axis=[1])
    with pytest.raises(TypeError):
        tf.argmax(tf.zeros([2], tf.complex64))
    with pytest.raises(TypeError):
        tf.argmax(tf.zeros([2]), output_type=tf.float32)
    dim = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="range"):
        run(tf.argmax(tf.zeros([2, 2]), axis=dim), feed_dict={dim: 3})


# --- compositions ----------------------------------------------------------------------------


def test_reduce_logsumexp_is_stable():
    x = np.array([[1e4, 1e4], [-np.inf, -np.inf], [0.0, np.log(3.0)]], np.float32)
    got = run(tf.reduce_logsumexp(x, axis=1), tf.reduce_logsumexp(x, axis=1, keepdims=True),
              tf.reduce_logsumexp(x[2]))
    np.testing.assert_allclose(got[0], [1e4 + np.log(2.0), -np.inf, np.log(4.0)], rtol=1e-6)
    assert got[0].dtype == np.float32
    assert got[1].shape == (3, 1)
    np.testing.assert_allclose(got[2], np.log(4.0), rtol=1e-6)


def test_count_nonzero():
    got = run(tf.count_nonzero([[0, 1, 2], [0, 0, 3]], axis=1),
              tf.count_nonzero([[True, False]]),
              tf.count_nonzero([0.0, 0.5], dtype=tf.int32, keepdims=True))
    np.testing.assert_array_equal(got[0], [2, 1])  # TF: [2, 1]
    assert got[0].dtype == np.int64
    assert got[1] == 1
    np.testing.assert_array_equal(got[2], [1])
    assert got[2].dtype == np.int32
