"""The `flowjit` command line (`python -m flowjit ...` or the `flowjit` script).

Subcommands: `demo` (run a small TF1-style program and print its results), `version`,
`ops` (the registered op types and their traits, generated from the registry), `run`
(load a saved GraphDef and run ops on it: `runtime/run_cli.py`) and
`bench [session|compiler|numpy|training|nn|all|report|tfgraphs]` (the session-overhead
benchmark, the compiler benchmark against NumPy and its peers, the NumPy corpus, the training
step W5, the CNN and LSTM training steps W6 (`benchmarks/nn_training.py`), each run in a child process so thread-count environment variables take effect
before NumPy and the peers are imported; `report` runs them all and writes DIR/report.md
with a table per benchmark, the machine and the missing peers, plus a PNG plot of speedups
over NumPy per benchmark: `benchmarks/report.py`, options `--out DIR`, `--only
NAME[:ITEM,...]`, `--quick`; `tfgraphs` times TensorFlow-written GraphDefs:
`benchmarks/tf_graph_import.py`; `conv` times convolution layers forward and backward
against NumPy and PyTorch: `benchmarks/conv_step.py`).
Long loops show a progress bar on stderr when it is a terminal (`progress.py`;
FLOWJIT_PROGRESS=0 turns bars off).
Each subcommand is an argparse sub-parser whose handler is attached with
`set_defaults(handler=...)`.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys


def _cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(steps=args.steps, seed=args.seed)
    return 0


def _cmd_version(args) -> int:
    import numpy

    from . import __version__

    print(f"flowjit {__version__}")
    print(f"python {platform.python_version()}, numpy {numpy.__version__}")
    return 0


def op_table(markdown: bool = False) -> list:
    """Lines describing every registered op type and its traits, sorted by name."""
    from .ops import registry

    defs = registry.all_op_defs()
    if markdown:
        lines = ["| Op type | Traits |", "|---|---|"]
        lines += [f"| `{d.name}` | {', '.join(sorted(t.name for t in d.traits)) or '-'} |"
                  for d in defs]
        return lines + ["", f"{len(defs)} op types."]
    width = max((len(d.name) for d in defs), default=0)
    lines = [f"{d.name:<{width}}  {', '.join(sorted(t.name for t in d.traits))}".rstrip()
             for d in defs]
    return lines + [f"({len(defs)} op types)"]


def _cmd_ops(args) -> int:
    for line in op_table(markdown=args.markdown):
        print(line)
    return 0


def _cmd_bench(args) -> int:
    from .benchmarks import compiler_workloads
    from .benchmarks.timing import blas_env
    from .benchmarks.timing import thread_env as pinned_env

    def thread_env(threads):
        return blas_env(pinned_env(threads), args.native_blas)

    if args.which == "report":
        return _cmd_bench_report(args)
    target = 0.1 if args.target_seconds is None else args.target_seconds
    timing = ["--target-seconds", str(target)]
    timing += ["--repeats", str(args.repeats)] if args.repeats else []
    timing += ["--native-blas"] if args.native_blas else []
    status = 0
    if args.which in ("session", "all"):
        cmd = [sys.executable, "-m", "flowjit.benchmarks.session_overhead", *timing]
        status = subprocess.call(cmd, env=thread_env(args.threads or 1))
    if args.which in ("compiler", "all") and status == 0:
        threads = args.threads or os.cpu_count() or 1
        cmd = [sys.executable, "-m", "flowjit.benchmarks.compiler_workloads", *timing,
               "--threads", str(threads), "--workloads", args.workloads, "--peers", args.peers]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--json", args.json] if args.json else []
        env = blas_env(compiler_workloads.child_env(threads), args.native_blas)
        status = subprocess.call(cmd, env=env)
    if args.which in ("numpy", "all") and status == 0:
        threads = args.threads or os.cpu_count() or 1
        cmd = [sys.executable, "-m", "flowjit.benchmarks.numpy_corpus", *timing,
               "--threads", str(threads)]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--json", args.json] if args.json else []
        status = subprocess.call(cmd, env=thread_env(threads))
    if args.which in ("training", "all") and status == 0:
        from .benchmarks import training_step

        threads = args.threads or os.cpu_count() or 1
        status = training_step.main([*timing, "--threads", str(threads),
                                     "--systems", _training_systems(args.peers)]
                                    + (["--quick"] if args.quick else []))
    if args.which in ("nn", "all") and status == 0:
        from .benchmarks import nn_training

        threads = args.threads or os.cpu_count() or 1
        status = nn_training.main([*timing, "--threads", str(threads)]
                                  + (["--quick"] if args.quick else []))
    if args.which == "conv" and status == 0:
        from .benchmarks import conv_step

        threads = args.threads or os.cpu_count() or 1
        status = conv_step.main([*timing, "--threads", str(threads)]
                                + (["--quick"] if args.quick else []))
    if args.which == "cluster" and status == 0:
        from .benchmarks import cluster_step

        cmd = ["--repeats", str(args.repeats)] if args.repeats else []
        status = cluster_step.main(cmd + (["--quick"] if args.quick else []))
    if args.which == "tfgraphs" and status == 0:   # needs the source tree's fixtures
        cmd = [sys.executable, "-m", "flowjit.benchmarks.tf_graph_import", *timing[:2]]
        cmd += ["--repeats", str(args.repeats)] if args.repeats else []
        status = subprocess.call(cmd, env=thread_env(args.threads or os.cpu_count() or 1))
    return status


def _cmd_bench_report(args) -> int:
    from .benchmarks import report
    from .benchmarks.peers import PEER_KEYS

    if args.peers == ",".join(PEER_KEYS):
        args.peers = None  # the default: every peer, pythran (NumPy corpus) too
    return report.run_report(report.options(args))


def _training_systems(peers: str) -> str:
    """The training benchmark's systems for a --peers value: NumPy and every flowjit variant,
    plus the named peers that have a training step (numexpr and numba have none)."""
    from .benchmarks.training_step import training_systems

    names = [p.strip() for p in peers.split(",") if p.strip() and p.strip() != "none"]
    return ",".join(training_systems(names))


def _cmd_run(args) -> int:
    from .runtime.run_cli import run_command

    return run_command(args)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="python -m flowjit",
        description="flowjit: TensorFlow 1.x-style dataflow graphs for Python.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="run a small TF1-style program and print its results")
    demo.add_argument("--steps", type=int, default=100, help="gradient-descent steps (100)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the demo's NumPy inputs")
    demo.set_defaults(handler=_cmd_demo)

    version = sub.add_parser("version", help="print flowjit's version")
    version.set_defaults(handler=_cmd_version)

    ops = sub.add_parser("ops", help="list the registered op types and their traits")
    ops.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ops.set_defaults(handler=_cmd_ops)

    from .runtime import run_cli

    run = sub.add_parser("run", help="load a saved GraphDef and run ops on it",
                         description=run_cli.DESCRIPTION, epilog=run_cli.EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run_cli.add_arguments(run)
    run.set_defaults(handler=_cmd_run)

    bench = sub.add_parser(
        "bench", help="benchmarks: Session.run overhead, the JIT against NumPy and its peers",
        description="session: Session.run of tiny graphs vs NumPy (the default); compiler: "
                    "flowjit.jit vs NumPy, numexpr, numba, JAX, PyTorch, TensorFlow on "
                    "workloads W1-W7 (2-3 minutes on an idle 2-core machine, longer when "
                    "busy); numpy: ordinary NumPy kernels (tests/numpy_corpus.py) under "
                    "flowjit.jit, numba.njit and pythran (when installed) vs NumPy; "
                    "training: W5, steps/s of an MLP training step vs NumPy, JAX, PyTorch, "
                    "TensorFlow; nn: W6, steps/s of a CNN and an LSTM training step vs JAX, "
                    "PyTorch, TensorFlow, with flowjit's cold compile; conv: convolution "
                    "layers forward and backward vs NumPy and PyTorch; all: every one (but "
                    "conv); report: every one (or those --only "
                    "names), written to --out DIR as report.md (tables of medians and "
                    "ratios to NumPy, the machine, missing peers), one PNG plot of "
                    "speedups over NumPy per benchmark, results.json and the logs "
                    "(its --peers may also name pythran, of the NumPy corpus); "
                    "tfgraphs: import and training-step times of TensorFlow-written "
                    "GraphDefs (the source tree's recorded ones) vs flowjit's own graph and "
                    "TensorFlow; cluster: steps/s and bytes per step of parameter-server "
                    "steps on a LocalCluster, in-process and on Ray, vs one process.")
    bench.add_argument("which", nargs="?", default="session",
                       choices=("session", "compiler", "numpy", "training", "nn", "all",
                                "report", "tfgraphs", "conv", "cluster"),
                       help="which benchmark (session)")
    bench.add_argument("--threads", type=int, default=None,
                       help="threads for every system, set before import (session: 1, "
                            "compiler: all CPUs)")
    bench.add_argument("--repeats", type=int, default=None,
                       help="interleaved repetitions (7; compiler --quick: 3)")
    bench.add_argument("--target-seconds", type=float, default=None,
                       help="calibrated duration of one timed batch (0.1; report --quick: "
                            "each benchmark's quick value)")
    from .benchmarks.compiler_workloads import add_arguments
    from .benchmarks.report import add_arguments as add_report_arguments
    from .benchmarks.timing import add_blas_argument

    add_arguments(bench)
    add_report_arguments(bench)
    add_blas_argument(bench)
    bench.set_defaults(handler=_cmd_bench)
    return parser


def main(argv=None) -> int:
    """Entry point: parse `argv` (default sys.argv[1:]) and run the subcommand."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
