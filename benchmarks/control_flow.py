"""Control-flow and queue benchmark: what a `tf.while_loop` iteration costs on the
control-flow executor, and how much a queue-fed input pipeline overlaps with training.

1. *while_loop*: `s = s * c + x` for a fed trip count of scalar iterations, per iteration,
   against the same loop in plain Python on NumPy scalars (and TensorFlow's Session when
   `tensorflow` is installed: the `bench` extra), in one process, interleaved batches
   (benchmarks/timing.py: medians, ratio of medians).  Two flowjit rows: the control-flow
   executor running the loop op by op (the never-compile policy), and the loop as
   compiled condition and body clusters driven from Python (runtime/loop_steps.py, the
   compile-always policy; the compile happens before the timing).
2. *queue overlap*: a step that consumes a batch (a 384x384 float32 product chain) and a
   producer that makes it (random numbers and elementwise work on 2x384x384 values), run
   one after the other in the main
   thread, against the producer running in a QueueRunner thread that keeps a FIFOQueue
   filled while the main thread trains, with the ops' reference kernels and compiled.
   NumPy's products release the GIL, so with reference kernels the two stages overlap on
   two cores; compiled clusters do not, since compiled calls are serialized by one lock
   today (numba's workqueue threading layer; the devices issue lifts it).

Run: `python -m flowjit.benchmarks.control_flow [--repeats N]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from .timing import measure

TRIPS = 1000


def _loop_cases(tf_module, label, config=None):
    """(name, fn, session) running the scalar loop in a fresh graph of `tf_module`."""
    g = tf_module.Graph()
    with g.as_default():
        n = tf_module.placeholder(tf_module.int32, [])
        x = tf_module.placeholder(tf_module.float64, [])
        _, s = tf_module.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 0.999 + x),
                                    [tf_module.constant(0), tf_module.constant(0.0,
                                                                               tf_module.float64)])
        sess = tf_module.Session(graph=g, config=config)
    return label, (lambda: sess.run(s, {n: TRIPS, x: 1.0})), sess


def _python_loop():
    s, c, x = np.float64(0.0), np.float64(0.999), np.float64(1.0)
    for _ in range(TRIPS):
        s = s * c + x
    return s


def bench_while_loop(repeats: int, out) -> dict:
    import flowjit as tf

    variants, sessions = {}, []
    for label, jit in (("flowjit executor", tf.JitOptions(policy=tf.JitPolicy.NEVER)),
                       ("flowjit compiled", tf.JitOptions.always())):
        label, fn, sess = _loop_cases(tf, label, tf.ConfigProto(jit=jit))
        variants[label] = fn
        sessions.append(sess)
    try:
        import tensorflow.compat.v1 as tf1  # optional: the bench extra
        tf1.disable_eager_execution()
        label, fn, sess = _loop_cases(tf1, "tensorflow")
        variants[label] = fn
        sessions.append(sess)
    except ImportError:
        pass
    variants["python+numpy"] = _python_loop
    expected = _python_loop()
    for name, fn in variants.items():
        if not np.isclose(fn(), expected):
            raise AssertionError(f"while_loop benchmark: {name} computed {fn()}, not {expected}")
    results = dict(zip(variants, measure(variants, repeats, 0.2)))
    base = results["python+numpy"].median
    print(f"while_loop, {TRIPS} scalar iterations (us per iteration, ratio to Python+NumPy):",
          file=out)
    row = {}
    for name, m in results.items():
        per = m.median / TRIPS * 1e6
        row[name] = per
        print(f"  {name:<14} {per:9.2f} us   {m.median / base:7.1f}x", file=out)
    for s in sessions:
        s.close()
    return row


def bench_queue_overlap(repeats: int, out, steps: int = 40) -> dict:
    import flowjit as tf

    rng = np.random.default_rng(0)
    a = rng.standard_normal((384, 384)).astype(np.float32) / 20
    raw = rng.standard_normal((2, 384, 384)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        # the producer: random "augmentation" and elementwise work (a random op: never
        # constant-folded, so it runs every step)
        made = tf.random_uniform([2, 384, 384], seed=1) * raw
        for _ in range(3):
            made = tf.tanh(made * 0.9 + 0.1)
        made = tf.reduce_mean(made, axis=0)
        q = tf.FIFOQueue(4, tf.float32, shapes=[[384, 384]])
        enqueue = q.enqueue(made)
        direct = tf.placeholder(tf.float32, [384, 384])

        def consume(t):                              # the training step: products
            for _ in range(4):
                t = tf.tanh(tf.matmul(t, a))
            return tf.reduce_sum(t)

        step_from_queue, step_direct = consume(q.dequeue()), consume(direct)

    def serial(config):
        with tf.Session(graph=g, config=config) as sess:
            for _ in range(steps):
                sess.run(step_direct, {direct: sess.run(made)})

    def pipelined(config):
        with tf.Session(graph=g, config=config) as sess:   # a fresh queue (closing is final)
            coord = tf.train.Coordinator()
            threads = tf.train.QueueRunner(q, [enqueue]).create_threads(
                sess, coord=coord, daemon=True, start=True)
            for _ in range(steps):
                sess.run(step_from_queue)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=30)

    policies = {"reference kernels": tf.JitOptions(policy=tf.JitPolicy.NEVER),
                "compiled": tf.JitOptions.always()}
    times = {}
    for policy, jit in policies.items():
        config = tf.ConfigProto(jit=jit)
        serial(config)      # compiles (compile-always) before the timing
        for name, fn in ((f"serial, {policy}", serial), (f"queue runner, {policy}", pipelined)):
            times[name] = []
        for _ in range(repeats):
            for name, fn in ((f"serial, {policy}", serial),
                             (f"queue runner, {policy}", pipelined)):
                start = time.perf_counter()
                fn(config)
                times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"queue overlap, {steps} steps (producer: random and elementwise on 2x384^2; "
          f"consumer: four 384^2 products):",
          file=out)
    for name, t in med.items():
        serial_time = med["serial, " + name.split(", ", 1)[1]]
        print(f"  {name:<32} {t * 1e3:9.1f} ms   {serial_time / t:5.2f}x", file=out)
    return med


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    bench_while_loop(args.repeats, sys.stdout)
    bench_queue_overlap(args.repeats, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
