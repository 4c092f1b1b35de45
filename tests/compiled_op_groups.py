"""Op groups for tests/test_compiled_ops.py: many ops in ONE graph, so one compiled cluster.

A numba compile costs seconds and the kernels are shape-generic, so each group is one graph
whose placeholders have a fixed dtype and rank (and fixed size-1 dimensions where the group
tests size-1 broadcasting); hypothesis then varies values and sizes without recompiling.
Every non-placeholder op hangs off the first input's Identity (the other inputs' Identities
take a control edge on it), so the clustering pass (runtime/clustering.py) makes the whole
graph one cluster.  See docs/architecture.md (runtime: clustering) for the policy.

`Group.ops` lists (op type, build(P) -> tensor or tensors); P holds the joined inputs.
"""

import dataclasses
from types import SimpleNamespace
from typing import Callable

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import flowjit as tf
from conv_compiled_group import CONV_INPUTS, conv_feeds, conv_ops
from flowjit.ops.check_ops import ensure_non_empty
from flowjit.ops.grad_ops import bias_add_grad, relu_grad, sigmoid_grad, tanh_grad
from flowjit.ops.math_binary import add_v2
from flowjit.ops.sort_ops import sort_positions
from flowjit.ops.sum_to_shape import sum_to_shape_of

# Ops whose float results must be bit-identical: data movement, casts, selections, Max/Min,
# comparisons and rounding (no arithmetic that may round differently).
EXACT_FLOAT_OPS = frozenset("""
Identity StopGradient ZerosLike OnesLike Abs Neg Sign Floor Ceil Round Relu Relu6 ReluGrad
Maximum Minimum ClipByValue Select SelectV2 Max Min Cast Transpose ConjugateTranspose Reshape
ExpandDims Squeeze
Tile Pad PadV2 MirrorPad ReverseV2 ReverseSequence Slice StridedSlice ConcatV2 Pack Unpack Split SplitV
GatherV2 GatherNd OneHot BroadcastTo TensorScatterUpdate TensorStridedSliceUpdate Fill Sort
EnsureNonEmpty Const MaxPool MaxPoolGradGrad MaxPoolWithArgmax
""".split())


@dataclasses.dataclass
class Group:
    """One graph of many ops: `inputs` maps a placeholder name to (dtype, static shape)."""

    name: str
    inputs: dict
    ops: list          # [(op type, build(P))]
    feeds: Callable    # hypothesis strategy factory: () -> strategy of {name: array}

    def build(self):
        """(graph, fetches [(op type, tensor)], placeholders {name: tensor})."""
        graph = tf.Graph()
        with graph.as_default():
            phs = {k: tf.placeholder(dt, shape, name=k) for k, (dt, shape) in self.inputs.items()}
            names = list(phs)
            first = tf.identity(phs[names[0]], name=f"{names[0]}_in")
            joined = {names[0]: first}
            with tf.control_dependencies([first]):
                for k in names[1:]:
                    joined[k] = tf.identity(phs[k], name=f"{k}_in")
            P = SimpleNamespace(**joined)
            fetches = []
            for op_type, build in self.ops:
                out = build(P)
                for t in out if isinstance(out, (list, tuple)) else [out]:
                    fetches.append((op_type, t))
        return graph, fetches, phs


