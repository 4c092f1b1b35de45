"""The ops of TensorFlow-written graphs (AddV2, ops/grad_ops.py, ops/training_ops.py) against
independent formulas.

Differential tests of each NumPy reference kernel (hypothesis over shapes and dtypes, NaN
and infinities included): TanhGrad and SigmoidGrad against the derivatives of tanh and the
sigmoid written from x, ReluGrad against a selection, BiasAddGrad against per-channel sums,
BroadcastGradientArgs against a brute-force check (the broadcast gradient summed over the
returned axes equals, element by element, the sum over the output positions that read each
input element), and the Apply* ops against hand-written NumPy updates over several steps,
run op by op and compiled by the reference target.  Then AddV2 is Add under another name,
second-order gradients are consistent, errors are TensorFlow's, and a TF1-style training
loop built from these ops trains like flowjit's own optimizers.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowjit as tf
from flowjit import errors
from flowjit.ops import grad_ops, registry, training_ops
from flowjit.ops.math_binary import ADD, ADD_V2, add_v2

OFF = tf.ConfigProto(jit=False)
REFERENCE = tf.ConfigProto(jit=tf.JitOptions.always(target="reference"))
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0]


def _floats(dtype, bound=5.0):
    if np.dtype(dtype).kind in "iu":
        return st.integers(-50, 50)
    width = np.dtype(dtype).itemsize * 8
    return st.floats(-bound, bound, width=width) | st.sampled_from(SPECIALS)


@st.composite
def _pair(draw, dtypes=(np.float16, np.float32, np.float64)):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    a = draw(hnp.arrays(dtype, shape, elements=_floats(dtype)))
    b = draw(hnp.arrays(dtype, shape, elements=_floats(dtype)))
    return a, b


def _kernel(op_def, *inputs, **attrs):
    return op_def.kernel(None, list(inputs), attrs)


def _close(got, want, dtype):
    tol = {np.float16: 4e-3, np.float32: 2e-6}.get(np.dtype(dtype).type, 1e-13)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol,
                               equal_nan=True)


# --- elementwise gradient ops ------------------------------------------------------------------


@SETTINGS
@given(_pair(), st.data())
def test_tanh_grad_is_the_derivative_of_tanh(pair, data):
    x, dy = pair
    x = np.clip(np.nan_to_num(x.astype(np.float64)), -5, 5)
    y = np.tanh(x).astype(dy.dtype)
    [got] = _kernel(grad_ops.TANH_GRAD, y, dy)
    with np.errstate(all="ignore"):   # 1 - y*y from the rounded y, as the op sees it
        want = dy.astype(np.float64) * (1 - y.astype(np.float64) ** 2)
        _close(got, want, dy.dtype)
        exact = np.tanh(x.astype(np.float64))
        analytic = dy.astype(np.float64) / np.cosh(x) ** 2   # d tanh / dx, from x
    close = np.isfinite(dy) & (np.abs(exact) < 0.9) & (y.dtype != np.float16)
    np.testing.assert_allclose(got[close], analytic[close], rtol=1e-5, atol=1e-6)


@SETTINGS
@given(_pair())
def test_sigmoid_grad_is_the_derivative_of_the_sigmoid(pair):
    x, dy = pair
    x = np.clip(np.nan_to_num(x.astype(np.float64)), -5, 5)
    y = (1 / (1 + np.exp(-x))).astype(dy.dtype)
    [got] = _kernel(grad_ops.SIGMOID_GRAD, y, dy)
    with np.errstate(all="ignore"):
        yy = y.astype(np.float64)
        _close(got, dy.astype(np.float64) * yy * (1 - yy), dy.dtype)
        analytic = dy * np.exp(-x) / (1 + np.exp(-x)) ** 2
    close = np.isfinite(dy) & (y.dtype != np.float16)
    np.testing.assert_allclose(got[close], analytic[close], rtol=1e-5, atol=1e-6)


@SETTINGS
@given(_pair((np.float16, np.float32, np.float64, np.int32, np.int64)))
def test_relu_grad_passes_gradients_where_features_are_positive(pair):
    g, f = pair
    [got] = _kernel(grad_ops.RELU_GRAD, g, f)
    with np.errstate(all="ignore"):   # a product, as in TensorFlow: nan or inf * 0 is nan
        want = np.where(f > 0, g, np.where(np.isfinite(g), 0, np.nan))
    assert got.dtype == g.dtype
    np.testing.assert_array_equal(got, want.astype(g.dtype))


def test_complex_tanh_and_sigmoid_grads_use_the_conjugate():
    y = np.array([0.5 + 0.25j, -1j], np.complex128)
    dy = np.array([1 - 2j, 0.5 + 0.5j], np.complex128)
    [t] = _kernel(grad_ops.TANH_GRAD, y, dy)
    [s] = _kernel(grad_ops.SIGMOID_GRAD, y, dy)
    np.testing.assert_allclose(t, dy * np.conj(1 - y * y))
    np.testing.assert_allclose(s, dy * np.conj(y) * np.conj(1 - y))


# --- BiasAddGrad -------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_bias_add_grad_sums_each_channel(data):
    dtype = data.draw(st.sampled_from((np.float16, np.float32, np.float64, np.int32)))
    nchw = data.draw(st.booleans())
    shape = data.draw(hnp.array_shapes(min_dims=3 if nchw else 2, max_dims=4, min_side=0,
                                       max_side=4))
    elements = st.integers(-50, 50) if dtype == np.int32 else _floats(dtype)
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    [got] = _kernel(grad_ops.BIAS_ADD_GRAD, x, data_format="NCHW" if nchw else "NHWC")
    axis = 1 if nchw else x.ndim - 1
    want = np.array([float(np.sum(np.take(x, c, axis=axis).astype(np.float64)))
                     for c in range(x.shape[axis])])
    if dtype == np.int32:
        np.testing.assert_array_equal(got, want.astype(np.int32))
    else:
        _close(got, want.astype(dtype).astype(np.float64), dtype)


def test_bias_add_grad_gradient_with_unknown_rank():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float64, None, name="x")
        b = grad_ops.bias_add_grad(x, data_format="NCHW")
        w = np.array([1.0, -2.0, 3.0])
        [dx] = tf.gradients(tf.reduce_sum(b * w), [x])
    value = np.zeros((2, 3, 2, 1))
    with tf.Session(graph=g, config=OFF) as sess:
        got = sess.run(dx, {x: value})
    np.testing.assert_array_equal(got, np.broadcast_to(w.reshape(3, 1, 1), value.shape))


# --- BroadcastGradientArgs ---------------------------------------------------------------------


def _gradient_of_input(grad, shape):
    """The gradient of an input of `shape` broadcast to grad.shape, by brute force: each
    input element's gradient is the sum of grad over the output positions that read it."""
    size = int(np.prod(shape, dtype=np.int64))
    reads = np.broadcast_to(np.arange(size).reshape(shape), grad.shape)
    return np.bincount(reads.ravel(), weights=grad.ravel(), minlength=size).reshape(shape)


