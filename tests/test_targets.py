"""Targets (targets/target.py): the reference target runs every lowerable op, the CPU target
equals it on whole programs, and the reference target never imports numba.

(a) Every op of the registry that has a lowering is built in small graphs (the op's own
    sample cases, tests/samples, drawn derandomized) and run twice: op by op with the ops'
    NumPy reference kernels (clustering off) and as clusters compiled by the reference
    target under the compile-always policy.  Results must agree exactly for integers, bools
    and the data-movement and selection ops of `EXACT`, to a tight tolerance for other
    floats, with the same dtypes and shapes.  The op must really run inside a compiled
    cluster in at least one case; the ops for which no drawn case does are exactly
    `NOT_COMPILED` (each with the reason).  The reference target compiles nothing, so this
    is cheap.
(b) Whole programs (softmax, layernorm, an MLP training step, slicing and scatters, a TF1
    training loop) compiled by `target="cpu"` and `target="reference"` give equal results,
    including the arguments they write in place.
(c) A process that only uses the reference target never imports numba.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops import registry, training_ops
from flowjit.compiler.core.ir import Combiner, NodeKind, Routine, Scalar
from flowjit.runtime import clustering
from flowjit.runtime.clustering import ClusterStep
from flowjit.runtime.targets import get_target
from flowjit.targets.target import TargetKind
from samples import OpCase, all_samples, draw_cases

SAMPLES = all_samples()
LOWERABLE = sorted(d.name for d in registry.all_op_defs() if d.lower is not None)
OFF = tf.ConfigProto(jit=False)
REFERENCE = tf.ConfigProto(jit=tf.JitOptions.always(target="reference"))

# Ops with a lowering that no drawn case runs inside a compiled cluster, and why.
NOT_COMPILED = {
    # its samples are complex (transpose + conjugate); clusters take no complex tensors
    # (runtime/partition.py), so it always runs with its reference kernel
    "ConjugateTranspose",
    # a RUNTIME_VALUE op (its value is fed or its default): never clustered
    "PlaceholderWithDefault",
}

# Float results compared exactly: ops that only move, select, compare or round values.
EXACT = {
    "Abs", "ArgMax", "ArgMin", "ArgSort", "Assign", "BroadcastTo", "Cast", "Ceil",
    "ClipByValue", "ConcatV2", "Const", "EnsureNonEmpty", "ExpandDims", "Fill", "Floor",
    "GatherNd", "GatherV2", "Identity", "Max", "Maximum", "Min", "Minimum", "MirrorPad", "Neg",
    "OneHot", "OnesLike", "Pack", "Pad", "PadV2", "Relu", "Relu6", "ReluGrad", "Reshape",
    "ReverseV2", "ReverseSequence", "Round", "ScatterUpdate", "Select", "SelectV2", "Sign", "Slice", "Sort", "Split", "SplitV",
    "Squeeze",
    "StopGradient", "StridedSlice", "TensorScatterUpdate", "TensorStridedSliceUpdate", "Tile", "Transpose", "Unpack",
    "ZerosLike",
    "MaxPool", "MaxPoolGradGrad", "MaxPoolWithArgmax",   # a window's maximum, reads at it
}


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    """A compiler or kernel failure fails the test instead of falling back."""
    monkeypatch.setattr(clustering, "STRICT", True)


def _draw(name, examples=5) -> list:
    return draw_cases(SAMPLES[name], examples)


def _variable_case(kind: str) -> OpCase:
    """A variable updated by a computed value: the initializer (VariableV2, Const, Assign,
    NoOp) and the update both compile as clusters."""
    def build():
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, name="v")
        w = tf.Variable(np.float32(0.5), name="w")   # two: the initializer groups with NoOp
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        update = {"Assign": tf.assign, "AssignAdd": tf.assign_add,
                  "AssignSub": tf.assign_sub,
                  "ApplyGradientDescent": lambda var, delta: training_ops.
                  apply_gradient_descent(var, np.float32(0.25), delta)}.get(kind, tf.assign_add)
        return [update(v, x * w + 1.0)]

    return OpCase(build, {"x": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)}, None)


def _optimizer_case(kind: str) -> OpCase:
    """TensorFlow's fused update of several variables (var and its slots) by a computed
    gradient: the update compiles with the computation, and every variable is installed."""
    def build():
        shape = (2, 3)
        var = tf.Variable(np.linspace(-1, 1, 6, dtype=np.float32).reshape(shape), name="var")
        m = tf.Variable(np.full(shape, 0.1, np.float32), name="m")
        v = tf.Variable(np.full(shape, 0.2, np.float32), name="v")
        x = tf.placeholder(tf.float32, shape, name="x")
        grad = x * var + 1.0
        if kind == "ApplyMomentum":
            out = training_ops.apply_momentum(var, m, np.float32(0.1), grad, np.float32(0.9),
                                              use_nesterov=True)
        else:
            out = training_ops.apply_adam(var, m, v, np.float32(0.5), np.float32(0.25),
                                          np.float32(0.01), np.float32(0.9),
                                          np.float32(0.999), np.float32(1e-7), grad)
        return [out]

    return OpCase(build, {"x": np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)}, None)


# variable updates and the ops only their graphs hold in a cluster (a lone Const or NoOp is
# no cluster: runtime/clustering.py)
EXTRA_CASES = {k: [_variable_case(k)] for k in ("Assign", "AssignAdd", "AssignSub", "Const",
                                               "NoOp", "ApplyGradientDescent")}
EXTRA_CASES.update({k: [_optimizer_case(k)] for k in ("ApplyMomentum", "ApplyAdam")})


def _scatter_case(scatter) -> OpCase:
    """A variable's rows updated by computed rows, row 3 twice (ops/variable_scatter_ops.py:
    the samples feed the updates, and an update of a fed value stays out of clusters)."""
    def build():
        v = tf.Variable(np.arange(12.0).reshape(4, 3), name="v")
        u = tf.placeholder(tf.float64, [3, 3], name="u")
        return [scatter(v, tf.constant([3, 0, 3]), u * 2.0 - 1.0)]

    return OpCase(build, {"u": np.linspace(-2.0, 2.0, 9).reshape(3, 3)}, None)


EXTRA_CASES.update({"ScatterUpdate": [_scatter_case(tf.scatter_update)],
                    "ScatterAdd": [_scatter_case(tf.scatter_add)],
                    "ScatterSub": [_scatter_case(tf.scatter_sub)]})
# scatters compile for row indices of shape [k, 1]; the samples draw few of them
EXTRA_CASES["TensorScatterUpdate"] = [OpCase(
    lambda: [tf.tensor_scatter_nd_update(
        tf.placeholder(tf.float64, [None, 3], name="t"), tf.constant([[4], [0], [4]]),
        tf.placeholder(tf.float64, [3, 3], name="u"))],
    {"t": np.arange(15.0).reshape(5, 3), "u": -np.arange(9.0).reshape(3, 3)}, None)]


def _build(case):
    """(graph, fetches, feeds, the variables' initializer or None) of `case`."""
    graph = tf.Graph()
    with graph.as_default():
        fetches = list(case.build())
        feeds = {graph.get_tensor_by_name(k + ":0"): v for k, v in case.feeds.items()}
        variables = graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
        init = tf.variables_initializer(variables) if variables else None
    return graph, fetches, feeds, init


def _run(graph, fetches, feeds, init, config):
    """(values, ops run inside compiled clusters); the variables are initialized first,
    and the fetches run twice (a variable update: from the updated value)."""
    with tf.Session(graph=graph, config=config) as sess:
        if init is not None:
            sess.run(init)
            sess.run(fetches, feeds)
        values = sess.run(fetches, feeds)
        steps = [n for plan in sess._plans.values() for n in plan.ops
                 if isinstance(n, ClusterStep)]
    compiled = {op for s in steps if any(e is not None for e in s.kernels.entries.values())
                for op in s.ops}
    return values, compiled


# float tolerance per dtype: the same NumPy functions in another order (sums), a few ulp
# (float16: computed in float32 by both, one rounding apart at most)
TIGHT = {np.float64: 1e-12, np.float32: 1e-6}


def _compare(op_type, case, fetches, expected, got, tight=None):
    tight = tight or TIGHT
    for t, e, g in zip(fetches, expected, got):
        e, g = np.asarray(e), np.asarray(g)
        where = f"{op_type}: {t.name}, feeds {case.feeds}"
        assert (g.dtype, g.shape) == (e.dtype, e.shape), where
        if e.dtype.kind not in "fc" or op_type in EXACT:
            np.testing.assert_array_equal(g, e, err_msg=where)
        else:
            rtol = tight.get(e.dtype.type, 1e-3)
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol, equal_nan=True,
                                       err_msg=where)


