"""`python -m flowjit bench report`: the benchmarks' results become one shape of row, and
report.md, the PNG plots and results.json are written (structure only, no timings
asserted).  One test runs the real command on a tiny subset (quick mode, one repetition)."""

import json
import os
import subprocess
import sys

import pytest

from flowjit.benchmarks import report, report_render

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _assert_png(path):
    from PIL import Image

    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.format == "PNG" and min(image.size) > 100


def _table_rows(text, title):
    """The body rows of the first Markdown table after the heading `title`."""
    lines = text.split(f"## {title}\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line[2:-2].split(" | ")])
    return table


def test_only_names_benchmarks_and_their_items():
    assert report.parse_only(None) is None
    assert report.parse_only(["compiler:W1,W6", "session", "compiler:W2"]) == \
        {"compiler": ["W1", "W6", "W2"], "session": None}
    assert report.parse_only(["numpy:softmax", "numpy"]) == {"numpy": None}
    assert report.parse_only(["training:small"]) == {"training": ["small"]}
    with pytest.raises(ValueError, match="unknown benchmark 'gpu'"):
        report.parse_only(["gpu"])
    with pytest.raises(ValueError, match="W5"):
        report.parse_only(["compiler:W5"])
    with pytest.raises(ValueError, match="no items"):
        report.parse_only(["session:x"])


def test_child_commands_follow_the_options():
    opts = report.Options(quick=True, peers=("numba",), threads=2)
    cmd, env = report.child_command("compiler", ["W6"], opts, "/tmp/c.json")
    assert cmd[1:3] == ["-m", "flowjit.benchmarks.compiler_workloads"]
    assert cmd[cmd.index("--peers") + 1] == "numba" and "--quick" in cmd
    assert cmd[cmd.index("--workloads") + 1] == "W6" and env["FLOWJIT_BENCH_THREADS"] == "2"
    cmd, _ = report.child_command("numpy", None, opts, "/tmp/n.json")
    assert cmd[cmd.index("--variants") + 1] == "numpy,flowjit,numba"
    cmd, _ = report.child_command("training", ["large"], opts, "/tmp/t.json")
    assert "jax" not in cmd[cmd.index("--systems") + 1] and "large" in cmd
    cmd, env = report.child_command("session", None, opts, "/tmp/s.json")
    assert cmd[cmd.index("--repeats") + 1] == "3" and env["FLOWJIT_BENCH_THREADS"] == "1"


def _rows(pairs):
    return [{"workload": w, "system": s, "status": st, "reason": why, "median_s": m,
             "ratio_to_numpy": r} for w, s, st, why, m, r in pairs]


def _fake_report():
    compiler = _rows([
        ("W1 chain", "numpy", "ok", "", 2e-3, 1.0),
        ("W1 chain", "flowjit.jit", "ok", "", 5e-4, 0.25),
        ("W1 chain", "numba.njit", "WRONG", "error 3x the tolerance", None, None),
        ("W2 softmax | rows", "numpy", "ok", "", 4e-3, 1.0),
        ("W2 softmax | rows", "flowjit.jit", "ok", "", 8e-3, 2.0),
        ("W2 softmax | rows", "numba.njit", "ok", "", 1e-3, 0.25)])
    corpus = _rows([("k", "numpy", "ok", "", 1e-6, 1.0),
                    ("k", "pythran", "unsupported", "pythran is not installed", None, None)])
    sections = [
        {"key": "compiler", "title": "Compiler workloads W1-W7", "command": ["-m", "x"],
         "seconds": 3.0, "log": "logs/compiler.txt", "rows": compiler, "busy": [1, 5],
         "missing": {"jax": "ModuleNotFoundError: No module named 'jax'"},
         "result": {"meta": {"versions": {"numba": "0.60"}}, "compile": [
             {"system": "flowjit.jit", "cold": {"first_s": 1.5, "err": 0.1},
              "warm": {"first_s": 0.05}},
             {"system": "jax.jit", "cold": {"error": "no jax", "soft": True}, "warm": None}]}},
        {"key": "numpy", "title": "NumPy corpus", "command": ["-m", "y"], "seconds": 1.0,
         "log": "logs/numpy.txt", "rows": corpus,
         "missing": report.missing_systems("numpy", {"meta": {}}, corpus), "result": {}},
        {"key": "training", "title": "Training step W5", "command": ["-m", "z"],
         "seconds": 1.0, "log": "logs/training.txt", "rows": [], "missing": {},
         "result": None, "error": "exit status 1:\nTraceback ...\nValueError: boom"}]
    machine = {"cpu": "Some CPU", "cores": 2, "usable_cores": 2, "memory_bytes": 2**33,
               "os": "Linux", "python": "3.11", "versions": {"numpy": "2.0"},
               "openblas": "numpy Haswell"}
    return {"created": "2026-01-01T00:00:00+00:00", "machine": machine,
            "options": {"quick": True, "repeats": 1, "target_seconds": None, "threads": 2},
            "benchmarks": sections}


def test_report_files_from_rows(tmp_path):
    written = report_render.write_report(_fake_report(), str(tmp_path))
    names = sorted(os.path.basename(p) for p in written)
    assert names == ["compiler.png", "report.md", "results.json"]  # numpy: nothing faster
    assert sorted(os.listdir(tmp_path)) == names                   # no temporary files left
    _assert_png(tmp_path / "compiler.png")
    text = (tmp_path / "report.md").read_text()
    assert "CPU: Some CPU; 2 cores, 8.0 GiB memory" in text and "numba 0.60" in text
    table = _table_rows(text, "Compiler workloads W1-W7")
    assert [row[0] for row in table] == ["W1 chain", "W2 softmax \\| rows"]
    assert table[0][1:] == ["2 ms", "500 µs (0.25)", "WRONG"]
    assert "W1 chain, numba.njit: WRONG, error 3x the tolerance" in text
    assert "busy during 1 of 5 timed rows" in text
    assert "![Compiler workloads W1-W7: speedup over NumPy](compiler.png)" in text
    assert "| flowjit.jit | 1.5 s | 50 ms | ok |" in text                # W7's table
    assert "| jax.jit | - | - | not run: no jax |" in text
    missing = _table_rows(text, "Systems that did not run")
    assert ["pythran", "NumPy corpus", "pythran is not installed"] in missing
    assert ["jax", "Compiler workloads W1-W7", "ModuleNotFoundError: No module named 'jax'"] \
        in missing
    assert _table_rows(text, "NumPy corpus") == [["k", "1 µs"]]      # no pythran column
    assert "The benchmark failed, exit status 1:" in text and "ValueError: boom" in text
    assert json.loads((tmp_path / "results.json").read_text())["machine"]["cores"] == 2


def test_rows_of_each_benchmark():
    session = {"rows": [{"case": "x*2+1", "numpy_us": 2.0, "flowjit_us": 20.0, "ratio": 10.0}]}
    rows = report.rows_of("session", session)
    assert [(r["system"], r["median_s"], r["ratio_to_numpy"]) for r in rows] == \
        [("numpy", 2e-6, 1.0), ("flowjit Session.run", 2e-5, 10.0)]
    training = {"rows": [{"case": "small", "variant": "jax", "status": "unavailable",
                          "reason": "jax not installed"}]}
    [row] = report.rows_of("training", training)
    assert row["workload"].startswith("small: batch 100") and row["median_s"] is None
    assert report.missing_systems("training", training, [row]) == {"jax": "jax not installed"}
    nn = {"rows": [{"model": "cnn", "variant": "flowjit", "status": "ok", "reason": "",
                    "median": 0.01, "ratio": 0.5}]}
    [row] = report.rows_of("nn", nn)
    assert (row["workload"], row["system"], row["median_s"], row["ratio_to_numpy"]) == \
        ("cnn", "flowjit", 0.01, 0.5)
    assert report.parse_only(["nn:lstm"]) == {"nn": ["lstm"]}
    timed = {"rows": [{"median_s": 1.0, "busy_elsewhere": 0.9}, {"median_s": 1.0,
                                                                   "busy_elsewhere": 0.0},
                      {"median": 2.0, "retries": 1}, {"median_s": None}]}
    assert report.busy_rows(timed) == [2, 3]


def test_bench_report_command_writes_a_report(tmp_path):
    """The real command on a tiny subset: W6 of the compiler benchmark (NumPy and flowjit)
    and the session benchmark, one repetition of ~1 ms batches."""
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "flowjit", "bench", "report", "--out", str(out), "--quick",
         "--only", "compiler:W6", "--only", "session", "--peers", "none", "--threads", "1",
         "--repeats", "1", "--target-seconds", "0.001"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\r" not in proc.stderr              # no progress bar: stderr is not a terminal
    text = (out / "report.md").read_text()
    compiler = _table_rows(text, "Compiler workloads W1-W7")
    assert [row[0] for row in compiler] == ["W6 call overhead, x*2+1 on 8 f32"]
    assert compiler[0][1].endswith("s") and compiler[0][2].endswith(")")
    session = _table_rows(text, "Session.run overhead")
    assert len(session) == 4 and session[0][0] == "x*2+1, 8 f32, feed_dict"
    assert "## Machine" in text and "Threads: 1 for every system" in text
    for name in ("compiler.png", "session.png"):
        _assert_png(out / name)
    assert "W6 call overhead" in (out / "logs" / "compiler.txt").read_text()
    results = json.loads((out / "results.json").read_text())
    assert [s["key"] for s in results["benchmarks"]] == ["compiler", "session"]