@SETTINGS
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=0, max_side=4),
       st.booleans(), st.data())
def test_broadcast_gradient_args_axes_recover_each_input_gradient(shapes, same, data):
    s0, s1 = shapes.input_shapes
    if same:
        s1 = s0
    out = np.broadcast_shapes(s0, s1)
    r0, r1 = grad_ops.broadcast_gradient_axes(s0, s1)
    grad = data.draw(hnp.arrays(np.float64, out, elements=st.integers(-9, 9).map(float)))
    for shape, axes in ((s0, r0), (s1, r1)):
        assert axes == sorted(set(axes)) and all(0 <= a < len(out) for a in axes)
        summed = np.sum(grad, axis=tuple(axes)).reshape(shape)
        np.testing.assert_array_equal(summed, _gradient_of_input(grad, shape))
        # exactly the axes where the input (padded with leading 1s) has size 1, unless the
        # shapes are identical (TensorFlow's fast path reduces nothing then)
        padded = (1,) * (len(out) - len(shape)) + tuple(shape)
        assert axes == ([] if tuple(s0) == tuple(s1) else
                        [i for i, d in enumerate(padded) if d == 1])
    for dtype in (np.int32, np.int64):
        got = _kernel(grad_ops.BROADCAST_GRADIENT_ARGS, np.array(s0, dtype),
                      np.array(s1, dtype))
        assert [g.dtype for g in got] == [np.dtype(dtype)] * 2
        assert [g.tolist() for g in got] == [r0, r1]


