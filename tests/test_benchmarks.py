"""The session-overhead benchmark runs and refuses to time wrong results (no timing asserts)."""

import io

import numpy as np
import pytest

import flowjit as tf
from flowjit.benchmarks import session_overhead as bench


def test_benchmark_runs_every_case_and_prints_a_table():
    out = io.StringIO()
    rows = bench.run(repeats=2, target_seconds=0.002, out=out)
    assert [r["case"].split(",")[0] for r in rows] == ["x*2+1", "10-op chain", "wide 16 branches",
                                                       "wide 16 branches"]
    assert [r["ops"] for r in rows] == [4, 20, 79, 79]
    for row in rows:
        assert row["flowjit_us"] > 0 and row["numpy_us"] > 0
        assert row["ratio"] == pytest.approx(row["flowjit_us"] / row["numpy_us"])
    table = out.getvalue()
    assert "ratio" in table and table.count("\n") >= 7


def test_a_wrong_variant_is_not_timed():
    case = bench.case_affine(tf)
    case["numpy"] = lambda: np.zeros(8, np.float32)
    with pytest.raises(AssertionError, match="numpy output is wrong"):
        bench.check(case)
    case["numpy"] = lambda: np.linspace(-1.0, 1.0, 8) * 2.0 + 1.0  # right values, float64
    with pytest.raises(AssertionError, match="dtype float64"):
        bench.check(case)
    case["close"]()


def test_measure_interleaves_and_counts_calls():
    calls = {"a": 0, "b": 0}

    def variant(name):
        def fn():
            calls[name] += 1
        return fn

    results = bench.measure({"a": variant("a"), "b": variant("b")}, repeats=3,
                            target_seconds=0.001)
    assert [m.name for m in results] == ["a", "b"]
    assert all(len(m.times) == 3 and min(m.times) > 0 for m in results)
    assert calls["a"] > 3 and calls["b"] > 3


def test_bench_peers_choose_the_training_peers_too():
    """`python -m flowjit bench training --peers ...` runs NumPy, every flowjit variant and
    the named peers that have a training step (numexpr and numba have none)."""
    from flowjit.__main__ import _training_systems

    assert _training_systems("none") == "numpy,flowjit,flowjit nojit,flowjit v&g"
    assert _training_systems("numba,jax").split(",")[-1] == "jax"
    assert _training_systems("numexpr,numba,jax,torch,tensorflow").endswith(
        "jax,torch,tensorflow")


def test_control_flow_benchmark_runs_and_checks_its_results(monkeypatch):
    """The control-flow benchmark (small sizes): every while_loop variant is checked against
    the Python loop before timing, and the queue-fed loop runs to the end."""
    import io

    from flowjit.benchmarks import control_flow

    monkeypatch.setattr(control_flow, "TRIPS", 20)
    monkeypatch.setattr(control_flow, "FAST_TRIPS", 200)
    out = io.StringIO()
    row = control_flow.bench_while_loop(1, out)
    assert {"flowjit executor", "flowjit cond+body clusters", "flowjit compiled loop",
            "python+numpy"} <= set(row)
    assert all(v > 0 for v in row.values())
    times = control_flow.bench_queue_overlap(1, out, steps=3)
    assert set(times) == {f"{how}, {policy}" for how in ("serial", "queue runner")
                          for policy in ("reference kernels", "compiled")}
    assert "while_loop" in out.getvalue() and "queue overlap" in out.getvalue()


def test_tf_graph_import_benchmark_times_every_recorded_graph(tmp_path, capsys):
    from flowjit.benchmarks import tf_graph_import
    path = tmp_path / "rows.json"
    # the harness, with reference kernels (compiling them is tests/test_tf_graph_files.py's)
    assert tf_graph_import.main(["--repeats", "1", "--target-seconds", "0.002",
                                 "--json", str(path), "--jit", "off"]) == 0
    import json
    rows = json.loads(path.read_text())
    assert sorted(r["graph"] for r in rows) == ["mlp_adam", "relu_mlp_momentum",
                                                "softmax_regression_sgd", "while_loop_sum"]
    for row in rows:
        assert row["import_s"] > 0 and row["step_s"]["flowjit (imported)"] > 0
    assert "flowjit (native)" in next(r for r in rows if r["graph"] == "mlp_adam")["step_s"]
    assert "mlp_adam" in capsys.readouterr().out
