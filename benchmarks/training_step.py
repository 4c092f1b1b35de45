"""W5: steps per second of a training step (forward, backward, Adam update) of a 2-layer MLP.

The model is examples/mlp_train.py's: `cost = sum((y - tanh(tanh(x@w1 + b1)@w2 + b2))**2)`
trained by Adam with TF 1.x's defaults (lr 1e-3, beta1 0.9, beta2 0.999, epsilon 1e-8).
Cases: batch 100, 32->16->8 (the example's sizes) and batch 4096, 32->1024->8 (large).
One timed call is one step on the same fed x, y; the parameters keep training while timed.

Systems (each skipped with the reason when not installed):
- numpy: the forward, backward and Adam update written by hand (the baseline);
- flowjit: `Session.run([cost, train], feed_dict)` on the example's graph (tf.train
  .AdamOptimizer), with auto-clustering compiling on the first run (`flowjit`) and with
  `ConfigProto(jit=False)`, every op's NumPy reference kernel (`flowjit nojit`);
- flowjit v&g: one `flowjit.jit` function holding `flowjit.value_and_grad` of the loss and
  the Adam update; the state (params, slots, beta powers as 0-d float32 arrays, never Python
  numbers, which would be static and recompile) goes in and comes back as arrays;
- jax: `jax.jit` of the whole step (`jax.value_and_grad` + Adam written in jnp);
- torch: eager autograd + `torch.optim.Adam`;
- tensorflow: `tf.compat.v1` Session running the same graph as flowjit.

Method (as `benchmarks/compiler_workloads.py`): every system starts from the same NumPy
initial weights; its first step (loss, and the parameters after the update) is checked
against the NumPy step before timing, and a wrong variant is reported WRONG and not timed;
the variants of a case are timed interleaved over `--repeats` repetitions of batches
calibrated to `--target-seconds` (`benchmarks/timing.py`); the table gives steps/s (1 /
median), median and min..max per step, the ratio of medians to NumPy (below 1 is faster),
the cores used and retried batches.  Measuring runs in a child process whose environment sets
the thread counts before any import (`--threads`, all CPUs by default).

Run: `python -m flowjit bench training [--quick] [--threads N] [--repeats N]`
(or `python -m flowjit.benchmarks.training_step`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import sys
import time

import numpy as np

from .peers import describe
from .timing import add_timing_arguments, blas_cores, measure, pin_threads, rerun_in_child

LR, BETA1, BETA2, EPSILON = 1e-3, 0.9, 0.999, 1e-8
CASES = {"small": (100, 32, 16, 8), "large": (4096, 32, 1024, 8)}
LOSS_RTOL = 1e-4     # float32 sums of 800 / 32768 squared errors, differently ordered
PARAM_ATOL = 2e-6    # after one Adam step of ~1e-3 per weight: a wrong gradient moves ~1e-3


class Unavailable(Exception):
    """The system (or the flowjit piece) is not there: the row says so, nothing is timed."""


def make_inputs(batch: int, n_in: int, hidden: int, n_out: int, seed: int = 0) -> tuple:
    """(x, y, [w1, b1, w2, b2]) float32: uniform inputs, truncated-normal(0.1) weights."""
    rng = np.random.default_rng(seed)

    def truncated(shape):
        w = rng.standard_normal(shape)
        while (bad := np.abs(w) > 2).any():
            w[bad] = rng.standard_normal(int(bad.sum()))
        return (0.1 * w).astype(np.float32)

    x = rng.random((batch, n_in), dtype=np.float32)
    y = rng.random((batch, n_out), dtype=np.float32)
    params = [truncated((n_in, hidden)), np.zeros(hidden, np.float32),
              truncated((hidden, n_out)), np.zeros(n_out, np.float32)]
    return x, y, params


# --- the systems: each make_* returns (step() -> loss, params() -> list of arrays) ----------


def make_numpy(x, y, init, threads):
    """Hand-written forward, backward and TF-style Adam in float32 NumPy."""
    params = [p.copy() for p in init]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = [0]
    one, b1, b2 = np.float32(1), np.float32(BETA1), np.float32(BETA2)

    def step():
        w1, c1, w2, c2 = params
        a = np.tanh(x @ w1 + c1)
        out = np.tanh(a @ w2 + c2)
        err = y - out
        loss = np.sum(err * err)
        dz2 = np.float32(-2) * err * (one - out * out)
        da = dz2 @ w2.T
        dz1 = da * (one - a * a)
        grads = [x.T @ dz1, dz1.sum(axis=0), a.T @ dz2, dz2.sum(axis=0)]
        t[0] += 1
        lr_t = np.float32(LR * np.sqrt(1 - BETA2 ** t[0]) / (1 - BETA1 ** t[0]))
        for p, g, mi, vi in zip(params, grads, m, v):
            mi *= b1
            mi += (one - b1) * g
            vi *= b2
            vi += (one - b2) * g * g
            p -= lr_t * mi / (np.sqrt(vi) + np.float32(EPSILON))
        return loss

    return step, lambda: params


def _graph_program(tf, x, y, init):
    """The example's graph with the given initial weights: (x, y, cost, train, vars, init)."""
    n_in, n_out = x.shape[1], y.shape[1]
    xp = tf.placeholder(tf.float32, [None, n_in], name="x")
    yp = tf.placeholder(tf.float32, [None, n_out], name="y")
    w1, b1, w2, b2 = variables = [tf.Variable(p) for p in init]
    a = tf.nn.tanh(tf.nn.bias_add(tf.matmul(xp, w1), b1))
    y_out = tf.nn.tanh(tf.nn.bias_add(tf.matmul(a, w2), b2), name="y_out")
    cost = tf.reduce_sum(tf.square(yp - y_out), name="cost")
    train = tf.train.AdamOptimizer().minimize(cost, name="train")
    return xp, yp, cost, train, variables, tf.global_variables_initializer()