def check_op_compiles_like_its_kernels(op_type, config, not_compiled, tight=None):
    """Every drawn case of `op_type` run op by op and under `config` (a compiling target)
    agrees; the op runs compiled in some case unless it is in `not_compiled`, and then in
    none."""
    compiled_cases = 0
    for case in _draw(op_type) + EXTRA_CASES.get(op_type, []):
        graph, fetches, feeds, init = _build(case)
        expected, _ = _run(graph, fetches, feeds, init, OFF)
        got, compiled = _run(graph, fetches, feeds, init, config)
        _compare(op_type, case, fetches, expected, got, tight)
        tested = [op for op in graph.get_operations() if op.type == op_type]
        compiled_cases += bool(tested) and all(op in compiled for op in tested)
    if op_type in not_compiled:
        assert compiled_cases == 0, f"{op_type} now compiles: take it out of the exceptions"
    else:
        assert compiled_cases, f"no case of {op_type} ran in a compiled cluster"


@pytest.mark.parametrize("op_type", LOWERABLE)
def test_reference_target_equals_the_ops_reference_kernels(op_type):
    check_op_compiles_like_its_kernels(op_type, REFERENCE, NOT_COMPILED)


def test_not_compiled_names_lowerable_ops():
    assert NOT_COMPILED <= set(LOWERABLE) and EXACT <= set(LOWERABLE)


