"""matmul and flowjit.nn: TensorFlow 1.x semantics the generic samples do not pin down.

Shape and dtype errors at construction, run-time size errors, batch broadcasting, complex
adjoints, numerically stable softmax/log-softmax/softplus/cross entropies, BiasAdd's NCHW
form and the keyword-only TF1 loss functions.  Literal expectations marked "TF" were
recorded from TensorFlow 2.21's compat.v1 graph mode.
"""

import numpy as np
import pytest

import flowjit as tf


def run(*fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed_dict)


# --- matmul ----------------------------------------------------------------------------------


def test_inner_dimension_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4") as e:
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))
    assert "(2, 3)" in str(e.value) and "(4, 5)" in str(e.value)
    with pytest.raises(ValueError, match="but are 2 and 4"):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]), transpose_a=True)
    with pytest.raises(ValueError, match="but are 3 and 4"):
        tf.matmul(tf.zeros([7, 2, 3]), tf.zeros([7, 4, 5]))


def test_matmul_dtype_and_rank_errors():
    with pytest.raises(TypeError, match="float64"):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([3, 2], tf.float64))
    with pytest.raises(TypeError):
        tf.matmul(tf.zeros([2, 2], tf.bool), tf.zeros([2, 2], tf.bool))
    with pytest.raises(ValueError, match="rank 2 but is rank 1"):
        tf.matmul(tf.zeros([3]), tf.zeros([3, 4]))
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a"):
        tf.matmul(tf.zeros([2, 2]), tf.zeros([2, 2]), transpose_a=True, adjoint_a=True)
    with pytest.raises(ValueError, match="broadcast"):
        tf.matmul(tf.zeros([2, 3, 4]), tf.zeros([5, 4, 6]))


def test_run_time_size_mismatch_is_invalid_argument():
    a = tf.placeholder(tf.float32, [None, None])
    b = tf.placeholder(tf.float32, [None, None])
    product = tf.matmul(a, b)
    assert product.op.type == "MatMul" and product.shape.as_list() == [None, None]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2, 3\].*\[4, 5\]"):
        run(product, feed_dict={a: np.zeros((2, 3)), b: np.zeros((4, 5))})


def test_matmul_ops_and_attrs():
    mm = tf.matmul(tf.zeros([3, 2]), tf.zeros([4, 3]), transpose_a=True, transpose_b=True)
    assert mm.op.type == "MatMul" and mm.shape.as_list() == [2, 4]
    assert mm.op.get_attr("transpose_a") is True and mm.op.get_attr("transpose_b") is True
    bmm = tf.matmul(tf.zeros([2, 1, 3, 4]), tf.zeros([5, 4, 6]))
    assert bmm.op.type == "BatchMatMulV2"  # TF: BatchMatMulV2, shape [2, 5, 3, 6]
    assert bmm.shape.as_list() == [2, 5, 3, 6]
    assert bmm.op.get_attr("adj_x") is False
    assert (tf.zeros([2, 3]) @ tf.zeros([3, 1])).op.type == "MatMul"


def test_integer_and_python_operands():
    product = tf.matmul([[1, 2], [3, 4]], [[5], [6]])
    assert product.dtype == tf.int32
    np.testing.assert_array_equal(run(product)[0], [[17], [39]])
    half = tf.matmul(tf.constant([[1.0, 2.0]], tf.float16), [[3.0], [4.0]])
    assert half.dtype == tf.float16 and run(half)[0].dtype == np.float16


def test_complex_adjoint_and_transpose():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    b = rng.normal(size=(2, 4)) + 1j * rng.normal(size=(2, 4))
    batch_a = rng.normal(size=(5, 2, 3)) + 1j * rng.normal(size=(5, 2, 3))
    got = run(tf.matmul(a, b, adjoint_a=True), tf.matmul(a, b, transpose_a=True),
              tf.matmul(batch_a, b, transpose_a=True), tf.matmul(batch_a, b, adjoint_a=True))
    np.testing.assert_allclose(got[0], a.conj().T @ b)
    np.testing.assert_allclose(got[1], a.T @ b)
    np.testing.assert_allclose(got[2], np.swapaxes(batch_a, 1, 2) @ b)
    np.testing.assert_allclose(got[3], np.swapaxes(batch_a, 1, 2).conj() @ b)


