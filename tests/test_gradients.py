"""Automatic differentiation (`flowjit.gradients`), checked from the op registry.

Generated: every op with a gradient has at least one case in `CASES` (a builder and float64
inputs); its gradient from `gradients(reduce_sum(output * fixed random weights), inputs)` must
equal central finite differences, input element by input element.  Every registered op
either has a gradient or is listed in `NON_DIFFERENTIABLE` with the reason.  Then the rules:
sums over several paths, None for unconnected or integer xs, stop_gradient and
stop_gradients, grad_ys, broadcasting with unknown dims, Variables, names, errors.
All sessions run with jit=False, so nothing is compiled.
"""

import numpy as np
import pytest

import flowjit as tf
from flowjit.ops import registry, training_ops

from gradient_cases import CASES

CONFIG = tf.ConfigProto(jit=False)
EPS = 1e-6

# Ops without a gradient, and why: they are never on a differentiable path.
NON_DIFFERENTIABLE = {
    **dict.fromkeys(["Const", "Placeholder", "NoOp"], "a source: no inputs"),
    **dict.fromkeys(["VariableV2", "Assign", "AssignAdd", "AssignSub",
                     "IsVariableInitialized", "ApplyGradientDescent", "ApplyMomentum",
                     "ApplyAdam", "ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul",
                     "ScatterDiv", "ScatterMax", "ScatterMin", "SparseApplyMomentum",
                     "SparseApplyAdagrad"], "variable state, not a function of its inputs"),
    **dict.fromkeys(["Unique", "UniqueWithCounts"],
                    "TensorFlow registers no gradient (an output's size depends on the data)"),
    **dict.fromkeys(["ZerosLike", "OnesLike", "StopGradient"],
                    "TensorFlow declares it not differentiable (its value does not depend on "
                    "the input's values, or blocks the gradient by definition)"),
    **dict.fromkeys(["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                     "LogicalAnd", "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite",
                     "Any", "All", "ArgMax", "ArgMin", "Where", "ArgSort"],
                    "bool or integer output"),
    **dict.fromkeys(["Shape", "ShapeN", "Size", "Rank", "Range", "OneHot",
                     "BroadcastGradientArgs"],
                    "integer output or built from indices/shapes only"),
    **dict.fromkeys(["RandomUniform", "RandomStandardNormal", "TruncatedNormal",
                     "RandomUniformInt", "Multinomial", "RandomShuffle"], "random"),
    "ComplexAbs": "complex input: flowjit differentiates real floating-point tensors only",
    **dict.fromkeys(["Enter", "Exit", "NextIteration", "LoopCond"],
                    "a while loop is differentiated as a whole (ops/while_gradient.py)"),
    **dict.fromkeys(["StackV2", "StackPushV2", "StackPopV2"],
                    "the stacks of a while loop's gradient: bookkeeping, not math"),
    **dict.fromkeys(["FIFOQueueV2", "RandomShuffleQueueV2", "PaddingFIFOQueueV2",
                     "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                     "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueSizeV2", "QueueCloseV2"],
                    "queues: state shared between steps, not a function of the inputs"),
    **dict.fromkeys(["ConditionalAccumulator", "AccumulatorApplyGradient",
                     "AccumulatorTakeGradient", "AccumulatorSetGlobalStep",
                     "AccumulatorNumAccumulated"],
                    "accumulators: state shared between steps (they hold gradients)"),
    **dict.fromkeys(["TextLineReaderV2", "FixedLengthRecordReaderV2", "TFRecordReaderV2",
                     "ReaderReadV2", "ReaderReadUpToV2", "DecodeCSV", "DecodeRaw",
                     "InputProducerEpoch", "ParseExample"],
                    "input pipeline: strings and file contents"),
    **dict.fromkeys(["BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift",
                     "RightShift"], "integer inputs and output"),
    **dict.fromkeys(["ScalarSummary", "HistogramSummary", "ImageSummary", "TensorSummaryV2",
                     "MergeSummary"], "summaries: a serialized protobuf string"),
    **dict.fromkeys(["FusedBatchNormGradV3", "LRNGrad"],
                    "no second derivative of batch norm / LRN yet (TensorFlow has none for "
                    "LRN)"),
}
# Ops whose gradient is checked by a dedicated test instead of finite differences.
NOT_FINITE_DIFFERENCED = {**dict.fromkeys(["Switch", "Merge"], "routing ops: cond gradients "
                                          "are finite-differenced in tests/test_control_flow.py")}


def _session(graph):
    return tf.Session(graph=graph, config=CONFIG)


def _check_case(op_type, case):
    rng = np.random.RandomState(1)
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf.float64, v.shape, name=f"in{i}") for i, v in
               enumerate(case.inputs)]
        outs = case.build(*phs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        types = {op.type for op in graph.get_operations()}
        assert op_type in types, f"the {op_type} case built only {sorted(types)}"
        outs = [o for o in outs if o.dtype is tf.float64]
        feeds = {p: v for p, v in zip(phs, case.inputs)}
        with _session(graph) as sess:
            shapes = [v.shape for v in sess.run(outs, feeds)]
        loss = tf.add_n([tf.reduce_sum(o * tf.constant(rng.uniform(0.5, 1.5, s)))
                         for o, s in zip(outs, shapes)])
        grads = tf.gradients(loss, phs)
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                 for g in grads]   # a gather's gradient is IndexedSlices: compare it dense
    with _session(graph) as sess:
        analytic = sess.run([g if g is not None else p for g, p in zip(grads, phs)], feeds)
        for i, (p, value) in enumerate(zip(phs, case.inputs)):
            got = np.zeros_like(value) if grads[i] is None else analytic[i]
            numeric = np.zeros_like(value)
            for j in np.ndindex(*value.shape):
                plus, minus = value.copy(), value.copy()
                plus[j] += case.eps
                minus[j] -= case.eps
                f_plus = sess.run(loss, {**feeds, p: plus})
                f_minus = sess.run(loss, {**feeds, p: minus})
                numeric[j] = (f_plus - f_minus) / (2 * case.eps)
            np.testing.assert_allclose(got, numeric, rtol=case.tol, atol=case.tol,
                                       err_msg=f"{op_type} ({case.name}): input {i}")


