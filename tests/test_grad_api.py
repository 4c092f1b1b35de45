"""`flowjit.grad` / `flowjit.value_and_grad`: gradients of traced functions against central
finite differences (float64), argnums, has_aux, composition with `jit` and with itself
(second derivatives), float32, and the errors JAX would give.

Each distinct function and signature compiles once (about a second), so the functions are
module-level and few.
"""

import numpy as np
import pytest

import flowjit as tf
from flowjit.errors import UnimplementedError

RNG = np.random.default_rng(0)


def finite_diff(f, args, argnum, eps=1e-6):
    """Central differences of scalar f with respect to args[argnum], element by element."""
    args = [np.array(a, dtype=np.float64) for a in args]
    x = args[argnum]
    out = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        old = x[i]
        x[i] = old + eps
        hi = f(*args)
        x[i] = old - eps
        lo = f(*args)
        x[i] = old
        out[i] = (hi - lo) / (2 * eps)
    return out


# --- an MLP loss (flowjit ops) and its NumPy twin for the finite differences ---------------
def mlp_loss(w1, b1, w2, b2, x, y):
    h = tf.tanh(tf.matmul(x, w1) + b1)
    pred = tf.nn.bias_add(tf.matmul(h, w2), b2)
    return tf.reduce_mean(tf.square(pred - y))


def mlp_loss_np(w1, b1, w2, b2, x, y):
    pred = np.tanh(x @ w1 + b1) @ w2 + b2
    return np.mean((pred - y) ** 2)


MLP_VG = tf.value_and_grad(mlp_loss, argnums=(0, 1, 2, 3))


def mlp_args(dtype=np.float64):
    shapes = [(5, 7), (7,), (7, 3), (3,), (6, 5), (6, 3)]
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


def test_mlp_value_and_grad_match_finite_differences_and_compile():
    args = mlp_args()
    value, grads = MLP_VG(*args)
    assert isinstance(grads, tuple) and len(grads) == 4
    np.testing.assert_allclose(value, mlp_loss_np(*args), rtol=1e-12)
    for i, g in enumerate(grads):
        assert g.shape == args[i].shape and g.dtype == np.float64
        np.testing.assert_allclose(g, finite_diff(mlp_loss_np, args, i), rtol=1e-6, atol=1e-8)
    lowered = MLP_VG.lower(*args)
    assert lowered.compiled, str(lowered)
    assert "MatMul" in lowered.stage("graph") and "grad/" in lowered.stage("graph")
    MLP_VG(*args)
    assert MLP_VG.compile_count == 1     # same signature: cached


def test_float32_gradients_within_tolerance():
    args64 = mlp_args()
    args32 = [a.astype(np.float32) for a in args64]
    value, grads = MLP_VG(*args32)
    _, grads64 = MLP_VG(*args64)
    assert value.dtype == np.float32
    for g, g64 in zip(grads, grads64):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, g64, rtol=2e-4, atol=2e-5)


# --- softmax cross-entropy ------------------------------------------------------------------
def xent(logits, labels):
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                     logits=logits))


def xent_np(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=1))


def test_softmax_cross_entropy_gradient():
    logits = RNG.standard_normal((4, 5))
    labels = np.eye(5)[[0, 3, 1, 4]]
    g = tf.grad(xent)(logits, labels)
    np.testing.assert_allclose(g, finite_diff(xent_np, [logits, labels], 0), rtol=1e-6,
                               atol=1e-9)


# --- NumPy code, and composition with jit in both orders ------------------------------------
def np_loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2) + 0.5 * np.sum(w * w)


def test_numpy_function_gradient_and_jit_composition():
    w, x = RNG.standard_normal((4, 3)), RNG.standard_normal((6, 4))
    expected = finite_diff(np_loss, [w, x], 0)
    g = tf.grad(np_loss)(w, x)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.grad(tf.jit(np_loss))(w, x), g, rtol=1e-12)
    jit_grad = tf.jit(tf.grad(np_loss))
    np.testing.assert_allclose(jit_grad(w, x), g, rtol=1e-12)
    assert jit_grad.lower(w, x).compiled

    @tf.jit
    def step(w, x):       # grad inside a larger jitted function: inlined into its graph
        return w - 0.1 * tf.grad(np_loss)(w, x)

    np.testing.assert_allclose(step(w, x), w - 0.1 * g, rtol=1e-12)
    assert step.lower(w, x).compiled


