"""Sparse-gradient benchmark: one SGD step on a large embedding table, through the
IndexedSlices path (the gradient holds the looked-up rows; GradientDescent applies them with
one ScatterSub, compiled with the step) against the dense gradient path (the same gradient
made dense, an UnsortedSegmentSum into a table-sized zero tensor, applied with AssignSub),
and against NumPy doing the sparse update in place.

The loss is 0.5 * sum((table[ids] - target)**2) for `--batch` ids (some repeated) into a
`--rows` x `--dim` float32 table.  Method (the project's benchmarking rules,
benchmarks/timing.py): every variant's table after one step from the same start is checked
against NumPy before timing; the variants are timed in interleaved, calibrated batches, median
and min..max per step reported.  flowjit never mutates a stored variable (ops/variable_ref.py),
so its sparse step still writes a new table (one copy); NumPy's in-place update is the floor.

Run: `python -m flowjit.benchmarks.sparse_embedding [--rows N] [--dim D] [--batch B]
[--repeats R] [--target-seconds S] [--json PATH]`.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .timing import measure

LEARNING_RATE = np.float32(0.1)


def _inputs(rows, dim, batch):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    ids = rng.integers(0, rows, batch).astype(np.int32)
    ids[: max(1, batch // 8)] = ids[-1]   # repeated ids
    target = rng.standard_normal((batch, dim)).astype(np.float32)
    return table, ids, target


def _numpy_step(table, ids, target):
    grad_rows = table[ids] - target
    np.subtract.at(table, ids, LEARNING_RATE * grad_rows)


def _flowjit_step(tf, table, ids, target, dense: bool):
    """(step callable, read-table callable, close) of one flowjit variant."""
    graph = tf.Graph()
    with graph.as_default():
        emb = tf.Variable(table, name="emb")
        ids_in = tf.placeholder(tf.int32, [len(ids)], name="ids")
        rows = tf.nn.embedding_lookup(emb, ids_in)
        loss = 0.5 * tf.reduce_sum(tf.square(rows - target))
        (grad,) = tf.gradients(loss, emb)
        if dense:
            grad = tf.convert_to_tensor(grad)
        step = tf.train.GradientDescentOptimizer(float(LEARNING_RATE)).apply_gradients(
            [(grad, emb)])
    sess = tf.Session(graph=graph, config=tf.ConfigProto(jit=tf.JitOptions.always()))
    sess.run(emb.initializer)
    feed = {ids_in: ids}
    return (lambda: sess.run(step, feed)), (lambda: sess.run(emb)), sess.close


def run(rows=100_000, dim=64, batch=32, repeats=5, target_seconds=0.3, out=sys.stdout) -> dict:
    """Check, time and print the three variants; returns the results as a dict."""
    import flowjit as tf

    table, ids, target = _inputs(rows, dim, batch)
    expected = table.copy()
    _numpy_step(expected, ids, target)
    variants, closers = {}, []
    for name, dense in (("flowjit sparse (IndexedSlices, ScatterSub)", False),
                        ("flowjit dense gradient (UnsortedSegmentSum, AssignSub)", True)):
        step, read, close = _flowjit_step(tf, table, ids, target, dense)
        step()
        got = read()
        if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
            raise AssertionError(f"{name}: the table after one step is wrong; not timing it.")
        variants[name], closers = step, closers + [close]
    numpy_table = table.copy()
    variants["numpy in place (np.subtract.at)"] = lambda: _numpy_step(numpy_table, ids, target)
    try:
        results = measure(variants, repeats=repeats, target_seconds=target_seconds)
    finally:
        for close in closers:
            close()
    print(f"SGD step, {rows} x {dim} float32 table, {batch} ids; ms per step, median "
          f"(min..max) of {repeats}", file=out)
    report = {"rows": rows, "dim": dim, "batch": batch, "ms": {}}
    for m in results:
        report["ms"][m.name] = m.median * 1e3
        print(f"  {m.name:58s} {m.median * 1e3:8.3f} ({min(m.times) * 1e3:.3f}.."
              f"{max(m.times) * 1e3:.3f})", file=out)
    sparse, dense = (report["ms"][n] for n in list(variants)[:2])
    print(f"  dense / sparse: {dense / sparse:.1f}x", file=out)
    return report


def main(argv=None) -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--target-seconds", type=float, default=0.3)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    report = run(args.rows, args.dim, args.batch, args.repeats, args.target_seconds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
