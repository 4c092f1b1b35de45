"""Generated per-op tests: every lowerable op's COMPILED CPU kernel against its reference kernel.

The op groups of tests/compiled_op_groups.py put the registry's lowerable ops into a few
graphs (float32, float64, integers and bools), each ONE cluster compiled under the
compile-always policy (`JitOptions.always()`, i.e. FLOWJIT_JIT=always); hypothesis draws the
inputs (NaN, +-inf, empty dimensions, prime sizes, broadcasting, size-1 dimensions through
fixed-size-1 inputs), the same graph runs with jit off (the executor's NumPy reference
kernels), and every fetched value must have the same dtype and shape, and the same values:
exactly for integer and bool results and for the float results of data movement, casts,
selections and Max/Min (`compiled_op_groups.EXACT_FLOAT_OPS`), within a few ulps otherwise.
Each run asserts the compiled kernel served it (the cluster's `compiled_runs` counter).

Sizes never recompile a kernel (they are shape-generic; docs/architecture.md, runtime), so
the cost is one numba compile per group.  Ops or forms the compiler does not lower are
listed in NOT_COMPILED, each checked to still raise NotLowerable.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import flowjit as tf
from flowjit.compiler.lowering import NotLowerable, lower_cluster
from flowjit.ops import registry
from flowjit.ops.registry import Trait
from flowjit.runtime import clustering
from flowjit.runtime.clustering import ClusterStep

from compiled_op_groups import EXACT_FLOAT_OPS, GROUPS

OFF = tf.ConfigProto(jit=False)
ALWAYS = tf.ConfigProto(jit="always")
EXAMPLES = 12
# float math: relative and absolute tolerance per dtype (vectorized exp/log/... and sums in
# another order differ from NumPy by a few ulps)
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-13)}
# reductions, products and solves round once per term: absolute tolerance times this
ACCUMULATING = {"Sum": 50, "Mean": 10, "Prod": 10, "L2Loss": 500, "MatMul": 50,
                "BatchMatMulV2": 50, "AddN": 10, "Cholesky": 100, "MatrixDeterminant": 1e4,
                "MatrixInverse": 100, "MatrixSolve": 100, "SoftmaxCrossEntropyWithLogits": 10,
                "SparseSoftmaxCrossEntropyWithLogits": 10, "LogSoftmax": 10, "SumToShape": 50,
                "BiasAddGrad": 50}

# Lowerable op types (or forms) that are NOT compiled, each with the reason; the test below
# checks each still raises NotLowerable (or does not cluster), so the list stays true.
NOT_COMPILED = {
    # integer Pow is refused by its lowering (ops/math_binary.py, not_for_integers)
    "Pow/int32": lambda: tf.pow(tf.placeholder(tf.int32, [None]), 2),
    # MatMul and BatchMatMulV2 compile for floats only (BLAS is float only; ops/matmul_ops.py)
    "MatMul/int32": lambda: tf.matmul(tf.placeholder(tf.int32, [None, None]),
                                      tf.placeholder(tf.int32, [None, None])),
    "BatchMatMulV2/int64": lambda: tf.matmul(tf.placeholder(tf.int64, [2, None, None]),
                                             tf.placeholder(tf.int64, [2, None, None])),
    # complex tensors never join a cluster (runtime/partition.py); ConjugateTranspose of a
    # real tensor is a Transpose, tested in the groups
    "ConjugateTranspose/complex64": lambda: tf.transpose(
        tf.placeholder(tf.complex64, [None, None]), conjugate=True),
}
# Lowerable op types that no group fetches: NoOp orders only (it has no output to compare).
NOT_FETCHED = {"NoOp"}
_BLOCKED = {Trait.STATEFUL, Trait.RUNTIME_VALUE, Trait.BLOCKING, Trait.COMMUNICATION}


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    """A compiler failure (other than NotLowerable) fails the test instead of falling back."""
    monkeypatch.setattr(clustering, "STRICT", True)


def _steps(sess):
    return [n for plan in sess._plans.values() for n in plan.ops if isinstance(n, ClusterStep)]


def test_the_groups_cover_every_lowerable_op():
    lowerable = {d.name for d in registry.all_op_defs()
                 if d.lower is not None and not d.traits & _BLOCKED}
    covered = {op_type for g in GROUPS for op_type, _ in g.ops} | {"Const"}
    listed = {k.split("/")[0] for k in NOT_COMPILED}
    missing = lowerable - covered - NOT_FETCHED - listed
    assert not missing, f"lowerable ops no compiled-op group tests: {sorted(missing)}"


@pytest.mark.parametrize("form", sorted(NOT_COMPILED))
def test_the_not_compiled_forms_are_still_not_compiled(form):
    graph = tf.Graph()
    with graph.as_default():
        out = NOT_COMPILED[form]()
    ops = [op for op in graph.get_operations() if op.type != "Placeholder"]
    if not all(clustering.clusterable(op, set()) for op in ops):
        return  # it never joins a cluster, as listed
    inputs = [op.outputs[0] for op in graph.get_operations() if op.type == "Placeholder"]
    specs = [(t.dtype, tuple(1 if d == 1 else None for d in t.shape.as_list()))
             for t in inputs]
    with pytest.raises(NotLowerable):
        lower_cluster(ops, inputs, specs, [out])


def _compare(op_type, t, want, got):
    want, got = np.asarray(want), np.asarray(got)
    where = f"{op_type}: {t.name}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, reference {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape}, reference {want.shape}"
    if want.dtype.kind != "f" or op_type in EXACT_FLOAT_OPS:
        np.testing.assert_array_equal(got, want, err_msg=where)  # NaNs equal NaNs
        return
    rtol, atol = TOLERANCE[want.dtype]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * ACCUMULATING.get(op_type, 1),
                               equal_nan=True, err_msg=where)


@pytest.mark.parametrize("group", GROUPS, ids=[g.name for g in GROUPS])
def test_compiled_kernels_equal_the_reference_kernels(group):
    graph, fetches, placeholders = group.build()
    tensors = [t for _, t in fetches]
    with tf.Session(graph=graph, config=OFF) as reference, \
            tf.Session(graph=graph, config=ALWAYS) as compiled:

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(group.feeds())
        def check(inputs):
            feeds = {placeholders[k]: v for k, v in inputs.items()}
            want = reference.run(tensors, feeds)
            got = compiled.run(tensors, feeds)
            [step] = _steps(compiled)   # the whole group is one cluster
            assert step.kernels.compiled_runs == check.runs + 1, "the kernel did not run"
            check.runs += 1
            for (op_type, t), w, g in zip(fetches, want, got):
                _compare(op_type, t, w, g)

        check.runs = 0
        check()
        [step] = _steps(compiled)
    members = set(step.ops)
    outside = [t.op.name for _, t in fetches if t.op not in members]
    assert not outside, f"fetched ops outside the compiled cluster: {outside}"
    assert step.kernels.compile_count == 1 and check.runs >= EXAMPLES // 2
