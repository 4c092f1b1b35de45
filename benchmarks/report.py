"""`python -m flowjit bench report`: run the benchmarks and write a report of them.

Owns running the benchmarks for a report and turning their results into one shape of
row.  Each benchmark runs as `bench` runs it: in a child process whose environment sets the
thread counts before any import (`compiler`, `numpy` and `training`: `--threads`, all CPUs
by default; `session`: one thread), through the module's own command line with `--json`.
Its tables go to `DIR/logs/NAME.txt`; its stderr is passed through to this process's (with
progress bars on, `FLOWJIT_PROGRESS=1`, when this process shows bars: a terminal or a
notebook) and its last lines are kept for the report when it fails.

Every benchmark's result becomes rows of (workload, system, status, reason, median seconds,
time / NumPy's time): `rows_of(key, result)`, from what the modules' `run()` functions
return (compiler_workloads.run, numpy_corpus.run, training_step.run, session_overhead.run,
nn_training.run; its baseline is flowjit nojit, every op's NumPy kernel).
`benchmarks/report_render.py` writes them as DIR/report.md (a table per benchmark and the
machine), one PNG bar chart per benchmark (speedup over NumPy, log axis) and
DIR/results.json (the rows and every module's full result), each file atomically.

`--quick` runs each module's quick mode (compiler: the smaller sizes, 3 repetitions; numpy:
3 repetitions of ~0.03 s batches; training: the small case; session: 3 repetitions of
~0.03 s batches); `--only NAME[:ITEM,ITEM]` (repeatable) keeps some benchmarks, and of
those some workloads (compiler: W1-W7), kernels (numpy) or cases (training: small, large).
"""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from .. import progress as progress_mod

BENCHMARKS = {  # key: (title, module)
    "compiler": ("Compiler workloads W1-W7", "flowjit.benchmarks.compiler_workloads"),
    "numpy": ("NumPy corpus", "flowjit.benchmarks.numpy_corpus"),
    "training": ("Training step W5", "flowjit.benchmarks.training_step"),
    "session": ("Session.run overhead", "flowjit.benchmarks.session_overhead"),
    "nn": ("CNN and LSTM training steps W6", "flowjit.benchmarks.nn_training"),
}
NOT_RUN = ("unavailable", "unsupported")
TAIL_BYTES = 8192


@dataclasses.dataclass
class Options:
    """What to run: the report's command-line options."""

    out_dir: str = "bench_report"
    quick: bool = False
    only: dict | None = None        # {benchmark: [items] or None}; None: every benchmark
    peers: tuple | None = None      # peer keys (pythran among them); None: all
    threads: int | None = None
    repeats: int | None = None
    target_seconds: float | None = None
    native_blas: bool = False


def all_peers() -> tuple:
    """Every peer a report can run: the compiler benchmark's and pythran (numpy corpus)."""
    from .peers import PEER_KEYS

    return PEER_KEYS + ("pythran",)


def parse_only(specs) -> dict | None:
    """{benchmark: [items] or None} from `--only` values like "compiler:W1,W6" or "session";
    None when there are none.  Raises ValueError for unknown names."""
    if not specs:
        return None
    chosen: dict = {}
    for spec in specs:
        name, _, items = spec.partition(":")
        name = name.strip()
        if name not in BENCHMARKS:
            raise ValueError(f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)})")
        names = [i.strip() for i in items.split(",") if i.strip()]
        known = _known_items(name)
        bad = [i for i in names if i not in known]
        if bad:
            raise ValueError(f"unknown {name} item(s) {', '.join(bad)}"
                             + (f" (known: {', '.join(known)})" if known else
                                f" ({name} has no items to choose)"))
        if name not in chosen:
            chosen[name] = names or None
        elif chosen[name] is not None and names:
            chosen[name] += [n for n in names if n not in chosen[name]]
        else:
            chosen[name] = None    # the whole benchmark was asked for
    return chosen


