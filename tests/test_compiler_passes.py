"""Compiler pass tests: structure (what the passes did) and numbers (compiled == reference).

Each test jits a small function, inspects `f.lower(...)` stages, and checks the compiled
result against NumPy.  Shapes are few and fixed, so only a handful of kernels compile.
"""

import numpy as np

import flowjit as tf
from flowjit.compiler.core import ir
from flowjit.compiler.core.ir import NodeKind, Scalar


def loop_nests(lowered) -> int:
    """Number of loop nests in the schedule of a lowered function."""
    return sum(line.startswith("loop nest ") for line in lowered.stage("schedule").splitlines())


def _program_ops(text: str, op: str) -> int:
    return sum(line.count(f"{op}(") for line in text.splitlines())


X = np.linspace(-3, 3, 35, dtype=np.float32).reshape(5, 7)


def test_cse_shares_a_duplicated_subexpression():
    f = tf.jit(lambda x: tf.exp(x * 2.0) + tf.exp(x * 2.0))
    np.testing.assert_allclose(f(X), 2 * np.exp(X * 2), rtol=1e-6)
    lowered = f.lower(X)
    graph_exps = lowered.stage("graph").count("= Exp(")
    assert graph_exps == 2  # the graph has two Exp ops...
    assert _program_ops(lowered.stage("cse"), "exp") == 1  # ...the IR one shared node


def test_multiplying_by_one_and_adding_zero_vanish():
    # x + (-0.0) and x - 0.0 are x for every float; integer x + 0 too
    for fn, x in ((lambda x: (x * 1.0 - 0.0) + -0.0, X),
                  (lambda x: (x * 1 + 0) - 0, np.arange(35, dtype=np.int32).reshape(5, 7))):
        f = tf.jit(fn)
        out = f(x)
        np.testing.assert_array_equal(out, x)
        assert out.dtype == x.dtype
        assert not np.shares_memory(out, x)  # an output never aliases an input
        text = f.lower(x).stage("simplify")
        assert "compute" not in text  # nothing left to compute: the output is the input
        assert "*" not in f.lower(x).stage("source").split("def kernel")[1]


def test_adding_positive_zero_to_a_float_is_kept():
    """-0.0 + 0.0 is +0.0 (IEEE, NumPy): x + 0.0 is not x, so one addition stays."""
    f = tf.jit(lambda x: 1.0 / (x * 0.0 + 0.0))
    x = np.array([-1.0, 2.0], np.float32)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(f(x), 1.0 / (x * 0.0 + 0.0))   # [inf, inf]
    assert "+" in f.lower(x).stage("simplify")


def test_half_power_is_a_square_root_as_in_numpy():
    """NumPy computes x ** 0.5 (a scalar exponent) as sqrt(x): -inf gives nan and -0.0 stays
    -0.0, where C's pow gives inf and 0.0; the compiled code agrees bit for bit."""
    for dtype in (np.float32, np.float64):
        x = np.array([-np.inf, -0.0, 0.0, 4.0, 2.0, np.inf, 1e-30, -3.0], dtype)
        with np.errstate(invalid="ignore"):
            want = x ** 0.5
            for fn in (lambda v: v ** 0.5, lambda v: tf.pow(v, 0.5), lambda v: np.power(v, 0.5)):
                f = tf.jit(fn)
                got = f(x)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
                np.testing.assert_array_equal(np.signbit(got[1:]), np.signbit(want[1:]))
        assert _program_ops(f.lower(x).stage("simplify"), "sqrt") == 1
        assert "**" not in f.lower(x).stage("simplify")


def test_constant_folding_of_scalar_arithmetic():
    f = tf.jit(lambda x: x * (tf.constant(2.0) * 3.0 + 1.0))
    np.testing.assert_allclose(f(X), X * 7.0)
    text = f.lower(X).stage("constant_fold")
    assert "7.0" in text


