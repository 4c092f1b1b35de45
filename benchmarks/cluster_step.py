"""Parameter-server steps on a cluster: steps per second and bytes moved per step, on the
in-process backend (threads) and on Ray (a process per task), against one process.

Models (parameters on /job:ps/task:0 by `replica_device_setter`, one replica per worker
task on its share of the batch, the replicas' gradients averaged and applied by Adam on
the ps task: synchronous in-graph data parallelism, one client):
- `mlp`: examples/mlp_train.py's MLP (32->16->8, tanh, squared error), batch 100;
- `10mb`: a 1280->2048->10 tanh/softmax classifier (2.64M float32 parameters, 10.6 MB),
  batch 64: every worker receives the weights and sends a gradient of 10.6 MB a step.

Variants: `one process` (the same model without device blocks, a plain Session), and for
1 and 2 workers `threads` (LocalCluster(backend="threads")) and `ray`
(LocalCluster(backend="ray")).  Every variant's first steps are checked against the one-
process run (same losses, rtol 1e-4) before timing; clusters compile their kernels at the
first step (`jit="always"`), so the timed steps are warm.  Steps are timed interleaved in
calibrated batches (benchmarks/timing.py).  Reported per variant: steps/s, the median
step and min..max, bytes moved per step between tasks and between the client and the
tasks (runtime/task_server.py counts them), and the time added per step over one process
(for Ray: over the same cluster on threads, too).

Run: `python -m flowjit bench cluster [--quick] [--repeats N]` (or
`python -m flowjit.benchmarks.cluster_step --models mlp,10mb --workers 1,2`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from .timing import add_timing_arguments, measure

MODELS = {"mlp": dict(sizes=(32, 16, 8), batch=100, loss="mse"),
          "10mb": dict(sizes=(1280, 2048, 10), batch=64, loss="softmax")}


def _data(model: dict, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_in, _, n_out = model["sizes"]
    x = rng.normal(size=(model["batch"], n_in)).astype(np.float32)
    if model["loss"] == "mse":
        y = rng.uniform(-0.5, 0.5, size=(model["batch"], n_out)).astype(np.float32)
    else:
        y = np.eye(n_out, dtype=np.float32)[rng.integers(0, n_out, model["batch"])]
    return x, y


def build(tf, model: dict, workers: int, placed: bool):
    """(graph, x, y, loss, train) of `model` with one replica per worker (module docstring);
    `placed=False`: no device blocks (the one-process graph)."""
    n_in, n_hidden, n_out = model["sizes"]
    rng = np.random.default_rng(1)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, n_in], name="x")
        y = tf.placeholder(tf.float32, [None, n_out], name="y")
        setter = tf.train.replica_device_setter(ps_tasks=1) if placed else None
        with tf.device(setter):
            w1 = tf.Variable(rng.normal(0, n_in ** -0.5, (n_in, n_hidden)).astype(np.float32))
            b1 = tf.Variable(np.zeros(n_hidden, np.float32))
            w2 = tf.Variable(rng.normal(0, n_hidden ** -0.5, (n_hidden, n_out))
                             .astype(np.float32))
            b2 = tf.Variable(np.zeros(n_out, np.float32))
        params = [w1, b1, w2, b2]
        share = model["batch"] // workers
        losses, grads = [], []
        for k in range(workers):
            with tf.device(f"/job:worker/task:{k}" if placed else None):
                rows = slice(k * share, (k + 1) * share)
                hidden = tf.tanh(tf.matmul(x[rows], w1) + b1)
                out = tf.matmul(hidden, w2) + b2
                if model["loss"] == "mse":
                    loss = tf.reduce_mean(tf.square(y[rows] - tf.tanh(out)))
                else:
                    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
                        labels=y[rows], logits=out))
                losses.append(loss)
                grads.append(tf.gradients(loss, params))
        with tf.device("/job:ps/task:0" if placed else None):
            averaged = [tf.add_n([g[i] for g in grads]) / workers for i in range(4)]
            train = tf.train.AdamOptimizer(1e-3).apply_gradients(zip(averaged, params))
            total = tf.add_n(losses) / workers
    return graph, x, y, total, train


class _Runner:
    """One variant: its session and a step function."""

    def __init__(self, tf, model, workers, target, placed):
        self.graph, x, y, loss, train = build(tf, model, workers, placed)
        xs, ys = _data(model)
        self.feed = {x: xs, y: ys}
        self.fetches = [loss, train]
        config = tf.ConfigProto(jit="always")
        self.session = tf.Session(target, graph=self.graph, config=config)
        with self.graph.as_default():
            self.session.run(tf.global_variables_initializer())

    def step(self):
        return self.session.run(self.fetches, self.feed)[0]


def _bytes_per_step(cluster, before, after) -> tuple:
    """(between tasks, client<->tasks) bytes per step from two `task_stats` snapshots."""
    steps = max(after[t]["steps"] - before[t]["steps"] for t in after) or 1
    moved = sum(after[t]["sent"] - before[t]["sent"] for t in after)
    client = sum((after[t]["fed"] - before[t]["fed"]) + (after[t]["fetched"]
                                                         - before[t]["fetched"])
                 for t in after)
    return moved / steps, client / steps


def run(models, workers_list, repeats, target_seconds, out=sys.stdout) -> dict:
    import flowjit as tf

    report = {}
    clusters = []
    try:
        for name in models:
            model = MODELS[name]
            one = _Runner(tf, model, 1, "", placed=False)
            want = [one.step() for _ in range(3)]
            one = _Runner(tf, model, 1, "", placed=False)
            variants, stats_of = {"one process": one}, {}
            for workers in workers_list:
                spec = {"ps": ["ps0:1"], "worker": [f"w{k}:1" for k in range(workers)]}
                for backend in ("threads", "ray"):
                    started = time.perf_counter()
                    cluster = tf.distributed.LocalCluster(spec, backend=backend)
                    clusters.append(cluster)
                    up = time.perf_counter() - started
                    runner = _Runner(tf, model, workers, cluster.target, placed=True)
                    first = time.perf_counter()
                    got = [runner.step() for _ in range(3)]
                    first = time.perf_counter() - first
                    reference = _Runner(tf, model, workers, "", placed=False)
                    ref = [reference.step() for _ in range(3)]
                    reference.session.close()
                    if not np.allclose(got, ref, rtol=1e-4):
                        print(f"  {name} {backend} {workers}w: WRONG losses {got} vs {ref}",
                              file=out)
                        continue
                    label = f"{backend} {workers}w"
                    variants[label] = runner
                    stats_of[label] = (cluster, up, first)
            del want
            before = {label: c.task_stats() for label, (c, _, _) in stats_of.items()}
            results = measure({k: v.step for k, v in variants.items()}, repeats,
                              target_seconds)
            after = {label: c.task_stats() for label, (c, _, _) in stats_of.items()}
            base = results[0].median
            rows = {}
            print(f"\n{name}: {MODELS[name]['sizes']} batch {MODELS[name]['batch']}, "
                  f"Adam on the ps task ({repeats} interleaved repetitions)", file=out)
            print(f"  {'variant':14s} {'steps/s':>8s} {'median':>9s} {'min..max':>17s} "
                  f"{'+ per step':>11s} {'task<->task':>12s} {'client':>10s}", file=out)
            medians = {m.name: m.median for m in results}
            for m in results:
                row = {"steps_per_s": 1 / m.median, "median_s": m.median,
                       "min_s": min(m.times), "max_s": max(m.times),
                       "added_s": m.median - base}
                extra = ""
                if m.name in stats_of:
                    cluster, up, first = stats_of[m.name]
                    moved, client = _bytes_per_step(cluster, before[m.name], after[m.name])
                    row.update(bytes_between_tasks=moved, bytes_client=client,
                               start_s=up, first_steps_s=first)
                    extra = f" {moved / 1e6:9.3f} MB {client / 1e6:7.3f} MB"
                    threads = m.name.replace("ray", "threads")
                    if m.name.startswith("ray") and threads in medians:
                        row["ray_added_s"] = m.median - medians[threads]
                rows[m.name] = row
                print(f"  {m.name:14s} {row['steps_per_s']:8.1f} {m.median * 1e3:7.2f}ms "
                      f"{min(m.times) * 1e3:7.2f}..{max(m.times) * 1e3:7.2f}ms "
                      f"{row['added_s'] * 1e3:+9.2f}ms{extra}", file=out)
            for label, row in rows.items():
                if "ray_added_s" in row:
                    print(f"  Ray adds {row['ray_added_s'] * 1e3:+.2f} ms a step over "
                          f"threads ({label}); cluster start {row['start_s']:.1f} s, first "
                          f"3 steps (registration, compiles) {row['first_steps_s']:.1f} s",
                          file=out)
            report[name] = rows
            for v in variants.values():
                v.session.close()
    finally:
        for cluster in reversed(clusters):   # the one that started Ray ends it, last
            cluster.shutdown()
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_timing_arguments(parser)
    parser.add_argument("--models", default="mlp,10mb")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, mlp only")
    args = parser.parse_args(argv)
    models = ["mlp"] if args.quick else [m for m in args.models.split(",") if m]
    repeats = args.repeats or (3 if args.quick else 7)
    target = args.target_seconds or 0.2
    workers = [int(w) for w in args.workers.split(",") if w]
    print(f"cluster steps on {os.cpu_count()} cores (flowjit's in-process tasks and Ray's "
          "task processes share them)")
    run(models, workers, repeats, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
