"""Optimizers (optimizers/) and the global step (train.py): each update equals its formula,
computed by hand in NumPy, over several steps of a small quadratic problem."""

import numpy as np
import pytest

import flowjit as tf

W0 = np.array([1.0, -2.0, 0.5])
TARGET = np.array([3.0, 1.0, -1.0])
STEPS = 4


def _session():
    return tf.Session(config=tf.ConfigProto(jit=False))


def _problem(dtype=tf.float64, name="w"):
    """w and the hand-written gradient of sum((w - target)^2): 2 * (w - target)."""
    w = tf.Variable(W0.astype(dtype.as_numpy_dtype), name=name)
    return w, 2.0 * (w - tf.constant(TARGET, dtype=dtype))


def _trajectory(train_op, fetch, steps=STEPS, feeds=None):
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        out = []
        for t in range(steps):
            sess.run(train_op, feeds[t] if feeds else None)
            out.append(sess.run(fetch))
    return np.array(out)


def _reference(update, steps=STEPS, **hyper):
    """Run `update(w, g, t, state, **hyper)` in NumPy (t counts from 1)."""
    w, state, out = W0.copy(), {}, []
    for t in range(1, steps + 1):
        w = update(w, 2.0 * (w - TARGET), t, state, **hyper)
        out.append(w.copy())
    return np.array(out)


def _sgd(w, g, t, s, lr):
    return w - lr * g


def _momentum(w, g, t, s, lr, mu, nesterov=False):
    s["a"] = mu * s.get("a", 0.0) + g
    return w - (lr * g + lr * mu * s["a"] if nesterov else lr * s["a"])


def _float32_power(beta, t):
    """beta**t as TF1's beta-power variables hold it: float32, multiplied step by step."""
    p = np.float32(beta)
    for _ in range(t - 1):
        p = np.float32(p * np.float32(beta))
    return float(p)


def _adam(w, g, t, s, lr, b1, b2, eps):
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    lr_t = lr * np.sqrt(1 - _float32_power(b2, t)) / (1 - _float32_power(b1, t))
    return w - lr_t * s["m"] / (np.sqrt(s["v"]) + eps)


def _adagrad(w, g, t, s, lr, init):
    s["acc"] = s.get("acc", init) + g * g
    return w - lr * g / np.sqrt(s["acc"])


def _rmsprop(w, g, t, s, lr, rho, mu, eps, centered=False):
    s["ms"] = rho * s.get("ms", 1.0) + (1 - rho) * g * g
    denom = s["ms"] + eps
    if centered:
        s["mg"] = rho * s.get("mg", 0.0) + (1 - rho) * g
        denom = denom - s["mg"] ** 2
    s["mom"] = mu * s.get("mom", 0.0) + lr * g / np.sqrt(denom)
    return w - s["mom"]