def test_broadcast_gradient_args_examples_and_errors():
    axes = grad_ops.broadcast_gradient_axes
    assert axes([2, 3], [3]) == ([], [0])
    assert axes([2, 1], [1]) == ([1], [0, 1])   # both 1 at the last axis: both reduce
    assert axes([2, 1], [2, 1]) == ([], [])     # identical shapes: nothing
    assert axes([], [4, 1, 3]) == ([0, 1, 2], [1])
    assert axes([0, 3], [1, 3]) == ([], [0])
    with pytest.raises(ValueError):
        axes([2, 3], [4])
    with tf.Graph().as_default() as g:
        s0 = tf.placeholder(tf.int32, [None], name="s0")
        r0, r1 = grad_ops.broadcast_gradient_args(s0, [4, 1])
        folded = grad_ops.broadcast_gradient_args([5, 1, 1], [1, 7])
    assert folded[0].shape.as_list() == [2] and folded[1].shape.as_list() == [2]
    with tf.Session(graph=g, config=OFF) as sess:
        assert [v.tolist() for v in sess.run([r0, r1], {s0: [3, 4, 2]})] == [[], [0, 2]]
        assert [v.tolist() for v in sess.run(folded)] == [[1, 2], [0, 1]]
        with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes"):
            sess.run(r0, {s0: [3, 3]})


# --- the Apply* updates ------------------------------------------------------------------------

STEPS = 4


@dataclasses.dataclass
class _Run:
    op_type: str
    nesterov: bool
    dtype: type


def _numpy_updates(run, var, slots, grads, hyper):
    """The updates of `grads` applied in turn, written from the optimizers' definitions (in
    float64): the var after each step."""
    var, slots = var.astype(np.float64), [s.astype(np.float64) for s in slots]
    out = []
    for t, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        if run.op_type == "ApplyGradientDescent":
            var = var - hyper["lr"] * g
        elif run.op_type == "ApplyMomentum":
            mu = hyper["momentum"]
            slots[0] = mu * slots[0] + g
            var = var - hyper["lr"] * (g + mu * slots[0] if run.nesterov else slots[0])
        else:
            b1, b2 = hyper["beta1"], hyper["beta2"]
            slots[0] = b1 * slots[0] + (1 - b1) * g
            slots[1] = b2 * slots[1] + (1 - b2) * g * g
            # bias-corrected moments (Kingma & Ba), with epsilon scaled as TensorFlow does
            m_hat = slots[0] / (1 - b1 ** t)
            if run.nesterov:
                m_hat = (b1 * slots[0] + (1 - b1) * g) / (1 - b1 ** t)
            v_hat = slots[1] / (1 - b2 ** t)
            eps_hat = hyper["epsilon"] / np.sqrt(1 - b2 ** t)
            var = var - hyper["lr"] * m_hat / (np.sqrt(v_hat) + eps_hat)
        out.append(var)
    return out


def _apply_graph(run, var, slots, hyper):
    with tf.Graph().as_default() as g:
        dt = tf.as_dtype(run.dtype)
        v = tf.Variable(var, name="var")
        s = [tf.Variable(x, name=f"slot{i}") for i, x in enumerate(slots)]
        grad = tf.placeholder(dt, var.shape, name="grad")
        step = tf.placeholder(dt, [], name="step")
        if run.op_type == "ApplyGradientDescent":
            new = training_ops.apply_gradient_descent(v, hyper["lr"], grad)
        elif run.op_type == "ApplyMomentum":
            new = training_ops.apply_momentum(v, s[0], hyper["lr"], grad, hyper["momentum"],
                                              use_nesterov=run.nesterov)
        else:
            b1, b2 = (tf.constant(hyper[k], dt) for k in ("beta1", "beta2"))
            new = training_ops.apply_adam(v, s[0], s[1], b1 ** step, b2 ** step, hyper["lr"],
                                          b1, b2, hyper["epsilon"], grad,
                                          use_nesterov=run.nesterov)
        init = tf.global_variables_initializer()
    return g, init, new, grad, step


