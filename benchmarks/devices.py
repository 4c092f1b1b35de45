"""Multi-device benchmark: two virtual CPU devices against one, and ALAP against ASAP Recvs.

1. *Two branches*: two independent recurrent branches, each `h = tanh(h * a + b) * c` over
   a 256-vector for a fed number of steps (a `tf.while_loop` compiled whole into one
   kernel: serial work that one device's threads cannot share out), one branch under
   `tf.device("/cpu:0")` and the other under `/cpu:1`.  The same graph runs in a Session
   with `ConfigProto(device_count={"CPU": 2})` (each device has one of the cores; the two
   loop kernels run at the same time) and in a one-device Session (`allow_soft_placement`
   puts both branches on CPU:0, whose kernels run one at a time: runtime/devices.py).
   Results are checked equal to NumPy first; the ratio of medians is two devices / one.
   The target is at most 0.6.
2. *Peak memory*: CPU:0 makes N large tensors at the start; CPU:1 runs a chain that needs
   the k-th at its k-th stage.  The receiving device's allocator peak (runtime/devices.py:
   bytes it holds during the step) with Recvs scheduled ALAP (the default) and ASAP.
3. *Step overhead*: a small two-device step (a Send/Recv pair, tiny ops) against the same
   graph on one device: what the rendezvous and the per-device plans cost per step.

Run: `python -m flowjit.benchmarks.devices [--repeats N] [--steps S]`.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .timing import measure

SIZE = 256


def _branches_graph(tf):
    g = tf.Graph()
    rng = np.random.default_rng(0)
    # |a * c| < 1: a contraction, so rounding differences do not grow over the steps
    weights = [(rng.uniform(0.5, 1.5, SIZE), rng.uniform(-1, 1, SIZE),
                rng.uniform(0.3, 0.6, SIZE)) for _ in range(2)]
    with g.as_default():
        steps = tf.placeholder(tf.int32, [], name="steps")
        outs = []
        for k, (a, b, c) in enumerate(weights):
            with tf.device(f"/cpu:{k}"):
                ak, bk, ck = tf.constant(a), tf.constant(b), tf.constant(c)
                h0 = tf.constant(np.full(SIZE, 0.1))
                _, h = tf.while_loop(lambda i, h: i < steps,
                                     lambda i, h: (i + 1, tf.tanh(h * ak + bk) * ck),
                                     [tf.constant(0), h0])
                outs.append(h)
    return g, steps, outs, weights


def _numpy_branches(weights, steps):
    out = []
    for a, b, c in weights:
        h = np.full(SIZE, 0.1)
        for _ in range(steps):
            h = np.tanh(h * a + b) * c
        out.append(h)
    return out


def bench_branches(tf, repeats, steps):
    g, n, outs, weights = _branches_graph(tf)
    two = tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2}, jit="always"))
    one = tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True, jit="always"))
    want = _numpy_branches(weights, steps)
    for name, sess in (("two devices", two), ("one device", one)):
        got = sess.run(outs, {n: steps})
        for a, b in zip(got, want):
            if not np.allclose(a, b, rtol=1e-9, atol=1e-12):
                raise AssertionError(f"{name}: wrong result")
    variants = {"two devices": lambda: two.run(outs, {n: steps}),
                "one device": lambda: one.run(outs, {n: steps})}
    results = measure(variants, repeats, 0.3)
    by = {m.name: m for m in results}
    ratio = by["two devices"].median / by["one device"].median
    print(f"two recurrent branches ({steps} steps of a {SIZE}-vector recurrence each)")
    for m in results:
        print(f"  {m.name:12s} median {m.median * 1e3:8.2f} ms  "
              f"(min {min(m.times) * 1e3:.2f} .. max {max(m.times) * 1e3:.2f})")
    print(f"  two / one devices: {ratio:.2f}x  (target <= 0.60)")
    two.close()
    one.close()
    return ratio


def _memory_graph(tf, n, size):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            bigs = [tf.fill([size], float(k + 1)) for k in range(n)]
        with tf.device("/cpu:1"):
            acc = tf.zeros([size], tf.float32)
            for k in range(n):
                for _ in range(4):
                    acc = tf.sin(acc + 0.5)
                acc = acc + bigs[k]
            out = tf.reduce_sum(acc)
    return g, out


def bench_memory(tf, n=8, size=1 << 20):
    peaks = {}
    for scheduling in (tf.RecvScheduling.ALAP, tf.RecvScheduling.ASAP):
        g, out = _memory_graph(tf, n, size)
        config = tf.ConfigProto(device_count={"CPU": 2}, jit=False,
                                placement=tf.PlacementOptions(recv_scheduling=scheduling))
        with tf.Session(graph=g, config=config) as sess:
            sess.run(out)
            peaks[scheduling] = sess._devices[1].allocator.peak
    mib = 1 << 20
    alap, asap = peaks[tf.RecvScheduling.ALAP], peaks[tf.RecvScheduling.ASAP]
    print(f"peak memory of the receiving device ({n} received tensors of "
          f"{size * 4 / mib:.0f} MiB, a chain needing one per stage)")
    print(f"  ALAP {alap / mib:7.1f} MiB   ASAP {asap / mib:7.1f} MiB   "
          f"ALAP / ASAP {alap / asap:.2f}")
    return alap / asap


def bench_overhead(tf, repeats):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4])
        with tf.device("/cpu:0"):
            a = x * 2.0
        with tf.device("/cpu:1"):
            b = a + 1.0
    feed = {x: np.ones(4, np.float32)}
    two = tf.Session(graph=g, config=tf.ConfigProto(device_count={"CPU": 2}, jit=False))
    one = tf.Session(graph=g, config=tf.ConfigProto(allow_soft_placement=True, jit=False))
    results = measure({"two devices": lambda: two.run(b, feed),
                       "one device": lambda: one.run(b, feed)}, repeats, 0.1)
    print("a tiny step across two devices (one Send/Recv pair)")
    for m in results:
        print(f"  {m.name:12s} median {m.median * 1e6:8.1f} us")
    two.close()
    one.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50000)
    parser.add_argument("--size", type=int, default=1 << 20,
                        help="elements of each received tensor in the memory case")
    args = parser.parse_args(argv)
    import flowjit as tf

    bench_branches(tf, args.repeats, args.steps)
    bench_memory(tf, size=args.size)
    bench_overhead(tf, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
