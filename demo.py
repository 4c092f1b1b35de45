"""The `python -m flowjit demo` program: a small TF1-style computation with real results.

Three parts, all ordinary TensorFlow 1.x code run by flowjit's Session:
1. linear regression fitted by gradient descent, with the gradients written by hand as graph
   ops (automatic differentiation comes in a later issue) and `assign_sub` updates;
2. a Monte-Carlo estimate of pi from points fed through a placeholder;
3. a softmax classifier layer (matmul, bias_add, softmax, argmax) applied to fed inputs.

Inputs come from a seeded NumPy generator, so the printed numbers are reproducible and can
be checked against plain NumPy (tests/test_cli.py does exactly that).
"""

from __future__ import annotations

import sys

import numpy as np

TRUE_W = (2.0, -3.0, 0.5)
TRUE_B = 0.75
LEARNING_RATE = 0.1
REPORT_EVERY = 20
N_POINTS = 256
N_PI_SAMPLES = 100_000


def make_data(seed: int = 0):
    """The demo's inputs: regression data, points for the pi estimate, classifier inputs."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N_POINTS, 3)).astype(np.float32)
    noise = rng.normal(size=(N_POINTS, 1)).astype(np.float32)
    y = (x @ np.array(TRUE_W, np.float32).reshape(3, 1) + np.float32(TRUE_B)
         + np.float32(0.1) * noise).astype(np.float32)
    points = rng.uniform(-1.0, 1.0, size=(N_PI_SAMPLES, 2))
    features = rng.normal(size=(4, 3)).astype(np.float32)
    class_w = rng.normal(size=(3, 5)).astype(np.float32)
    class_b = np.linspace(-0.5, 0.5, 5, dtype=np.float32)
    return {"x": x, "y": y, "points": points, "features": features, "class_w": class_w,
            "class_b": class_b}


def _fmt(values) -> str:
    return "[" + ", ".join(f"{v:.6f}" for v in np.ravel(values)) + "]"


def run_demo(steps: int = 100, seed: int = 0, out=None) -> dict:
    """Build and run the demo graph; print a report to `out`; return the computed values."""
    import flowjit as tf

    out = out or sys.stdout
    data = make_data(seed)
    graph = tf.Graph()
    with graph.as_default():
        # 1. linear regression: loss = mean((x @ w + b - y)^2), gradients by hand
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.Variable(tf.zeros([3, 1]), name="w")
        b = tf.Variable(0.0, name="b")
        with tf.name_scope("model"):
            err = tf.matmul(x, w) + b - y
            loss = tf.reduce_mean(tf.square(err), name="loss")
        with tf.name_scope("gradients"):
            n = tf.cast(tf.shape(x)[0], tf.float32)
            grad_w = 2.0 * tf.matmul(x, err, transpose_a=True) / n
            grad_b = 2.0 * tf.reduce_mean(err)
        train = tf.group(tf.assign_sub(w, LEARNING_RATE * grad_w),
                         tf.assign_sub(b, LEARNING_RATE * grad_b), name="train")

        # 2. Monte-Carlo pi: the fraction of fed points inside the unit circle
        points = tf.placeholder(tf.float64, [None, 2], name="points")
        inside = tf.reduce_sum(tf.square(points), axis=1) <= 1.0
        pi_estimate = 4.0 * tf.reduce_mean(tf.cast(inside, tf.float64))

        # 3. a softmax layer
        features = tf.placeholder(tf.float32, [None, 3], name="features")
        logits = tf.nn.bias_add(tf.matmul(features, tf.constant(data["class_w"])),
                                tf.constant(data["class_b"]))
        probs = tf.nn.softmax(logits)
        label = tf.argmax(probs, axis=1)

        feed = {x: data["x"], y: data["y"]}
        losses = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(steps):
                if step % REPORT_EVERY == 0:
                    losses.append((step, float(sess.run(loss, feed))))
                sess.run(train, feed)
            final_loss = float(sess.run(loss, feed))
            w_fit, b_fit = sess.run([w, b])
            pi = float(sess.run(pi_estimate, {points: data["points"]}))
            p, labels = sess.run([probs, label], {features: data["features"]})
        n_ops = len(graph.get_operations())

    print(f"flowjit {tf.__version__} demo: a TensorFlow 1.x-style program ({n_ops} graph ops) "
          "run by flowjit's reference NumPy kernels", file=out)
    print("", file=out)
    print(f"1. Linear regression, {N_POINTS} points, y = x @ {list(TRUE_W)} + {TRUE_B} + noise;"
          f" {steps} steps of gradient descent (lr {LEARNING_RATE}, hand-written gradients)",
          file=out)
    for step, value in losses:
        print(f"   step {step:4d}  loss {value:.6f}", file=out)
    print(f"   final      loss {final_loss:.6f}", file=out)
    print(f"   fitted w = {_fmt(w_fit)}", file=out)
    print(f"   fitted b = {float(b_fit):.6f}", file=out)
    print("", file=out)
    print(f"2. Monte-Carlo pi from {N_PI_SAMPLES} fed points: {pi:.6f} "
          f"(error {abs(pi - np.pi):.6f})", file=out)
    print("", file=out)
    print("3. Softmax layer on 4 fed feature rows:", file=out)
    for row, lab in zip(p, labels):
        print(f"   probs = {_fmt(row)}  argmax = {int(lab)}", file=out)
    return {"losses": losses, "final_loss": final_loss, "w": w_fit, "b": b_fit, "pi": pi,
            "probs": p, "labels": labels}