def _session_step(tf, x, y, init, config):
    graph = tf.Graph()
    with graph.as_default():
        xp, yp, cost, train, variables, init_op = _graph_program(tf, x, y, init)
    sess = tf.Session(graph=graph, config=config)
    sess.run(init_op)
    feed = {xp: x, yp: y}
    fetches = [cost, train]
    return (lambda: sess.run(fetches, feed)[0]), (lambda: sess.run(variables))


def make_flowjit(x, y, init, threads):
    """flowjit Session.run; auto-clustering compiles the clusters on their first run."""
    import flowjit as tf
    from flowjit.runtime.config import JitOptions

    jit = JitOptions(policy="always")
    return _session_step(tf, x, y, init, tf.ConfigProto(jit=jit))


def make_flowjit_nojit(x, y, init, threads):
    """flowjit Session.run with ConfigProto(jit=False): NumPy reference kernels op by op."""
    import flowjit as tf

    return _session_step(tf, x, y, init, tf.ConfigProto(jit=False))


def _mlp_loss(w1, b1, w2, b2, x, y):
    """The model's cost as ordinary NumPy code (traced by flowjit.value_and_grad)."""
    err = y - np.tanh(np.tanh(x @ w1 + b1) @ w2 + b2)
    return np.sum(err * err)


def make_flowjit_value_and_grad(x, y, init, threads):
    """flowjit.jit of the whole step: flowjit.value_and_grad of the loss, TF-style Adam.

    The state goes in as separate arrays and comes back as new ones (measured faster than
    mutating the arguments in place, whose write-back copies each state array, and than
    passing lists, which miss JitFunction's all-arrays fast path). The bias-correction
    powers beta1^t, beta2^t are float32 0-d arrays multiplied each step (as TF's
    beta1_power), never Python numbers, which would be static and recompile every step.
    """
    import flowjit

    if not hasattr(flowjit, "value_and_grad"):
        raise Unavailable("flowjit.value_and_grad does not exist yet")
    f32 = np.float32
    loss_and_grads = flowjit.value_and_grad(_mlp_loss, argnums=(0, 1, 2, 3))

    @flowjit.jit
    def train(w1, b1, w2, b2, m1, mb1, m2, mb2, v1, vb1, v2, vb2, beta1_t, beta2_t, xb, yb):
        params = (w1, b1, w2, b2)
        loss, grads = loss_and_grads(*params, xb, yb)
        beta1_t = beta1_t * f32(BETA1)
        beta2_t = beta2_t * f32(BETA2)
        lr_t = f32(LR) * np.sqrt(f32(1) - beta2_t) / (f32(1) - beta1_t)
        m = [f32(BETA1) * mi + f32(1 - BETA1) * g for mi, g in zip((m1, mb1, m2, mb2), grads)]
        v = [f32(BETA2) * vi + f32(1 - BETA2) * g * g
             for vi, g in zip((v1, vb1, v2, vb2), grads)]
        new = [p - lr_t * mi / (np.sqrt(vi) + f32(EPSILON)) for p, mi, vi in zip(params, m, v)]
        return (loss, *new, *m, *v, beta1_t, beta2_t)

    # [w1, b1, w2, b2, m (4), v (4), beta1^t, beta2^t]
    state = ([np.array(p, np.float32) for p in init]
             + [np.zeros(np.shape(p), np.float32) for _ in "mv" for p in init]
             + [np.ones((), np.float32), np.ones((), np.float32)])
    xb, yb = np.ascontiguousarray(x, np.float32), np.ascontiguousarray(y, np.float32)

    def step():
        loss, *state[:] = train(*state, xb, yb)
        return loss

    return step, lambda: state[:4]


