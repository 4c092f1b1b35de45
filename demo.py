"""The `python -m flowjit demo` program: what flowjit is for, in one run.

0. A plain NumPy function (a row softmax) under `@flowjit.jit`: traced into a graph, fused
   into one generated numba function, checked against NumPy and timed side by side with it;
   the report says how to look at every compiler stage and the generated source.
Then ordinary TensorFlow 1.x code run by flowjit's Session:
1. linear regression trained by `tf.train.GradientDescentOptimizer(...).minimize(loss)`
   (gradients from `tf.gradients`);
2. a Monte-Carlo estimate of pi from points fed through a placeholder;
3. a softmax classifier layer (matmul, bias_add, softmax, argmax) applied to fed inputs.

Inputs come from a seeded NumPy generator, so the printed numbers are reproducible and can
be checked against plain NumPy (tests/test_cli.py does exactly that; the timings are
reported, never asserted).
"""

from __future__ import annotations

import sys
import time

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


JIT_SHAPE = (2000, 256)


def numpy_softmax(x):
    """Row softmax written with NumPy: what part 0 compiles."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _median_seconds(fn, arg, repeats: int = 15) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def jit_part(seed: int, out) -> dict:
    """Part 0: compile numpy_softmax with @jit, compare with NumPy, time both."""
    import flowjit

    print(f"flowjit {flowjit.__version__} demo", file=out)
    print("", file=out)
    x = np.random.default_rng(seed).normal(size=JIT_SHAPE).astype(np.float32)
    compiled = flowjit.jit(numpy_softmax)
    start = time.perf_counter()
    got = compiled(x)                       # traces, compiles (or loads the disk cache)
    first_call = time.perf_counter() - start
    want = numpy_softmax(x)
    max_diff = float(np.max(np.abs(got - want)))
    t_numpy = _median_seconds(numpy_softmax, x)
    t_flowjit = _median_seconds(compiled, x)
    lowered = compiled.lower(x)
    graph_ops = len(lowered.stage("graph").splitlines())
    nests = sum(line.startswith("loop nest ") for line in lowered.stage("schedule").splitlines())
    print(f"0. @flowjit.jit on a NumPy row softmax, {JIT_SHAPE[0]}x{JIT_SHAPE[1]} float32:",
          file=out)
    print(f"   traced into {graph_ops} graph ops, fused into {nests} loop "
          f"nest{'s' if nests != 1 else ''} of one "
          f"generated numba function (first call {first_call:.2f} s: trace + compile, or "
          "the disk cache)", file=out)
    print(f"   max |flowjit - numpy| = {max_diff:.3g}", file=out)
    print(f"   median time: numpy {t_numpy * 1e3:.3f} ms, flowjit {t_flowjit * 1e3:.3f} ms "
          f"(flowjit/numpy = {t_flowjit / t_numpy:.2f}; noisy on a busy machine)", file=out)
    print("   look inside: print(f.lower(x)) shows the graph, the IR after each pass, the "
          "fusion decisions, the loop IR and the source;", file=out)
    print("   FLOWJIT_DUMP=<dir> writes every stage to files. The generated kernel begins:",
          file=out)
    source = lowered.source.splitlines()
    start = next(k for k, line in enumerate(source) if line.startswith("def kernel"))
    for line in source[start:start + 6]:
        print(f"   | {line}", file=out)
    print("", file=out)
    return {"max_diff": max_diff, "numpy_s": t_numpy, "flowjit_s": t_flowjit}


def _fmt(values) -> str:
    return "[" + ", ".join(f"{v:.6f}" for v in np.ravel(values)) + "]"


def run_demo(steps: int = 100, seed: int = 0, out=None) -> dict:
    """Build and run the demo graph; print a report to `out`; return the computed values."""
    import flowjit as tf

    out = out or sys.stdout
    jit_results = jit_part(seed, out)
    data = make_data(seed)
    graph = tf.Graph()
    with graph.as_default():
        # 1. linear regression: loss = mean((x @ w + b - y)^2), trained by an optimizer
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.Variable(tf.zeros([3, 1]), name="w")
        b = tf.Variable(0.0, name="b")
        with tf.name_scope("model"):
            err = tf.matmul(x, w) + b - y
            loss = tf.reduce_mean(tf.square(err), name="loss")
        train = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss, name="train")

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

    print(f"A TensorFlow 1.x-style program ({n_ops} graph ops) run by a Session "
          "(clusters compile once they have run often enough):", file=out)
    print("", file=out)
    print(f"1. Linear regression, {N_POINTS} points, y = x @ {list(TRUE_W)} + {TRUE_B} + noise;"
          f" {steps} steps of GradientDescentOptimizer(lr {LEARNING_RATE}).minimize(loss)",
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
    print("", file=out)
    print("More: python -m flowjit bench (flowjit against NumPy and installed peers), "
          "notebooks/getting_started.ipynb, docs/architecture.md", file=out)
    return {"losses": losses, "final_loss": final_loss, "w": w_fit, "b": b_fit, "pi": pi,
            "probs": p, "labels": labels, "jit": jit_results}
