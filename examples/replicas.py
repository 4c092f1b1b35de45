"""Data parallelism between graphs on a cluster: asynchronous or synchronous replicas.

A ps task holds a linear model's weights; each of `workers` worker threads builds its own
graph and `MonitoredTrainingSession` against its own task of a
`flowjit.distributed.LocalCluster` and trains on its own shard of the data.  The
variables are the cluster's, so every worker reads the others' updates.  The chief
(worker 0) initializes and counts the global step; the others wait for it.
- asynchronous (the default): each worker applies its gradients whenever it has them
  (the OSDI 2016 paper's asynchronous replicas);
- `--sync`: `tf.train.SyncReplicasOptimizer` averages one gradient of every worker into
  each update, so a global step is one update from all of them.

`--backend ray` runs each task in a process of its own (Ray actors); the default,
`threads`, runs them in this process.

Run: `python examples/replicas.py [--workers 2] [--steps 300] [--sync] [--backend ray]`;
it prints the final loss on the whole data set, the steps each worker ran and steps per
second.  On the project's 2-core machine (2026-12-06), 2 workers, 300 steps, from a loss
of 8.0 at zero weights: see the README's "Clusters" numbers.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np

import flowjit as tf

FEATURES = 8


def make_data(seed: int = 0, rows: int = 512):
    """A noisy linear regression problem: (x, y, true weights)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, FEATURES)).astype(np.float32)
    w = rng.standard_normal((FEATURES, 1)).astype(np.float32)
    y = x @ w + 0.01 * rng.standard_normal((rows, 1)).astype(np.float32)
    return x, y, w


def build(cluster_spec, sync_replicas: int = 0, is_chief: bool = True):
    """One worker's graph: (graph, x, y, loss, train, w, hooks); `sync_replicas` > 0
    averages that many workers' gradients into each update (SyncReplicasOptimizer)."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(cluster=cluster_spec)):
            step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
            w = tf.Variable(tf.zeros([FEATURES, 1]), name="w")
            b = tf.Variable(tf.zeros([1]), name="b")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            opt = tf.train.GradientDescentOptimizer(0.05)
            hooks = []
            if sync_replicas:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=sync_replicas)
                hooks.append(opt.make_session_run_hook(is_chief, num_tokens=0))
            train = opt.minimize(loss, global_step=step)
    return graph, x, y, loss, train, w, hooks


def train(workers: int = 2, steps: int = 300, batch: int = 32, seed: int = 0,
          backend: str = "threads", sync: bool = False) -> dict:
    """Train (asynchronously, or synchronously with `sync`); returns the final loss, each
    worker's steps and the time.  `backend`: "threads" (every task in this process) or
    "ray" (a process per task)."""
    x_all, y_all, _ = make_data(seed)
    shards = np.array_split(np.arange(len(x_all)), workers)
    cluster_def = {"ps": ["ps0:2222"], "worker": [f"w{k}:2222" for k in range(workers)]}
    ran = [0] * workers
    errors = []
    with tf.distributed.LocalCluster(cluster_def, backend=backend) as cluster:
        def work(k: int) -> None:
            try:
                graph, x, y, _, train_op, _, hooks = build(
                    cluster.cluster_spec, workers if sync else 0, is_chief=(k == 0))
                rng = np.random.default_rng(seed + k)
                rows = shards[k]
                with graph.as_default(), tf.train.MonitoredTrainingSession(
                        master=cluster.task_target("worker", k), is_chief=(k == 0),
                        hooks=hooks + [tf.train.StopAtStepHook(last_step=steps)]) as sess:
                    while not sess.should_stop():
                        pick = rng.choice(rows, batch)
                        sess.run(train_op, {x: x_all[pick], y: y_all[pick]})
                        ran[k] += 1
            except Exception as e:  # noqa: BLE001 - reported by the caller
                errors.append(e)

        started = time.perf_counter()
        threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - started
        if errors:
            raise errors[0]
        graph, x, y, loss, _, w, _ = build(cluster.cluster_spec)
        with graph.as_default(), tf.Session(cluster.task_target("worker", 0)) as sess:
            final = float(sess.run(loss, {x: x_all, y: y_all}))
            weights = sess.run(w)
    return {"loss": final, "steps": ran, "seconds": seconds, "weights": weights}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--sync", action="store_true",
                        help="average every worker's gradient into each update")
    parser.add_argument("--backend", default="threads", choices=("threads", "ray"))
    args = parser.parse_args()
    result = train(args.workers, args.steps, backend=args.backend, sync=args.sync)
    total = sum(result["steps"])
    print(f"final loss {result['loss']:.5f}; steps per worker {result['steps']}; "
          f"{total / result['seconds']:.0f} steps/s in all")


if __name__ == "__main__":
    main()