def test_unknown_rank_uses_batch_matmul():
    a = tf.placeholder(tf.float64)
    product = tf.matmul(a, np.eye(3))
    assert product.op.type == "BatchMatMulV2" and product.shape.ndims is None
    value = np.arange(18.0).reshape(2, 3, 3)
    np.testing.assert_array_equal(run(product, feed_dict={a: value})[0], value)


# --- activations -----------------------------------------------------------------------------


def test_activation_values_and_dtypes():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 7.0], np.float32)
    got = run(tf.nn.relu(x), tf.nn.relu6(x), tf.nn.elu(x), tf.nn.leaky_relu(x, alpha=0.1),
              tf.nn.relu([-1, 2]), tf.nn.leaky_relu([-1, 2]), tf.nn.selu([-1.0, 1.0]))
    np.testing.assert_array_equal(got[0], [0, 0, 0, 0.5, 7])
    np.testing.assert_array_equal(got[1], [0, 0, 0, 0.5, 6])
    np.testing.assert_allclose(got[2], [np.expm1(-2), np.expm1(-0.5), 0, 0.5, 7], rtol=1e-6)
    np.testing.assert_allclose(got[3], [-0.2, -0.05, 0, 0.5, 7], rtol=1e-6)
    assert got[4].dtype == np.int32  # TF: relu keeps int32
    np.testing.assert_allclose(got[5], [-0.2, 2.0])  # TF: ints are cast to float32 first
    assert got[5].dtype == np.float32
    np.testing.assert_allclose(got[6], [-1.1113307, 1.050701], rtol=1e-6)  # TF
    with pytest.raises(TypeError):
        tf.nn.elu(tf.constant([1, 2]))
    with pytest.raises(TypeError):
        tf.nn.softplus(tf.constant([True]))


def test_softplus_is_stable_for_large_magnitudes():
    x = np.array([100.0, -100.0, 0.0, 30.0, 1000.0, -1000.0])
    got64, got32 = run(tf.nn.softplus(x), tf.nn.softplus(x.astype(np.float32)))
    expected = np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(got64, expected, rtol=1e-12)
    assert np.isfinite(got32).all()
    np.testing.assert_allclose(got32, expected, rtol=1e-6, atol=1e-30)


def test_sigmoid_and_tanh_are_math_ops():
    assert tf.nn.sigmoid is tf.sigmoid and tf.nn.tanh is tf.tanh


# --- BiasAdd ---------------------------------------------------------------------------------


def test_bias_add_nhwc_and_nchw():
    value = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    bias = np.array([100.0, 200.0, 300.0], np.float32)
    nchw = tf.nn.bias_add(value, bias, data_format="NCHW")
    assert nchw.op.type == "BiasAdd" and nchw.op.get_attr("data_format") == "NCHW"
    last = tf.nn.bias_add(np.zeros((4, 3), np.float32), bias)
    got = run(nchw, last, tf.nn.bias_add(np.ones((2, 3, 1), np.float32), bias, "NCW"))
    np.testing.assert_array_equal(got[0], value + bias[None, :, None, None])
    np.testing.assert_array_equal(got[1], np.tile(bias, (4, 1)))
    np.testing.assert_array_equal(got[2][:, :, 0], 1 + np.tile(bias, (2, 1)))


