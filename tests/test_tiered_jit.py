"""The tiered ("auto") jit policy of Sessions (runtime/clustering.py, runtime/compile_queue.py):
reference kernels run the steps while the cluster compiles in the background, the kernel is
swapped in between runs with the same results (variable updates included), a kernel in the
disk cache runs compiled from the first step of a fresh process, and a compiled kernel that
measures slower than the reference kernels is dropped, with the reason."""

import dataclasses
import json
import logging
import os
import subprocess
import sys
import time

import numpy as np

import flowjit as tf
from flowjit.runtime import cluster_kernels, compile_queue
from flowjit.runtime.clustering import ClusterStep
from flowjit.runtime.targets import get_target
from flowjit.targets.target import TargetKind


def _steps(sess):
    return [n for plan in sess._plans.values() for n in plan.ops if isinstance(n, ClusterStep)]


def _regression(config, steps: int, wait_at=()):
    """Train a linear model for `steps` steps; the losses and final weights.  At the steps
    in `wait_at` the loop waits until the background compiler is idle (so a swap happens at
    that step)."""
    graph = tf.Graph()
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((64, 5)).astype(np.float32)
    ys = (xs @ np.arange(1, 6, dtype=np.float32)[:, None] + 0.5).astype(np.float32)
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 5])
        y = tf.placeholder(tf.float32, [None, 1])
        w = tf.Variable(np.zeros((5, 1), np.float32))
        b = tf.Variable(np.zeros(1, np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        init = tf.global_variables_initializer()
    losses, compiled_at = [], []
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for i in range(steps):
            if i in wait_at:
                assert compile_queue.wait_idle(timeout=300)
            _, value = sess.run([train, loss], {x: xs, y: ys})
            losses.append(value)
            compiled_at.append((sum(s.kernels.compiled_runs for s in _steps(sess)),
                                {t.value for s in _steps(sess)
                                 for t in s.kernels.tiers.values()}))
        weights = sess.run([w, b])
        described = sess.explain()
    return np.array(losses), weights, compiled_at, described


def test_a_cluster_swaps_to_its_compiled_kernels_mid_loop_with_the_same_results(caplog):
    """Reference kernels, then the quick kernel from step 4, then the optimized one from
    step 8 (each compiled in the background, in the compile worker process)."""
    tiered = tf.ConfigProto(jit=tf.JitOptions(from_cache=False, background_after_runs=1,
                                              background_after_seconds=0, measure_runs=0))
    with caplog.at_level(logging.INFO, logger="flowjit.jit"):
        losses, weights, compiled_at, described = _regression(tiered, 12, wait_at=(4, 8))
    # the first steps ran with the reference kernels, the ones after the swap compiled
    assert [c for c, _ in compiled_at[:4]] == [0, 0, 0, 0] and compiled_at[-1][0] >= 8
    assert [tiers for _, tiers in compiled_at[3:9]] == \
        [set(), {"quick"}, {"quick"}, {"quick"}, {"quick"}, {"optimized"}]
    messages = [r.getMessage() for r in caplog.records]
    assert any("now runs its quick compiled kernel" in m for m in messages)
    assert any("now runs its optimized compiled kernel" in m for m in messages)
    assert "compiled in the background" in described
    want_losses, want_weights, never, _ = _regression(tf.ConfigProto(jit=False), 12)
    assert never[-1][0] == 0
    np.testing.assert_allclose(losses, want_losses, rtol=2e-5, atol=1e-6)
    for got, want in zip(weights, want_weights):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert losses[-1] < losses[0] / 2                      # it trained


_FRESH = """
import json, numpy as np, flowjit as tf
from flowjit.runtime import compile_queue
from flowjit.runtime.clustering import ClusterStep
x = tf.placeholder(tf.float32, [None])
y = tf.tanh(x) * 3.0 + 1.0
feed = {x: np.linspace(-2, 2, 50, dtype=np.float32)}
with tf.Session(config=tf.ConfigProto(jit=tf.JitOptions(background_after_seconds=0))) as s:
    first = s.run(y, feed)
    [step] = [n for p in s._plans.values() for n in p.ops if isinstance(n, ClusterStep)]
    ran_compiled_first = step.kernels.compiled_runs
    for _ in range(3):
        s.run(y, feed)
    for _ in range(2):    # the quick kernel, then the optimized one compiled after it
        compile_queue.wait_idle(timeout=300)
        s.run(y, feed)
    tf.wait_for_cache_writes()
    print("RESULT " + json.dumps({"first_compiled": ran_compiled_first,
                                  "compiled": step.kernels.compiled_runs,
                                  "ok": bool(np.allclose(first, np.tanh(feed[x]) * 3 + 1,
                                                         rtol=1e-5, atol=1e-6)),
                                  "how": s.explain().splitlines()[-1]}))
"""


def _fresh_process(cache_dir) -> dict:
    env = dict(os.environ, FLOWJIT_CACHE_DIR=str(cache_dir))
    env.pop("FLOWJIT_JIT", None)
    done = subprocess.run([sys.executable, "-c", _FRESH], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_a_cached_kernel_runs_compiled_from_the_first_step_of_a_fresh_process(tmp_path):
    cold = _fresh_process(tmp_path)
    assert cold["ok"] and cold["first_compiled"] == 0 and cold["compiled"] >= 1
    warm = _fresh_process(tmp_path)
    assert warm["ok"] and warm["first_compiled"] == 1
    assert "from the kernel cache" in warm["how"]
    # both tiers were cached: after the optimized kernel's first runs the quick one was
    # tried against it, and the faster kept (either may win: the reason names both)
    assert "both tiers from the kernel cache" in warm["how"], warm["how"]
    assert "quick" in warm["how"] and "optimized" in warm["how"]


def test_a_compiled_kernel_slower_than_the_reference_is_dropped_and_says_why(monkeypatch,
                                                                              caplog):
    """A target whose kernels are correct but slow (the reference interpreter, then a
    10 ms pause): the timed trial runs show it, and the cluster goes back for good."""
    reference = get_target(TargetKind.REFERENCE)

    def slow_compile(program, schedule, signature, **options):
        built = reference.compile(program, schedule, signature, **options)

        def kernel(*arrays):
            time.sleep(0.01)
            return built.kernel(*arrays)

        return dataclasses.replace(built, kernel=kernel)

    slow = dataclasses.replace(reference, compile=slow_compile, lookup=lambda *a, **k: None)
    monkeypatch.setattr(cluster_kernels, "get_target", lambda kind: slow)
    x = tf.placeholder(tf.float32, [None])
    y = tf.exp(x) * 2.0 + 1.0
    feed = {x: np.ones(8, np.float32)}
    config = tf.ConfigProto(jit=tf.JitOptions(background_after_runs=1,
                                              background_after_seconds=0, measure_runs=3))
    with caplog.at_level(logging.INFO, logger="flowjit.jit"), \
            tf.Session(config=config) as sess:
        sess.run(y, feed)
        sess.run(y, feed)                          # queues the compile
        assert compile_queue.wait_idle(timeout=300)
        for _ in range(6):
            np.testing.assert_allclose(sess.run(y, feed), np.exp(1.0) * 2 + 1, rtol=1e-6)
        [step] = _steps(sess)
        explained = sess.explain()
    assert step.kernels.compiled_runs == 3         # the trial runs, then never again
    assert list(step.kernels.entries.values()) == [None]
    assert "the reference kernels: faster than the optimized compiled kernel" in explained
    assert any("faster than the optimized compiled kernel" in r.getMessage()
               for r in caplog.records)