CASES = {
    "sgd": (lambda: tf.train.GradientDescentOptimizer(0.1), _sgd, dict(lr=0.1)),
    "momentum": (lambda: tf.train.MomentumOptimizer(0.05, 0.9), _momentum,
                 dict(lr=0.05, mu=0.9)),
    "nesterov": (lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True), _momentum,
                 dict(lr=0.05, mu=0.9, nesterov=True)),
    "adam": (lambda: tf.train.AdamOptimizer(0.1), _adam,
             dict(lr=0.1, b1=0.9, b2=0.999, eps=1e-8)),
    "adam_params": (lambda: tf.train.AdamOptimizer(0.3, beta1=0.5, beta2=0.8, epsilon=0.1),
                    _adam, dict(lr=0.3, b1=0.5, b2=0.8, eps=0.1)),
    "adagrad": (lambda: tf.train.AdagradOptimizer(0.5), _adagrad, dict(lr=0.5, init=0.1)),
    "adagrad_init": (lambda: tf.train.AdagradOptimizer(0.5, initial_accumulator_value=2.0),
                     _adagrad, dict(lr=0.5, init=2.0)),
    "rmsprop": (lambda: tf.train.RMSPropOptimizer(0.01), _rmsprop,
                dict(lr=0.01, rho=0.9, mu=0.0, eps=1e-10)),
    "rmsprop_momentum": (lambda: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5,
                                                          epsilon=1e-3),
                         _rmsprop, dict(lr=0.01, rho=0.8, mu=0.5, eps=1e-3)),
    "rmsprop_centered": (lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
                         _rmsprop, dict(lr=0.01, rho=0.9, mu=0.5, eps=1e-10, centered=True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_updates_match_the_formula(case):
    make, update, hyper = CASES[case]
    w, grad = _problem()
    train = make().apply_gradients([(grad, w)])
    np.testing.assert_allclose(_trajectory(train, w), _reference(update, **hyper), rtol=1e-12)


@pytest.mark.parametrize("case", ["adam", "rmsprop_centered", "nesterov"])
def test_float32_variables(case):
    make, update, hyper = CASES[case]
    w, grad = _problem(tf.float32)
    train = make().apply_gradients([(grad, w)])
    got = _trajectory(train, w)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _reference(update, **hyper), rtol=2e-5, atol=1e-6)


def test_tensor_learning_rates():
    # A fed float32 placeholder for a float64 variable (cast), changing every step.
    lr = tf.placeholder(tf.float32, [])
    w, grad = _problem()
    train = tf.train.MomentumOptimizer(lr, tf.constant(0.9, tf.float64)).apply_gradients(
        [(grad, w)])
    rates = [0.1, 0.05, 0.025, 0.0125]
    w_np, acc, expected = W0.copy(), 0.0, []
    for r in rates:
        acc = 0.9 * acc + 2.0 * (w_np - TARGET)
        w_np = w_np - np.float32(r).astype(np.float64) * acc
        expected.append(w_np.copy())
    got = _trajectory(train, w, feeds=[{lr: r} for r in rates])
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_learning_rate_from_a_variable_and_a_callable():
    w, grad = _problem()
    rate = tf.Variable(0.2, dtype=tf.float64, name="rate")
    halve = tf.assign(rate, rate * 0.5)
    train = tf.train.GradientDescentOptimizer(rate).apply_gradients([(grad, w)])
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        w_np = W0.copy()
        for r in (0.2, 0.1, 0.05):
            sess.run(train)
            sess.run(halve)
            w_np = w_np - r * 2.0 * (w_np - TARGET)
            np.testing.assert_allclose(sess.run(w), w_np, rtol=1e-12)
    w2, grad2 = _problem(name="w2")
    train2 = tf.train.GradientDescentOptimizer(lambda: tf.constant(0.1)).apply_gradients(
        [(grad2, w2)])
    lr32 = float(np.float32(0.1))  # the float32 rate, cast to the variable dtype
    np.testing.assert_allclose(_trajectory(train2, w2), _reference(_sgd, lr=lr32), rtol=1e-12)


def test_global_step():
    graph = tf.get_default_graph()
    assert tf.train.get_global_step() is None
    step = tf.train.get_or_create_global_step()
    assert tf.train.get_or_create_global_step() is step is tf.train.get_global_step()
    assert step.name == "global_step:0" and step.dtype == tf.int64 and not step.trainable
    assert graph.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
    assert step not in tf.trainable_variables()
    with pytest.raises(ValueError, match="already exists"):
        tf.train.create_global_step()
    # The rate reads the step before the increment: step t (from 1) uses 0.1 / t.
    w, grad = _problem()
    rate = 0.1 / (tf.cast(step, tf.float64) + 1.0)
    train = tf.train.GradientDescentOptimizer(rate).apply_gradients([(grad, w)],
                                                                    global_step=step)
    assert isinstance(train, tf.Operation) and train.name == "GradientDescent"
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        w_np = W0.copy()
        for t in range(1, 4):
            sess.run(train)
            w_np = w_np - 0.1 / t * 2.0 * (w_np - TARGET)
            assert sess.run(step) == t and tf.train.global_step(sess, step) == t
        np.testing.assert_allclose(sess.run(w), w_np, rtol=1e-12)


def test_updates_see_the_values_from_before_the_step():
    # Coupled gradients: each reads the other variable, which the same step updates.
    w = tf.Variable([1.0, 2.0], dtype=tf.float64, name="w")
    u = tf.Variable([5.0, -1.0], dtype=tf.float64, name="u")
    train = tf.train.GradientDescentOptimizer(0.1).apply_gradients(
        [(2.0 * (w - u), w), (2.0 * (u - w), u)])
    w_np, u_np = np.array([1.0, 2.0]), np.array([5.0, -1.0])
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run(train)
            w_np, u_np = w_np - 0.2 * (w_np - u_np), u_np - 0.2 * (u_np - w_np)
            got_w, got_u = sess.run([w, u])
            np.testing.assert_allclose(got_w, w_np, rtol=1e-12)
            np.testing.assert_allclose(got_u, u_np, rtol=1e-12)


def test_var_list_selection_and_none_gradients():
    w, grad = _problem()
    u = tf.Variable([7.0], dtype=tf.float64, name="u")
    opt = tf.train.MomentumOptimizer(0.05, 0.9)
    train = opt.apply_gradients([(grad, w), (None, u)])
    assert opt.get_slot(w, "momentum") is not None and opt.get_slot(u, "momentum") is None
    np.testing.assert_allclose(_trajectory(train, w), _reference(_momentum, lr=0.05, mu=0.9))
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert sess.run(u) == [7.0]
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, w), (None, u)])
    with pytest.raises(ValueError, match="more than once"):
        opt.apply_gradients([(grad, w), (grad, w)])
    with pytest.raises(ValueError, match="dtype float32"):
        opt.apply_gradients([(tf.constant([1.0, 2.0, 3.0]), w)])
    with pytest.raises(TypeError, match="not a Variable"):
        opt.apply_gradients([(grad, grad)])


def test_numpy_gradients_are_converted():
    w, _ = _problem()
    train = tf.train.GradientDescentOptimizer(0.5).apply_gradients([([1.0, 2.0, 4.0], w)])
    np.testing.assert_allclose(_trajectory(train, w, steps=2)[-1], W0 - [1.0, 2.0, 4.0])


