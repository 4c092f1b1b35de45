"""dynamic_rnn, static_rnn and their bidirectional forms (models/rnn.py): against each other
and a NumPy loop written from the LSTM's equations, with and without sequence lengths,
batch- and time-major; gradients through the while loop against finite differences;
dropout inside the loop; the compiled path (one compiled kernel for the forward loop and
one for its gradient, the CPU target against the reference kernels); clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops.control_flow import is_loop_op
from flowjit.runtime import loop_steps

rnn_cell = tf.nn.rnn_cell
OFF = tf.ConfigProto(jit=False)
B, T, D, H = 3, 5, 4, 6


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _numpy_lstm(x, kernel, bias, lengths=None, forget_bias=1.0, reverse=False):
    """(outputs [B, T, H], c, h) of a BasicLSTMCell over batch-major x; past an entry's
    length the output is 0 and the state stays; `reverse` runs each entry's first
    `lengths[b]` steps backwards and puts the outputs back in input order."""
    batch, steps, _ = x.shape
    lengths = np.full(batch, steps) if lengths is None else np.asarray(lengths)
    n = bias.shape[0] // 4
    c, h = np.zeros((batch, n)), np.zeros((batch, n))
    outputs = np.zeros((batch, steps, n))
    for t in range(steps):
        rows = [lengths[b] - 1 - t if reverse and t < lengths[b] else t for b in range(batch)]
        xt = x[np.arange(batch), rows]
        i, j, f, o = np.split(np.concatenate([xt, h], 1) @ kernel + bias, 4, axis=1)
        new_c = c * _sigmoid(f + forget_bias) + _sigmoid(i) * np.tanh(j)
        new_h = np.tanh(new_c) * _sigmoid(o)
        live = (t < lengths)[:, None]
        c, h = np.where(live, new_c, c), np.where(live, new_h, h)
        outputs[np.arange(batch), rows] = np.where(live, new_h, 0.0)
    return outputs, c, h


def _x(seed=0, shape=(B, T, D)):
    return np.random.RandomState(seed).uniform(-1, 1, shape)


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("lengths", [None, [5, 2, 0]])
def test_dynamic_rnn_equals_static_rnn_and_numpy(time_major, lengths):
    xv = _x()
    x = tf.placeholder(tf.float64, [T, None, D] if time_major else [None, T, D])
    seq = None if lengths is None else tf.constant(lengths)
    cell = rnn_cell.BasicLSTMCell(H)
    out_d, state_d = tf.nn.dynamic_rnn(cell, x, sequence_length=seq, dtype=tf.float64,
                                       time_major=time_major)
    steps = tf.unstack(x, axis=0 if time_major else 1)
    out_s, state_s = tf.nn.static_rnn(cell, steps, sequence_length=seq, dtype=tf.float64)
    assert [v.name for v in tf.trainable_variables()] == ["rnn/basic_lstm_cell/kernel:0",
                                                          "rnn/basic_lstm_cell/bias:0"]
    feed = {x: xv.transpose(1, 0, 2) if time_major else xv}
    with tf.Session(config=OFF) as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias = sess.run(tf.trainable_variables())
        od, cd, hd, os_, cs, hs = sess.run([out_d, state_d.c, state_d.h, out_s, state_s.c,
                                            state_s.h], feed)
    want, want_c, want_h = _numpy_lstm(xv, kernel, bias, lengths)
    np.testing.assert_allclose(od.transpose(1, 0, 2) if time_major else od, want, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(np.stack(os_, 1), want, rtol=1e-12, atol=1e-15)
    for got_c, got_h in ((cd, hd), (cs, hs)):
        np.testing.assert_allclose(got_c, want_c, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got_h, want_h, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("lengths", [None, [4, 5, 1]])
def test_bidirectional_rnns_equal_numpy(lengths):
    xv = _x(1)
    x = tf.placeholder(tf.float64, [None, T, D])
    seq = None if lengths is None else tf.constant(lengths)
    fw, bw = rnn_cell.BasicLSTMCell(H), rnn_cell.BasicLSTMCell(2)
    (out_fw, out_bw), (st_fw, st_bw) = tf.nn.bidirectional_dynamic_rnn(
        fw, bw, x, sequence_length=seq, dtype=tf.float64)
    steps = tf.unstack(x, axis=1)
    out_s, sfw, sbw = tf.nn.static_bidirectional_rnn(fw, bw, steps, sequence_length=seq,
                                                     dtype=tf.float64, scope="static")
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["bidirectional_rnn/fw/basic_lstm_cell/kernel:0",
                     "bidirectional_rnn/fw/basic_lstm_cell/bias:0",
                     "bidirectional_rnn/bw/basic_lstm_cell/kernel:0",
                     "bidirectional_rnn/bw/basic_lstm_cell/bias:0"]
    with tf.Session(config=OFF) as sess:
        sess.run(tf.global_variables_initializer())
        kf, bf, kb, bb = sess.run(tf.trainable_variables())
        got = sess.run([out_fw, out_bw, st_fw.h, st_bw.h, out_s, sfw.h, sbw.h], {x: xv})
    want_fw, _, want_hf = _numpy_lstm(xv, kf, bf, lengths)
    want_bw, _, want_hb = _numpy_lstm(xv, kb, bb, lengths, reverse=True)
    for got_fw, got_bw, got_hf, got_hb in (got[:4], (np.stack(got[4], 1)[..., :H],
                                                     np.stack(got[4], 1)[..., H:],
                                                     got[5], got[6])):
        np.testing.assert_allclose(got_fw, want_fw, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got_bw, want_bw, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got_hf, want_hf, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got_hb, want_hb, rtol=1e-12, atol=1e-15)


def _finite_differences(loss_of, values, entries, eps=1e-6):
    """Central differences of the scalar `loss_of(values)` at the given (array, index)."""
    out = []
    for k, index in entries:
        plus = [v.copy() for v in values]
        minus = [v.copy() for v in values]
        plus[k][index] += eps
        minus[k][index] -= eps
        out.append((loss_of(plus) - loss_of(minus)) / (2 * eps))
    return np.array(out)


@pytest.mark.parametrize("make_cell", [lambda: rnn_cell.BasicLSTMCell(3),
                                       lambda: rnn_cell.GRUCell(3),
                                       lambda: rnn_cell.LSTMCell(3, use_peepholes=True,
                                                                 num_proj=2)],
                         ids=["basic_lstm", "gru", "lstm_peepholes_proj"])
def test_gradients_through_dynamic_rnn_match_finite_differences(make_cell):
    batch, steps, depth = 2, 4, 3
    x = tf.placeholder(tf.float64, [None, steps, depth])
    cell = make_cell()
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[4, 2], dtype=tf.float64)
    last = state.h if isinstance(state, rnn_cell.LSTMStateTuple) else state
    weights = np.random.RandomState(9).uniform(-1, 1, outputs.shape.as_list()[-1])
    loss = tf.reduce_sum(tf.sin(outputs) * weights) + tf.reduce_sum(last * last)
    variables = tf.trainable_variables()
    grads = tf.gradients(loss, variables + [x])
    assert not [op for op in tf.get_default_graph().get_operations()
                if op.type.startswith("Stack")]   # a recorded loop: no gradient stacks
    placeholders = [tf.placeholder(tf.float64, v.shape) for v in variables]
    setters = [tf.assign(v, p) for v, p in zip(variables, placeholders)]
    rng = np.random.RandomState(2)
    values = [rng.uniform(-0.8, 0.8, v.shape.as_list()) for v in variables]
    values.append(rng.uniform(-1, 1, (batch, steps, depth)))
    with tf.Session(config=OFF) as sess:
        def loss_of(vals):
            sess.run(setters, dict(zip(placeholders, vals[:-1])))
            return sess.run(loss, {x: vals[-1]})

        loss_of(values)
        analytic = sess.run(grads, {x: values[-1]})
        entries = [(k, tuple(rng.randint(0, n) for n in values[k].shape))
                   for k in range(len(values)) for _ in range(4)]
        numeric = _finite_differences(loss_of, values, entries)
    got = np.array([analytic[k][index] for k, index in entries])
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_dropout_inside_dynamic_rnn_draws_outside_the_loop_and_differentiates():
    """The loop holds no random op; the gradient recomputes each step with the mask the
    forward step used (finite differences in fresh sessions draw the same numbers)."""
    tf.set_random_seed(4)
    steps, depth = 3, 2
    x = tf.placeholder(tf.float64, [None, steps, depth])
    cell = rnn_cell.DropoutWrapper(rnn_cell.GRUCell(3), input_keep_prob=0.6,
                                   output_keep_prob=0.7, seed=11)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    loss = tf.reduce_sum(tf.sin(outputs)) + tf.reduce_sum(state * state)
    grad = tf.gradients(loss, x)[0]
    ops = tf.get_default_graph().get_operations()
    loop_ops = [op for op in ops if is_loop_op(op)]
    assert loop_ops and not [op for op in loop_ops if op.type.startswith("Random")]
    assert len([op for op in ops if op.type == "RandomUniform" and "step_noise" in op.name]) == 2
    xv = _x(3, (2, steps, depth))

    def fresh_run(fetch, value):
        with tf.Session(config=OFF) as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(fetch, {x: value})

    out_v = fresh_run(outputs, xv)
    assert (out_v == 0).any() and (out_v != 0).any()   # the mask dropped some outputs
    analytic = fresh_run(grad, xv)
    entries = [(0, index) for index in np.ndindex(xv.shape)]
    numeric = _finite_differences(lambda v: fresh_run(loss, v[0]), [xv], entries)
    np.testing.assert_allclose(analytic.reshape(-1), numeric, rtol=1e-6, atol=1e-8)


def test_lstm_training_step_runs_as_two_compiled_loops(compiled_calls):
    """Under compile-always the forward loop and its gradient each run as ONE CPU kernel
    (the LoopStep's whole-loop cluster, no per-iteration clusters) and give what the
    reference kernels give; float32 with a fed batch size and sequence lengths."""
    x = tf.placeholder(tf.float32, [None, T, D])
    seq = tf.placeholder(tf.int32, [None])
    outputs, state = tf.nn.dynamic_rnn(rnn_cell.BasicLSTMCell(H), x, sequence_length=seq,
                                       dtype=tf.float32)
    loss = tf.reduce_mean(outputs * outputs) + tf.reduce_mean(state.c)
    variables = tf.trainable_variables()
    grads = tf.gradients(loss, variables + [x])
    feed = {x: _x(5).astype(np.float32), seq: np.array([5, 3, 1], np.int32)}
    init = [np.random.RandomState(k).uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32)
            for k, v in enumerate(variables)]
    results = {}
    for name, config in (("off", OFF), ("cpu", tf.ConfigProto(jit=tf.JitOptions.always()))):
        with tf.Session(config=config) as sess:
            for v, value in zip(variables, init):
                v.load(value, sess)
            compiled_calls.clear()
            results[name] = sess.run([loss, outputs] + grads, feed)
            loops = [node for plan in sess._plans.values() for node in plan.ops
                     if isinstance(node, loop_steps.LoopStep)]
            if name == "cpu":
                assert len(loops) == 2   # the forward loop and its gradient's loop
                for step in loops:
                    assert compiled_calls.count(step.whole.name) == 1
                    assert step.body.name not in compiled_calls   # not step by step
    for got, want in zip(results["cpu"], results["off"]):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_bad_arguments_are_clear_errors():
    x = tf.placeholder(tf.float32, [None, T, D])
    cell = rnn_cell.GRUCell(2)
    with pytest.raises(TypeError, match="RNNCell"):
        tf.nn.dynamic_rnn("cell", x, dtype=tf.float32)
    with pytest.raises(ValueError, match="initial_state, you must give a dtype"):
        tf.nn.dynamic_rnn(cell, x)
    with pytest.raises(ValueError, match="rank at least 2"):
        tf.nn.dynamic_rnn(cell, tf.zeros([3]), dtype=tf.float32, time_major=True)
    with pytest.raises(ValueError, match="sequence_length"):
        tf.nn.dynamic_rnn(cell, x, sequence_length=[[1, 2]], dtype=tf.float32)
    with pytest.raises(ValueError, match="2 entries for a batch of 3"):
        tf.nn.dynamic_rnn(cell, tf.zeros([3, T, D]), sequence_length=[1, 2],
                          dtype=tf.float32, scope="other")
    with pytest.raises(TypeError, match="list of tensors"):
        tf.nn.static_rnn(cell, x, dtype=tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"seq_lengths\[1\] = 4 is not in"):
        with tf.Session(config=OFF) as sess:
            sess.run(tf.reverse_sequence(tf.zeros([2, 3]), [1, 4], seq_axis=1))