# --- argnums, has_aux, unconnected arguments, Python floats ---------------------------------
def with_aux(x, y, unused):
    loss = tf.reduce_sum(x * tf.exp(y))
    return loss, {"y2": y * 2.0, "n": 3}


def test_has_aux_argnums_and_unconnected_argument():
    x, y, unused = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal((2, 2))
    (value, aux), (gx, gy, gu) = tf.value_and_grad(with_aux, argnums=(0, 1, 2),
                                                   has_aux=True)(x, y, unused)
    np.testing.assert_allclose(value, np.sum(x * np.exp(y)))
    np.testing.assert_allclose(aux["y2"], y * 2.0)
    assert aux["n"] == 3
    np.testing.assert_allclose(gx, np.exp(y))
    np.testing.assert_allclose(gy, x * np.exp(y))
    assert gu.shape == (2, 2) and not gu.any()   # unconnected: zeros, not None
    g, aux = tf.grad(with_aux, argnums=1, has_aux=True)(x, y, unused)
    np.testing.assert_allclose(g, x * np.exp(y))
    np.testing.assert_allclose(aux["y2"], y * 2.0)


def test_python_float_argument():
    g = tf.grad(lambda a, b: a * a * b)
    assert float(g(3.0, 2.0)) == 12.0
    assert float(g(5.0, 2.0)) == 20.0
    assert g.compile_count == 1                  # the float's value is not in the signature


# --- second derivatives ---------------------------------------------------------------------
def sin_x2(x):
    return tf.sin(x) * x ** 2


@pytest.mark.parametrize("f, d2", [
    (sin_x2, lambda x: -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)),
    (tf.tanh, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    (tf.exp, np.exp),
])
def test_second_derivatives_of_elementwise_chains(f, d2):
    x = np.array(0.7)
    np.testing.assert_allclose(tf.grad(tf.grad(f))(x), d2(0.7), rtol=1e-10)


def test_second_derivative_elementwise_over_an_array():
    x = np.linspace(-1.5, 1.5, 7)

    def d1_sum(x):
        return tf.reduce_sum(tf.grad(lambda v: tf.reduce_sum(sin_x2(v)))(x))

    d2 = tf.grad(d1_sum)(x)
    np.testing.assert_allclose(d2, -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x),
                               rtol=1e-10, atol=1e-12)


# --- errors ---------------------------------------------------------------------------------
def test_errors():
    x = np.ones(3)
    with pytest.raises(TypeError, match=r"argument 1 .*int64"):
        tf.grad(lambda a, n: tf.reduce_sum(a) * 2.0, argnums=1)(x, np.arange(3))
    with pytest.raises(TypeError, match=r"argument 0 is int"):
        tf.grad(lambda n: n * 2.0)(3)
    with pytest.raises(TypeError, match=r"scalar-output.*shape: \(3,\)"):
        tf.grad(tf.sin)(x)
    with pytest.raises(TypeError, match="int32"):
        tf.grad(lambda a: tf.cast(tf.reduce_sum(a), tf.int32))(x)
    with pytest.raises(TypeError, match="at least 3 positional arguments"):
        tf.grad(lambda a: tf.reduce_sum(a), argnums=(0, 2))(x)
    with pytest.raises(TypeError, match="argnums"):
        tf.grad(tf.reduce_sum, argnums="x")
    with pytest.raises(TypeError, match=r"\(value, aux\) pair"):
        tf.grad(lambda a: tf.reduce_sum(a), has_aux=True)(x)


def test_graph_break_is_an_error():
    def branchy(a):
        if np.sum(a) > 0:          # Python control flow on a traced value
            return np.sum(a)
        return -np.sum(a)

    with pytest.raises(UnimplementedError, match="cannot trace"):
        tf.grad(branchy)(np.ones(3))