def make_jax(x, y, init, threads):
    """jax.jit of the whole step: jax.value_and_grad of the loss, TF-style Adam in jnp."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as exc:
        raise Unavailable(f"jax not installed ({exc})") from None

    def loss_fn(params, xb, yb):
        w1, b1, w2, b2 = params
        out = jnp.tanh(jnp.tanh(xb @ w1 + b1) @ w2 + b2)
        return jnp.sum(jnp.square(yb - out))

    @jax.jit
    def train(params, m, v, t, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(params, xb, yb)
        t = t + 1
        lr_t = LR * jnp.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
        m = [BETA1 * mi + (1 - BETA1) * g for mi, g in zip(m, grads)]
        v = [BETA2 * vi + (1 - BETA2) * g * g for vi, g in zip(v, grads)]
        params = [p - lr_t * mi / (jnp.sqrt(vi) + EPSILON) for p, mi, vi in zip(params, m, v)]
        return loss, params, m, v, t

    xb, yb = jnp.asarray(x), jnp.asarray(y)
    state = [[jnp.asarray(p) for p in init], [jnp.zeros_like(p) for p in init],
             [jnp.zeros_like(p) for p in init], jnp.float32(0)]

    def step():
        loss, *state[:] = train(*state, xb, yb)
        return loss.block_until_ready()

    return step, lambda: [np.asarray(p) for p in state[0]]


def make_torch(x, y, init, threads):
    """PyTorch eager: autograd and torch.optim.Adam (eps=1e-8)."""
    try:
        import torch
    except ImportError as exc:
        raise Unavailable(f"torch not installed ({exc})") from None
    torch.set_num_threads(threads)
    params = [torch.tensor(p, requires_grad=True) for p in init]
    opt = torch.optim.Adam(params, lr=LR, betas=(BETA1, BETA2), eps=EPSILON)
    xb, yb = torch.from_numpy(x), torch.from_numpy(y)
    w1, b1, w2, b2 = params

    def step():
        opt.zero_grad(set_to_none=True)
        out = torch.tanh(torch.tanh(xb @ w1 + b1) @ w2 + b2)
        loss = torch.sum(torch.square(yb - out))
        loss.backward()
        opt.step()
        return loss.detach()

    return step, lambda: [p.detach().numpy().copy() for p in params]


def make_tensorflow(x, y, init, threads):
    """TensorFlow tf.compat.v1 Session running the same graph as flowjit."""
    try:
        import tensorflow.compat.v1 as tf
    except ImportError as exc:
        raise Unavailable(f"tensorflow not installed ({exc})") from None
    tf.disable_eager_execution()
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    return _session_step(tf, x, y, init, config)


SYSTEMS = {"numpy": make_numpy, "flowjit": make_flowjit, "flowjit nojit": make_flowjit_nojit,
           "flowjit v&g": make_flowjit_value_and_grad, "jax": make_jax, "torch": make_torch,
           "tensorflow": make_tensorflow}


# --- checking, timing, reporting ---------------------------------------------------------------


class _Collect(logging.Handler):
    def __init__(self, messages: list):
        super().__init__(logging.INFO)
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().removeprefix("flowjit: "))


@contextlib.contextmanager
def _flowjit_log():
    """What flowjit logs (INFO and up: e.g. a cluster left to the reference kernels)."""
    messages: list = []
    logger, handler = logging.getLogger("flowjit"), _Collect(messages)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def check_first_step(loss, params, ref_loss, ref_params) -> str:
    """'' when a first step matches NumPy's (loss to LOSS_RTOL, parameters to PARAM_ATOL)."""
    loss = float(np.asarray(loss))
    if not abs(loss - ref_loss) <= LOSS_RTOL * abs(ref_loss):
        return f"loss {loss!r} vs NumPy's {ref_loss!r}"
    for i, (p, r) in enumerate(zip(params, ref_params)):
        worst = float(np.max(np.abs(np.asarray(p, np.float64) - r)))
        if not worst <= PARAM_ATOL:
            return f"parameter {i} after the update differs from NumPy's by {worst:.3g}"
    return ""


