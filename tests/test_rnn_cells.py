"""RNN cells (models/rnn_cell.py, models/rnn_cell_wrappers.py): one step of every cell
against a NumPy reference written from the cell's equations, TensorFlow's variable names
and scoping (first call creates, later calls reuse), state structures and zero states, the
wrappers, and clear errors for bad input.  Runs with the reference kernels (clustering
off): the compiled loops are tests/test_rnn.py's."""

from __future__ import annotations

import numpy as np
import pytest

import flowjit as tf
from flowjit.contrib import rnn as contrib_rnn

rnn_cell = tf.nn.rnn_cell
OFF = tf.ConfigProto(jit=False)
B, D = 3, 4


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _values(fetches, feeds=None):
    """Run `fetches` after initializing the variables; also returns the variables' values
    by name."""
    with tf.Session(config=OFF) as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(fetches, feeds)
        variables = {v.name: sess.run(v) for v in tf.trainable_variables()}
    return out, variables


def _inputs(seed=0, depth=D):
    rng = np.random.RandomState(seed)
    return rng.uniform(-1, 1, (B, depth)).astype(np.float64)


def _step(cell, x, state):
    xt = tf.constant(x)
    return cell(xt, state)


def test_basic_rnn_cell_step():
    x, h = _inputs(0), _inputs(1, 5)
    (out, new), var = _values(_step(rnn_cell.BasicRNNCell(5), x, tf.constant(h)))
    assert sorted(var) == ["basic_rnn_cell/bias:0", "basic_rnn_cell/kernel:0"]
    kernel, bias = var["basic_rnn_cell/kernel:0"], var["basic_rnn_cell/bias:0"]
    assert kernel.shape == (D + 5, 5) and not bias.any()
    want = np.tanh(np.concatenate([x, h], 1) @ kernel + bias)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    np.testing.assert_allclose(new, want, rtol=1e-12)


def _lstm_reference(x, c, h, kernel, bias, forget_bias):
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    new_c = c * _sigmoid(f + forget_bias) + _sigmoid(i) * np.tanh(j)
    return new_c, np.tanh(new_c) * _sigmoid(o)


@pytest.mark.parametrize("state_is_tuple", [True, False])
def test_basic_lstm_cell_step(state_is_tuple):
    n = 6
    x, c, h = _inputs(0), _inputs(1, n), _inputs(2, n)
    cell = rnn_cell.BasicLSTMCell(n, forget_bias=0.5, state_is_tuple=state_is_tuple)
    state = rnn_cell.LSTMStateTuple(tf.constant(c), tf.constant(h)) if state_is_tuple \
        else tf.constant(np.concatenate([c, h], 1))
    (out, new), var = _values(_step(cell, x, state))
    kernel, bias = var["basic_lstm_cell/kernel:0"], var["basic_lstm_cell/bias:0"]
    assert kernel.shape == (D + n, 4 * n) and bias.shape == (4 * n,)
    want_c, want_h = _lstm_reference(x, c, h, kernel, bias, 0.5)
    np.testing.assert_allclose(out, want_h, rtol=1e-12)
    got_c, got_h = (new.c, new.h) if state_is_tuple else np.split(new, 2, axis=1)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-12)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-12)
    assert cell.state_size == (rnn_cell.LSTMStateTuple(n, n) if state_is_tuple else 2 * n)


@pytest.mark.parametrize("peepholes,cell_clip,num_proj,proj_clip", [
    (False, None, None, None), (True, 0.4, None, None), (True, None, 3, 0.05),
    (False, 0.3, 2, None)])