def _float_ops(dt):
    """Every float op on x [a, b], y [b], c [a, 1], r [1, b], w [p, q] (p, q >= 2), idx int32
    [k] in [0, q), labels int64 [p] in [0, q), m [q, s], spd [n, n] (SPD), rhs [n, 2]."""
    def fin(t):   # finite and in range: casting NaN, inf or huge floats to int is undefined
        return tf.clip_by_value(tf.where(tf.is_finite(t), t, tf.zeros_like(t)), -1e3, 1e3)

    unary = [
        ("Abs", tf.abs), ("Ceil", tf.ceil), ("Cos", tf.cos), ("Elu", tf.nn.elu),
        ("Erf", tf.math.erf), ("Exp", tf.exp), ("Expm1", tf.expm1), ("Floor", tf.floor),
        ("IsFinite", tf.is_finite), ("IsInf", tf.is_inf), ("IsNan", tf.is_nan),
        ("LeakyRelu", tf.nn.leaky_relu), ("Log", tf.log), ("Log1p", tf.log1p),
        ("Neg", tf.negative), ("Reciprocal", tf.reciprocal), ("Relu", tf.nn.relu),
        ("Relu6", tf.nn.relu6), ("Round", tf.round), ("Rsqrt", tf.rsqrt), ("Selu", tf.nn.selu),
        ("Sigmoid", tf.sigmoid), ("Sign", tf.sign), ("Sin", tf.sin), ("Softplus", tf.nn.softplus),
        ("Softsign", tf.nn.softsign), ("Sqrt", tf.sqrt), ("Square", tf.square), ("Tan", tf.tan),
        ("Tanh", tf.tanh), ("ZerosLike", tf.zeros_like), ("OnesLike", tf.ones_like),
        ("StopGradient", tf.stop_gradient),
    ]
    binary = [
        ("Add", tf.add), ("AddV2", add_v2), ("Sub", tf.subtract), ("Mul", tf.multiply),
        ("RealDiv", tf.divide),
        ("Pow", tf.pow), ("Atan2", tf.atan2), ("Maximum", tf.maximum), ("Minimum", tf.minimum),
        ("SquaredDifference", tf.squared_difference), ("FloorDiv", tf.floordiv),
        ("FloorMod", tf.floormod), ("Equal", tf.equal), ("NotEqual", tf.not_equal),
        ("Less", tf.less), ("LessEqual", tf.less_equal), ("Greater", tf.greater),
        ("GreaterEqual", tf.greater_equal),
    ]
    ops = [("Identity", lambda P: P.x)]
    ops += [(n, lambda P, f=f: f(P.x)) for n, f in unary]
    for n, f in binary:   # row broadcasting, size-1 column broadcasting, an outer product
        ops.append((n, lambda P, f=f: [f(P.x, P.y), f(P.c, P.r)]))
    ops += [
        ("AddN", lambda P: tf.add_n([P.x, P.x * 2.0, P.y + P.c])),
        ("ClipByValue", lambda P: tf.clip_by_value(P.x, -1.5, 2.5)),
        ("Select", lambda P: tf.where(P.x > P.y, P.x, P.c + P.y)),
        ("SelectV2", lambda P: tf.where_v2(P.c > 0, P.x, P.y)),
        ("Cast", lambda P: [tf.cast(fin(P.x), tf.int32), tf.cast(fin(P.x), tf.int64),
                            tf.cast(P.x, tf.bool), tf.cast(P.x, tf.float64 if dt == tf.float32
                                                           else tf.float32)]),
        ("Sum", lambda P: [tf.reduce_sum(P.x, 0), tf.reduce_sum(P.x, 1, keepdims=True),
                           tf.reduce_sum(P.x)]),
        ("Mean", lambda P: [tf.reduce_mean(P.w, 0), tf.reduce_mean(P.w)]),
        ("Prod", lambda P: [tf.reduce_prod(P.x, 1), tf.reduce_prod(P.r)]),
        ("Max", lambda P: [tf.reduce_max(P.w, 0), tf.reduce_max(P.w, 1), tf.reduce_max(P.w)]),
        ("Min", lambda P: [tf.reduce_min(P.w, 0), tf.reduce_min(P.w, 1), tf.reduce_min(P.w)]),
        ("ArgMax", lambda P: [tf.argmax(P.w, 0), tf.argmax(P.w, 1)]),
        ("ArgMin", lambda P: [tf.argmin(P.w, 0), tf.argmin(P.w, 1, output_type=tf.int32)]),
        ("L2Loss", lambda P: tf.nn.l2_loss(P.w)),
        ("BiasAdd", lambda P: tf.nn.bias_add(P.x, P.y)),
        ("BiasAddGrad", lambda P: [bias_add_grad(P.x), bias_add_grad(
            tf.stack([P.x, P.x * 2.0]), data_format="NCHW")]),
        ("TanhGrad", lambda P: [tanh_grad(P.x, P.x * 2.0), tanh_grad(P.c, P.c)]),
        ("SigmoidGrad", lambda P: [sigmoid_grad(P.x, P.x * 2.0), sigmoid_grad(P.r, P.r)]),
        ("ReluGrad", lambda P: relu_grad(P.x * 2.0, P.x)),
        ("Softmax", lambda P: tf.nn.softmax(P.w)),
        ("LogSoftmax", lambda P: tf.nn.log_softmax(P.w)),
        ("SoftmaxCrossEntropyWithLogits", lambda P: tf.nn.softmax_cross_entropy_with_logits(
            labels=tf.nn.softmax(P.w * 0.5), logits=P.w)),
        ("SparseSoftmaxCrossEntropyWithLogits",
         lambda P: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=P.labels, logits=P.w)),
        ("Transpose", lambda P: [tf.transpose(P.x), tf.transpose(P.c)]),
        ("ConjugateTranspose", lambda P: tf.transpose(P.x, conjugate=True)),
        ("Reshape", lambda P: [tf.reshape(P.x, [-1]), tf.reshape(P.c, [1, -1])]),
        ("ExpandDims", lambda P: tf.expand_dims(P.x, 1)),
        ("Squeeze", lambda P: [tf.squeeze(P.c, [1]), tf.squeeze(P.r)]),
        ("Tile", lambda P: tf.tile(P.x, [2, 3])),
        ("Pad", lambda P: tf.pad(P.x, [[1, 2], [0, 3]])),
        ("PadV2", lambda P: tf.pad(P.x, [[0, 1], [2, 0]], constant_values=-7.5)),
        ("MirrorPad", lambda P: [tf.pad(P.w, [[1, 1], [0, 1]], mode="REFLECT"),
                                 tf.pad(P.w, [[2, 0], [1, 2]], mode="SYMMETRIC")]),
        ("ReverseV2", lambda P: [tf.reverse(P.x, [0]), tf.reverse(P.x, [0, 1])]),
        ("ReverseSequence", lambda P: [   # lengths i mod (b + 1): 0 to the full length
            tf.reverse_sequence(P.x, tf.range(tf.shape(P.x)[0]) % (tf.shape(P.x)[1] + 1),
                                seq_axis=1),
            tf.reverse_sequence(tf.transpose(P.x), tf.range(tf.shape(P.x)[0]) % (
                tf.shape(P.x)[1] + 1), seq_axis=0, batch_axis=1)]),
        ("Slice", lambda P: [tf.slice(P.w, [1, 0], [-1, 2]), tf.slice(P.x, [0, 0], [-1, -1])]),
        ("StridedSlice", lambda P: [P.x[::2, ::-1], P.w[1:, -2], P.x[:, None, :3]]),
        ("ConcatV2", lambda P: [tf.concat([P.x, P.x * 2.0], 1), tf.concat([P.x, P.r], 0)]),
        ("Pack", lambda P: tf.stack([P.x, -P.x], axis=1)),
        ("Unpack", lambda P: tf.unstack(tf.stack([P.x, P.x + 1.0]), axis=0)),
        ("Split", lambda P: tf.split(tf.concat([P.x, -P.x, P.x], 1), 3, axis=1)),
        ("SplitV", lambda P: tf.split(P.w, [1, -1], axis=0)),
        ("GatherV2", lambda P: [tf.gather(P.w, P.idx, axis=1), tf.gather(P.w, P.labels)]),
        ("GatherNd", lambda P: tf.gather_nd(P.w, tf.stack(
            [tf.cast(P.labels, tf.int32) * 0 + 1, tf.cast(P.labels, tf.int32)], axis=1))),
        ("OneHot", lambda P: tf.one_hot(P.idx, 5, dtype=dt)),
        ("BroadcastTo", lambda P: tf.broadcast_to(P.y, tf.shape(P.x))),
        ("TensorScatterUpdate", lambda P: tf.tensor_scatter_nd_update(
            P.w, [[1], [0]], tf.stack([P.w[0], P.w[1] * 3.0]))),
        ("TensorStridedSliceUpdate", lambda P: tf.tensor_strided_slice_update(
            P.w, [1, 0], [0, 3], [1, 2], P.w[1:, 0:3:2] * 2.0, end_mask=1)),
        ("Fill", lambda P: tf.fill(tf.shape(P.x), tf.constant(2.5, dt))),
        ("Range", lambda P: tf.cast(tf.range(0, tf.size(P.y), 2), dt) + P.y[0:1] * 0.0),
        ("Shape", lambda P: tf.shape(P.x)),
        ("ShapeN", lambda P: tf.shape_n([P.x, P.w], out_type=tf.int64)),
        ("Size", lambda P: tf.size(P.x)),
        ("Rank", lambda P: tf.rank(P.x) + tf.size(P.y)),
        ("SumToShape", lambda P: [sum_to_shape_of(P.x, [1, 1]),
                                  sum_to_shape_of(P.x + P.c, tf.shape(P.c))]),
        ("EnsureNonEmpty", lambda P: ensure_non_empty(P.w, [0, 1], "empty")),
        ("Sort", lambda P: tf.sort(P.w)),
        ("ArgSort", lambda P: sort_positions(P.w)),
        ("MatMul", lambda P: [tf.matmul(P.w, P.m), tf.matmul(P.m, P.w, transpose_a=True,
                                                                 transpose_b=True)]),
        ("BatchMatMulV2", lambda P: [
            tf.matmul(tf.stack([P.w, P.w * 0.5]), P.m),
            # batch dims that broadcast: a shared operand, and both ways at once
            tf.matmul(tf.expand_dims(P.w, 0), tf.stack([P.m, -P.m, P.m * 2.0])),
            tf.matmul(tf.expand_dims(tf.stack([P.w, -P.w]), 1),
                      tf.expand_dims(tf.stack([P.m, P.m * 0.5, P.m * 3.0]), 0))]),
        ("Cholesky", lambda P: tf.cholesky(P.spd)),
        ("MatrixDeterminant", lambda P: tf.matrix_determinant(P.spd)),
        ("MatrixInverse", lambda P: tf.matrix_inverse(P.spd)),
        ("MatrixSolve", lambda P: tf.matrix_solve(P.spd, P.rhs)),
    ]
    return ops


