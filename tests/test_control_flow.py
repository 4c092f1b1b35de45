"""TF1 control flow: cond, case and while_loop run by the control-flow executor (frames,
iteration tags, dead values), their gradients, and their errors.

The oracle is NumPy (the same computation written as a Python loop or `if`); gradients
are compared with central finite differences of that NumPy code.
"""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.errors import DeadlineExceededError, InvalidArgumentError


def _run(fetches, feeds=None, graph=None):
    with tf.Session(graph=graph or tf.get_default_graph()) as sess:
        return sess.run(fetches, feeds)


def _fd(f, x, eps=1e-6):
    """Central finite differences of scalar f at x (float64)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


# --- cond and case -------------------------------------------------------------------------------

def test_cond_runs_only_the_taken_branch():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3])
        p = tf.placeholder(tf.bool, [])
        v = tf.Variable(0.0, dtype=tf.float64)
        y = tf.cond(p, lambda: x * 2.0, lambda: tf.reduce_sum(x) - x)

        def touched():   # a branch with a side effect: runs only when taken
            with tf.control_dependencies([tf.assign_add(v, 1.0)]):
                return tf.identity(x)

        z = tf.cond(p, touched, lambda: x)
        xv = np.array([1.0, 2.0, 4.0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(y, {x: xv, p: True}), xv * 2)
            np.testing.assert_allclose(sess.run(y, {x: xv, p: False}), xv.sum() - xv)
            sess.run(z, {x: xv, p: False})
            assert sess.run(v) == 0.0
            sess.run(z, {x: xv, p: True})
            sess.run(z, {x: xv, p: True})
            assert sess.run(v) == 2.0


def test_cond_nested_structures_and_constant_branches():
    Pair = collections.namedtuple("Pair", "a b")
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        out = tf.cond(p, lambda: Pair(tf.constant(1), {"k": tf.constant([1.0, 2.0])}),
                      lambda: Pair(tf.constant(2), {"k": tf.constant([3.0, 4.0])}))
        assert isinstance(out, Pair)
        a, b = _run([out.a, out.b["k"]], {p: False})
        assert a == 2
        np.testing.assert_array_equal(b, [3.0, 4.0])
        single = tf.cond(p, lambda: [tf.constant(5)], lambda: [tf.constant(6)])
        assert _run(single, {p: True}) == 5   # a one-element list comes back unpacked


def test_cond_branch_errors_are_clear():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        with pytest.raises(TypeError, match="float32"):
            tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(1))
        with pytest.raises(ValueError, match="same structure"):
            tf.cond(p, lambda: (tf.constant(1), tf.constant(2)), lambda: tf.constant(1))
        with pytest.raises(TypeError, match="pred"):
            tf.cond(tf.constant([True, False]), lambda: 1, lambda: 2)


def test_fetching_a_tensor_of_the_branch_not_taken_is_an_error():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        inside = []

        def branch():
            inside.append(tf.constant(3.0) * 2.0)
            return inside[0]

        tf.cond(p, branch, lambda: tf.constant(0.0))
        with pytest.raises(InvalidArgumentError, match="not taken"):
            _run(inside[0], {p: False})


def test_case_picks_the_first_true_predicate_else_default():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [])
        r = tf.case([(tf.less(x, 0), lambda: tf.constant(-1)),
                     (tf.equal(x, 0), lambda: tf.constant(0))],
                    default=lambda: tf.constant(1))
        no_default = tf.case([(tf.less(x, 0), lambda: tf.constant(-1)),
                              (tf.greater_equal(x, 0), lambda: tf.constant(7))])
        with tf.Session() as sess:
            assert [sess.run(r, {x: v}) for v in (-5, 0, 5)] == [-1, 0, 1]
            assert [sess.run(no_default, {x: v}) for v in (-5, 5)] == [-1, 7]


def test_cond_gradient_matches_finite_differences():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3])
        p = tf.placeholder(tf.bool, [])
        w = tf.constant([0.5, -1.0, 2.0], tf.float64)
        y = tf.reduce_sum(tf.cond(p, lambda: tf.sin(x) * w, lambda: x * x * w))
        gx, gw = tf.gradients(y, [x, w])
        xv = np.array([0.3, -0.7, 1.1])
        wv = np.array([0.5, -1.0, 2.0])
        with tf.Session() as sess:
            for take in (True, False):
                f = (lambda a: (np.sin(a) * wv).sum()) if take else (lambda a: (a * a * wv).sum())
                fw = (lambda b: (np.sin(xv) * b).sum()) if take else (lambda b: (xv * xv * b).sum())
                a, b = sess.run([gx, gw], {x: xv, p: take})
                np.testing.assert_allclose(a, _fd(f, xv), rtol=1e-6, atol=1e-8)
                np.testing.assert_allclose(b, _fd(fw, wv), rtol=1e-6, atol=1e-8)


# --- while_loop ----------------------------------------------------------------------------------

def _sum_loop():
    n = tf.placeholder(tf.int32, [], name="n")
    i, total = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), [0, 0])
    return n, i, total


def test_while_loop_with_a_fed_trip_count_including_zero():
    with tf.Graph().as_default():
        n, i, total = _sum_loop()
        with tf.Session() as sess:
            for nv in (0, 1, 7, 100):
                assert sess.run([i, total], {n: nv}) == [nv, sum(range(nv))]


def test_nested_loops_and_cond_in_a_body():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])

        def outer_body(i, acc):
            # inner loop: j from 0 to i, adds j (or -j when j is odd)
            _, inner = tf.while_loop(
                lambda j, s: j < i,
                lambda j, s: (j + 1, s + tf.cond(tf.equal(j % 2, 0), lambda: j, lambda: -j)),
                [0, 0])
            return i + 1, acc + inner

        _, acc = tf.while_loop(lambda i, a: i < n, outer_body, [0, 0])
        with tf.Session() as sess:
            for nv in (0, 1, 4, 9):
                expect = sum(j if j % 2 == 0 else -j for i in range(nv) for j in range(i))
                assert sess.run(acc, {n: nv}) == expect


def test_maximum_iterations_and_dict_loop_vars():
    with tf.Graph().as_default():
        state = {"x": tf.constant(1.0), "k": tf.constant(0)}
        out = tf.while_loop(lambda s: s["x"] < 1e9,
                            lambda s: {"x": s["x"] * 2.0, "k": s["k"] + 1},
                            [state], maximum_iterations=5)
        x, k = _run([out["x"], out["k"]])
        assert (x, k) == (32.0, 5)


def test_shape_invariants():
    with tf.Graph().as_default():
        v = tf.constant([1.0])
        with pytest.raises(ValueError, match="shape_invariants"):
            tf.while_loop(lambda a: tf.size(a) < 4, lambda a: tf.concat([a, a], 0), [v])
        grown = tf.while_loop(lambda a: tf.size(a) < 4, lambda a: tf.concat([a, a], 0), [v],
                              shape_invariants=[tf.TensorShape([None])])
        np.testing.assert_array_equal(_run(grown), [1.0] * 4)


def test_variables_read_and_assigned_in_a_loop():
    with tf.Graph().as_default():
        v = tf.Variable(0, dtype=tf.int32)
        n = tf.placeholder(tf.int32, [])

        def body(i):
            with tf.control_dependencies([tf.assign_add(v, i)]):
                return i + 1

        done = tf.while_loop(lambda i: i < n, body, [0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(done, {n: 5}) == 5
            assert sess.run(v) == sum(range(5))
            sess.run(done, {n: 3})
            assert sess.run(v) == sum(range(5)) + sum(range(3))


def test_loop_in_the_branch_not_taken_is_dead_and_does_not_run():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        v = tf.Variable(0, dtype=tf.int32)

        def looping():
            def body(i):
                with tf.control_dependencies([tf.assign_add(v, 1)]):
                    return i + 1
            return tf.while_loop(lambda i: i < 3, body, [0])

        r = tf.cond(p, looping, lambda: tf.constant(-1))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(r, {p: False}) == -1
            assert sess.run(v) == 0
            assert sess.run(r, {p: True}) == 3
            assert sess.run(v) == 3


def test_an_endless_loop_obeys_the_run_timeout():
    with tf.Graph().as_default():
        forever = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [0])
        options = tf.RunOptions(timeout_in_ms=200)
        with tf.Session() as sess, pytest.raises(DeadlineExceededError):
            sess.run(forever, options=options)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 12), shape=st.sampled_from([(), (1,), (3,), (2, 0), (2, 3)]),
       seed=st.integers(0, 2**16))
def test_loops_equal_numpy_on_drawn_trip_counts_and_shapes(n, shape, seed):
    rng = np.random.default_rng(seed)
    xv = rng.uniform(-1, 1, shape)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, shape)
        k = tf.placeholder(tf.int32, [])
        _, y = tf.while_loop(lambda i, y: i < k, lambda i, y: (i + 1, tf.tanh(y) + x),
                             [0, tf.zeros_like(x)])
        got = _run(y, {x: xv, k: n})
    want = np.zeros_like(xv)
    for _ in range(n):
        want = np.tanh(want) + xv
    np.testing.assert_allclose(got, want, rtol=1e-12)


# --- gradients through loops ----------------------------------------------------------------------

def _recurrence(x, w, n):
    y = x.copy()
    for _ in range(n):
        y = np.sin(y) * w + y
    return (y * y).sum()


@pytest.mark.parametrize("n", [0, 1, 6])
def test_while_loop_gradient_matches_finite_differences(n):
    xv, wv = np.array([0.3, -0.2, 0.9]), np.array([0.5, 1.5, -1.0])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3])
        w = tf.constant(wv)
        k = tf.placeholder(tf.int32, [])
        _, y = tf.while_loop(lambda i, y: i < k, lambda i, y: (i + 1, tf.sin(y) * w + y),
                             [0, x])
        gx, gw = tf.gradients(tf.reduce_sum(y * y), [x, w])
        a, b = _run([gx, gw], {x: xv, k: n})
    np.testing.assert_allclose(a, _fd(lambda t: _recurrence(t, wv, n), xv), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b, _fd(lambda t: _recurrence(xv, t, n), wv), rtol=1e-6, atol=1e-8)


def test_gradient_through_nested_loops_and_a_cond_in_the_body():
    xv = np.array([0.4, -0.8])

    def numpy_f(x):
        y = x.copy()
        for i in range(3):
            for _ in range(2):
                y = y * 0.9 + np.sin(y)
            y = y * y if i % 2 == 0 else y + 1.0
        return y.sum()

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2])

        def outer(i, y):
            _, y = tf.while_loop(lambda j, y: j < 2, lambda j, y: (j + 1, y * 0.9 + tf.sin(y)),
                                 [0, y])
            y = tf.cond(tf.equal(i % 2, 0), lambda: y * y, lambda: y + 1.0)
            return i + 1, y

        _, y = tf.while_loop(lambda i, y: i < 3, outer, [0, x])
        [g] = tf.gradients(tf.reduce_sum(y), [x])
        got_y, got_g = _run([y, g], {x: xv})
    assert np.isclose(got_y.sum(), numpy_f(xv))
    np.testing.assert_allclose(got_g, _fd(numpy_f, xv), rtol=1e-6, atol=1e-8)


def test_gradient_of_a_loop_training_a_variable():
    """A loop in a model: the optimizer's update reaches a variable used in the body."""
    with tf.Graph().as_default():
        w = tf.Variable([1.0, -0.5], dtype=tf.float64)
        _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * w + 1.0),
                             [0, tf.constant([0.5, 0.5], tf.float64)])
        loss = tf.reduce_sum(tf.square(y - 1.0))
        [gw] = tf.gradients(loss, [w])
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            wv = sess.run(w)

            def numpy_loss(wt):
                y = np.array([0.5, 0.5])
                for _ in range(4):
                    y = y * wt + 1.0
                return ((y - 1.0) ** 2).sum()

            np.testing.assert_allclose(sess.run(gw), _fd(numpy_loss, wv), rtol=1e-6)
            first = sess.run(loss)
            for _ in range(20):
                sess.run(train)
            assert sess.run(loss) < first