@pytest.mark.parametrize("run", [_Run(k, n, d) for k in ("ApplyGradientDescent",
                                                          "ApplyMomentum", "ApplyAdam")
                                 for n in (False, True) for d in (np.float32, np.float64)
                                 if n is False or k != "ApplyGradientDescent"],
                         ids=lambda r: f"{r.op_type}-{'nesterov-' if r.nesterov else ''}"
                                       f"{np.dtype(r.dtype).name}")
def test_apply_ops_follow_the_numpy_updates_over_steps(run):
    rng = np.random.default_rng(7)
    var = rng.normal(size=(3, 4)).astype(run.dtype)
    slots = [np.abs(rng.normal(size=(3, 4))).astype(run.dtype) for _ in range(
        {"ApplyMomentum": 1, "ApplyAdam": 2}.get(run.op_type, 0))]
    grads = [rng.normal(size=(3, 4)).astype(run.dtype) for _ in range(STEPS)]
    grads[1][0, 0] = 0.0
    hyper = dict(lr=0.05, momentum=0.9, beta1=0.9, beta2=0.999, epsilon=1e-7)
    want = _numpy_updates(run, var, slots, grads, hyper)
    tol = 2e-5 if run.dtype == np.float32 else 1e-12
    g, init, new, grad, step = _apply_graph(run, var, slots, hyper)
    for config in (OFF, REFERENCE):
        with tf.Session(graph=g, config=config) as sess:
            sess.run(init)
            for t, (gr, w) in enumerate(zip(grads, want), 1):
                got = sess.run(new, {grad: gr, step: t})
                assert got.dtype == run.dtype
                np.testing.assert_allclose(got, w, rtol=tol, atol=tol)
            np.testing.assert_allclose(sess.run(g.get_tensor_by_name("var:0")), want[-1],
                                       rtol=tol, atol=tol)


def test_apply_op_errors():
    with tf.Graph().as_default() as g:
        v = tf.Variable(np.zeros((2, 2), np.float32), name="v")
        with pytest.raises(TypeError, match="variable"):
            training_ops.apply_gradient_descent(v.value(), 0.1, np.ones((2, 2), np.float32))
        with pytest.raises(ValueError, match="scalar"):
            training_ops.apply_gradient_descent(v, [0.1, 0.2], np.ones((2, 2), np.float32))
        with pytest.raises(ValueError, match="shape"):
            training_ops.apply_gradient_descent(v, 0.1, np.ones((3,), np.float32))
        with pytest.raises(TypeError, match="float64"):
            training_ops.apply_gradient_descent(v, 0.1, tf.constant(np.ones((2, 2))))
        d = tf.placeholder(tf.float32, None, name="d")
        update = training_ops.apply_gradient_descent(v, 0.1, d)
    with tf.Session(graph=g, config=OFF) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
            sess.run(update, {d: np.ones((2, 2), np.float32)})
        sess.run(v.initializer)
        with pytest.raises(errors.InvalidArgumentError, match="same shape"):
            sess.run(update, {d: np.ones((2, 3), np.float32)})


# --- AddV2, second-order gradients, shape errors -----------------------------------------------


def test_add_v2_is_add_under_another_name():
    assert registry.lookup("AddV2") is ADD_V2 and ADD_V2.name == "AddV2"
    for field in ("infer", "kernel", "traits", "gradient", "lower", "ref_inputs"):
        assert getattr(ADD_V2, field) is getattr(ADD, field) or \
            getattr(ADD_V2, field) == getattr(ADD, field), field
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        assert tf.add(x, x).op.type == "Add" and (x + x).op.type == "Add"
        assert add_v2(x, 1.0).op.type == "AddV2"


