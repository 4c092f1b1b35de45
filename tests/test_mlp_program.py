"""The two programs of TensorFlow's C++ API guide: examples/mlp_train.py, then `flowjit run`.

Process 1 (a subprocess) runs examples/mlp_train.py, which writes mlp.pb; a fresh process
runs `python -m flowjit run mlp.pb ...` for 10 steps of `cost` then `train`.  Its printed
costs are compared with the same 10 steps run here, in-process, on the example's graph built
directly (its source executed after `tf.set_random_seed(SEED)`).

The comparison is bitwise (float32 equality) with `--no-jit` and jit=False here: both
processes then run the same NumPy reference kernels on the same inputs, and `--seed SEED`
gives the saved (unseeded) TruncatedNormal ops exactly the seeds set_random_seed(SEED)
gives them, so the initial weights agree bit for bit.  With the default config a cluster
compiles only after a second of reference-kernel time (timing-dependent), and compiled
kernels may round differently (about 1e-7 relative), so that run is compared to 1e-6
relative.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import flowjit as tf
from flowjit.runtime import run_cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "examples", "mlp_train.py")
SEED = 1234
STEPS = 10


def _flowjit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "flowjit", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder holding mlp.pb (written by the example in a subprocess), x.npy and y.npy."""
    path = tmp_path_factory.mktemp("mlp")
    proc = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True,
                          timeout=120, cwd=path)
    assert proc.returncode == 0, proc.stderr
    assert (path / "mlp.pb").exists()
    rng = np.random.default_rng(7)
    np.save(path / "x.npy", rng.random((100, 32), dtype=np.float32))
    np.save(path / "y.npy", rng.random((100, 8), dtype=np.float32))
    return path


def _train_in_process(graph, x, y, cost, train, init, xs, ys, config):
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        costs = []
        for _ in range(STEPS):
            costs.append(sess.run(cost, {x: xs, y: ys}))
            sess.run(train, {x: xs, y: ys})
    return np.array(costs, np.float32)


@pytest.fixture(scope="module")
def expected_costs(workdir, tmp_path_factory):
    """The 10 costs of the example's graph built here with tf.set_random_seed(SEED)."""
    with open(EXAMPLE) as f:
        source = f.read()
    graph, cwd = tf.Graph(), os.getcwd()
    os.chdir(tmp_path_factory.mktemp("direct"))  # the example writes mlp.pb into its cwd
    try:
        with graph.as_default():
            tf.set_random_seed(SEED)
            names = {"__name__": "__mlp_train__"}
            exec(compile(source, EXAMPLE, "exec"), names)
    finally:
        os.chdir(cwd)
    xs, ys = np.load(workdir / "x.npy"), np.load(workdir / "y.npy")
    return _train_in_process(graph, names["x"], names["y"], names["cost"],
                             names["optimizer"], names["init"], xs, ys,
                             tf.ConfigProto(jit=False))


def _run_args(*extra):
    return ["run", "mlp.pb", "--seed", str(SEED), "--run", "init_all_vars_op",
            "--feed", "x=x.npy", "--feed", "y=y.npy", "--fetch", "cost", "--run", "train",
            "--steps", str(STEPS), *extra]


def test_cli_costs_equal_in_process_costs_bitwise(workdir, expected_costs):
    proc = _flowjit(*_run_args("--no-jit", "--format", "json"), cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["step"] for line in lines] == list(range(1, STEPS + 1))
    costs = np.array([line["values"]["cost"] for line in lines], np.float32)
    assert costs.tobytes() == expected_costs.tobytes(), (costs, expected_costs)
    assert np.all(np.diff(costs) < 0), costs  # Adam lowers the cost at every step