def _known_items(name: str) -> tuple:
    if name == "compiler":
        from .workloads import WORKLOADS
        return WORKLOADS
    if name == "numpy":
        from .numpy_corpus import load_corpus
        return tuple(k.name for k in load_corpus().CORPUS)
    if name == "training":
        from .training_step import CASES
        return tuple(CASES)
    if name == "nn":
        from .nn_training_peers import MODELS
        return tuple(MODELS)
    return ()


def child_command(key: str, items, opts: Options, json_path: str) -> tuple:
    """(argv, environment) of the child process that runs benchmark `key` on `items`."""
    from .compiler_workloads import child_env
    from .peers import PEER_KEYS
    from .timing import blas_env, thread_env
    from .training_step import training_systems

    threads = opts.threads or os.cpu_count() or 1
    peers = all_peers() if opts.peers is None else opts.peers
    timing = ["--repeats", str(opts.repeats)] if opts.repeats else []
    timing += ["--target-seconds", str(opts.target_seconds)] if opts.target_seconds else []
    timing += ["--native-blas"] if opts.native_blas else []
    quick = ["--quick"] if opts.quick else []
    module = BENCHMARKS[key][1]
    cmd = [sys.executable, "-m", module, *timing, "--json", json_path]
    if key == "compiler":
        compiler_peers = [p for p in peers if p in PEER_KEYS]
        cmd += ["--threads", str(threads), "--tuning", "default", *quick,
                "--peers", ",".join(compiler_peers) or "none"]
        cmd += ["--workloads", ",".join(items)] if items else []
        env = child_env(threads)
    elif key == "numpy":
        variants = ["numpy", "flowjit"] + [p for p in ("numba", "pythran") if p in peers]
        cmd += ["--threads", str(threads), "--variants", ",".join(variants), *quick]
        cmd += ["--kernels", ",".join(items)] if items else []
        env = thread_env(threads)
    elif key == "training":
        cmd += ["--threads", str(threads), "--systems", ",".join(training_systems(peers)),
                *quick]
        cmd += ["--cases", ",".join(items)] if items else []
        env = child_env(threads)
    elif key == "nn":    # its own child: an empty kernel cache, so the first step is cold
        cmd += ["--threads", str(threads), *quick]
        cmd += ["--models", ",".join(items)] if items else []
        env = child_env(threads)
    else:
        if opts.quick:
            cmd += [] if opts.repeats else ["--repeats", "3"]
            cmd += [] if opts.target_seconds else ["--target-seconds", "0.03"]
        env = thread_env(1)
    return cmd, blas_env(env, opts.native_blas)


def _last_lines(data: bytes, count: int = 12) -> str:
    """The last `count` non-empty lines of a child's stderr, progress-bar redraws dropped."""
    text = data.decode(errors="replace")
    lines = [line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]
    return "\n".join([line for line in lines if line.strip()][-count:])


def run_child(cmd, env, log_path: str, bars: bool) -> tuple:
    """Run `cmd`: stdout into `log_path` (written atomically), stderr passed through to
    this process's stderr; returns (exit status, the last lines of its stderr)."""
    env = dict(env)
    if bars:
        env["FLOWJIT_PROGRESS"] = "1"
        size = shutil.get_terminal_size()   # tqdm sizes a bar on a pipe from these
        env["COLUMNS"], env["LINES"] = str(size.columns), str(size.lines)
    tmp = f"{log_path}.{os.getpid()}.tmp"
    tail = b""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        with open(tmp, "wb") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.PIPE)
            while chunk := proc.stderr.read1(4096):
                tail = (tail + chunk)[-TAIL_BYTES:]
                sys.stderr.write(decoder.decode(chunk))
                sys.stderr.flush()
            status = proc.wait()
    finally:
        os.replace(tmp, log_path)   # an interrupted run keeps what it printed too
    return status, _last_lines(tail)


# --- rows: (workload, system, status, reason, median_s, ratio_to_numpy) ------------------------


def _row(workload, system, status, reason, median, ratio) -> dict:
    return {"workload": workload, "system": system, "status": status, "reason": reason,
            "median_s": median, "ratio_to_numpy": ratio}