@pytest.mark.parametrize("make, names, initial", [
    (lambda: tf.train.GradientDescentOptimizer(0.1), [], {}),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), ["momentum"], {"momentum": 0.0}),
    (lambda: tf.train.AdamOptimizer(), ["m", "v"], {"m": 0.0, "v": 0.0}),
    (lambda: tf.train.AdagradOptimizer(0.1), ["accumulator"], {"accumulator": 0.1}),
    (lambda: tf.train.RMSPropOptimizer(0.1), ["momentum", "rms"], {"rms": 1.0, "momentum": 0.0}),
    (lambda: tf.train.RMSPropOptimizer(0.1, centered=True), ["mg", "momentum", "rms"],
     {"rms": 1.0, "momentum": 0.0, "mg": 0.0}),
])
def test_slots(make, names, initial):
    with tf.name_scope("model"):
        w, grad = _problem()
    opt = make()
    with tf.name_scope("training"):
        opt.apply_gradients([(grad, w)])
    assert opt.get_slot_names() == names
    slots = [opt.get_slot(w, n) for n in names]
    suffix = opt.get_name()
    expected = [f"model/w/{suffix}_{i}" if i else f"model/w/{suffix}" for i in range(len(names))]
    assert sorted(s.op.name for s in slots) == sorted(expected)
    assert opt.get_slot(w, "nope") is None
    assert set(opt.variables()) <= set(tf.global_variables())
    for s in slots:
        assert not s.trainable and s.shape == w.shape and s.dtype == w.dtype
        assert s in tf.global_variables() and s not in tf.trainable_variables()
    with _session() as sess:
        sess.run(tf.global_variables_initializer())  # initializes every optimizer variable
        for n, s in zip(names, slots):
            np.testing.assert_array_equal(sess.run(s), np.full(3, initial[n]))


def test_adam_beta_powers_and_names():
    w, grad = _problem()
    opt = tf.train.AdamOptimizer(0.1, beta1=0.8, beta2=0.9)
    train = opt.apply_gradients([(grad, w)], name="step")
    assert train.name == "step"
    b1, b2 = opt._get_beta_accumulators()
    assert (b1.op.name, b2.op.name) == ("beta1_power", "beta2_power")
    assert not b1.trainable and b1 in opt.variables()
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        powers = sess.run([b1, b2])
        assert all(p.dtype == np.float32 for p in powers)   # float32 as TF1's, for any model
        np.testing.assert_allclose(powers, [_float32_power(0.8, 4), _float32_power(0.9, 4)],
                                   rtol=0)
    # A second apply_gradients of the same optimizer reuses its slots and beta powers.
    opt.apply_gradients([(grad, w)])
    assert opt.get_slot_names() == ["m", "v"] and len(opt.variables()) == 4


def test_adagrad_rejects_a_non_positive_accumulator():
    with pytest.raises(ValueError, match="positive"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)


def test_compiled_session_runs_the_updates():
    w, grad = _problem()
    train = tf.train.AdamOptimizer(0.1).apply_gradients([(grad, w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(STEPS):
            sess.run(train)
        np.testing.assert_allclose(sess.run(w), _reference(_adam, lr=0.1, b1=0.9, b2=0.999,
                                                           eps=1e-8)[-1], rtol=1e-10)


# --- with autodiff (flowjit.gradients) ------------------------------------------------------------


def _need_gradients():
    if not hasattr(tf, "gradients"):
        pytest.skip("flowjit.gradients is not available yet")


def test_minimize_matches_hand_written_gradients():
    _need_gradients()
    w, _ = _problem()
    loss = tf.reduce_sum(tf.square(w - tf.constant(TARGET)))
    step = tf.train.get_or_create_global_step()
    train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss, global_step=step)
    np.testing.assert_allclose(_trajectory(train, w), _reference(_momentum, lr=0.05, mu=0.9),
                               rtol=1e-12)


def test_compute_gradients_and_var_list():
    _need_gradients()
    w, _ = _problem()
    u = tf.Variable(2.0, dtype=tf.float64, name="u")
    frozen = tf.Variable(3.0, dtype=tf.float64, name="frozen", trainable=False)
    loss = tf.reduce_sum(tf.square(w - tf.constant(TARGET))) + u * frozen
    opt = tf.train.GradientDescentOptimizer(0.1)
    pairs = opt.compute_gradients(loss)
    assert [v for _, v in pairs] == [w, u]
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(pairs[0][0]), 2.0 * (W0 - TARGET))
        assert sess.run(pairs[1][0]) == 3.0
    train = opt.minimize(loss, var_list=[u])
    with _session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        np.testing.assert_array_equal(sess.run(w), W0)  # not in var_list: unchanged
        np.testing.assert_allclose(sess.run(u), 2.0 - 2 * 0.1 * 3.0, rtol=1e-12)
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.minimize(tf.reduce_sum(tf.constant([1.0], tf.float64)) + 0.0 * tf.cast(1, tf.float64),
                     var_list=[w])