def run_case(name: str, systems: list, threads: int, repeats: int, target: float, out) -> list:
    """Check and time every system on case `name`; print its table; return the rows."""
    batch, n_in, hidden, n_out = CASES[name]
    x, y, init = make_inputs(batch, n_in, hidden, n_out)
    ref_step, ref_params = make_numpy(x, y, init, threads)
    ref_loss = float(ref_step())
    ref = [np.array(p, np.float64) for p in ref_params()]
    rows, calls = [], {}
    for system in systems:
        row = {"variant": system, "status": "ok", "reason": ""}
        rows.append(row)
        try:
            step, params = SYSTEMS[system](x, y, init, threads)
            with _flowjit_log() as messages:
                t0 = time.perf_counter()
                loss = step()
                row["first_s"] = time.perf_counter() - t0
            row["note"] = "; ".join(dict.fromkeys(messages))
            wrong = check_first_step(loss, params(), ref_loss, ref)
        except Unavailable as exc:
            row["status"], row["reason"] = "unavailable", str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - reported in the table
            row["status"], row["reason"] = "FAILED", describe(exc)
            continue
        if wrong:
            row["status"], row["reason"] = "WRONG", wrong
            continue
        calls[system] = step
    for m in measure(calls, repeats, target) if calls else []:
        row = next(r for r in rows if r["variant"] == m.name)
        row.update(median=m.median, min=min(m.times), max=max(m.times),
                   threads=m.median_threads, retries=m.retries)
    base = next((r["median"] for r in rows if r["variant"] == "numpy" and "median" in r), None)
    print(f"\nW5 training step, {name}: batch {batch}, {n_in}->{hidden}->{n_out}, tanh, "
          f"sum of squares, Adam", file=out)
    print(f"  {'variant':<14} {'steps/s':>9} {'median':>9} {'(min..max)':>14} "
          f"{'ratio':>6} {'thr':>4} {'1st step':>9} {'retry':>5}", file=out)
    for row in rows:
        if "median" not in row:
            print(f"  {row['variant']:<14} {row['status']}: {row['reason']}", file=out)
            continue
        row["ratio"] = row["median"] / base if base else float("nan")
        scale, unit = (1e3, "ms") if row["median"] >= 1e-3 else (1e6, "us")
        spread = f"({row['min'] * scale:.3g}..{row['max'] * scale:.3g})"
        print(f"  {row['variant']:<14} {1 / row['median']:9.1f} {row['median'] * scale:6.3g} "
              f"{unit} {spread:>14} {row['ratio']:6.2f} {row['threads']:4.1f} "
              f"{row['first_s'] * 1e3:6.1f} ms {row['retries']:5d}", file=out)
    for row in rows:
        if row.get("note"):
            print(f"  note, {row['variant']}: {row['note']}", file=out)
    out.flush()
    return rows


def main(argv=None) -> int:
    """Command line: re-runs itself in a child with the thread environment, then measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_timing_arguments(parser)
    parser.add_argument("--quick", action="store_true", help="only the small case")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help="comma-separated among " + ", ".join(SYSTEMS) + " (all)")
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems: {', '.join(unknown)}")
    if "numpy" not in systems:
        systems.insert(0, "numpy")
    from .compiler_workloads import child_env

    status = rerun_in_child("flowjit.benchmarks.training_step", argv, args.threads,
                            child_env(args.threads))
    if status is not None:
        return status
    pin_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 7)
    out = sys.stdout
    print(f"flowjit training-step benchmark (W5); {os.cpu_count()} CPUs, {args.threads} "
          f"thread(s) for every system; {repeats} interleaved repetitions of "
          f"~{args.target_seconds:g} s batches", file=out)
    print(f"OpenBLAS kernels: {blas_cores()}", file=out)
    rows = []
    for name in ["small"] if args.quick else list(CASES):
        rows += run_case(name, systems, args.threads, repeats, args.target_seconds, out)
    busy = statistics.median([r.get("retries", 0) for r in rows])
    print("  ratio = median time / NumPy's (below 1 = faster); thr = cores used; 1st step "
          "includes compiling" + ("; many batches retried: rerun on a quiet machine"
                                  if busy else ""), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