def rows_of(key: str, result: dict) -> list:
    """The rows of benchmark `key` from its module's result (what its --json writes)."""
    if key == "compiler":
        return [_row(r["case"], r["variant"], r["status"], r["reason"], r["median_s"],
                     r["ratio_to_numpy"]) for r in result["rows"]]
    if key == "numpy":
        return [_row(r["kernel"], r["variant"], r["status"], r["reason"], r["median_s"],
                     r["ratio_to_numpy"]) for r in result["rows"]]
    if key == "training":
        from .training_step import CASES

        def label(case):
            batch, n_in, hidden, n_out = CASES[case]
            return f"{case}: batch {batch}, {n_in}->{hidden}->{n_out}"
        return [_row(label(r["case"]), r["variant"], r["status"], r["reason"],
                     r.get("median"), r.get("ratio")) for r in result["rows"]]
    if key == "nn":        # the baseline is flowjit nojit: every op's NumPy kernel
        return [_row(r["model"], r["variant"], r["status"], r["reason"], r.get("median"),
                     r.get("ratio")) for r in result["rows"]]
    rows = []
    for r in result["rows"]:
        rows.append(_row(r["case"], "numpy", "ok", "", r["numpy_us"] / 1e6, 1.0))
        rows.append(_row(r["case"], "flowjit Session.run", "ok", "", r["flowjit_us"] / 1e6,
                         r["ratio"]))
    return rows


def missing_systems(key: str, result: dict, rows: list) -> dict:
    """{system: why} for the systems of benchmark `key` that did not run at all: peers that
    could not be set up, and systems whose every row is unavailable or unsupported."""
    missing = dict((result.get("meta") or {}).get("unavailable_peers") or {})
    for system in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == system]
        if all(r["status"] in NOT_RUN for r in mine):
            missing[system] = next((r["reason"] for r in mine if r["reason"]), "not run")
    return missing


def busy_rows(result: dict) -> list:
    """[rows timed while other processes kept the machine busy, rows timed]: busy means
    more than `timing.BUSY_ELSEWHERE_LIMIT` cores busy elsewhere (the median over a row's
    batches) where the benchmark records it, else any batch retried for that reason."""
    from .timing import BUSY_ELSEWHERE_LIMIT

    timed = [r for r in result.get("rows", [])
             if r.get("median_s") or r.get("median") or r.get("flowjit_us")]
    busy = [r for r in timed if (r.get("busy_elsewhere") or 0.0) > BUSY_ELSEWHERE_LIMIT
            or ("busy_elsewhere" not in r and r.get("retries", 0) > 0)]
    return [len(busy), len(timed)]


# --- the machine -------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(module: str) -> str:
    try:
        return getattr(__import__(module), "__version__", "?")
    except Exception:  # noqa: BLE001 - not installed or broken
        return "not installed"


def machine() -> dict:
    """The machine and software the report ran on (for its header)."""
    from .timing import blas_cores

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    memory = None
    try:
        with open("/proc/meminfo") as f:
            memory = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "usable_cores": usable,
            "memory_bytes": memory, "os": platform.platform(),
            "python": platform.python_version(),
            "versions": {m: _version(m) for m in ("flowjit", "numpy", "numba", "llvmlite",
                                                  "scipy")},
            "openblas": blas_cores()}


# --- the report --------------------------------------------------------------------------------


def run_benchmark(key: str, items, opts: Options, work_dir: str, bars: bool) -> dict:
    """Run one benchmark in its child process; its section of the report (rows included)."""
    title = BENCHMARKS[key][0]
    log = os.path.join(opts.out_dir, "logs", f"{key}.txt")
    json_path = os.path.join(work_dir, f"{key}.json")
    cmd, env = child_command(key, items, opts, json_path)
    started = time.perf_counter()
    status, tail = run_child(cmd, env, log, bars)
    section = {"key": key, "title": title, "items": items, "command": cmd[1:],
               "seconds": time.perf_counter() - started, "log": os.path.relpath(
                   log, opts.out_dir), "rows": [], "missing": {}, "result": None}
    if status != 0 or not os.path.exists(json_path):
        section["error"] = f"exit status {status}" + (f":\n{tail}" if tail else "")
        return section
    with open(json_path) as f:
        result = json.load(f)
    section["result"] = result
    section["rows"] = rows_of(key, result)
    section["missing"] = missing_systems(key, result, section["rows"])
    section["busy"] = busy_rows(result)
    return section