GRADIENT_OPS = sorted(d.name for d in registry.all_op_defs()
                      if d.gradient not in (None, registry.not_differentiable))


def test_every_op_has_a_gradient_or_a_reason():
    missing = sorted(d.name for d in registry.all_op_defs()
                     if d.gradient in (None, registry.not_differentiable)
                     and d.name not in NON_DIFFERENTIABLE)
    assert not missing, f"ops without a gradient (add one, or a reason): {missing}"
    stale = sorted(n for n in NON_DIFFERENTIABLE if n in GRADIENT_OPS)
    assert not stale, f"listed as non-differentiable but have a gradient: {stale}"


def test_every_gradient_has_a_finite_difference_case():
    missing = sorted(set(GRADIENT_OPS) - set(CASES) - set(NOT_FINITE_DIFFERENCED))
    assert not missing, f"gradients without a finite-difference case: {missing}"
    unknown = sorted(set(CASES) - set(GRADIENT_OPS))
    assert not unknown, f"cases for ops without a gradient: {unknown}"


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_gradient_matches_finite_differences(op_type):
    for case in CASES[op_type]:
        _check_case(op_type, case)


# --- the rules of gradients() ---------------------------------------------------------------


def _run(graph, fetches, feeds=None):
    with _session(graph) as sess:
        return sess.run(fetches, feeds)


def test_paths_are_summed_and_unconnected_is_none():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [3], name="x")
        other = tf.placeholder(tf.float64, [3], name="other")
        y = x * x + tf.sin(x) + 3.0 * x
        gx, gother = tf.gradients(y, [x, other])
    assert gother is None
    assert gx.op.type == "AddN"
    v = np.array([0.1, 0.5, -2.0])
    np.testing.assert_allclose(_run(graph, gx, {x: v}), 2 * v + np.cos(v) + 3)