def test_bias_add_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.nn.bias_add(tf.ones([2, 3]), [1.0, 2.0])
    with pytest.raises(ValueError, match="at least rank 3"):
        tf.nn.bias_add(tf.ones([2, 3]), [1.0, 2.0, 3.0], data_format="NCHW")
    with pytest.raises(ValueError, match="at least rank 2"):
        tf.nn.bias_add(tf.ones([3]), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="rank 1"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([1, 3]))
    with pytest.raises(TypeError):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3], tf.float64))
    value = tf.placeholder(tf.float32, [None, None])
    added = tf.nn.bias_add(value, [1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="as many biases"):
        run(added, feed_dict={value: np.zeros((2, 3))})


def test_xw_plus_b():
    x, w, b = np.ones((2, 3)), np.arange(12.0).reshape(3, 4), np.arange(4.0)
    np.testing.assert_allclose(run(tf.nn.xw_plus_b(x, w, b))[0], x @ w + b)


# --- softmax ---------------------------------------------------------------------------------


def test_softmax_is_stable_with_large_logits():
    x = np.array([1e4, 1e4 - 1.0, -1e4], np.float32)
    soft, log_soft = run(tf.nn.softmax(x), tf.nn.log_softmax(x))
    np.testing.assert_allclose(soft, [0.7310586, 0.26894143, 0.0], rtol=1e-6)  # TF
    np.testing.assert_allclose(log_soft, [-0.31326166, -1.3132616, -20000.312], rtol=1e-6)  # TF
    assert soft.dtype == np.float32


def test_softmax_over_another_axis():
    x = np.arange(12.0).reshape(3, 4) / 3
    e = np.exp(x - x.max(axis=0))
    soft = tf.nn.softmax(x, axis=0)
    assert soft.shape.as_list() == [3, 4]
    got = run(soft, tf.nn.softmax(x, dim=0), tf.nn.log_softmax(x, axis=-2),
              tf.nn.softmax(x, axis=1))
    np.testing.assert_allclose(got[0], e / e.sum(axis=0))
    np.testing.assert_allclose(got[1], got[0])
    np.testing.assert_allclose(got[2], np.log(e / e.sum(axis=0)))
    np.testing.assert_allclose(got[3].sum(axis=1), np.ones(3))


def test_softmax_edge_cases():
    got = run(tf.nn.softmax(tf.zeros([2, 0])), tf.nn.softmax([-np.inf, -np.inf]))
    assert got[0].shape == (2, 0)
    assert np.isnan(got[1]).all()  # TF: [nan, nan]
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(TypeError):
        tf.nn.softmax([1, 2])
    with pytest.raises(ValueError, match="out of range"):
        tf.nn.softmax(tf.zeros([2, 3]), axis=2)


# --- losses ----------------------------------------------------------------------------------

_LOGITS = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [1e4, 0.0, -1e4]])
_LABELS = np.array([[0.0, 0.0, 1.0], [0.5, 0.5, 0.0], [0.2, 0.8, 0.0]])


def test_softmax_cross_entropy_matches_tensorflow():
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=_LABELS, logits=_LOGITS)
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=_LABELS, logits=_LOGITS)
    moved = tf.nn.softmax_cross_entropy_with_logits_v2(_LABELS.T, _LOGITS.T, axis=0)
    assert v2.op.type == "SoftmaxCrossEntropyWithLogits" and v2.shape.as_list() == [3]
    got = run(v2, v1, moved, v2.op.outputs[1])
    expected = [0.4076059644443804, 1.0986122886681098, 8000.0]  # TF
    for g in got[:3]:
        np.testing.assert_allclose(g, expected, rtol=1e-12)
    shifted = _LOGITS - _LOGITS.max(axis=1, keepdims=True)
    soft = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got[3], soft - _LABELS, atol=1e-12)


def test_softmax_cross_entropy_of_higher_rank():
    logits = np.ones((2, 2, 3), np.float32)
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(logits, logits)
    assert loss.shape.as_list() == [2, 2]
    np.testing.assert_allclose(run(loss)[0], np.full((2, 2), 3.295837), rtol=1e-6)  # TF