def test_second_order_gradients_agree_with_the_analytic_second_derivatives():
    x0 = np.linspace(-2, 2, 7)
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float64, [7], name="x")
        ones = tf.ones_like(x)
        t, s = tf.tanh(x), tf.sigmoid(x)
        [d2_tanh] = tf.gradients(grad_ops.tanh_grad(t, ones), [x])
        [d2_sig] = tf.gradients(grad_ops.sigmoid_grad(s, ones), [x])
        [d_relu] = tf.gradients(tf.reduce_sum(grad_ops.relu_grad(x * 3.0, x)), [x])
    with tf.Session(graph=g, config=OFF) as sess:
        a, b, c = sess.run([d2_tanh, d2_sig, d_relu], {x: x0})
    th, sg = np.tanh(x0), 1 / (1 + np.exp(-x0))
    np.testing.assert_allclose(a, -2 * th * (1 - th ** 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b, sg * (1 - sg) * (1 - 2 * sg), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(c, np.where(x0 > 0, 3.0, 0.0))


def test_same_shape_ops_refuse_broadcasting():
    with tf.Graph().as_default() as g:
        with pytest.raises(ValueError, match="one shape"):
            grad_ops.tanh_grad(np.ones(3), np.ones((2, 3)))
        a = tf.placeholder(tf.float64, None, name="a")
        out = grad_ops.relu_grad(a, np.ones(3))
    with tf.Session(graph=g, config=OFF) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="same size and shape"):
            sess.run(out, {a: np.ones((2, 3))})


# --- a TF1-style training step from these ops --------------------------------------------------


def _mlp(apply_ops: bool):
    """A tanh layer trained by SGD: with the gradients written the way TensorFlow writes
    them (AddV2, TanhGrad, BiasAddGrad) and ApplyGradientDescent, or with flowjit's own
    gradients and optimizer."""
    rng = np.random.default_rng(3)
    with tf.Graph().as_default() as g:
        x = tf.constant(rng.normal(size=(8, 5)))
        y = tf.constant(rng.normal(size=(8, 2)))
        w = tf.Variable(rng.normal(size=(5, 2)) * 0.3, name="w")
        b = tf.Variable(np.zeros(2), name="b")
        out = tf.tanh(tf.nn.bias_add(tf.matmul(x, w), b))
        loss = tf.reduce_sum(tf.square(out - y))
        if apply_ops:
            d_out = grad_ops.tanh_grad(out, add_v2(out, -y) * 2.0)
            train = tf.group(
                training_ops.apply_gradient_descent(w, 0.05, tf.matmul(x, d_out,
                                                                       transpose_a=True)),
                training_ops.apply_gradient_descent(b, 0.05, grad_ops.bias_add_grad(d_out)))
        else:
            train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        init = tf.global_variables_initializer()
    return g, init, loss, train


def test_training_with_apply_ops_matches_flowjits_optimizer():
    losses = []
    for apply_ops in (True, False):
        g, init, loss, train = _mlp(apply_ops)
        with tf.Session(graph=g, config=REFERENCE) as sess:
            sess.run(init)
            losses.append([sess.run([loss, train])[0] for _ in range(5)])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-12)
    assert losses[0][-1] < losses[0][0]


@pytest.mark.parametrize("kind", ["ApplyGradientDescent", "ApplyMomentum", "ApplyAdam"])
def test_optimizer_updates_compile_on_the_cpu_like_their_reference_kernels(kind):
    """The update joins a compiled CPU cluster, every variable it updates (var and slots)
    is installed, and two steps give exactly the reference kernels' values."""
    import test_targets
    case = test_targets.EXTRA_CASES[kind][0]
    graph, fetches, feeds, init = test_targets._build(case)
    expected, _ = test_targets._run(graph, fetches, feeds, init, test_targets.OFF)
    got, compiled = test_targets._run(graph, fetches, feeds, init,
                                      tf.ConfigProto(jit="always"))
    assert any(op.type == kind for op in compiled)
    np.testing.assert_array_equal(got[0], expected[0])
