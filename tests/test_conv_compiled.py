"""Compiled convolutions (ops/lower_conv.py) and the pass that gives their bias and relu to
the GEMM (compiler/flat_epilogues.py).

- the pass on hand-built IR: a bias + relu chain over a 4-D view of a product becomes one
  2-D node over the product (and the schedule finds it as the GEMM's epilogue); the chain
  stops at a node with two readers and at a change of dtype; results equal the reference
  interpreter's before and after;
- conv2d + bias_add + relu compiled for the CPU: the bias and relu run in the GEMM
  (`gemm_epilogue(..., bias, 1)` in the kernel's source), and the values equal NumPy's;
- a training computation (two convolutions, SAME stride 1 and VALID stride 2 NCHW, their
  bias, relu and every gradient) compiled ONCE for the CPU, then run on drawn sizes
  (hypothesis; the kernel is shape-generic): each run equals the ops' reference kernels,
  and the compiled kernel really ran.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit import dtypes
from flowjit.compiler.core import ir
from flowjit.compiler.flat_epilogues import flatten_product_epilogues
from flowjit.compiler.schedule import ScheduleOptions, make_schedule
from flowjit.runtime import clustering
from flowjit.runtime.clustering import ClusterStep
from flowjit.targets.reference import interpreter

import conv_reference as ref

F32 = dtypes.float32
S = ir.Scalar


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    """A compiler or kernel failure fails the test instead of falling back."""
    monkeypatch.setattr(clustering, "STRICT", True)


def _product_chain(second_reader=False, compare=False):
    """relu(reshape(a @ b, (2, 2, 3, k)) + bias[k]) as IR, a of 12 rows (optionally the
    bias add read twice, or the relu compared with 0)."""
    a = ir.input_node(0, F32, (12, None))
    b = ir.input_node(1, F32, (None, None))
    bias = ir.input_node(2, F32, (None,))
    k = ir.dim(1, 1)
    product = ir.matmul(a, b, False, False, (ir.index(12), k))
    view = ir.reshape(product, (ir.index(2), ir.index(2), ir.index(3), k))
    axes = ir.axis_vars(4)
    biased = ir.compute(F32, view.shape, axes, ir.make(S.ADD, F32, (
        ir.load(view, axes), ir.load(bias, (axes[3],)))))
    relu = ir.compute(F32, view.shape, axes, ir.make(S.MAX, F32, (
        ir.load(biased, axes), ir.const(0.0, F32))))
    outputs = [relu]
    if second_reader:
        outputs.append(ir.compute(F32, view.shape, axes, ir.make(S.MUL, F32, (
            ir.load(biased, axes), ir.load(biased, axes)))))
    if compare:
        outputs = [ir.compute(dtypes.bool_, view.shape, axes, ir.make(
            S.GT, dtypes.bool_, (ir.load(relu, axes), ir.const(0.0, F32))))]
    return ir.Program([a, b, bias], outputs)


def _run(program, arrays):
    return interpreter.run(program, make_schedule(program), arrays)


def test_the_pass_computes_a_bias_relu_chain_over_the_product():
    program = _product_chain()
    flat = flatten_product_epilogues(program)
    (out,) = flat.outputs
    assert out.kind is ir.NodeKind.RESHAPE and len(out.inputs[0].shape) == 2
    relu = out.inputs[0]
    assert relu.body.op is S.MAX
    schedule = make_schedule(flat, ScheduleOptions(gemm_epilogues=True))
    [epilogue] = schedule.epilogues.values()
    assert epilogue.relu and epilogue.bias is program.inputs[2]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((12, 5)).astype(np.float32),
              rng.standard_normal((5, 4)).astype(np.float32),
              rng.standard_normal(4).astype(np.float32)]
    want = np.maximum((arrays[0] @ arrays[1] + arrays[2]).reshape(2, 2, 3, 4), 0)
    np.testing.assert_allclose(_run(program, arrays)[0], want, rtol=1e-6)
    np.testing.assert_allclose(_run(flat, arrays)[0], _run(program, arrays)[0], rtol=1e-6)


def test_the_chain_stops_at_a_second_reader_and_at_a_new_dtype():
    two = flatten_product_epilogues(_product_chain(second_reader=True))
    relu, square = two.outputs
    # the bias add has two readers: it is the last node made 2-D, each reader reads its view
    assert relu.kind is ir.NodeKind.COMPUTE and len(relu.shape) == 4
    [view] = {e.attr for e in ir.walk(relu.body) if e.op is S.LOAD}
    assert view.kind is ir.NodeKind.RESHAPE and view.inputs[0].body.op is S.ADD
    compared = flatten_product_epilogues(_product_chain(compare=True))
    (mask,) = compared.outputs
    assert mask.kind is ir.NodeKind.COMPUTE and mask.dtype is dtypes.bool_
    assert len(mask.shape) == 4


def test_conv_bias_relu_runs_its_bias_and_relu_in_the_gemm():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)

    def layer(x, w, b):
        return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b))

    fn = tf.jit(layer)
    calls = [line.strip() for line in fn.lower(x, w, b).source.splitlines()
             if "gemm_epilogue(" in line]
    assert calls and calls[0].endswith(", in2, 1)"), calls
    want = np.maximum(ref.conv(x, w, (1, 1), (1, 1), [(1, 1), (1, 1)]) + b, 0)
    np.testing.assert_allclose(fn(x, w, b), want, rtol=1e-5, atol=1e-5)


def _training_graph():
    """Two conv layers and every gradient, in one graph of fixed ranks and dtypes."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, None, None, 3], name="x")
        w1 = tf.placeholder(tf.float32, [3, 3, 3, 4], name="w1")
        b1 = tf.placeholder(tf.float32, [4], name="b1")
        w2 = tf.placeholder(tf.float32, [2, 2, 4, 5], name="w2")
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w1, 1, "SAME"), b1))
        y = tf.nn.conv2d(tf.transpose(h, [0, 3, 1, 2]), w2, 2, "VALID", data_format="NCHW")
        loss = tf.reduce_sum(tf.tanh(y))
        grads = tf.gradients(loss, [x, w1, b1, w2])
    return graph, [loss] + grads, (x, w1, b1, w2)


