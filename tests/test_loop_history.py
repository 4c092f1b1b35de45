"""Recorded while loops (ops/loop_history.py): the loop writes each iteration's loop
variables into buffers, and its gradient reads them there instead of from stacks.  The
gradient equals the stack-based gradient of the same loop and finite differences; no stack
op is built, so the forward loop and the backward loop both run as whole-loop plan nodes;
the buffers are pruned when nothing asks for a gradient; a variable wrongly declared
write-only is refused."""

from __future__ import annotations

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops.loop_history import recorded_while_loop
from flowjit.runtime import loop_steps

OFF = tf.ConfigProto(jit=False)
REFERENCE = tf.ConfigProto(jit=tf.JitOptions.always(target="reference"))


def _recurrence(recorded: bool, n: int):
    """y <- sin(y) * w + x[i] over i < n, writing y into row i of an output buffer; the
    loss reads the final y and the buffer."""
    x = tf.placeholder(tf.float64, [n, 3])
    w = tf.constant([0.5, 1.5, -1.0], tf.float64)

    def body(i, y, rows):
        y = tf.sin(y) * w + x[i]
        return i + 1, y, tf.tensor_strided_slice_update(rows, [i], [i + 1], [1], y,
                                                        shrink_axis_mask=1)

    start = [tf.constant(0), tf.constant([0.3, -0.2, 0.9], tf.float64),
             tf.zeros([n, 3], tf.float64)]
    if recorded:
        _, y, rows = recorded_while_loop(lambda i, y, r: i < n, body, start, n, write_only=[2])
    else:
        _, y, rows = tf.while_loop(lambda i, y, r: i < n, body, start)
    loss = tf.reduce_sum(y * y) + tf.reduce_sum(tf.cos(rows))
    return x, w, loss


@pytest.mark.parametrize("n", [1, 5])
def test_recorded_gradient_equals_the_stack_gradient_and_finite_differences(n):
    xv = np.random.RandomState(n).uniform(-1, 1, (n, 3))
    grads = {}
    for recorded in (True, False):
        with tf.Graph().as_default():
            x, w, loss = _recurrence(recorded, n)
            g = tf.gradients(loss, [x, w])
            stacks = [op for op in tf.get_default_graph().get_operations()
                      if op.type.startswith("Stack")]
            assert bool(stacks) is not recorded
            with tf.Session(config=OFF) as sess:
                grads[recorded] = sess.run(g, {x: xv})
                if recorded:
                    eps, numeric = 1e-6, np.zeros_like(xv)
                    for index in np.ndindex(xv.shape):
                        d = np.zeros_like(xv)
                        d[index] = eps
                        numeric[index] = (sess.run(loss, {x: xv + d})
                                          - sess.run(loss, {x: xv - d})) / (2 * eps)
    for a, b in zip(grads[True], grads[False]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grads[True][0], numeric, rtol=1e-6, atol=1e-9)


def test_both_loops_run_whole_and_the_buffers_go_unless_a_gradient_needs_them(compiled_calls):
    x, _, loss = _recurrence(True, 4)
    grad = tf.gradients(loss, x)[0]
    xv = np.random.RandomState(0).uniform(-1, 1, (4, 3))
    with tf.Session(config=REFERENCE) as sess:
        forward_only = sess.run(loss, {x: xv})
        sess.run(grad, {x: xv})
        plans = list(sess._plans.values())
        steps = [[n for n in plan.ops if isinstance(n, loop_steps.LoopStep)] for plan in plans]
    with tf.Session(config=OFF) as sess:
        assert forward_only == pytest.approx(sess.run(loss, {x: xv}), rel=1e-12)
    (forward,), (forward_again, backward) = steps
    # counter, i, y, rows: the three buffers (of i and y) are not in the loss's plan
    assert len(forward.merges) == 4 and len(forward_again.merges) == 6
    for step in (forward, forward_again, backward):
        assert step.whole.name in compiled_calls


def test_a_variable_the_body_reads_cannot_be_write_only():
    def body(i, total):
        return i + 1, total + tf.reduce_sum(total)

    with pytest.raises(ValueError, match="declared write-only.*reads its value"):
        recorded_while_loop(lambda i, t: i < 3, body, [tf.constant(0), tf.zeros([2])], 3,
                            write_only=[1])
    with pytest.raises(ValueError, match="names no loop variable"):
        recorded_while_loop(lambda i, t: i < 3, body, [tf.constant(0), tf.zeros([2])], 3,
                            write_only=[2])
