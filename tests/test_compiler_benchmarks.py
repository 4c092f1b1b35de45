"""The compiler benchmark harness runs, checks outputs before timing, and reports (no timings
are asserted: tiny sizes, one repetition, peers disabled).  flowjit's own rows are exercised
on W6 only (through the CLI), since compiling every workload takes seconds each."""

import io
import json
import subprocess
import sys

import numpy as np
import pytest

from flowjit.benchmarks import compiler_workloads as bench
from flowjit.benchmarks.peers import FlowjitPeer, NumpyPeer
from flowjit.benchmarks.workloads import TINY, WORKLOADS, build_cases, check_output


def test_tiny_run_prints_a_checked_table_for_every_workload():
    out = io.StringIO()
    result = bench.run(WORKLOADS, peers=(), sizes=TINY, repeats=1, target_seconds=0.001,
                       threads=1, out=out, flowjit=False)
    rows = result["rows"]
    labels = [c.label for c in build_cases(WORKLOADS, TINY)]
    assert list(dict.fromkeys(r["case"] for r in rows)) == labels
    numpy_rows = [r for r in rows if r["variant"] == "numpy"]
    assert len(numpy_rows) == len(labels)
    for row in numpy_rows:
        assert row["status"] == "ok"
        assert 0.0 <= row["error_vs_tolerance"] <= 1.0
        assert row["median_s"] > 0 and row["ratio_to_numpy"] == 1.0
        assert row["min_s"] <= row["median_s"] <= row["max_s"]
        assert row["single_s"] > 0 and row["single_ratio"] == 1.0   # one call at a time
    for row in rows:
        if row["workload"] == "W1":
            assert row["gbytes_per_s"] > 0 and row["fraction_of_limit"] > 0
        if row["workload"] == "W4":
            assert row["gflops"] > 0
    text = out.getvalue()
    for label in labels:
        assert label in text
    assert "Summary: time / NumPy's time" in text
    assert "Single calls (threads asleep, inputs out of cache)" in text
    assert "W7 compile time of W2 softmax 5x16" in text
    [w7] = result["compile"]
    assert w7["system"] == "numpy" and w7["warm"] is None
    assert w7["cold"]["err"] <= 1.0 and w7["cold"]["import_s"] > 0
    json.dumps(result)  # the --json output is plain data


class _Broken(NumpyPeer):
    """A peer with a wrong softmax, a float64 layernorm and a chain that raises."""

    key = "broken"

    def softmax(self):
        return lambda x: x

    def layernorm(self):
        return lambda x, gamma, beta: NumpyPeer.layernorm(self)(x, gamma, beta).astype(float)

    def chain(self):
        def chain(x):
            raise RuntimeError("boom")
        return chain


class _Flaky(NumpyPeer):
    """Right on the first call only (as a JIT switching to a wrong compiled path would be)."""

    key = "flaky"

    def affine(self):
        calls = []

        def affine(x):
            calls.append(1)
            return x * 2.0 + 1.0 if len(calls) == 1 else x * 2.0
        return affine


class _NotYet(FlowjitPeer):
    """A flowjit whose JIT is missing: its rows are 'unavailable', not failures."""

    def setup(self, threads):
        self.fj = object()


def _rows_by_variant(case, systems):
    rows = bench.run_case(case, systems, repeats=1, target_seconds=0.001)
    return {r.variant: r for r in rows}


def test_wrong_or_failing_variants_are_reported_and_not_timed():
    chain, softmax, layernorm = build_cases(("W1", "W2", "W3"), TINY)
    not_yet = _NotYet()
    not_yet.setup(1)
    rows = _rows_by_variant(softmax, [NumpyPeer(), _Broken(), not_yet])
    assert rows["numpy"].status == "ok" and rows["numpy"].median_s > 0
    assert rows["broken"].status == "WRONG" and rows["broken"].median_s is None
    assert "tolerance" in rows["broken"].reason and rows["broken"].error_vs_tolerance > 1
    assert rows["flowjit.jit"].status == "unavailable"
    assert "AttributeError" in rows["flowjit.jit"].reason
    rows = _rows_by_variant(layernorm, [NumpyPeer(), _Broken()])
    assert rows["broken"].status == "WRONG" and "float64" in rows["broken"].reason
    rows = _rows_by_variant(chain, [NumpyPeer(), _Broken()])
    assert rows["broken"].status == "FAILED" and rows["broken"].reason == "RuntimeError: boom"
    rows = _rows_by_variant(build_cases(("W6",), TINY)[0], [NumpyPeer(), _Flaky()])
    assert rows["flaky"].status == "WRONG" and "(second call)" in rows["flaky"].reason


def test_check_output_measures_error_against_the_tolerance():
    case = build_cases(("W6",), TINY)[0]
    exact = case.reference.astype(np.float32)
    ok, _, worst = check_output(case, exact)
    assert ok and worst < 0.1
    off = exact.copy()
    off[3] += np.float32(5 * (case.atol + case.rtol * abs(case.reference[3])))
    ok, message, worst = check_output(case, off)
    assert not ok and worst == pytest.approx(5, rel=0.05) and "rtol" in message
    nan = exact.copy()
    nan[0] = np.nan
    assert not check_output(case, nan)[0]
    assert not check_output(case, exact[:4])[0]


def test_cli_runs_the_compiler_benchmark_in_a_child_and_writes_json(tmp_path):
    path = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "flowjit", "bench", "compiler", "--workloads", "W6",
         "--peers", "none", "--threads", "1", "--repeats", "1", "--target-seconds", "0.001",
         "--json", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "W6 call overhead, x*2+1 on 8 f32" in proc.stdout
    assert "1 thread(s) for every system" in proc.stdout
    result = json.loads(path.read_text())
    assert result["meta"]["threads"] == 1
    numpy_row, flowjit_row = result["rows"]
    assert numpy_row["variant"] == "numpy" and numpy_row["status"] == "ok"
    assert flowjit_row["variant"] == "flowjit.jit"
    # flowjit is installed (it runs this test): its row is timed, never "unavailable"/WRONG
    assert flowjit_row["status"] == "ok", flowjit_row
    assert flowjit_row["median_s"] is not None
    assert result["compile"] == []
    # both settings: the default, then NumPy and flowjit again with process tuning
    assert result["meta"]["process_tuning"] == "default"
    assert result["tuned"]["meta"]["process_tuning"] == "tuned"
    assert [r["variant"] for r in result["tuned"]["rows"]] == ["numpy", "flowjit.jit"]
    assert "process tuning: default" in proc.stdout and "process tuning: tuned" in proc.stdout
    assert "Process tuning: flowjit.jit time / NumPy's time" in proc.stdout


def test_unknown_workload_or_peer_is_rejected():
    with pytest.raises(SystemExit, match="unknown peer: pytorch"):
        bench.main(["--peers", "pytorch"])
    with pytest.raises(SystemExit, match="unknown workload: W5"):
        bench.main(["--workloads", "W5"])