@st.composite
def _sizes(draw):
    return (draw(st.sampled_from([0, 2, 3])), draw(st.sampled_from([2, 3, 5, 8])),
            draw(st.sampled_from([2, 4, 7])), draw(st.integers(0, 2**16)))


def test_a_training_computation_compiles_once_and_equals_the_reference_kernels():
    graph, fetches, (x, w1, b1, w2) = _training_graph()
    with tf.Session(graph=graph, config=tf.ConfigProto(jit=False)) as reference, \
            tf.Session(graph=graph, config=tf.ConfigProto(jit=tf.JitOptions.always())) \
            as compiled:

        @settings(max_examples=8, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(_sizes())
        def check(sizes):
            batch, height, width, seed = sizes
            rng = np.random.default_rng(seed)
            feeds = {x: rng.standard_normal((batch, height, width, 3)).astype(np.float32),
                     w1: rng.standard_normal((3, 3, 3, 4)).astype(np.float32),
                     b1: rng.standard_normal(4).astype(np.float32),
                     w2: rng.standard_normal((2, 2, 4, 5)).astype(np.float32)}
            want = reference.run(fetches, feeds)
            got = compiled.run(fetches, feeds)
            steps = [n for plan in compiled._plans.values() for n in plan.ops
                     if isinstance(n, ClusterStep)]
            assert sum(s.kernels.compiled_runs for s in steps) == check.runs + 1
            check.runs += 1
            for g, w in zip(got, want):
                assert g.shape == w.shape and g.dtype == w.dtype
                np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)

        check.runs = 0
        check()
        steps = [n for plan in compiled._plans.values() for n in plan.ops
                 if isinstance(n, ClusterStep)]
    assert len(steps) == 1 and steps[0].kernels.compile_count == 1
    types = {op.type for op in steps[0].ops}
    assert {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"} <= types