def _int_ops():
    """Integer and bool ops on i [a, b] int32, j [b], ic [a, 1], d [b] (nonzero), s [b] (shift
    amounts), iw [p, q], idx [k] in [0, q), l [a, b] int64,
    bt [a, b] and bu [b] bool."""
    ops = [("Identity", lambda P: [P.i, P.bt])]
    for n, f in [("Abs", tf.abs), ("Neg", tf.negative), ("Sign", tf.sign),
                 ("Square", tf.square), ("Invert", tf.bitwise.invert),
                 ("ZerosLike", tf.zeros_like), ("OnesLike", tf.ones_like)]:
        ops.append((n, lambda P, f=f: f(P.i)))
    for n, f in [("Add", tf.add), ("Sub", tf.subtract), ("Mul", tf.multiply),
                 ("Maximum", tf.maximum), ("Minimum", tf.minimum),
                 ("BitwiseAnd", tf.bitwise.bitwise_and), ("BitwiseOr", tf.bitwise.bitwise_or),
                 ("BitwiseXor", tf.bitwise.bitwise_xor), ("Equal", tf.equal),
                 ("NotEqual", tf.not_equal), ("Less", tf.less), ("LessEqual", tf.less_equal),
                 ("Greater", tf.greater), ("GreaterEqual", tf.greater_equal)]:
        ops.append((n, lambda P, f=f: [f(P.i, P.j), f(P.ic, P.j)]))
    ops += [
        ("FloorDiv", lambda P: [tf.floordiv(P.i, P.d), tf.floordiv(P.l, tf.cast(P.d, tf.int64))]),
        ("FloorMod", lambda P: [tf.floormod(P.i, P.d), tf.floormod(P.l, tf.cast(P.d, tf.int64))]),
        ("LeftShift", lambda P: [tf.bitwise.left_shift(P.i, P.s),
                                 tf.bitwise.left_shift(P.l, tf.cast(P.s, tf.int64))]),
        ("RightShift", lambda P: [tf.bitwise.right_shift(P.i, P.s),
                                  tf.bitwise.right_shift(P.l, tf.cast(P.s, tf.int64))]),
        ("AddN", lambda P: tf.add_n([P.i, P.i * 3, P.i])),
        ("ClipByValue", lambda P: tf.clip_by_value(P.i, -5, 7)),
        ("Cast", lambda P: [tf.cast(P.i, tf.float32), tf.cast(P.i, tf.float64),
                            tf.cast(P.l, tf.int32), tf.cast(P.i, tf.bool),
                            tf.cast(P.bt, tf.int32), tf.cast(P.bt, tf.float32),
                            tf.cast(P.l, tf.float32)]),
        ("Sum", lambda P: [tf.reduce_sum(P.i, 0), tf.reduce_sum(P.l), tf.reduce_sum(P.i, 1)]),
        ("Prod", lambda P: tf.reduce_prod(P.iw, 1)),
        ("Max", lambda P: [tf.reduce_max(P.iw, 0), tf.reduce_max(P.iw)]),
        ("Min", lambda P: [tf.reduce_min(P.iw, 1), tf.reduce_min(P.iw)]),
        ("Mean", lambda P: tf.reduce_mean(P.iw, 0)),
        ("ArgMax", lambda P: tf.argmax(P.iw, 1)),
        ("ArgMin", lambda P: tf.argmin(P.iw, 0)),
        ("LogicalAnd", lambda P: tf.logical_and(P.bt, P.bu)),
        ("LogicalOr", lambda P: tf.logical_or(P.bt, P.bu)),
        ("LogicalNot", lambda P: tf.logical_not(P.bt)),
        ("All", lambda P: [tf.reduce_all(P.bt, 0), tf.reduce_all(P.bt)]),
        ("Any", lambda P: [tf.reduce_any(P.bt, 1), tf.reduce_any(P.bt)]),
        ("Select", lambda P: tf.where(P.bt, P.i, P.i * 2)),
        ("SelectV2", lambda P: [tf.where_v2(P.bu, P.i, P.ic), tf.where_v2(P.bt, P.bt, P.bu)]),
        ("Transpose", lambda P: [tf.transpose(P.i), tf.transpose(P.bt)]),
        ("Reshape", lambda P: tf.reshape(P.l, [-1])),
        ("ConcatV2", lambda P: [tf.concat([P.i, P.ic], 1), tf.concat([P.bt, P.bt], 0)]),
        ("GatherV2", lambda P: tf.gather(P.iw, P.idx, axis=1)),
        ("Tile", lambda P: tf.tile(P.bt, [3, 2])),
        ("Pad", lambda P: tf.pad(P.i, [[2, 1], [1, 0]])),
        ("ReverseV2", lambda P: tf.reverse(P.l, [1])),
        ("StridedSlice", lambda P: [P.i[1::3, :-1], P.bt[::-2]]),
        ("Pack", lambda P: tf.stack([P.bu, P.bu])),
        ("OneHot", lambda P: tf.one_hot(P.idx, 4, on_value=3, off_value=-1, dtype=tf.int64)),
        ("Fill", lambda P: tf.fill(tf.shape(P.i), 7)),
        ("BroadcastTo", lambda P: tf.broadcast_to(P.bu, tf.shape(P.bt))),
        ("Range", lambda P: tf.range(1, tf.size(P.j) * 3, 3)),
        ("Mul", lambda P: P.l * 3),   # int64: wrapping multiplication
    ]
    return ops