def test_an_element_of_a_shape_vector_folds_to_its_value():
    """`tf.shape(x)` lowers to a node computed from its index and the sizes alone
    (`select(i0 == 0, n0, n1)`); read at a constant index it folds to that element's
    expression, so no select survives (the gather index check of `table[ids] -= g` compared
    against `select(0 == 0, ...)` at every index)."""
    f = tf.jit(lambda x: x * tf.cast(tf.shape(x)[0] * 10 + tf.shape(x)[1], tf.float32))
    np.testing.assert_allclose(f(X), X * 57.0)
    lowered = f.lower(X)
    assert "select((i0 == 0)" in lowered.stage("lowered")
    assert "select" not in lowered.stage("constant_fold")
    assert "in0.shape[0]" in lowered.stage("constant_fold")


def test_elementwise_chain_is_one_loop_nest_with_no_temporaries():
    f = tf.jit(lambda x: tf.tanh(x * 1.7 + 0.3) * tf.exp(-x * x) + tf.sqrt(tf.abs(x)))
    y = f(X)
    ref = np.tanh(X * np.float32(1.7) + np.float32(0.3)) * np.exp(-X * X) + np.sqrt(np.abs(X))
    np.testing.assert_allclose(y, ref, rtol=2e-6, atol=1e-6)
    lowered = f.lower(X)
    assert loop_nests(lowered) == 1
    source = lowered.stage("source")
    assert source.count("empty_buffer(") == 1  # only the output buffer


def test_multiple_outputs_share_one_loop_nest():
    f = tf.jit(lambda x: (tf.exp(x), x * 3.0))
    a, b = f(X)
    np.testing.assert_allclose(a, np.exp(X), rtol=1e-6)
    np.testing.assert_allclose(b, X * 3)
    assert loop_nests(f.lower(X)) == 1


def test_new_batch_size_does_not_recompile_but_new_dtype_does(caplog):
    f = tf.jit(lambda x: x * 2.0 + 1.0)
    for n in (3, 17, 1000):
        np.testing.assert_allclose(f(np.arange(n, dtype=np.float32)),
                                   np.arange(n, dtype=np.float32) * 2 + 1)
    assert f.compile_count == 1
    with caplog.at_level("INFO", logger="flowjit.jit"):
        f(np.arange(4, dtype=np.float64))
    assert f.compile_count == 2
    assert "new signature" in caplog.text and "argument 0" in caplog.text


def test_size_one_dims_are_part_of_the_signature_for_broadcasting():
    f = tf.jit(lambda x, y: x + y)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(f(a, np.ones((1, 3), np.float32)), a + 1)
    np.testing.assert_array_equal(f(a, np.ones((2, 3), np.float32)), a + 1)
    assert f.compile_count == 2
    with np.testing.assert_raises(tf.errors.InvalidArgumentError):
        f(a, np.ones((4, 3), np.float32))  # unknown sizes checked at run time


def test_python_scalars_are_static():
    f = tf.jit(lambda x, k: x * k)
    np.testing.assert_array_equal(f(X, 2.0), X * 2)
    np.testing.assert_array_equal(f(X, 3.0), X * 3)
    assert f.compile_count == 2


def test_stateful_ops_are_never_compiled_or_merged():
    tf.set_random_seed(1)

    def noisy(x):
        return x + tf.random_uniform(tf.shape(x), seed=3) + tf.random_uniform(tf.shape(x),
                                                                               seed=3)

    f = tf.jit(noisy)
    first, second = f(X), f(X)
    assert not np.array_equal(first, second)  # random state advances: not constant-folded
    noise = first - X
    assert noise.min() >= 0 and noise.max() < 2
    lowered = f.lower(X)
    assert "RandomUniform" in str(lowered)
    assert lowered.stage("graph").count("RandomUniform(") == 2  # two ops, not merged


def test_ir_interning_is_structural():
    x = ir.input_node(0, tf.float32, (None,))
    a = ir.axis_vars(1)
    e1 = ir.make(Scalar.EXP, tf.float32, (ir.load(x, a),))
    e2 = ir.make(Scalar.EXP, tf.float32, (ir.load(x, a),))
    assert e1 is e2
    assert ir.compute(tf.float32, x.shape, a, e1) is ir.compute(tf.float32, x.shape, a, e2)
    assert ir.compute(tf.float32, x.shape, a, e1).kind is NodeKind.COMPUTE