def test_gradient_of_a_body_with_random_ops_is_refused_clearly():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [2])
        _, y = tf.while_loop(lambda i, y: i < 2,
                             lambda i, y: (i + 1, y + tf.random_normal([2], dtype=tf.float64)),
                             [0, x])
        with pytest.raises(InvalidArgumentError, match="RandomStandardNormal"):
            tf.gradients(y, [x])
        _, z = tf.while_loop(lambda i, y: i < 2,
                             lambda i, y: (i + 1, y + tf.random_normal([2], dtype=tf.float64)),
                             [0, x], back_prop=False)
        assert tf.gradients(tf.reduce_sum(z), [x]) == [None]


def test_control_dependencies_on_ops_outside_a_loop_run_them_once_before_it():
    """An op built in a loop body under `control_dependencies` on an op outside the loop
    waits for it (it runs once, before the loop's iterations use it), as in TensorFlow;
    the same through a cond inside the body."""
    with tf.Graph().as_default():
        v = tf.Variable(0, dtype=tf.int32)
        bump = tf.assign_add(v, 10)

        def body(i, acc):
            with tf.control_dependencies([bump]):
                seen = tf.identity(v)            # reads v after the bump
            inner = tf.cond(i > 0, lambda: _after(bump, seen), lambda: seen)
            return i + 1, acc + inner

        _, total = tf.while_loop(lambda i, a: i < 3, body, [0, 0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(total) == 30
            assert sess.run(v) == 10      # the bump ran once, not once per iteration


def _after(op, t):
    with tf.control_dependencies([op]):
        return tf.identity(t)


def test_the_top_level_of_a_plan_with_control_flow_compiles(monkeypatch, compiled_calls):
    """Around a cond, the model's ops form compiled clusters (run at the top level of the
    control-flow executor) and give what the reference kernels give."""
    calls = compiled_calls
    losses = {}
    for policy in ("always", "never"):
        monkeypatch.setenv("FLOWJIT_JIT", policy)
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float64, [None, 6])
            train_mode = tf.placeholder(tf.bool, [])
            w = tf.Variable(np.linspace(-0.3, 0.3, 24).reshape(6, 4))
            h = tf.tanh(tf.matmul(x, w) + 0.5)
            y = tf.cond(train_mode, lambda: h * 0.9, lambda: h)
            loss = tf.reduce_sum(tf.square(y - 1.0))
            step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
            xv = np.random.default_rng(2).normal(size=(7, 6))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                losses[policy] = [sess.run([loss, step], {x: xv, train_mode: i % 2 == 0})[0]
                                  for i in range(4)]
        if policy == "always":
            assert calls, "no compiled kernel ran around the cond"
            calls.clear()
    assert not calls
    np.testing.assert_allclose(losses["always"], losses["never"], rtol=1e-10)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(0, 9), shape=st.sampled_from([(), (1,), (4,), (2, 0), (3, 5)]),
       seed=st.integers(0, 2**16))