def _float_inputs(dt):
    M = [None, None]
    return {"x": (dt, M), "y": (dt, [None]), "c": (dt, [None, 1]), "r": (dt, [1, None]),
            "w": (dt, M), "idx": (tf.int32, [None]), "labels": (tf.int64, [None]),
            "m": (dt, M), "spd": (dt, M), "rhs": (dt, [None, 2])}


INT_INPUTS = {"i": (tf.int32, [None, None]), "j": (tf.int32, [None]),
              "ic": (tf.int32, [None, 1]), "d": (tf.int32, [None]), "s": (tf.int32, [None]),
              "iw": (tf.int32, [None, None]),
              "idx": (tf.int32, [None]), "l": (tf.int64, [None, None]),
              "bt": (tf.bool, [None, None]), "bu": (tf.bool, [None])}


# --- inputs -----------------------------------------------------------------------------------
SIZES = st.sampled_from([0, 2, 3, 5, 7, 13])   # never 1: a size-1 dim is another signature
AT_LEAST_2 = st.sampled_from([2, 3, 5, 7])       # reductions without identity, pads, gathers
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -2.5, 1e-30]


def _floats(dt, specials=True, bound=10.0):
    finite = st.floats(-bound, bound, width=np.dtype(dt).itemsize * 8)
    return st.one_of(finite, st.sampled_from(SPECIALS)) if specials else finite