def test_softmax_cross_entropy_errors():
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.softmax_cross_entropy_with_logits(_LABELS, _LOGITS)
    with pytest.raises(ValueError, match="Both labels and logits"):
        tf.nn.softmax_cross_entropy_with_logits(labels=_LABELS)
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.softmax_cross_entropy_with_logits_v2(tf.ones([2, 3]), tf.ones([2, 4]))
    with pytest.raises(TypeError):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=[[0, 1]], logits=[[1, 2]])
    with pytest.raises(TypeError):
        tf.nn.softmax_cross_entropy_with_logits_v2(tf.ones([2, 3]), tf.ones([2, 3], tf.float64))


def test_sparse_softmax_cross_entropy_matches_tensorflow():
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 0, 1], logits=_LOGITS)
    assert loss.op.type == "SparseSoftmaxCrossEntropyWithLogits"
    np.testing.assert_allclose(run(loss)[0], [0.4076059644443804, 1.0986122886681098, 1e4],
                               rtol=1e-12)  # TF
    higher = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([[0, 1]], tf.int64), logits=tf.ones([1, 2, 3]))
    np.testing.assert_allclose(run(higher)[0], [[1.0986123, 1.0986123]], rtol=1e-6)  # TF


def test_sparse_softmax_cross_entropy_errors():
    labels = tf.placeholder(tf.int32, [2])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.ones([2, 3]))
    for bad in ([0, 3], [0, -1]):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=rf"label value of {bad[1]} which is outside the valid range "
                                 r"of \[0, 3\)"):
            run(loss, feed_dict={labels: bad})
    with pytest.raises(ValueError, match="labels.shape must equal logits.shape"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 1], logits=tf.ones([2, 3]))
    with pytest.raises(TypeError):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0.0, 1.0], logits=tf.ones([2, 3]))
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.sparse_softmax_cross_entropy_with_logits([0, 1], tf.ones([2, 3]))


def test_sigmoid_cross_entropy_is_stable():
    labels = np.array([0.0, 1.0, 0.5, 1.0])
    logits = np.array([100.0, -100.0, 0.0, 2.5])
    loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.op.name == "logistic_loss"
    np.testing.assert_allclose(run(loss)[0], [100.0, 100.0, 0.6931471805599453,
                                              0.07888973429254963], rtol=1e-12)  # TF
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones([2]), logits=tf.ones([3]))
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.sigmoid_cross_entropy_with_logits(tf.ones([2]), tf.ones([2]))


def test_sigmoid_cross_entropy_gradient_at_zero_logits_is_sigmoid_minus_label():
    # zero-initialised weights give logits of exactly 0 on the first step: the gradient there
    # is sigmoid(0) - z (TF builds max(x, 0) and -|x| as selects on x >= 0), not -z
    labels = np.array([1.0, 0.0, 0.3, 1.0, 0.5])
    x = tf.placeholder(tf.float64, [5])
    loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x)
    grad = tf.gradients(tf.reduce_sum(loss), x)[0]
    xv = np.array([0.0, 0.0, 0.0, 2.0, -3.0])
    got_loss, got_grad = run(loss, grad, feed_dict={x: xv})
    np.testing.assert_allclose(got_grad, 1 / (1 + np.exp(-xv)) - labels, rtol=1e-12)
    np.testing.assert_allclose(got_loss, np.maximum(xv, 0) - xv * labels
                               + np.log1p(np.exp(-np.abs(xv))), rtol=1e-12)


def test_l2_loss():
    loss = tf.nn.l2_loss(tf.constant([[1.0, 2.0]]))
    assert loss.op.type == "L2Loss" and loss.shape.as_list() == []
    assert run(loss)[0] == 2.5  # TF
    with pytest.raises(TypeError):
        tf.nn.l2_loss(tf.constant([[1, 2]]))