def test_compiled_loops_equal_the_reference_on_drawn_trip_counts(n, shape, seed):
    """A loop of compilable ops runs as compiled condition and body clusters (a LoopStep,
    runtime/loop_steps.py) under compile-always; it equals the reference kernels' result
    on the control-flow executor, with a captured variable, a captured constant and a
    loop variable the body leaves alone."""
    from flowjit.runtime import loop_steps

    xv = np.random.default_rng(seed).uniform(-1, 1, shape)
    results = {}
    for policy in ("always", "never"):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float64, shape)
            k = tf.placeholder(tf.int32, [])
            scale = tf.Variable(0.5, dtype=tf.float64)
            offset = tf.constant(0.25, tf.float64)
            _, y, same = tf.while_loop(
                lambda i, y, s: i < k,
                lambda i, y, s: (i + 1, tf.tanh(y) * scale + x - offset, s),
                [0, tf.zeros_like(x), tf.constant(7)], maximum_iterations=50)
            config = tf.ConfigProto(jit=tf.JitOptions.always() if policy == "always"
                                    else tf.JitOptions(policy=tf.JitPolicy.NEVER))
            with tf.Session(config=config) as sess:
                sess.run(tf.global_variables_initializer())
                results[policy] = sess.run([y, same], {x: xv, k: n})
                steps = [node for plan in sess._plans.values() for node in plan.ops
                         if isinstance(node, loop_steps.LoopStep)]
                assert bool(steps) == (policy == "always")
    want = np.zeros_like(xv)
    for _ in range(n):
        want = np.tanh(want) * 0.5 + xv - 0.25
    np.testing.assert_allclose(results["always"][0], want, rtol=1e-12)
    np.testing.assert_allclose(results["never"][0], want, rtol=1e-12)
    assert results["always"][1] == results["never"][1] == 7


def test_a_compiled_loop_obeys_the_run_timeout():
    with tf.Graph().as_default():
        forever = tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [0])
        config = tf.ConfigProto(jit=tf.JitOptions.always())
        with tf.Session(config=config) as sess, pytest.raises(DeadlineExceededError):
            sess.run(forever, options=tf.RunOptions(timeout_in_ms=300))