@st.composite
def float_feeds(draw, dt):
    """Inputs of the float groups (_float_ops): NaN, +-inf, empty dims, odd and prime sizes."""
    a, b, s, k = (draw(SIZES) for _ in range(4))
    p, q, n = (draw(AT_LEAST_2) for _ in range(3))

    def arr(shape, elements=_floats(dt)):
        return draw(hnp.arrays(dt, shape, elements=elements))

    g = arr((n, n), _floats(dt, False, 1.0)).astype(np.float64)
    return {"x": arr((a, b)), "y": arr((b,)), "c": arr((a, 1)), "r": arr((1, b)),
            "w": arr((p, q)), "m": arr((q, s), _floats(dt, False)),
            "idx": draw(hnp.arrays(np.int32, (k,), elements=st.integers(0, q - 1))),
            "labels": draw(hnp.arrays(np.int64, (p,), elements=st.integers(0, min(p, q) - 1))),
            "spd": (g @ g.T + n * np.eye(n)).astype(dt), "rhs": arr((n, 2), _floats(dt, False))}


def _ints(dtype):
    info = np.iinfo(dtype)
    return st.one_of(st.integers(-100, 100), st.sampled_from([info.min, info.max, -1, 0]))


@st.composite
def int_feeds(draw):
    """Inputs of the integer group (_int_ops), extremes included (they wrap alike)."""
    a, b, k = (draw(SIZES) for _ in range(3))
    p, q = draw(AT_LEAST_2), draw(AT_LEAST_2)

    def arr(dtype, shape, elements=None):
        elements = _ints(dtype) if elements is None else elements
        return draw(hnp.arrays(dtype, shape, elements=elements))

    # divisors: nonzero, and never -1 (INT_MIN // -1 overflows; x86 traps on it in C)
    divisor = st.integers(-50, 50).filter(lambda v: v not in (0, -1))
    return {"i": arr(np.int32, (a, b)), "j": arr(np.int32, (b,)), "ic": arr(np.int32, (a, 1)),
            "d": arr(np.int32, (b,), divisor), "s": arr(np.int32, (b,), st.integers(0, 31)),
            "iw": arr(np.int32, (p, q)),
            "idx": arr(np.int32, (k,), st.integers(0, q - 1)), "l": arr(np.int64, (a, b)),
            "bt": arr(np.bool_, (a, b), st.booleans()), "bu": arr(np.bool_, (b,), st.booleans())}


