"""Very long chains go through every stage without RecursionError (no pass, tracer or code
generator recurses once per node: docs/architecture.md, "The path of a computation"), and
kernels too large to compile are refused up front with the reason.

The sizes are chosen for the suite's time on a 2-core machine; FLOWJIT_DEEP_CHAIN sets the
expression chain's length (10**6 went through every stage in about 7 minutes there)."""

import logging
import os

import numpy as np
import pytest

import flowjit
import flowjit as tf
from flowjit import dtypes
from flowjit.compiler import pipeline
from flowjit.compiler.core import ir
from flowjit.compiler.core.ir_text import program_text
from flowjit.compiler.lowering import NotLowerable
from flowjit.compiler.schedule import make_schedule
from flowjit.runtime import jit as jit_module
from flowjit.runtime.jit_errors import TOO_DEEP
from flowjit.targets import fingerprint
from flowjit.targets.cpu import target as cpu_target
from flowjit.targets.reference import interpreter

CHAIN = int(os.environ.get("FLOWJIT_DEEP_CHAIN", "100000"))


def _chain_program(depth: int, nodes: bool):
    """x + 1 + 1 + ... (`depth` additions) over a 1-D input: one node whose body is that
    deep, or (`nodes`) a chain of `depth` nodes, each loading the one before."""
    x = ir.input_node(0, dtypes.float64, (None,))
    axes = ir.axis_vars(1)
    one = ir.const(1.0, dtypes.float64)
    if nodes:
        n = x
        for _ in range(depth):
            body = ir.make(ir.Scalar.ADD, dtypes.float64, (ir.load(n, axes), one))
            n = ir.compute(dtypes.float64, x.shape, axes, body)
        return ir.Program([x], [n])
    e = ir.load(x, axes)
    for _ in range(depth):
        e = ir.make(ir.Scalar.ADD, dtypes.float64, (e, one))
    return ir.Program([x], [ir.compute(dtypes.float64, x.shape, axes, e)])


def test_deep_expression_through_every_stage():
    program = _chain_program(CHAIN, nodes=False)
    for _, fn in pipeline.PASSES:
        program = fn(program)
    schedule = make_schedule(program, cpu_target.SCHEDULE_OPTIONS)
    assert pipeline.kernel_operations(schedule) == CHAIN + 1   # the additions and the load
    text = fingerprint.ir_fingerprint(program)
    assert text.count("\n") > CHAIN
    assert cpu_target.cache_key(program, None) == cpu_target.cache_key(program, None)
    assert program_text(program).count("+") == CHAIN
    x = np.arange(4.0)
    (out,) = interpreter.run(program, schedule, [x])
    np.testing.assert_array_equal(out, x + CHAIN)


def test_node_chain_through_every_stage_then_refused():
    depth = 10_000
    program = _chain_program(depth, nodes=True)
    stages = pipeline.Stages()
    optimized = pipeline.optimize(program, stages)
    assert len(optimized.nodes()) == depth + 1
    assert stages.text("dce").count("\n") == depth + 1
    schedule = make_schedule(optimized, cpu_target.SCHEDULE_OPTIONS)
    assert len(schedule.groups) == 1   # all fused into one expression, `depth` deep
    (out,) = interpreter.run(optimized, schedule, [np.zeros(3)])
    np.testing.assert_array_equal(out, np.full(3, float(depth)))
    assert fingerprint.ir_fingerprint(optimized)
    # too large for numba: refused before any source is generated or compiled
    with pytest.raises(NotLowerable, match="scalar operations"):
        pipeline.compile_program(program, target=cpu_target.TARGET)


def test_session_runs_a_long_chain(caplog):
    n_adds = 50_000   # 10**5 ops (an Add and its Const each); 10**6 ran in 2 minutes
    g = tf.Graph()
    with g.as_default():
        x0 = tf.placeholder(tf.float32, [4])
        x = x0
        for _ in range(n_adds):
            x = tf.add(x, 1.0)
    with caplog.at_level(logging.INFO, logger="flowjit.jit"):
        with tf.Session(graph=g) as sess:
            out = sess.run(x, {x0: np.zeros(4, np.float32)})
    np.testing.assert_array_equal(out, np.full(4, n_adds, np.float32))
    assert any("more than the" in r.getMessage() and "reference kernels" in r.getMessage()
               for r in caplog.records)
    # the description of the graph and its import walk it without recursion too
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(g.as_graph_def(), name="")
    assert len(g2.get_operations()) == len(g.get_operations())


