"""Convolution layers forward and backward: flowjit's compiled kernels against NumPy and
PyTorch, as ratios of medians.

One timed call is one layer's training computation: y = relu(conv2d(x, w) + b) (NHWC, SAME,
stride 1) and the gradients of sum(y * dy) with respect to w, b and (but for the first
layer, whose input is the data) x.  Cases are the layers of the issue's small CNN (batch 64,
28x28x1 -> 5x5x32 -> pool -> 5x5x64) and a 3x3 layer:

    conv1   x [64, 28, 28, 1],  w [5, 5, 1, 32]
    conv2   x [64, 14, 14, 32], w [5, 5, 32, 64]
    conv3x3 x [64, 14, 14, 32], w [3, 3, 32, 32]

Systems (each skipped with the reason when not installed):
- numpy: im2col (a strided window view copied to (N*OH*OW, KH*KW*C)) and matrix products,
  col2im summed tap by tap, written by hand in float32 (the baseline);
- flowjit: the layer's graph in a Session compiled on its first run (`JitOptions.always()`):
  the lowerings of ops/lower_conv.py, the bias and relu in the GEMM's epilogue; its first
  call is the compile (with the kernel cache as it is: `--cold` empties a private cache
  first, so it also builds the GEMM library);
- flowjit nojit: the same graph run by the ops' NumPy reference kernels;
- torch: `torch.nn.functional.conv2d` on channels-last tensors with autograd.
Every system's results are checked against NumPy's before timing (a WRONG one is not timed);
timing is `benchmarks/timing.py`'s interleaved calibrated batches, in a child process whose
environment sets the thread counts before any import.

Run: `python -m flowjit bench conv [--quick] [--threads N] [--repeats N] [--cold]` (or
`python -m flowjit.benchmarks.conv_step --cases conv2 --json PATH`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from .peers import describe
from .timing import add_timing_arguments, measure, pin_threads, rerun_in_child

CASES = {"conv1": (64, 28, 1, 5, 32), "conv2": (64, 14, 32, 5, 64),
         "conv3x3": (64, 14, 32, 3, 32)}
QUICK_BATCH = 8
RTOL = 2e-4   # float32 sums of up to 800 products in different orders


class Unavailable(Exception):
    """A system that cannot run here (not installed), with the reason."""


def make_inputs(batch, size, channels, window, out_channels, seed=0):
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return (rng.standard_normal((batch, size, size, channels)).astype(f32),
            (rng.standard_normal((window, window, channels, out_channels)) /
             np.sqrt(window * window * channels)).astype(f32),
            rng.standard_normal(out_channels).astype(f32) * f32(0.1),
            rng.standard_normal((batch, size, size, out_channels)).astype(f32))


def _windows(xp, window, size):
    """(N, size, size, K, K, C) view of the padded input's windows."""
    n, _, _, c = xp.shape
    s = xp.strides
    return np.lib.stride_tricks.as_strided(xp, (n, size, size, window, window, c),
                                           (s[0], s[1], s[2], s[1], s[2], s[3]))


def make_numpy(x, w, b, dy, need_dx):
    """im2col + GEMM forward, GEMM + col2im backward, in float32 NumPy."""
    k, c, oc = w.shape[0], w.shape[2], w.shape[3]
    n, size = x.shape[0], x.shape[1]
    pad = (k - 1) // 2
    wm = w.reshape(-1, oc)

    def step():
        xp = np.pad(x, ((0, 0), (pad, k - 1 - pad), (pad, k - 1 - pad), (0, 0)))
        cols = _windows(xp, k, size).reshape(n * size * size, k * k * c)
        y = np.maximum(cols @ wm + b, 0)
        g = np.where(y > 0, dy.reshape(y.shape), np.float32(0))
        out = [(g.T @ cols).T.reshape(w.shape), g.sum(0)]
        if need_dx:
            dcols = (g @ wm.T).reshape(n, size, size, k, k, c)
            dxp = np.zeros_like(xp)
            for i in range(k):
                for j in range(k):
                    dxp[:, i:i + size, j:j + size] += dcols[:, :, :, i, j]
            out.append(dxp[:, pad:pad + size, pad:pad + size])
        return out

    return step


def _graph(tf, x, w, b, dy, need_dx):
    graph = tf.Graph()
    with graph.as_default():
        xt = tf.placeholder(tf.float32, [None, *x.shape[1:]], name="x")
        wt = tf.placeholder(tf.float32, w.shape, name="w")
        bt = tf.placeholder(tf.float32, b.shape, name="b")
        dyt = tf.placeholder(tf.float32, [None, *dy.shape[1:]], name="dy")
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(xt, wt, [1, 1, 1, 1], "SAME"), bt))
        grads = tf.gradients(tf.reduce_sum(y * dyt), [wt, bt] + ([xt] if need_dx else []))
    return graph, grads, {xt: x, wt: w, bt: b, dyt: dy}


def _session_step(config, x, w, b, dy, need_dx):
    import flowjit as tf

    graph, grads, feeds = _graph(tf, x, w, b, dy, need_dx)
    sess = tf.Session(graph=graph, config=config)
    return lambda: sess.run(grads, feeds)


def make_flowjit(x, w, b, dy, need_dx):
    import flowjit as tf

    return _session_step(tf.ConfigProto(jit=tf.JitOptions.always()), x, w, b, dy, need_dx)


def make_flowjit_nojit(x, w, b, dy, need_dx):
    import flowjit as tf

    return _session_step(tf.ConfigProto(jit=False), x, w, b, dy, need_dx)