def test_lstm_cell_step(peepholes, cell_clip, num_proj, proj_clip):
    n = 5
    m_size = num_proj or n
    x, c, m = _inputs(0), _inputs(1, n) * 2, _inputs(2, m_size)
    cell = rnn_cell.LSTMCell(n, use_peepholes=peepholes, cell_clip=cell_clip,
                             num_proj=num_proj, proj_clip=proj_clip, forget_bias=1.5,
                             initializer=tf.random_uniform_initializer(-0.8, 0.8, seed=3))
    (out, new), var = _values(_step(cell, x, rnn_cell.LSTMStateTuple(tf.constant(c),
                                                                     tf.constant(m))))
    v = {k.split("/", 1)[1][:-2]: a for k, a in var.items()}
    expected_names = {"kernel", "bias"} | ({"w_f_diag", "w_i_diag", "w_o_diag"} if peepholes
                                           else set()) | (
        {"projection/kernel"} if num_proj else set())
    assert set(v) == expected_names
    i, j, f, o = np.split(np.concatenate([x, m], 1) @ v["kernel"] + v["bias"], 4, axis=1)
    if peepholes:
        new_c = (_sigmoid(f + 1.5 + v["w_f_diag"] * c) * c
                 + _sigmoid(i + v["w_i_diag"] * c) * np.tanh(j))
    else:
        new_c = _sigmoid(f + 1.5) * c + _sigmoid(i) * np.tanh(j)
    if cell_clip is not None:
        new_c = np.clip(new_c, -cell_clip, cell_clip)
    gate = o + v["w_o_diag"] * new_c if peepholes else o
    new_m = _sigmoid(gate) * np.tanh(new_c)
    if num_proj:
        new_m = new_m @ v["projection/kernel"]
        if proj_clip is not None:
            new_m = np.clip(new_m, -proj_clip, proj_clip)
    np.testing.assert_allclose(new.c, new_c, rtol=1e-12)
    np.testing.assert_allclose(out, new_m, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(new.h, new_m, rtol=1e-12, atol=1e-15)
    assert cell.output_size == m_size
    assert cell.state_size == rnn_cell.LSTMStateTuple(n, m_size)


def test_gru_cell_step():
    n = 4
    x, h = _inputs(0), _inputs(1, n)
    cell = rnn_cell.GRUCell(n)
    (out, new), var = _values(_step(cell, x, tf.constant(h)))
    assert sorted(var) == ["gru_cell/candidate/bias:0", "gru_cell/candidate/kernel:0",
                           "gru_cell/gates/bias:0", "gru_cell/gates/kernel:0"]
    gk, gb = var["gru_cell/gates/kernel:0"], var["gru_cell/gates/bias:0"]
    ck, cb = var["gru_cell/candidate/kernel:0"], var["gru_cell/candidate/bias:0"]
    assert (gb == 1.0).all() and not cb.any()   # TensorFlow's bias initializers
    r, u = np.split(_sigmoid(np.concatenate([x, h], 1) @ gk + gb), 2, axis=1)
    candidate = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
    want = u * h + (1 - u) * candidate
    np.testing.assert_allclose(out, want, rtol=1e-12)
    np.testing.assert_allclose(new, want, rtol=1e-12)


def test_multi_rnn_cell_stacks_cells_under_cell_i_scopes():
    x = _inputs(0)
    cells = [rnn_cell.BasicLSTMCell(3), rnn_cell.GRUCell(2)]
    multi = rnn_cell.MultiRNNCell(cells)
    zero = multi.zero_state(B, tf.float64)
    (out, new), var = _values(_step(multi, x, zero))
    assert sorted(var) == [
        "multi_rnn_cell/cell_0/basic_lstm_cell/bias:0",
        "multi_rnn_cell/cell_0/basic_lstm_cell/kernel:0",
        "multi_rnn_cell/cell_1/gru_cell/candidate/bias:0",
        "multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0",
        "multi_rnn_cell/cell_1/gru_cell/gates/bias:0",
        "multi_rnn_cell/cell_1/gru_cell/gates/kernel:0"]
    lstm_c, lstm_h = _lstm_reference(
        x, np.zeros((B, 3)), np.zeros((B, 3)),
        var["multi_rnn_cell/cell_0/basic_lstm_cell/kernel:0"],
        var["multi_rnn_cell/cell_0/basic_lstm_cell/bias:0"], 1.0)
    pre = "multi_rnn_cell/cell_1/gru_cell/"
    r, u = np.split(_sigmoid(np.concatenate([lstm_h, np.zeros((B, 2))], 1)
                             @ var[pre + "gates/kernel:0"] + var[pre + "gates/bias:0"]), 2, 1)
    cand = np.tanh(np.concatenate([lstm_h, np.zeros((B, 2))], 1)
                   @ var[pre + "candidate/kernel:0"] + var[pre + "candidate/bias:0"])
    gru_h = (1 - u) * cand
    np.testing.assert_allclose(out, gru_h, rtol=1e-12)
    np.testing.assert_allclose(new[0].c, lstm_c, rtol=1e-12)
    np.testing.assert_allclose(new[1], gru_h, rtol=1e-12)
    assert multi.state_size == (rnn_cell.LSTMStateTuple(3, 3), 2)
    assert multi.output_size == 2


def test_a_cell_builds_once_and_later_calls_reuse_its_variables():
    x = tf.constant(_inputs(0))
    cell = rnn_cell.BasicLSTMCell(3)
    with tf.variable_scope("manual"):
        _, s1 = cell(x, cell.zero_state(B, tf.float64))
        _, s2 = cell(x, s1)
    other = rnn_cell.BasicLSTMCell(3)
    other(x, other.zero_state(B, tf.float64))
    third = rnn_cell.BasicLSTMCell(3)
    third(x, third.zero_state(B, tf.float64))
    explicit = rnn_cell.GRUCell(2)
    explicit(x, tf.zeros([B, 2], tf.float64), scope="explicit")
    named = rnn_cell.GRUCell(2, name="mygru")
    named(x, tf.zeros([B, 2], tf.float64))
    assert [v.name for v in tf.trainable_variables()] == [
        "manual/basic_lstm_cell/kernel:0", "manual/basic_lstm_cell/bias:0",
        "basic_lstm_cell/kernel:0", "basic_lstm_cell/bias:0",
        "basic_lstm_cell_1/kernel:0", "basic_lstm_cell_1/bias:0",
        "explicit/gates/kernel:0", "explicit/gates/bias:0",
        "explicit/candidate/kernel:0", "explicit/candidate/bias:0",
        "mygru/gates/kernel:0", "mygru/gates/bias:0",
        "mygru/candidate/kernel:0", "mygru/candidate/bias:0"]


def test_zero_states_follow_the_state_structure():
    cell = rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(4, num_proj=2), rnn_cell.BasicRNNCell(3)])
    batch = tf.placeholder(tf.int32, [])
    zero = cell.zero_state(batch, tf.float32)
    assert isinstance(zero[0], rnn_cell.LSTMStateTuple)
    (c, h), r = zero
    with tf.Session(config=OFF) as sess:
        cv, hv, rv = sess.run([c, h, r], {batch: 5})
    assert cv.shape == (5, 4) and hv.shape == (5, 2) and rv.shape == (5, 3)
    assert cv.dtype == np.float32 and not cv.any() and not rv.any()
    flat = rnn_cell.BasicLSTMCell(4, state_is_tuple=False).zero_state(2, tf.float64)
    assert flat.shape.as_list() == [2, 8] and flat.dtype == tf.float64


