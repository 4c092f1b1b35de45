"""The command line: `python -m flowjit demo | version | ops | --help`, run in subprocesses.

The demo's printed numbers are checked against the same computation done here directly
with NumPy (the inputs are regenerated from the documented seed, independently of demo.py).
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import flowjit
from flowjit.ops import registry

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = r"-?\d+\.\d+"


def run_cli(*args, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "flowjit", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO)
    return proc


def numpy_demo(steps=100, seed=0):
    """The demo computed with NumPy only: data from default_rng(seed), float32 descent."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(256, 3)).astype(np.float32)
    noise = rng.normal(size=(256, 1)).astype(np.float32)
    y = (x @ np.array([[2.0], [-3.0], [0.5]], np.float32) + np.float32(0.75)
         + np.float32(0.1) * noise).astype(np.float32)
    points = rng.uniform(-1.0, 1.0, size=(100_000, 2))
    features = rng.normal(size=(4, 3)).astype(np.float32)
    class_w = rng.normal(size=(3, 5)).astype(np.float32)
    class_b = np.linspace(-0.5, 0.5, 5, dtype=np.float32)

    w, b = np.zeros((3, 1), np.float32), np.float32(0.0)
    losses = []
    for step in range(steps):
        err = x @ w + b - y
        if step % 20 == 0:
            losses.append(float(np.mean(err * err)))
        w = w - np.float32(0.1) * (np.float32(2.0) * (x.T @ err) / np.float32(len(x)))
        b = b - np.float32(0.1) * (np.float32(2.0) * np.mean(err))
    err = x @ w + b - y
    losses.append(float(np.mean(err * err)))
    pi = 4.0 * np.mean(np.sum(points ** 2, axis=1) <= 1.0)
    logits = features @ class_w + class_b
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    return dict(losses=losses, w=w.ravel(), b=float(b), pi=pi, probs=probs,
                labels=probs.argmax(axis=1))


def _numbers(text):
    return [float(v) for v in re.findall(NUMBER, text)]


def test_demo_prints_the_real_results():
    proc = run_cli("demo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    want = numpy_demo()

    losses = [float(v) for v in re.findall(rf"loss ({NUMBER})", out)]
    assert len(losses) == len(want["losses"]) == 6  # steps 0, 20, ..., 80 and the final loss
    np.testing.assert_allclose(losses, want["losses"], rtol=1e-4, atol=2e-6)
    assert losses[-1] < 0.02 < losses[0]

    w_line = re.search(r"fitted w = \[(.*)\]", out).group(1)
    np.testing.assert_allclose(_numbers(w_line), want["w"], rtol=1e-4, atol=2e-6)
    assert float(re.search(rf"fitted b = ({NUMBER})", out).group(1)) == \
        pytest.approx(want["b"], abs=2e-6)

    pi = float(re.search(rf"points: ({NUMBER})", out).group(1))
    assert pi == pytest.approx(want["pi"], abs=1e-6)
    assert abs(pi - np.pi) < 0.02

    rows = re.findall(r"probs = \[(.*)\]  argmax = (\d)", out)
    assert len(rows) == 4
    np.testing.assert_allclose([_numbers(r[0]) for r in rows], want["probs"], atol=2e-6)
    assert [int(r[1]) for r in rows] == want["labels"].tolist()


def test_demo_compiles_a_numpy_function_and_shows_where_to_look():
    proc = run_cli("demo", "--steps", "3")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "@flowjit.jit on a NumPy row softmax" in out
    assert re.search(r"fused into \d+ loop nests? of one generated numba function", out)
    diff = float(re.search(r"max \|flowjit - numpy\| = ([0-9.eE+-]+)", out).group(1))
    assert diff < 1e-6
    assert re.search(r"median time: numpy [0-9.]+ ms, flowjit [0-9.]+ ms", out)
    assert "FLOWJIT_DUMP=<dir>" in out and "   | def kernel(in0):" in out


def test_demo_steps_option_changes_the_fit():
    proc = run_cli("demo", "--steps", "3")
    assert proc.returncode == 0, proc.stderr
    final = float(re.search(rf"final +loss ({NUMBER})", proc.stdout).group(1))
    assert final == pytest.approx(numpy_demo(steps=3)["losses"][-1], rel=1e-4)


def test_help_lists_the_subcommands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for command in ("demo", "version", "ops", "bench"):
        assert command in proc.stdout
    no_command = run_cli()
    assert no_command.returncode == 2 and "usage" in no_command.stdout


def test_unknown_subcommand_is_an_error():
    proc = run_cli("frobnicate")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_version():
    proc = run_cli("version")
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == f"flowjit {flowjit.__version__}"
    assert f"numpy {np.__version__}" in proc.stdout


def test_ops_lists_every_registered_op_with_traits():
    proc = run_cli("ops")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    defs = registry.all_op_defs()
    assert lines[-1] == f"({len(defs)} op types)"
    listed = {line.split()[0]: line.split()[1:] for line in lines[:-1]}
    assert set(listed) == {d.name for d in defs}
    assert "SOURCE" in " ".join(listed["Const"])
    assert "STATEFUL" in " ".join(listed["VariableV2"])
    markdown = run_cli("ops", "--markdown").stdout
    assert "| `Placeholder` | RUNTIME_VALUE, SOURCE |" in markdown