def run_report(opts: Options, out=None) -> int:
    """Run the chosen benchmarks and write the report into `opts.out_dir`; 0 when every
    benchmark ran, 1 when one failed (the report is written anyway)."""
    from . import report_render

    out = out or sys.stdout
    chosen = opts.only or {key: None for key in BENCHMARKS}
    os.makedirs(os.path.join(opts.out_dir, "logs"), exist_ok=True)
    bars = progress_mod.should_show()
    print(f"bench report: {len(chosen)} benchmark(s) into {opts.out_dir}"
          + (" (quick)" if opts.quick else ""), file=out, flush=True)
    sections = []
    with tempfile.TemporaryDirectory(prefix="flowjit-report-") as work_dir:
        for i, (key, items) in enumerate(chosen.items(), 1):
            print(f"[{i}/{len(chosen)}] {BENCHMARKS[key][0]}"
                  + (f" ({', '.join(items)})" if items else "")
                  + f"; tables in {os.path.join(opts.out_dir, 'logs', key + '.txt')}",
                  file=out, flush=True)
            section = run_benchmark(key, items, opts, work_dir, bars)
            sections.append(section)
            state = "FAILED, " + section["error"].split("\n")[0] if "error" in section \
                else f"{len(section['rows'])} rows"
            print(f"      {state} ({section['seconds']:.0f} s)", file=out, flush=True)
    report = {"created": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "machine": machine(), "options": dataclasses.asdict(opts),
        "benchmarks": sections}
    for path in report_render.write_report(report, opts.out_dir):
        print(f"wrote {path}", file=out)
    return 1 if any("error" in s for s in sections) else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The report's own options (`python -m flowjit bench report` adds them to `bench`)."""
    parser.add_argument("--out", metavar="DIR", default="bench_report",
                        help="report: folder of report.md, the plots, results.json and the "
                        "benchmarks' logs (bench_report)")
    parser.add_argument("--only", metavar="NAME[:ITEM,...]", action="append", default=None,
                        help="report: run only this benchmark (compiler, numpy, training, "
                        "session), and of it only these workloads, kernels or cases; "
                        "repeatable (all)")


def main(argv=None) -> int:
    """Command line: `python -m flowjit.benchmarks.report [--out DIR] [--quick] [--only ...]
    [--peers a,b] [--threads N] [--repeats N] [--target-seconds S] [--native-blas]`."""
    from .timing import add_blas_argument

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--quick", action="store_true", help="each benchmark's quick mode")
    parser.add_argument("--peers", default=None,
                        help="comma-separated among " + ",".join(all_peers())
                        + " or 'none' (all)")
    parser.add_argument("--threads", type=int, default=None, help="threads (all CPUs)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repetitions")
    parser.add_argument("--target-seconds", type=float, default=None,
                        help="calibrated duration of one timed batch")
    add_blas_argument(parser)
    args = parser.parse_args(argv)
    return run_report(options(args))


def options(args) -> Options:
    """Options from parsed arguments (exits with a usage message for unknown names)."""
    try:
        only = parse_only(args.only)
    except ValueError as exc:
        raise SystemExit(f"bench report: {exc}") from None
    peers = None
    if args.peers is not None:
        peers = tuple(p.strip() for p in args.peers.split(",")
                      if p.strip() and p.strip() != "none")
        bad = [p for p in peers if p not in all_peers()]
        if bad:
            raise SystemExit(f"bench report: unknown peer(s) {', '.join(bad)} "
                             f"(known: {', '.join(all_peers())})")
    return Options(out_dir=args.out, quick=args.quick, only=only, peers=peers,
                   threads=args.threads, repeats=args.repeats,
                   target_seconds=args.target_seconds, native_blas=args.native_blas)


if __name__ == "__main__":
    sys.exit(main())
