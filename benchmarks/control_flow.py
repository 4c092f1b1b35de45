"""Control-flow and queue benchmark: what a `tf.while_loop` iteration costs on the
control-flow executor, and how much a queue-fed input pipeline overlaps with training.

1. *while_loop*: `s = s * 0.999 + x` for a fed trip count of scalar iterations, per
   iteration, against the same loop in plain Python on NumPy scalars (and numba's `njit`
   of it, and TensorFlow's Session when `tensorflow` is installed: the `bench` extra), in
   one process, interleaved batches (benchmarks/timing.py: medians, ratio of medians).
   Three flowjit rows: the control-flow executor running the loop op by op (the
   never-compile policy), the loop as compiled condition and body clusters driven from
   Python (runtime/loop_steps.py: what a run with a deadline does), and the whole loop as
   ONE compiled kernel (a kernel-IR WHILE node: the compile-always policy without a
   deadline).  The compiles happen before the timing.  The fast variants run 10^5
   iterations per call, the executor and TensorFlow 10^3 (per-iteration costs compare).
2. *queue overlap*: a step that consumes a batch (a 384x384 float32 product chain) and a
   producer that makes it (random numbers and elementwise work on 2x384x384 values), run
   one after the other in the main
   thread, against the producer running in a QueueRunner thread that keeps a FIFOQueue
   filled while the main thread trains, with the ops' reference kernels and compiled.
   NumPy's products release the GIL, so with reference kernels the two stages overlap on
   two cores; compiled clusters of one device run one at a time (its kernel slot:
   runtime/devices.py), so in a one-device Session they do not.

Run: `python -m flowjit.benchmarks.control_flow [--repeats N]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from .timing import measure

TRIPS = 1000           # per call, for the variants that pay per iteration in Python
FAST_TRIPS = 100_000   # per call, for the compiled whole loop and the plain loops


def _loop_cases(tf_module, label, config=None, trips=None, options=None):
    """(name, fn, session) running the scalar loop in a fresh graph of `tf_module`."""
    g = tf_module.Graph()
    with g.as_default():
        n = tf_module.placeholder(tf_module.int32, [])
        x = tf_module.placeholder(tf_module.float64, [])
        _, s = tf_module.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 0.999 + x),
                                    [tf_module.constant(0), tf_module.constant(0.0,
                                                                               tf_module.float64)])
        sess = tf_module.Session(graph=g, config=config)
    kwargs = {} if options is None else {"options": options}
    trips = TRIPS if trips is None else trips
    return label, (lambda: sess.run(s, {n: trips, x: 1.0}, **kwargs)), sess


def _python_loop(trips=None):
    trips = TRIPS if trips is None else trips
    s, c, x = np.float64(0.0), np.float64(0.999), np.float64(1.0)
    for _ in range(trips):
        s = s * c + x
    return s


def _numba_loop():
    try:
        import numba
    except ImportError:
        return None
    fn = numba.njit(_scalar_loop)
    fn(10)
    return lambda: fn(FAST_TRIPS)


def _scalar_loop(trips):
    s = 0.0
    for _ in range(trips):
        s = s * 0.999 + 1.0
    return s


def bench_while_loop(repeats: int, out) -> dict:
    import flowjit as tf

    variants, trips, sessions = {}, {}, []
    always = tf.JitOptions.always()
    for label, jit, n, options in (
            ("flowjit executor", tf.JitOptions(policy=tf.JitPolicy.NEVER), TRIPS, None),
            ("flowjit cond+body clusters", always, TRIPS,
             tf.RunOptions(timeout_in_ms=3_600_000)),
            ("flowjit compiled loop", always, FAST_TRIPS, None)):
        label, fn, sess = _loop_cases(tf, label, tf.ConfigProto(jit=jit), n, options)
        variants[label], trips[label] = fn, n
        sessions.append(sess)
    try:
        import tensorflow.compat.v1 as tf1  # optional: the bench extra
        tf1.disable_eager_execution()
        label, fn, sess = _loop_cases(tf1, "tensorflow")
        variants[label], trips[label] = fn, TRIPS
        sessions.append(sess)
    except ImportError:
        pass
    variants["python+numpy"], trips["python+numpy"] = _python_loop, TRIPS
    numba_fn = _numba_loop()
    if numba_fn is not None:
        variants["numba njit"], trips["numba njit"] = numba_fn, FAST_TRIPS
    for name, fn in variants.items():
        expected = _python_loop(trips[name])
        if not np.isclose(fn(), expected, rtol=1e-9):
            raise AssertionError(f"while_loop benchmark: {name} computed {fn()}, not {expected}")
    results = dict(zip(variants, measure(variants, repeats, 0.2)))
    per = {name: m.median / trips[name] * 1e6 for name, m in results.items()}
    print("while_loop, scalar iterations (us per iteration, ratio to Python+NumPy; "
          f"{TRIPS} or {FAST_TRIPS} iterations a call):", file=out)
    for name in variants:
        print(f"  {name:<28} {per[name]:10.4f} us   {per[name] / per['python+numpy']:8.3f}x",
              file=out)
    print(f"  executor / compiled loop: {per['flowjit executor'] / per['flowjit compiled loop']:.0f}x",
          file=out)
    for s in sessions:
        s.close()
    return per


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
