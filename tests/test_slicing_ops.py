"""Slicing, strided slicing, gathers and `tensor[key]`: differential tests against NumPy
indexing, static shape inference with unknown values, and the error paths."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.ops import slicing_ops
from samples.slicing import python_index
from samples.strategies import arrays, shapes

_SETTINGS = settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


def _strided_slices():
    return [op for op in tf.get_default_graph().get_operations() if op.type == "StridedSlice"]


# --- tensor[key] against NumPy --------------------------------------------------------------


@_SETTINGS
@given(st.data())
def test_getitem_equals_numpy_basic_indexing(data):
    a = data.draw(arrays(np.int32, data.draw(shapes(min_side=1) | shapes())))
    key = data.draw(python_index(a.shape))
    with tf.Graph().as_default():
        t = tf.constant(a)[key]
        assert len(_strided_slices()) == 1
        assert t.shape.as_list() == list(a[key].shape)  # exact static shape
        p = tf.placeholder(tf.int32, [None] * a.ndim)
        u = p[key]
        assert u.shape.ndims == a[key].ndim
        got, got_fed = _run([t, u], {p: a})
    np.testing.assert_array_equal(got, a[key])
    assert got.shape == a[key].shape and got.dtype == np.int32
    np.testing.assert_array_equal(got_fed, a[key])


@_SETTINGS
@given(st.data())
def test_getitem_with_scalar_tensor_indices(data):
    a = data.draw(arrays(np.float64, data.draw(shapes(min_side=1))))
    key = data.draw(python_index(a.shape))
    entries = key if isinstance(key, tuple) else (key,)
    dtype = data.draw(st.sampled_from([tf.int32, tf.int64]))
    with tf.Graph().as_default():
        feeds, tensor_key = {}, []
        for e in entries:  # ints and slice bounds become fed scalar tensors, at random
            if isinstance(e, int) and data.draw(st.booleans()):
                p = tf.placeholder(dtype, [])
                feeds[p] = e
                e = p
            elif isinstance(e, slice) and e.start is not None and data.draw(st.booleans()):
                e = slice(tf.constant(e.start, dtype), e.stop, e.step)
            tensor_key.append(e)
        t = tf.constant(a)[tuple(tensor_key)]
        assert len(_strided_slices()) == 1
        expected = a[tuple(entries)]
        assert t.shape.is_compatible_with(expected.shape)
        assert t.shape.ndims == expected.ndim
        np.testing.assert_array_equal(_run(t, feeds), expected)


# Keys whose result depends on the finer points of clamping and negative steps.
_TRICKY_KEYS = [
    np.s_[::-1], np.s_[::-2], np.s_[5::-2], np.s_[:-7:-1], np.s_[-1:-8:-1], np.s_[-100:100],
    np.s_[100:-100:-1], np.s_[3:1], np.s_[3:1:-1], np.s_[-2], np.s_[..., ::-3], np.s_[None],
    np.s_[..., None], np.s_[None, ..., None, 2], np.s_[1:, None, ::-1], np.s_[()],
    np.s_[..., 0, ::-1], np.s_[-1, -1], np.s_[:, 0:0], np.s_[::3, 4::-4],
]


@pytest.mark.parametrize("key", _TRICKY_KEYS, ids=repr)
def test_getitem_tricky_keys(key):
    a = np.arange(6 * 5).reshape(6, 5)
    t = tf.constant(a)[key]
    assert t.shape.as_list() == list(a[key].shape)
    np.testing.assert_array_equal(_run(t), a[key])


def test_getitem_builds_one_strided_slice_with_tensorflow_masks():
    x = tf.placeholder(tf.float32, [4, 5, 6])
    y = x[1, ..., None, ::-2]
    op = y.op
    assert op.type == "StridedSlice" and op.name == "strided_slice"
    assert [t.op.name for t in op.inputs[1:]] == ["strided_slice/stack", "strided_slice/stack_1",
                                                  "strided_slice/stack_2"]
    assert op.inputs[1].dtype is tf.int32
    assert (op.get_attr("shrink_axis_mask"), op.get_attr("ellipsis_mask"),
            op.get_attr("new_axis_mask"), op.get_attr("begin_mask"),
            op.get_attr("end_mask")) == (1, 2, 4, 8, 8)
    assert y.shape.as_list() == [5, 1, 3]


def test_getitem_on_variable_and_int64_index():
    v = tf.Variable(np.arange(12.0).reshape(3, 4))
    i = tf.constant(2, tf.int64)
    y = v[i, 1:]
    assert y.op.inputs[1].dtype is tf.int64
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(y), [9.0, 10.0, 11.0])


@pytest.mark.parametrize("key, hint", [
    ([0, 1], "tf.gather"), (np.array([1, 0]), "tf.gather"), (True, "boolean_mask"),
    ((slice(None), [1]), "tf.gather"), (1.5, "float"), ("a", "str"),
])
def test_getitem_rejects_advanced_indexing(key, hint):
    x = tf.constant(np.zeros((3, 3)))
    with pytest.raises(TypeError, match=hint):
        x[key]


def test_getitem_rejects_bool_float_and_nonscalar_tensors():
    x = tf.constant(np.zeros((3, 3)))
    with pytest.raises(TypeError, match="boolean_mask"):
        x[tf.constant([True, False, True])]
    with pytest.raises(TypeError, match="float32"):
        x[tf.constant(1.0)]
    with pytest.raises(TypeError, match="not a scalar"):
        x[tf.constant([1, 2])]


def test_getitem_static_errors():
    x = tf.constant(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="slice index 3 of dimension 0 out of bounds"):
        x[3]
    with pytest.raises(ValueError, match="slice index -5 of dimension 1 out of bounds"):
        x[0, -5]
    with pytest.raises(ValueError, match="Index out of range using input dim 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="Multiple ellipses"):
        x[..., ...]
    with pytest.raises(ValueError, match="strides\\[0\\] must be non-zero"):
        x[::0]


def test_getitem_runtime_index_out_of_range():
    i = tf.placeholder(tf.int32, [])
    y = tf.constant(np.zeros((3, 4)))[i]
    assert y.shape.as_list() == [4]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="slice index 7 of dimension 0 out of bounds"):
        _run(y, {i: 7})
    np.testing.assert_array_equal(_run(y, {i: -3}), np.zeros(4))


# --- strided_slice --------------------------------------------------------------------------


def test_strided_slice_static_shapes_with_unknown_values():
    x = tf.placeholder(tf.float32, [None, 3, 5])
    assert x[1:, ::-1].shape.as_list() == [None, 3, 5]
    assert x[0].shape.as_list() == [3, 5]
    assert x[:, 1:10:2, -1].shape.as_list() == [None, 1]
    b = tf.placeholder(tf.int32, [3])
    y = tf.strided_slice(x, b, [0, 3, 5], [1, 1, 1], shrink_axis_mask=2, end_mask=4)
    assert y.shape.as_list() == [None, None]
    s = tf.placeholder(tf.int32, [2])
    assert tf.strided_slice(x, [0, 1], [1, 2], s, shrink_axis_mask=1).shape.as_list() == \
        [None, 5]
    assert tf.strided_slice(x, b, b, [1, 1, 1]).shape.as_list() == [None, None, None]
    assert tf.strided_slice(tf.placeholder(tf.float32), [0], [1]).shape.ndims is None
    q = tf.placeholder(tf.int32)
    assert tf.strided_slice(x, q, q, q).shape.ndims is None
    assert tf.strided_slice(x, q, [1], [1]).shape.as_list() == [None, 3, 5]


def test_strided_slice_pack_of_partly_known_bounds():
    x = tf.placeholder(tf.float32, [6, 7])
    n = tf.placeholder(tf.int32, [])
    y = x[n:, 1:5]  # begin is a Pack of an unknown and a known value
    assert y.shape.as_list() == [None, 4]
    out = _run(y, {x: np.ones((6, 7)), n: 4})
    assert out.shape == (2, 4)


def test_strided_slice_index_dtypes():
    x = tf.constant(np.arange(10))
    y = tf.strided_slice(x, tf.constant([1], tf.int64), [8], [3])
    assert y.op.inputs[2].dtype is tf.int64
    np.testing.assert_array_equal(_run(y), [1, 4, 7])
    with pytest.raises(TypeError, match="must have one dtype"):
        tf.strided_slice(x, tf.constant([1], tf.int64), tf.constant([2]), [1])
    with pytest.raises(TypeError, match="float32"):
        tf.strided_slice(x, [0.5], [1], [1])
    with pytest.raises(ValueError, match="equal length"):
        tf.strided_slice(x, [0, 1], [1], [1])
    with pytest.raises(ValueError, match="non-range indexing"):
        tf.strided_slice(x, [1], [2], [-1], shrink_axis_mask=1)


def test_strided_slice_shrink_ignores_masks_like_tensorflow():
    # Recorded from TensorFlow 2.21 (compat.v1): shrink wins over begin/end masks, a new
    # axis wins over shrink, an ellipsis over a new axis; ellipsis bits past the spec are
    # ignored.
    x = tf.constant(np.arange(12).reshape(3, 4))
    got = _run([tf.strided_slice(x, [2], [0], begin_mask=1, shrink_axis_mask=1),
                tf.strided_slice(x, [1], [2], new_axis_mask=1, shrink_axis_mask=1),
                tf.strided_slice(x, [1], [2], new_axis_mask=1, ellipsis_mask=1),
                tf.strided_slice(x, [1], [2], ellipsis_mask=4)])
    np.testing.assert_array_equal(got[0], [8, 9, 10, 11])
    assert got[1].shape == (1, 3, 4)
    assert got[2].shape == (3, 4)
    np.testing.assert_array_equal(got[3], [[4, 5, 6, 7]])


def test_strided_slice_kernel_returns_a_copy():
    a = np.arange(6.0)
    a.flags.writeable = False
    attrs = dict.fromkeys(slicing_ops._MASKS, 0)
    (out,) = slicing_ops.STRIDED_SLICE.kernel(None, [a, np.array([1]), np.array([5]),
                                                     np.array([1])], attrs)
    assert not np.shares_memory(out, a) and out.dtype == a.dtype
    np.testing.assert_array_equal(out, a[1:5])


def test_strided_slice_runtime_errors():
    b = tf.placeholder(tf.int32, [None])
    y = tf.strided_slice(tf.constant(np.zeros((2, 2))), b, b, b)
    with pytest.raises(tf.errors.InvalidArgumentError, match="strides\\[0\\] must be non-zero"):
        _run(y, {b: [0]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Index out of range"):
        _run(y, {b: [1, 1, 1]})


# --- slice ----------------------------------------------------------------------------------


def test_slice_values_and_static_shapes():
    a = np.arange(24).reshape(2, 3, 4)
    x = tf.constant(a)
    y = tf.slice(x, [1, 0, 1], [-1, 2, 3])
    assert y.shape.as_list() == [1, 2, 3]
    np.testing.assert_array_equal(_run(y), a[1:, 0:2, 1:4])
    b = tf.placeholder(tf.int32, [3])
    assert tf.slice(x, b, [1, -1, 2]).shape.as_list() == [1, None, 2]
    assert tf.slice(x, [0, 0, 0], b).shape.as_list() == [None, None, None]
    assert tf.slice(tf.placeholder(tf.float32), [0, 0], [1, 1]).shape.as_list() == [None, None]


def test_slice_errors():
    x = tf.constant(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="Expected size\\[0\\] in \\[0, 3\\], but got 4"):
        tf.slice(x, [0, 0], [4, 1])
    with pytest.raises(ValueError, match="Expected begin\\[0\\] in \\[0, 3\\], but got -1"):
        tf.slice(x, [-1, 0], [1, 1])
    with pytest.raises(ValueError, match=">= -1"):
        tf.slice(x, [0, 0], [-2, 1])
    with pytest.raises(ValueError, match="rank of the input"):
        tf.slice(x, [0], [1])
    p = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Expected size\\[1\\] in \\[0, 4\\], but got 7"):
        _run(tf.slice(x, [0, 0], p), {p: [2, 7]})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Expected begin\\[1\\] in \\[0, 4\\], but got 7"):
        _run(tf.slice(x, p, [1, 0]), {p: [0, 7]})


# --- gather ---------------------------------------------------------------------------------


def test_gather_axis_tensor_and_negative_axis():
    a = np.arange(24.0).reshape(2, 3, 4)
    ax = tf.placeholder(tf.int32, [])
    y = tf.gather(tf.constant(a), [[2, 0]], axis=ax)
    assert y.shape.as_list() == [None, None, None, None]
    np.testing.assert_array_equal(_run(y, {ax: 1}), np.take(a, [[2, 0]], axis=1))
    z = tf.gather(tf.constant(a), [3, 3, 0], axis=-1)
    assert z.shape.as_list() == [2, 3, 3]
    np.testing.assert_array_equal(_run(z), a[..., [3, 3, 0]])


def test_gather_batch_dims_matches_tensorflow():
    # Recorded from TensorFlow 2.21 (compat.v1).
    x = tf.constant(np.arange(12).reshape(3, 4))
    y = tf.gather(x, [[1], [0], [2]], axis=1, batch_dims=1)
    assert y.shape.as_list() == [3, 1]
    np.testing.assert_array_equal(_run(y), [[1], [4], [10]])
    z = tf.gather(x, [[1, 3], [0, 0], [2, 1]], batch_dims=-1)
    np.testing.assert_array_equal(_run(z), [[1, 3], [4, 4], [10, 9]])


def test_gather_errors():
    x = tf.constant(np.zeros((3, 4)))
    p = tf.placeholder(tf.int32, [None, 1])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="indices\\[1,0\\] = 7 is not in \\[0, 4\\)"):
        _run(tf.gather(x, p, axis=1), {p: [[0], [7]]})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="indices\\[0,0\\] = -1 is not in \\[0, 3\\)"):
        _run(tf.gather(x, p), {p: [[-1]]})
    with pytest.raises(ValueError, match="axis -3 is out of range"):
        tf.gather(x, [0], axis=-3)
    with pytest.raises(ValueError, match="axis 0 is out of range"):
        tf.gather(tf.constant(3.0), [0])
    with pytest.raises(TypeError, match="indices"):
        tf.gather(x, [0.5])
    with pytest.raises(ValueError, match="must match"):
        tf.gather(x, [[0, 1]], axis=1, batch_dims=1)
    with pytest.raises(ValueError, match="less than or equal to axis"):
        tf.gather(x, [[0], [1], [2]], axis=0, batch_dims=1)


def test_gather_nd_values_and_errors():
    a = np.arange(24).reshape(2, 3, 4)
    y = tf.gather_nd(tf.constant(a), [[[1, 2], [0, 0]]])
    assert y.shape.as_list() == [1, 2, 4]
    np.testing.assert_array_equal(_run(y), a[[[1, 0]], [[2, 0]]])
    p = tf.placeholder(tf.int32, [2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="indices\\[1\\] = \\[1, 5\\] does not index into param shape "
                             "\\[2,3,4\\]"):
        _run(tf.gather_nd(tf.constant(a), p), {p: [[0, 0], [1, 5]]})
    with pytest.raises(ValueError, match="must be <= params.rank"):
        tf.gather_nd(tf.constant(a), [[0, 0, 0, 0]])
    with pytest.raises(ValueError, match="at least a vector"):
        tf.gather_nd(tf.constant(a), 0)


# --- boolean_mask ---------------------------------------------------------------------------


@_SETTINGS
@given(st.data())
def test_boolean_mask_equals_numpy(data):
    a = data.draw(arrays(np.float32, data.draw(shapes(min_dims=1, max_dims=3))))
    axis = data.draw(st.integers(0, a.ndim - 1))
    k = data.draw(st.integers(1, a.ndim - axis))
    m = data.draw(arrays(np.bool_, a.shape[axis:axis + k]))
    expected = a[(slice(None),) * axis + (m,)]
    known = data.draw(st.sampled_from(["static", "unknown_dims", "unknown_rank"]))
    with tf.Graph().as_default():
        shape = {"static": a.shape, "unknown_dims": [None] * a.ndim, "unknown_rank": None}
        x = tf.placeholder(tf.float32, shape[known])
        negative = known != "unknown_rank" and data.draw(st.booleans())
        y = tf.boolean_mask(x, m, axis=axis - a.ndim if negative else axis)
        assert y.shape.is_compatible_with(expected.shape)
        if known == "static":
            assert y.shape.as_list() == [None if i == axis else d
                                         for i, d in enumerate(expected.shape)]
        got = _run(y, {x: a})
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.float32


def test_boolean_mask_errors():
    x = tf.constant(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        tf.boolean_mask(x, True)
    with pytest.raises(ValueError, match="Number of mask dimensions"):
        tf.boolean_mask(x, tf.placeholder(tf.bool))
    with pytest.raises(ValueError, match="incompatible"):
        tf.boolean_mask(x, [True, False])
    with pytest.raises(TypeError):
        tf.boolean_mask(x, [1.0, 0.0, 1.0])