# Ops whose kernels are big (GEMM, factorizations, sorting networks): a group of their own.
HEAVY = {"Sort", "ArgSort", "MatMul", "BatchMatMulV2", "Cholesky", "MatrixDeterminant",
         "MatrixInverse", "MatrixSolve"}
# Ops whose float64 kernel differs from the float32 one beyond the element type (their own
# polynomial or rounding code): also compiled for float64.
# (A few: each op's numba compile costs about a second of CI time.)
FLOAT64 = {"Identity", "Exp", "Log", "Tanh", "Sin", "Pow", "Cast", "Sum", "Max"}
# Data movement: the index arithmetic of gathers, pads and slices (one group).
MOVES = {"Transpose", "ConjugateTranspose", "Reshape", "ExpandDims", "Squeeze", "Tile", "Pad",
         "PadV2", "MirrorPad", "ReverseV2", "ReverseSequence", "Slice", "StridedSlice",
         "ConcatV2", "Pack",
         "Unpack", "Split", "SplitV", "GatherV2", "GatherNd", "OneHot", "BroadcastTo",
         "TensorScatterUpdate", "TensorStridedSliceUpdate", "Fill", "Range", "Shape", "ShapeN", "Size", "Rank",
         "SumToShape", "EnsureNonEmpty"}


INT_ONLY = {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift",
            "LogicalAnd", "LogicalOr", "LogicalNot", "All", "Any"}


def _pick(ops, keep):
    return [(n, f) for n, f in ops if n == "Identity" or keep(n)]


F32, F64 = _float_ops(tf.float32), _float_ops(tf.float64)
GROUPS = [
    Group("float32", _float_inputs(tf.float32), _pick(F32, lambda n: n not in HEAVY | MOVES),
          lambda: float_feeds(np.float32)),
    Group("float32_moves", _float_inputs(tf.float32), _pick(F32, MOVES.__contains__),
          lambda: float_feeds(np.float32)),
    Group("float32_heavy", _float_inputs(tf.float32), _pick(F32, HEAVY.__contains__),
          lambda: float_feeds(np.float32)),
    Group("float64", _float_inputs(tf.float64), _pick(F64, FLOAT64.__contains__),
          lambda: float_feeds(np.float64)),
    # integer-only and bool-only ops; the integer forms of the other ops (_int_ops) compile
    # for many minutes in one cluster (FloorDiv/FloorMod checks, integer reductions, ...),
    # so they are not in CI yet
    Group("int_bool", INT_INPUTS, _pick(_int_ops(), INT_ONLY.__contains__), int_feeds),
    # the convolutions (4-D inputs of their own): tests/conv_compiled_group.py
    Group("conv", CONV_INPUTS, conv_ops(), conv_feeds),
]

# pooling and normalization (4-D inputs of their own): tests/compiled_pool_norm_groups.py
from compiled_pool_norm_groups import groups as _pool_norm_groups  # noqa: E402

GROUPS.extend(_pool_norm_groups(Group))