def test_cli_text_output_with_the_default_jit(workdir, expected_costs):
    proc = _flowjit(*_run_args(), cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    found = re.findall(r"^step (\d+): cost = (\S+)$", proc.stdout, flags=re.M)
    assert [int(step) for step, _ in found] == list(range(1, STEPS + 1))
    costs = np.array([np.float32(text) for _, text in found])
    np.testing.assert_allclose(costs, expected_costs, rtol=1e-6, atol=0)
    assert "Traceback" not in proc.stderr and "random op" not in proc.stderr  # seeded


def test_loaded_graph_with_seed_equals_the_direct_graph(workdir, expected_costs):
    graph, unseeded = run_cli.load_graph(str(workdir / "mlp.pb"), seed=SEED)
    assert unseeded == 0
    get = graph.get_tensor_by_name
    costs = _train_in_process(graph, get("x:0"), get("y:0"), get("cost:0"),
                              graph.get_operation_by_name("train"),
                              graph.get_operation_by_name("init_all_vars_op"),
                              np.load(workdir / "x.npy"), np.load(workdir / "y.npy"),
                              tf.ConfigProto(jit=False))
    assert costs.tobytes() == expected_costs.tobytes()


def test_without_seed_the_initial_weights_differ_between_sessions(workdir):
    """As in TensorFlow: the example sets no seed, so the saved random ops are unseeded."""
    values = []
    for _ in range(2):
        graph, unseeded = run_cli.load_graph(str(workdir / "mlp.pb"))
        assert unseeded == 2  # the two TruncatedNormal initializers
        with tf.Session(graph=graph) as sess:
            sess.run("init_all_vars_op")
            values.append(sess.run("Variable:0"))
    assert not np.array_equal(values[0], values[1])


def test_random_feeds_follow_the_documented_rule(workdir):
    graph, _ = run_cli.load_graph(str(workdir / "mlp.pb"))
    feeds = run_cli.resolve_feeds(graph, ["x=@random:100x32", "y=@random:100x8"], 5)
    rng = np.random.default_rng(5)
    x, y = (feeds[graph.get_tensor_by_name(n)] for n in ("x:0", "y:0"))
    np.testing.assert_array_equal(x, rng.random((100, 32), dtype=np.float32))
    np.testing.assert_array_equal(y, rng.random((100, 8), dtype=np.float32))


def test_setup_and_body_split():
    run, fetch, body = ("run", "init"), ("fetch", "cost"), ("body", [])
    assert run_cli.split_actions([run, fetch, ("run", "train")]) == \
        ([run], [fetch, ("run", "train")])
    assert run_cli.split_actions([run, body, ("run", "train")]) == ([run], [("run", "train")])
    assert run_cli.split_actions([run, ("run", "train")]) == ([run, ("run", "train")], [])


@pytest.mark.parametrize("args, message", [
    (["--run", "init_all_vars", "--fetch", "cost"],
     "the graph has no op 'init_all_vars'; did you mean 'init_all_vars_op'?"),
    (["--run", "init_all_vars_op", "--fetch", "cots"], "did you mean 'cost'?"),
    (["--fetch", "train"], "'train' is an op with no outputs (NoOp): use --run train"),
    (["--feed", "x=missing.npy", "--fetch", "cost"],
     "--feed x=missing.npy: cannot load 'missing.npy': No such file or directory"),
    (["--feed", "x=mlp.pb", "--fetch", "cost"], "it is not a .npy or .npz file"),
    (["--feed", "x=y.npy", "--fetch", "cost"],
     "the values have shape (100, 8), the tensor x:0 has shape (?, 32)"),
    (["--feed", "x=@random:100by32", "--fetch", "cost"], "bad shape '100by32'"),
    (["--run", "init_all_vars_op", "--steps", "3"], "no per-step body"),
])
def test_usage_errors_are_one_message(workdir, monkeypatch, capsys, args, message):
    monkeypatch.chdir(workdir)
    assert run_cli.main(["mlp.pb", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("flowjit run: error: ") and message in err, err
    assert "Traceback" not in err


def test_bad_graph_file_and_run_time_error(workdir, monkeypatch, capsys):
    monkeypatch.chdir(workdir)
    assert run_cli.main(["x.npy", "--run", "train"]) == 2
    assert "x.npy is not a GraphDef" in capsys.readouterr().err
    assert run_cli.main(["nothere.pb", "--run", "train"]) == 2
    assert "cannot read the graph nothere.pb" in capsys.readouterr().err
    # an op failing while running: status 1, the step and the action named
    assert run_cli.main(["mlp.pb", "--seed", "1", "--run", "init_all_vars_op",
                         "--fetch", "cost"]) == 1
    err = capsys.readouterr().err
    assert "error in step 1, fetch cost: You must feed a value for placeholder tensor 'x'" \
        in err and "Traceback" not in err


def test_help_describes_the_semantics(workdir):
    proc = _flowjit("run", "--help", cwd=workdir)
    assert proc.returncode == 0
    for text in ("--run OP", "--fetch TENSOR", "--each-step", "--feed NAME=SOURCE", "--steps N",
                 "--seed N", "--no-jit", "--format {text,json}", "setup", "@random:100x32",
                 "exit status"):
        assert text in proc.stdout, text
    top = _flowjit("--help", cwd=workdir)
    assert re.search(r"^\s+run\s+load a saved GraphDef", top.stdout, flags=re.M)


def test_example_runs_under_tensorflow(tmp_path):
    """The example is the TF program: with TensorFlow's import it runs and writes mlp.pb."""
    pytest.importorskip("tensorflow")
    with open(EXAMPLE) as f:
        source = f.read()
    assert source.count("import flowjit as tf\n") == 1
    tf_source = source.replace("import flowjit as tf\n", "import tensorflow.compat.v1 as tf\n"
                               "tf.disable_eager_execution()\n")
    (tmp_path / "mlp_tf.py").write_text(tf_source)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "mlp_tf.py"], capture_output=True, text=True,
                          timeout=180, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "mlp.pb").stat().st_size > 0


def test_training_benchmark_numpy_step_matches_flowjit():
    """W5's hand-written NumPy step (the baseline) agrees with flowjit's tf.gradients + Adam."""
    from flowjit.benchmarks import training_step as w5

    x, y, init = w5.make_inputs(20, 6, 5, 3)
    ref_step, ref_params = w5.make_numpy(x, y, init, 1)
    step, params = w5.make_flowjit_nojit(x, y, init, 1)
    for _ in range(3):
        ref_loss = float(ref_step())
        assert w5.check_first_step(step(), params(), ref_loss, ref_params()) == ""