def test_residual_wrapper_adds_the_input():
    x, h = _inputs(0), _inputs(1, D)
    cell = rnn_cell.ResidualWrapper(rnn_cell.BasicRNNCell(D))
    (out, new), var = _values(_step(cell, x, tf.constant(h)))
    assert sorted(var) == ["basic_rnn_cell/bias:0", "basic_rnn_cell/kernel:0"]
    inner = np.tanh(np.concatenate([x, h], 1) @ var["basic_rnn_cell/kernel:0"])
    np.testing.assert_allclose(out, inner + x, rtol=1e-12)
    np.testing.assert_allclose(new, inner, rtol=1e-12)


def test_device_wrapper_places_the_cell_ops():
    cell = rnn_cell.DeviceWrapper(rnn_cell.GRUCell(2), "/cpu:0")
    out, _ = cell(tf.constant(_inputs(0)), cell.zero_state(B, tf.float64))
    assert out.op.device.endswith("CPU:0")
    (got,), var = _values([out])
    assert sorted(var)[0] == "gru_cell/candidate/bias:0" and got.shape == (B, 2)


def test_dropout_wrapper_keeps_or_scales_and_spares_the_lstm_memory():
    x = _inputs(0)
    keep = tf.placeholder_with_default(tf.constant(1.0, tf.float64), [])
    inner = rnn_cell.BasicLSTMCell(3)
    cell = rnn_cell.DropoutWrapper(inner, output_keep_prob=keep, state_keep_prob=keep, seed=7)
    out, new = _step(cell, x, inner.zero_state(B, tf.float64))
    with tf.Session(config=OFF) as sess:
        sess.run(tf.global_variables_initializer())
        full = sess.run([out, new.c, new.h])
        kernel, bias = sess.run(tf.trainable_variables())
        quarter = [sess.run([out, new.c, new.h], {keep: 0.25}) for _ in range(3)]
    want_c, want_h = _lstm_reference(x, np.zeros((B, 3)), np.zeros((B, 3)), kernel, bias, 1.0)
    np.testing.assert_allclose(full[0], want_h, rtol=1e-12)
    np.testing.assert_allclose(full[1], want_c, rtol=1e-12)
    np.testing.assert_allclose(full[2], want_h, rtol=1e-12)
    dropped = 0
    for got_out, got_c, got_h in quarter:
        # the memory c is never dropped (TensorFlow's default state filter); the output
        # and h are each element 0 or the cell's value / keep, with masks of their own
        np.testing.assert_allclose(got_c, want_c, rtol=1e-12)
        for got in (got_out, got_h):
            kept = got != 0
            np.testing.assert_allclose(got[kept], want_h[kept] / 0.25, rtol=1e-12)
            dropped += int((~kept).sum())
    assert 0 < dropped < 2 * 3 * want_h.size