# --- (b) whole programs: cpu == reference --------------------------------------------------
RNG = np.random.default_rng(24)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def mlp_step(w1, b1, w2, x, y):
    """One SGD step of a two-layer MLP with a softmax cross-entropy loss; the weights are
    updated in place (donated arguments) and the loss is returned."""
    h = np.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2
    p = softmax(logits)
    loss = -np.log(p[np.arange(x.shape[0]), y]).mean()
    p[np.arange(x.shape[0]), y] -= 1.0
    g2 = h.T @ p / x.shape[0]
    gh = (p @ w2.T) * (h > 0)
    w1 -= 0.1 * (x.T @ gh) / x.shape[0]
    b1 -= 0.1 * gh.mean(axis=0)
    w2 -= 0.1 * g2
    return loss


def slices_and_scatters(table, ids, rows, x):
    """Strided slices, a column reduction, a row scatter into an argument (repeated ids:
    the last write wins) and a masked assignment."""
    out = x[1::2, ::-1] * 2.0 + x[:-1:2, :].sum(axis=0)
    table[ids] = rows
    x[x < 0] = 0.0
    return out, table[:, 1:3].copy()


def _inputs(name):
    f32, f64 = np.float32, np.float64
    if name == "softmax":
        return [RNG.standard_normal((7, 13)).astype(f32)]
    if name == "layernorm":
        return [RNG.standard_normal((5, 11)), RNG.standard_normal(11), RNG.standard_normal(11)]
    if name == "mlp_step":
        return [RNG.standard_normal((6, 9)).astype(f32) * 0.3, np.zeros(9, f32),
                RNG.standard_normal((9, 4)).astype(f32) * 0.3,
                RNG.standard_normal((10, 6)).astype(f32), RNG.integers(0, 4, 10)]
    return [RNG.standard_normal((8, 5)).astype(f64), np.array([3, 0, 3, 7]),
            RNG.standard_normal((4, 5)).astype(f64), RNG.standard_normal((9, 4)).astype(f64)]