def test_gradients_of_a_long_chain():
    n_adds = 50_000
    g = tf.Graph()
    with g.as_default():
        x0 = tf.placeholder(tf.float32, [4])
        x = x0
        for _ in range(n_adds):
            x = tf.add(x, 1.0)
        (dx,) = tf.gradients(tf.reduce_sum(x), [x0])
        with tf.Session() as sess:
            got = sess.run(dx, {x0: np.zeros(4, np.float32)})
    np.testing.assert_array_equal(got, np.ones(4, np.float32))


def test_static_value_of_a_long_constant_chain():
    with tf.Graph().as_default():
        x = tf.constant(0.0)
        for _ in range(20_000):
            x = tf.add(x, 1.0)
        from flowjit.ops.conversion import static_value

        assert float(static_value(x)) == 20_000.0


def _go_fast_plain(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


@pytest.mark.parametrize("n", [100, 2000])
def test_go_fast(n, caplog):
    """numba's five-minute guide: the loop stays a loop (compiler/autograph.py), so at
    2000 iterations as at 100 it compiles into one kernel of the same size."""
    go_fast = flowjit.jit(_go_fast_plain)
    a = np.arange(n * n, dtype=np.float64).reshape(n, n) / (n * n)
    with caplog.at_level(logging.INFO, logger="flowjit.jit"):
        np.testing.assert_allclose(go_fast(a), _go_fast_plain(a), rtol=1e-12)
    lowered = go_fast.lower(a)
    assert lowered.compiled and "while go" in lowered.source
    assert not [r for r in caplog.records if "not compiled" in r.getMessage()]


def _covariance(x):
    n, m = x.shape
    mu = x.sum(axis=0) / n
    cov = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            cov[i, j] = ((x[:, i] - mu[i]) * (x[:, j] - mu[j])).sum() / (n - 1)
    return cov


def test_covariance_of_slice_assignments(caplog):
    """400 slice assignments in two nested loops: the loops stay loops and compile into
    one kernel (unrolled, they were 402 loop nests: more than numba is asked to compile,
    which `test_node_chain_through_every_stage_then_refused` covers), no warning."""
    x = np.random.RandomState(0).rand(100, 20)
    cov = flowjit.jit(_covariance)
    with caplog.at_level(logging.WARNING, logger="flowjit.jit"):
        np.testing.assert_allclose(cov(x), np.cov(x, rowvar=False), rtol=1e-10)
        np.testing.assert_allclose(cov(x), _covariance(x), rtol=1e-12)
    assert not [r.getMessage() for r in caplog.records]
    assert cov.lower(x).compiled


def test_internal_failures_fall_back_with_one_reason(monkeypatch, caplog):
    """Any failure of flowjit itself while tracing or compiling (not an error of the code)
    runs the function as plain Python, with one logged reason."""
    def f(a):
        return np.sin(a) * 2.0 + a.sum()

    a = np.linspace(0.0, 1.0, 7)

    def broken_compile(*args, **kwargs):
        raise KeyError("a pass lost a node")

    monkeypatch.setattr(jit_module, "compile_cluster", broken_compile)
    jf = flowjit.jit(f)
    with caplog.at_level(logging.WARNING, logger="flowjit.jit"):
        np.testing.assert_allclose(jf(a), f(a))
        np.testing.assert_allclose(jf(a), f(a))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "KeyError" in messages[0] and "compiling" in messages[0]
    assert not jf.lower(a).compiled

    def too_deep(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(jit_module, "trace", too_deep)
    caplog.clear()
    jf = flowjit.jit(f)
    with caplog.at_level(logging.WARNING, logger="flowjit.jit"):
        np.testing.assert_allclose(jf(a), f(a))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and TOO_DEEP in messages[0]
    # errors of the code itself still surface as NumPy's
    monkeypatch.undo()
    with pytest.raises(ValueError):
        flowjit.jit(lambda u, v: u + v)(np.ones(3), np.ones(4))
