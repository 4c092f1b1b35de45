"""TensorFlow-written GraphDefs in flowjit: import time and training-step time.

For each GraphDef TensorFlow wrote (by default the recorded programs of
`tests/fixtures/tf_graphs` in a source checkout; `--graphs DIR` for others, each `NAME.pb`
with its `NAME.npz` recipe as tests/fixtures/record_tf_graphs.py writes it):
- import: median seconds to parse the file and `import_graph_def` it into a new graph;
- one training step (the recipe's fetches and train op, with its feeds), timed with
  `benchmarks/timing.py` (calibrated batches, interleaved, retried when the machine is
  busy): flowjit running the imported graph, TensorFlow running the same file (when
  installed; `tensorflow.compat.v1`), and for `mlp_adam` flowjit running the same model
  built by flowjit's own TF1 API (examples/mlp_train.py's graph), so the table shows what
  importing costs against a native graph.  Ratios are of medians, to flowjit's native
  graph where there is one, else to TensorFlow.

Run: `python -m flowjit.benchmarks.tf_graph_import [--repeats N] [--json PATH]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from ..progress import progress
from .timing import measure

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "tf_graphs")


def _recipe(directory: str, name: str):
    recipe = np.load(os.path.join(directory, name + ".npz"))
    feeds = {k: recipe["feed:" + k] for k in recipe["feeds"]}
    init_feeds = {k: recipe["init_feed:" + k] for k in recipe["init_feeds"]}
    fetches = [str(f) for f in recipe["fetches"]] + [str(recipe["train"])]
    return str(recipe["init"]), init_feeds, feeds, fetches


def _flowjit_step(graph, init, init_feeds, feeds, fetches, jit="always"):
    import flowjit as tf
    # every cluster compiled before its first call (not in the background, as the tiered
    # default does), so the timed steps run the kernels, not the reference ops; jit=False
    # (--jit off) times the reference kernels, without compiling
    sess = tf.Session(graph=graph, config=tf.ConfigProto(jit=jit))
    sess.run(init, init_feeds)
    return lambda: sess.run(fetches, feeds)


def _import(path: str):
    import flowjit as tf
    from flowjit.compiler.core.graph_def import parse_graph_def
    with open(path, "rb") as f:
        graph_def = parse_graph_def(f.read())
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    return graph


def _tensorflow_step(path, init, init_feeds, feeds, fetches):
    try:
        import tensorflow.compat.v1 as tf1
    except ImportError:
        return None
    tf1.disable_eager_execution()
    graph_def = tf1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    graph = tf1.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    sess = tf1.Session(graph=graph)
    sess.run(init, init_feeds)
    return lambda: sess.run(fetches, feeds)


EXAMPLE = os.path.join(HERE, "..", "examples", "mlp_train.py")


def _native_mlp():
    """examples/mlp_train.py's graph (its code before the session), built by flowjit."""
    import flowjit as tf
    with open(EXAMPLE) as f:
        source = f.read().split("with tf.Session")[0]
    graph = tf.Graph()
    with graph.as_default():
        exec(compile(source, EXAMPLE, "exec"), {"__name__": "mlp_train"})
    return graph


def run(directory: str, repeats: int, target_seconds: float, jit="always") -> list:
    """One row per graph: import seconds and the median step seconds per system (`jit`:
    the Session's ConfigProto.jit, "always" compiling every cluster first)."""
    names = sorted(f[:-3] for f in os.listdir(directory) if f.endswith(".pb"))
    rows = []
    for name in progress(names, desc="TF graphs"):
        path = os.path.join(directory, name + ".pb")
        init, init_feeds, feeds, fetches = _recipe(directory, name)
        imports = []
        for _ in range(5):
            start = time.perf_counter()
            graph = _import(path)
            imports.append(time.perf_counter() - start)
        variants = {"flowjit (imported)": _flowjit_step(graph, init, init_feeds, feeds,
                                                        fetches, jit)}
        if name == "mlp_adam":
            variants["flowjit (native)"] = _flowjit_step(_native_mlp(), init, {}, feeds,
                                                         fetches, jit)
        tf_step = _tensorflow_step(path, init, init_feeds, feeds, fetches)
        if tf_step is not None:
            variants["tensorflow"] = tf_step
        for fn in variants.values():   # warm up: compiles, caches, TensorFlow's first runs
            for _ in range(10):
                fn()
        measured = measure(variants, repeats, target_seconds)
        rows.append({"graph": name, "import_s": statistics.median(imports),
                     "step_s": {m.name: m.median for m in measured}})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", default=FIXTURES, help="directory of NAME.pb + NAME.npz")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--target-seconds", type=float, default=0.1)
    parser.add_argument("--json", default=None, help="also write the rows as JSON")
    parser.add_argument("--jit", default="always", choices=("always", "off"),
                        help="compile every cluster first (always) or run the reference "
                             "kernels (off: no compiling, for a quick check of the harness)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.graphs):
        parser.error(f"no graphs directory {args.graphs} (pass --graphs)")
    rows = run(args.graphs, args.repeats, args.target_seconds,
               "always" if args.jit == "always" else False)
    print(f"{'graph':24} {'import':>9} " + " ".join(f"{s:>20}" for s in
                                                    ("flowjit (imported)", "flowjit (native)",
                                                     "tensorflow")) + "  ratio")
    for row in rows:
        steps = row["step_s"]
        base = steps.get("flowjit (native)", steps.get("tensorflow"))
        cells = [f"{steps[s] * 1e6:17.0f} us" if s in steps else f"{'-':>20}"
                 for s in ("flowjit (imported)", "flowjit (native)", "tensorflow")]
        ratio = f"{steps['flowjit (imported)'] / base:6.2f}" if base else "     -"
        print(f"{row['graph']:24} {row['import_s'] * 1e3:6.1f} ms " + " ".join(cells)
              + f"  {ratio}")
    print("ratio = imported graph's median step time / flowjit's native graph's (mlp_adam) "
          "or TensorFlow's")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