def test_stop_gradient_and_stop_gradients():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [2], name="x")
        a = x * 2.0
        y = a * x + tf.stop_gradient(x * x)
        (gx,) = tf.gradients(y, x)
        (g_only_stopped,) = tf.gradients(tf.stop_gradient(x), x)
        (g_held,) = tf.gradients(y, x, stop_gradients=[a])
    assert g_only_stopped is None
    v = np.array([1.5, -0.5])
    np.testing.assert_allclose(_run(graph, gx, {x: v}), 4 * v)
    np.testing.assert_allclose(_run(graph, g_held, {x: v}), 2 * v)  # a held constant


def test_integer_tensors_are_not_differentiated():
    graph = tf.Graph()
    with graph.as_default():
        n = tf.placeholder(tf.int32, [2], name="n")
        x = tf.placeholder(tf.float64, [2], name="x")
        y = tf.cast(n, tf.float64) * x
        gn, gx = tf.gradients(y, [n, x])
        (g_int_y,) = tf.gradients(n * 2, n)
    assert gn is None and g_int_y is None
    np.testing.assert_allclose(_run(graph, gx, {n: [3, 4], x: [1.0, 1.0]}), [3.0, 4.0])


def test_grad_ys():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [2], name="x")
        y1, y2 = x * 3.0, tf.square(x)
        g = tf.gradients([y1, y2], x, grad_ys=[tf.constant([1.0, 10.0], tf.float64), None])[0]
    np.testing.assert_allclose(_run(graph, g, {x: [1.0, 2.0]}), [3 + 2, 30 + 4])


def test_broadcasting_with_unknown_dims():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [None, 3], name="x")
        b = tf.placeholder(tf.float64, [None], name="b")
        c = tf.placeholder(tf.float64, None, name="c")
        y = tf.reduce_sum((x * b + x) / c)
        gx, gb, gc = tf.gradients(y, [x, b, c])
    assert gx.shape.as_list() == [None, 3]
    for rows in (1, 4):
        xv = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3)
        bv, cv = np.array([1.0, 2.0, 3.0]), np.array([[2.0], [4.0]])[:1]
        got = _run(graph, [gx, gb, gc], {x: xv, b: bv, c: cv})
        np.testing.assert_allclose(got[0], np.broadcast_to((bv + 1) / cv, xv.shape))
        np.testing.assert_allclose(got[1], (xv / cv).sum(0))
        np.testing.assert_allclose(got[2], [[-((xv * bv + xv) / cv ** 2).sum()]])


def test_gradient_with_respect_to_a_variable():
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]), name="w")
        x = tf.constant([[1.0, -1.0]], tf.float64)
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w))) + tf.reduce_sum(w.value())
        gw, gv = tf.gradients(loss, [w, w.value()])
        init = tf.global_variables_initializer()
    with _session(graph) as sess:
        sess.run(init)
        got_w, got_v = sess.run([gw, gv])
    out = np.array([[1.0, -1.0]]) @ np.array([[1.0, 2.0], [3.0, 4.0]])
    expected = np.array([[1.0], [-1.0]]) @ (2 * out) + 1
    np.testing.assert_allclose(got_w, expected)
    np.testing.assert_allclose(got_v, np.ones((2, 2)))  # only the direct read's path


def test_names_errors_and_v1_cross_entropy():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [2], name="x")
        (g,) = tf.gradients(tf.exp(x), x)
        assert g.name.startswith("gradients/")
        (g2,) = tf.gradients(tf.exp(x), x, name="mine")
        assert g2.name.startswith("mine/")
        v = tf.Variable(np.zeros(2), name="v")
        with pytest.raises(LookupError, match="ApplyGradientDescent"):   # as TensorFlow
            tf.gradients(training_ops.apply_gradient_descent(v, 0.5, x * 2.0), x)
        labels = tf.placeholder(tf.float64, [1, 2], name="labels")
        logits = tf.reshape(x, [1, 2])
        loss = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        assert tf.gradients(loss, labels) == [None]
        loss2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        assert tf.gradients(loss2, labels)[0] is not None
        with pytest.raises(ValueError, match="grad_ys"):
            tf.gradients(x, x, grad_ys=[None, None])