def test_dropout_wrapper_with_keep_one_adds_no_random_op():
    cell = rnn_cell.DropoutWrapper(rnn_cell.GRUCell(2), input_keep_prob=1.0,
                                   output_keep_prob=1.0)
    cell(tf.constant(_inputs(0)), tf.zeros([B, 2], tf.float64))
    random = [op.name for op in tf.get_default_graph().get_operations()
              if op.type.startswith("Random")]
    assert random == ["gru_cell/gates/kernel/random_uniform/RandomUniform",
                      "gru_cell/candidate/kernel/random_uniform/RandomUniform"]


def test_contrib_rnn_has_the_cells_and_static_unrolls():
    for name in ("BasicLSTMCell", "LSTMCell", "GRUCell", "BasicRNNCell", "MultiRNNCell",
                 "DropoutWrapper", "LSTMStateTuple", "static_rnn", "static_bidirectional_rnn"):
        assert getattr(contrib_rnn, name) is getattr(tf.contrib.rnn, name)
    assert contrib_rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn


def test_bad_input_is_a_clear_error():
    x = tf.constant(_inputs(0))
    lstm = rnn_cell.BasicLSTMCell(3)
    with pytest.raises(TypeError, match="LSTMStateTuple"):
        lstm(x, tf.zeros([B, 6], tf.float64))
    with pytest.raises(ValueError, match="rank-2"):
        rnn_cell.GRUCell(2)(tf.zeros([B, 2, 2], tf.float64), tf.zeros([B, 2], tf.float64))
    with pytest.raises(ValueError, match="must be known"):
        rnn_cell.GRUCell(2)(tf.placeholder(tf.float64, [None, None]),
                            tf.zeros([B, 2], tf.float64))
    with pytest.raises(TypeError, match="not an RNNCell"):
        rnn_cell.MultiRNNCell([lstm, "cell"])
    with pytest.raises(ValueError, match="at least one cell"):
        rnn_cell.MultiRNNCell([])
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        rnn_cell.DropoutWrapper(lstm, output_keep_prob=1.5)
    with pytest.raises(ValueError, match="3 states"):
        multi = rnn_cell.MultiRNNCell([rnn_cell.GRUCell(2)] * 3)
        multi(x, (tf.zeros([B, 2], tf.float64),) * 2)