def make_torch(x, w, b, dy, need_dx):
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"torch is not installed ({e})") from None
    torch.set_num_threads(int(os.environ.get("FLOWJIT_BENCH_THREADS", os.cpu_count() or 1)))
    cl = torch.channels_last
    xt = torch.from_numpy(np.moveaxis(x, -1, 1).copy()).to(memory_format=cl)
    xt.requires_grad_(need_dx)
    wt = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 2, 0, 1))).requires_grad_()
    bt = torch.from_numpy(b.copy()).requires_grad_()
    dyt = torch.from_numpy(np.moveaxis(dy, -1, 1).copy()).to(memory_format=cl)
    pad = (w.shape[0] - 1) // 2

    def step():
        y = torch.relu(torch.nn.functional.conv2d(xt, wt, bt, padding=pad))
        params = [wt, bt] + ([xt] if need_dx else [])
        grads = torch.autograd.grad(y, params, dyt)
        out = [grads[0].permute(2, 3, 1, 0), grads[1]]
        return out + ([grads[2].permute(0, 2, 3, 1)] if need_dx else [])

    return step


SYSTEMS = {"numpy": make_numpy, "flowjit": make_flowjit, "flowjit nojit": make_flowjit_nojit,
           "torch": make_torch}


def _wrong(got, want) -> str:
    for i, (g, e) in enumerate(zip(got, want)):
        g = np.asarray(g.detach() if hasattr(g, "detach") else g, np.float64)
        scale = np.max(np.abs(e)) + 1e-30
        err = np.max(np.abs(g - e)) / scale if e.size else 0.0
        if g.shape != e.shape or not err <= RTOL:
            return f"gradient {i}: shape {g.shape} vs {e.shape}, relative error {err:.3g}"
    return ""


def run_case(name, systems, repeats, target, batch=None) -> list:
    """Check and time `systems` on case `name`; rows of dicts (status, first_s, median...)."""
    n, size, channels, window, out_channels = CASES[name]
    x, w, b, dy = make_inputs(batch or n, size, channels, window, out_channels)
    need_dx = channels > 1
    want = [np.asarray(a, np.float64) for a in make_numpy(x, w, b, dy, need_dx)()]
    rows, calls = [], {}
    for system in systems:
        row = {"case": name, "variant": system, "status": "ok", "reason": ""}
        rows.append(row)
        try:
            step = SYSTEMS[system](x, w, b, dy, need_dx)
            start = time.perf_counter()
            got = step()
            row["first_s"] = time.perf_counter() - start
            wrong = _wrong(got, want)
        except Unavailable as e:
            row["status"], row["reason"] = "unavailable", str(e)
            continue
        except Exception as e:  # noqa: BLE001 - reported in the table
            row["status"], row["reason"] = "FAILED", describe(e)
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
    for row in rows:
        if "median" in row and base:
            row["ratio"] = row["median"] / base
    return rows


def print_case(name, rows, out, batch=None) -> None:
    n, size, channels, window, out_channels = CASES[name]
    print(f"\n{name}: x [{batch or n}, {size}, {size}, {channels}], w [{window}, {window}, "
          f"{channels}, {out_channels}], SAME, bias + relu, forward and backward", file=out)
    print(f"  {'variant':<14} {'median':>10} {'(min..max)':>18} {'ratio':>6} {'thr':>4} "
          f"{'1st call':>10} {'retry':>5}", file=out)
    for row in rows:
        if "median" not in row:
            print(f"  {row['variant']:<14} {row['status']}: {row['reason']}", file=out)
            continue
        spread = f"({row['min'] * 1e3:.3g}..{row['max'] * 1e3:.3g})"
        print(f"  {row['variant']:<14} {row['median'] * 1e3:7.2f} ms {spread:>18} "
              f"{row.get('ratio', float('nan')):6.2f} {row['threads']:4.1f} "
              f"{row['first_s']:8.2f} s {row['retries']:5d}", file=out)
    out.flush()


def main(argv=None) -> int:
    """Command line: re-runs itself in a child with the thread environment, then measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_timing_arguments(parser)
    parser.add_argument("--quick", action="store_true",
                        help=f"batch {QUICK_BATCH} instead of 64, 3 repetitions")
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma-separated among " + ", ".join(CASES) + " (all)")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help="comma-separated among " + ", ".join(SYSTEMS) + " (all)")
    parser.add_argument("--cold", action="store_true",
                        help="compile into an empty private kernel cache (a cold compile)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [s for s in systems if s not in SYSTEMS] + [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown systems or cases: {', '.join(unknown)}")
    if "numpy" not in systems:
        systems.insert(0, "numpy")
    if args.cold and "FLOWJIT_CACHE_DIR" not in os.environ:
        os.environ["FLOWJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="flowjit-cold-")
    from .compiler_workloads import child_env

    status = rerun_in_child("flowjit.benchmarks.conv_step", argv, args.threads,
                            child_env(args.threads))
    if status is not None:
        return status
    pin_threads(args.threads)
    repeats = args.repeats or (3 if args.quick else 7)
    batch = QUICK_BATCH if args.quick else None
    out = sys.stdout
    print(f"flowjit convolution benchmark; {os.cpu_count()} CPUs, {args.threads} thread(s); "
          f"{repeats} interleaved repetitions of ~{args.target_seconds:g} s batches", file=out)
    rows = []
    for name in cases:
        case_rows = run_case(name, systems, repeats, args.target_seconds, batch)
        print_case(name, case_rows, out, batch)
        rows += case_rows
    print("  ratio = median time / NumPy's (below 1 = faster); thr = cores used; 1st call "
          "includes compiling", file=out)
    if args.json:
        import json

        with open(args.json, "w") as f:
            json.dump({"meta": dict(threads=args.threads, repeats=repeats), "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