PROGRAMS = {"softmax": softmax, "layernorm": layernorm, "mlp_step": mlp_step,
            "slices_and_scatters": slices_and_scatters}


def _flat(result) -> list:
    return [np.asarray(r) for r in result] if isinstance(result, tuple) else [np.asarray(result)]


def _close(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    tight = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tight, atol=tight)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cpu_target_equals_reference_target_on_whole_programs(name):
    fn, args = PROGRAMS[name], _inputs(name)
    results = {}
    for target in ("reference", "cpu", None):   # None: plain NumPy
        jitted = fn if target is None else tf.jit(fn, target=target, fallback=False)
        mine = [a.copy() for a in args]
        for _ in range(2):   # twice: the in-place updates of arguments compound
            out = jitted(*mine)
        if target is not None:
            assert jitted.lower(*mine).compiled, f"{name} did not compile for {target}"
        results[target] = _flat(out) + mine   # the outputs, then every argument after
    for cpu, ref, numpy in zip(results["cpu"], results["reference"], results[None]):
        _close(cpu, ref, ref.dtype)
        np.testing.assert_allclose(ref, numpy, rtol=2e-5, atol=1e-6)


def _train_tf1(config) -> list:
    """Three steps of a TF1 model (a scaled tanh, squared error, gradient descent) in a
    Session with `config`; the losses and the final weights."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.float32, [None, 4], name="y")
        w = tf.Variable(np.linspace(-0.5, 0.5, 4, dtype=np.float32), name="w")
        b = tf.Variable(tf.zeros([4]), name="b")
        loss = tf.reduce_mean(tf.square(tf.tanh(x * w + b) - y))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        init = tf.global_variables_initializer()
    feeds = {x: np.linspace(-2, 2, 40, dtype=np.float32).reshape(10, 4),
             y: np.cos(np.arange(40, dtype=np.float32)).reshape(10, 4)}
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], feeds)[0] for _ in range(3)]
        steps = [n for plan in sess._plans.values() for n in plan.ops
                 if isinstance(n, ClusterStep)]
        compiled = sum(e is not None for s in steps for e in s.kernels.entries.values())
        return [np.asarray(losses)] + sess.run([w, b]), compiled


def test_a_tf1_training_loop_compiled_by_the_reference_target_equals_op_by_op():
    """The whole training step is one reference kernel, run by the Session's executor;
    (the CPU target's Session clusters are compared with op-by-op runs in
    tests/test_clustering.py and tests/test_tf1_programs.py)."""
    ref, compiled = _train_tf1(REFERENCE)
    assert compiled >= 2   # the initializer and the training step
    for got, want in zip(ref, _train_tf1(OFF)[0]):
        _close(got, want, want.dtype)


# --- selection, errors, caches -------------------------------------------------------------
def test_targets_are_named_by_strings_at_the_api_and_enums_inside():
    assert tf.JitOptions(target="Reference").target is TargetKind.REFERENCE
    assert tf.JitOptions().target is TargetKind.CPU
    assert tf.jit(softmax, target="reference").target is get_target(TargetKind.REFERENCE)
    with pytest.raises(ValueError, match="'cpu', 'reference'"):
        tf.jit(softmax, target="gpu")
    with pytest.raises(ValueError):
        tf.JitOptions(target="tpu")


def test_reference_kernels_raise_what_cpu_kernels_raise():
    x, gamma = RNG.standard_normal((5, 11)), RNG.standard_normal(11)
    for target in ("cpu", "reference"):   # the layernorm kernel of the test above
        with pytest.raises(ValueError) as caught:   # sizes that do not broadcast: a check
            tf.jit(layernorm, target=target)(x, gamma, np.ones(10))
        assert type(caught.value).__name__ == "InvalidValueError"
    with pytest.raises(np.linalg.LinAlgError):   # as NumPy (and the CPU's LAPACK call)
        tf.jit(np.linalg.inv, target="reference")(np.zeros((3, 3)))


def test_the_reference_target_renders_the_whole_kernel_ir():
    caps = get_target("reference").capabilities
    assert caps.node_kinds == frozenset(NodeKind) and caps.scalar_ops == frozenset(Scalar)
    assert caps.combiners == frozenset(Combiner) and caps.routines == frozenset(Routine)


def test_float16_is_a_capability_of_the_reference_target_only():
    x = np.linspace(-1, 1, 7).astype(np.float16)
    lowered = {t: tf.jit(lambda v: v * 2 + 1, target=t).lower(x) for t in ("cpu", "reference")}
    assert not lowered["cpu"].compiled
    assert "cpu target cannot run this cluster: float16" in lowered["cpu"].stage("not compiled")
    assert lowered["reference"].compiled
    np.testing.assert_array_equal(tf.jit(lambda v: v * 2 + 1, target="reference")(x), x * 2 + 1)
    graph = tf.Graph()
    with graph.as_default():   # Session clusters take float16 only for the reference target
        a = tf.placeholder(tf.float16, [None], name="a")
        fetch = [tf.exp(a) * 2.0]
    for target, compiles in (("cpu", False), ("reference", True)):
        config = tf.ConfigProto(jit=tf.JitOptions.always(target=target))
        values, compiled = _run(graph, fetch, {a: x}, None, config)
        assert bool(compiled) == compiles, target
        np.testing.assert_array_equal(values[0], _run(graph, fetch, {a: x}, None, OFF)[0][0])


def test_each_target_keys_and_describes_its_kernels():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    clusters = {t: tf.jit(softmax, target=t).lower(x).entry.cluster
                for t in ("cpu", "reference")}
    cpu, ref = clusters["cpu"], clusters["reference"]
    assert (cpu.target, ref.target) == (TargetKind.CPU, TargetKind.REFERENCE)
    assert cpu.metadata["target"] == "cpu" and ref.metadata["target"] == "reference"
    assert cpu.metadata["cache_key"] != ref.metadata["cache_key"]
    names = [n for n, _ in ref.stages.items]
    assert "loop IR" in [n for n, _ in cpu.stages.items] and "loop IR" not in names
    assert "def kernel(" in cpu.source and "reference target" in ref.source
    assert cpu.schedule.options.column_reductions and not ref.schedule.options.column_reductions


# --- (c) no numba for the reference target ------------------------------------------------
def test_the_reference_target_never_imports_numba():
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import flowjit as tf

        @tf.jit(target="reference", fallback=False)
        def f(x, ids, rows):
            x[ids] = rows
            return np.linalg.inv(x @ x.T + 3 * np.eye(3)), np.sort(x, axis=-1).sum(axis=0)

        out = f(np.arange(12.0).reshape(3, 4), np.array([2, 0]), np.ones((2, 4)))
        assert f.lower(np.arange(12.0).reshape(3, 4), np.array([2, 0]),
                       np.ones((2, 4))).compiled
        with tf.Graph().as_default():
            a = tf.placeholder(tf.float32, [None, 3])
            s = tf.reduce_sum(tf.nn.softmax(a * 2.0), axis=0)
            config = tf.ConfigProto(jit=tf.JitOptions.always(target="reference"))
            with tf.Session(config=config) as sess:
                sess.run(s, {a: np.ones((2, 3), np.float32)})
        loaded = sorted(m for m in sys.modules if m == "numba" or m.startswith("numba."))
        print("numba modules:", loaded)
        sys.exit(1 if loaded else 0)
    """)
    env = {**os.environ, "FLOWJIT_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
