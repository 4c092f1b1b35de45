"""Random ops and TensorFlow 1.x's seed rules.

Ops: RandomStandardNormal, TruncatedNormal, RandomUniform, RandomUniformInt, RandomShuffle
and Multinomial.  Public functions: `random_normal`, `truncated_normal`, `random_uniform`,
`random_shuffle`, `multinomial`, `set_random_seed`, `get_seed`.

Seeds follow TensorFlow 1.x: `set_random_seed` sets the default graph's `seed`;
`get_seed(op_seed)` turns (graph seed, op seed) into the pair (seed, seed2) stored as op
attrs (a graph seed with no op seed uses the number of ops already in the graph as the op
seed, so different random ops of one graph differ; an op seed with no graph seed uses
DEFAULT_GRAPH_SEED; neither means nondeterministic, stored as seed = seed2 = 0).

Generator: each random op draws from `ctx.state.generator(op, seed, seed2)`, a NumPy
`Generator(Philox)` per session and op, keyed by (seed, seed2) (fresh entropy when both are
0).  So every new session of a seeded graph repeats the same sequence, and successive runs
in one session continue it.  Values come from NumPy's Generator methods (ziggurat normals,
uniform doubles/floats), generated directly in float32 for float32 ops and float64 for
float64 ops; float16 normals are drawn in float32 and rounded, float16 uniforms are built
from 10 random mantissa bits so they stay in [0, 1).  The numbers are not TensorFlow's
(its Philox stream is not reproduced); only the distributions and the seed rules are.

Scaling follows TensorFlow's graphs: `random_normal` is RandomStandardNormal * stddev + mean
(ops "mul" and the math_binary.add named after the scope), `random_uniform` for floats is
RandomUniform * (maxval - minval) + minval; integer uniforms are one RandomUniformInt op.
All random ops are Trait.STATEFUL: they are never constant-folded, merged or pruned.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Graph, Tensor, get_default_graph
from ..compiler.core.shapes import TensorShape
from ..errors import InvalidArgumentError
from . import math_binary
from .builder import FLOATS, INDEX_TYPES, check_dtype, graph_for, make_op, to_tensor
from .conversion import static_shape_from_tensor, static_value
from .registry import OpDef, Trait, not_differentiable

__all__ = ["random_normal", "truncated_normal", "random_uniform", "random_shuffle",
           "multinomial", "set_random_seed", "get_seed"]

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1
_STATEFUL = frozenset({Trait.STATEFUL})

# --- seeds ------------------------------------------------------------------------------------


def set_random_seed(seed: int | None) -> None:
    """Set the graph-level seed of the default graph (None makes it unseeded again)."""
    get_default_graph().seed = None if seed is None else int(seed)


def _seeds_for(graph: Graph, op_seed):
    graph_seed = graph.seed
    if graph_seed is not None:
        if op_seed is None:
            op_seed = len(graph.get_operations())  # TF 1.x: the graph's last op id
        seeds = (int(graph_seed) % _MAXINT32, int(op_seed) % _MAXINT32)
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, int(op_seed) % _MAXINT32)
    else:
        return None, None
    if seeds == (0, 0):  # (0, 0) would mean "nondeterministic" to the kernels
        seeds = (0, _MAXINT32)
    return seeds


def get_seed(op_seed: int | None):
    """The (seed, seed2) pair an op with `op_seed` uses in the default graph.

    (graph seed, ops in graph) when only the graph seed is set; (DEFAULT_GRAPH_SEED, op seed)
    when only the op seed is; (graph seed, op seed) when both are; (None, None) when neither
    is, which makes the op nondeterministic.
    """
    return _seeds_for(get_default_graph(), op_seed)


def _seed_attrs(graph: Graph, seed) -> dict:
    s1, s2 = _seeds_for(graph, seed)
    return {"seed": s1 or 0, "seed2": s2 or 0}


def _generator(ctx, attrs) -> np.random.Generator:
    if ctx is None or ctx.state is None:
        raise RuntimeError("Random ops need a session's state to draw numbers.")
    return ctx.state.generator(ctx.op, attrs["seed"], attrs["seed2"])


# --- shapes -------------------------------------------------------------------------------------


def _shape_tensor(shape, graph) -> Tensor:
    """The 1-D integer tensor describing `shape` (a list, TensorShape, array or tensor)."""
    if isinstance(shape, TensorShape):
        if not shape.is_fully_defined():
            raise ValueError(f"A random op needs a fully defined shape, got {shape}; pass a "
                             "shape tensor (e.g. flowjit.shape(x)) for run-time sizes.")
        shape = shape.as_list()
    empty = isinstance(shape, (list, tuple)) and len(shape) == 0
    return to_tensor(shape, dtype=_dtypes.int32 if empty else None, graph=graph, name="shape")


def _shape_infer(shape: Tensor) -> TensorShape:
    check_dtype(shape, INDEX_TYPES, "shape")
    if shape.shape.ndims is not None and shape.shape.ndims != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {shape.shape.ndims}: the 'shape' "
                         f"input {shape.name} of a random op must be a 1-D integer tensor.")
    return static_shape_from_tensor(shape)


def _run_shape(ctx, value) -> tuple:
    if value.ndim != 1:
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"shape must be a vector, got shape {value.shape}")
    dims = tuple(int(d) for d in value)
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"shape {list(dims)} has a negative dimension")
    return dims


def _float_dtype(dtype, fn: str):
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in FLOATS:
        raise TypeError(f"{fn} needs a floating-point dtype (float16, float32, float64), "
                        f"got {dtype.name}.")
    return dtype


# --- sampling ---------------------------------------------------------------------------------


def _standard_normal(gen, shape, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        return gen.standard_normal(shape, dtype=np.float64)
    return gen.standard_normal(shape, dtype=np.float32).astype(dtype, copy=False)


def _truncated(gen, shape, dtype: np.dtype) -> np.ndarray:
    work = np.float64 if dtype == np.float64 else np.float32
    out = np.array(gen.standard_normal(shape, dtype=work), dtype=work)
    bad = np.abs(out) > 2.0
    while bad.any():  # re-draw values beyond two standard deviations
        out[bad] = gen.standard_normal(int(bad.sum()), dtype=work)
        bad = np.abs(out) > 2.0
    return out.astype(dtype, copy=False)


def _uniform01(gen, shape, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float16:  # 10 mantissa bits: every value is exact in float16 and < 1
        return (gen.integers(0, 1024, shape, dtype=np.int32) / 1024.0).astype(np.float16)
    return gen.random(shape, dtype=np.float64 if dtype == np.float64 else np.float32)


# --- RandomStandardNormal, TruncatedNormal, RandomUniform ---------------------------------------


def _float_random_infer(op):
    return [(op.get_attr("dtype"), _shape_infer(op.inputs[0]))]


def _float_random_kernel(sample):
    def kernel(ctx, inputs, attrs):
        shape = _run_shape(ctx, inputs[0])
        dtype = attrs["dtype"].np_dtype
        return [np.asarray(sample(_generator(ctx, attrs), shape, dtype), dtype=dtype)]

    return kernel


# random numbers are not functions of their inputs (the shape): not differentiable
RANDOM_STANDARD_NORMAL = OpDef("RandomStandardNormal", _float_random_infer,
                               _float_random_kernel(_standard_normal), traits=_STATEFUL,
                               gradient=not_differentiable)
TRUNCATED_NORMAL = OpDef("TruncatedNormal", _float_random_infer,
                         _float_random_kernel(_truncated), traits=_STATEFUL,
                         gradient=not_differentiable)
RANDOM_UNIFORM = OpDef("RandomUniform", _float_random_infer,
                       _float_random_kernel(_uniform01), traits=_STATEFUL,
                       gradient=not_differentiable)


def _scaled(op_def, fn, shape, mean, stddev, dtype, seed, name):
    """`op_def(shape) * stddev + mean` in a name scope, as TensorFlow builds it."""
    dtype = _float_dtype(dtype, fn)
    graph = graph_for((shape, mean, stddev))
    with graph.as_default(), graph.name_scope(name or fn) as scope:
        shape_t = _shape_tensor(shape, graph)
        mean_t = to_tensor(mean, dtype=dtype, graph=graph, name="mean")
        stddev_t = to_tensor(stddev, dtype=dtype, graph=graph, name="stddev")
        rnd = make_op(op_def, [shape_t], {"dtype": dtype, **_seed_attrs(graph, seed)},
                      op_def.name).outputs[0]
        return math_binary.add(math_binary.multiply(rnd, stddev_t, name="mul"), mean_t, name=scope)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed: int | None = None,
                  name: str | None = None) -> Tensor:
    """Samples from a normal distribution with `mean` and `stddev`, of shape `shape`.

    `shape` is a list, TensorShape or 1-D integer tensor (possibly only known when the graph
    runs); `mean` and `stddev` are scalars or tensors broadcastable to `shape`.
    """
    return _scaled(RANDOM_STANDARD_NORMAL, "random_normal", shape, mean, stddev, dtype, seed,
                   name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                     seed: int | None = None, name: str | None = None) -> Tensor:
    """Normal samples with values more than two stddevs from the mean re-drawn."""
    return _scaled(TRUNCATED_NORMAL, "truncated_normal", shape, mean, stddev, dtype, seed, name)


# --- RandomUniformInt ---------------------------------------------------------------------------


def _uniform_int_infer(op):
    shape, lo, hi = op.inputs
    check_dtype(lo, INDEX_TYPES, "minval")
    if hi.dtype is not lo.dtype:
        raise TypeError(f"minval ({lo.dtype.name}) and maxval ({hi.dtype.name}) of "
                        "RandomUniformInt must have one dtype.")
    for t, what in ((lo, "minval"), (hi, "maxval")):
        if not t.shape.is_compatible_with(()):
            raise ValueError(f"{what} must be a scalar, got shape {t.shape}.")
    return [(lo.dtype, _shape_infer(shape))]


def _uniform_int_kernel(ctx, inputs, attrs):
    shape = _run_shape(ctx, inputs[0])
    lo, hi = inputs[1], inputs[2]
    if lo.ndim or hi.ndim:
        raise InvalidArgumentError(None, ctx.op, f"minval and maxval must be scalars, got "
                                                 f"shapes {lo.shape} and {hi.shape}")
    if np.prod(shape) and not lo < hi:
        raise InvalidArgumentError(None, ctx.op, f"Need minval < maxval: {lo} >= {hi}")
    if not np.prod(shape):
        return [np.zeros(shape, dtype=lo.dtype)]
    return [np.asarray(_generator(ctx, attrs).integers(lo, hi, shape, dtype=lo.dtype))]


RANDOM_UNIFORM_INT = OpDef("RandomUniformInt", _uniform_int_infer, _uniform_int_kernel,
                           traits=_STATEFUL)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32,
                   seed: int | None = None, name: str | None = None) -> Tensor:
    """Uniform samples in [minval, maxval) (maxval defaults to 1 for floats).

    Integer dtypes (int32, int64) need `maxval`, and draw each integer equally often.
    """
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if dtype not in INDEX_TYPES:
            raise TypeError(f"random_uniform supports int32 and int64, got {dtype.name}.")
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        graph = graph_for((shape, minval, maxval))
        with graph.as_default(), graph.name_scope(name or "random_uniform") as scope:
            shape_t = _shape_tensor(shape, graph)
            lo = to_tensor(minval, dtype=dtype, graph=graph, name="min")
            hi = to_tensor(maxval, dtype=dtype, graph=graph, name="max")
            return make_op(RANDOM_UNIFORM_INT, [shape_t, lo, hi], _seed_attrs(graph, seed),
                           scope).outputs[0]
    dtype = _float_dtype(dtype, "random_uniform")
    maxval = 1 if maxval is None else maxval
    graph = graph_for((shape, minval, maxval))
    with graph.as_default(), graph.name_scope(name or "random_uniform") as scope:
        shape_t = _shape_tensor(shape, graph)
        lo = to_tensor(minval, dtype=dtype, graph=graph, name="min")
        hi = to_tensor(maxval, dtype=dtype, graph=graph, name="max")
        rnd = make_op(RANDOM_UNIFORM, [shape_t], {"dtype": dtype, **_seed_attrs(graph, seed)},
                      "RandomUniform").outputs[0]
        scale = math_binary.subtract(hi, lo, name="sub")
        return math_binary.add(math_binary.multiply(rnd, scale, name="mul"), lo, name=scope)


# --- RandomShuffle ------------------------------------------------------------------------------


def _shuffle_kernel(ctx, inputs, attrs):
    value = inputs[0]
    if value.ndim == 0 or value.shape[0] <= 1:
        return [value.copy()]
    return [value[_generator(ctx, attrs).permutation(value.shape[0])]]


RANDOM_SHUFFLE = OpDef("RandomShuffle", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
                       _shuffle_kernel, traits=_STATEFUL, gradient=not_differentiable)


def random_shuffle(value, seed: int | None = None, name: str | None = None) -> Tensor:
    """`value` with its first dimension randomly permuted."""
    value = to_tensor(value)
    return make_op(RANDOM_SHUFFLE, [value], _seed_attrs(value.graph, seed),
                   name or "RandomShuffle").outputs[0]


# --- Multinomial --------------------------------------------------------------------------------


def _multinomial_infer(op):
    logits, num = op.inputs
    check_dtype(logits, _dtypes.REAL_DTYPES, "logits")
    check_dtype(num, (_dtypes.int32,), "num_samples")
    if logits.shape.ndims is not None and logits.shape.ndims != 2:
        raise ValueError(f"logits should be a matrix [batch_size, num_classes], got shape "
                         f"{logits.shape}.")
    if not num.shape.is_compatible_with(()):
        raise ValueError(f"num_samples should be a scalar, got shape {num.shape}.")
    n = static_value(num)
    batch = logits.shape[0].value if logits.shape.ndims is not None else None
    return [(op.get_attr("output_dtype"), TensorShape([batch, None if n is None else int(n)]))]


def _multinomial_kernel(ctx, inputs, attrs):
    logits, num = inputs[0].astype(np.float64), int(inputs[1])
    if logits.ndim != 2:
        raise InvalidArgumentError(None, ctx.op, f"logits should be a matrix, got shape "
                                                 f"{logits.shape}")
    if num < 0:
        raise InvalidArgumentError(None, ctx.op, f"num_samples should be >= 0, got {num}")
    batch, classes = logits.shape
    if classes == 0 and batch and num:
        raise InvalidArgumentError(None, ctx.op, "num_classes should be positive, got 0")
    out = np.zeros((batch, num), dtype=attrs["output_dtype"].np_dtype)
    if out.size == 0:
        return [out]
    with np.errstate(invalid="ignore", over="ignore"):
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = np.nan_to_num(probs, nan=0.0)
    cdf = np.cumsum(probs, axis=1)
    u = _generator(ctx, attrs).random((batch, num)) * cdf[:, -1:]
    for b in range(batch):
        out[b] = np.minimum(np.searchsorted(cdf[b], u[b], side="right"), classes - 1)
    return [out]


MULTINOMIAL = OpDef("Multinomial", _multinomial_infer, _multinomial_kernel, traits=_STATEFUL,
                    gradient=not_differentiable)


def multinomial(logits, num_samples, seed: int | None = None, name: str | None = None,
                output_dtype=_dtypes.int64) -> Tensor:
    """Class indices drawn from the categorical distributions softmax(logits[i, :])."""
    output_dtype = _dtypes.as_dtype(output_dtype)
    if output_dtype not in INDEX_TYPES:
        raise TypeError(f"output_dtype must be int32 or int64, got {output_dtype.name}.")
    logits = to_tensor(logits)
    num = to_tensor(num_samples, dtype=_dtypes.int32, graph=logits.graph, name="num_samples")
    return make_op(MULTINOMIAL, [logits, num],
                   {"output_dtype": output_dtype, **_seed_attrs(logits.graph, seed)},
                   name or "Multinomial").outputs[0]


OP_DEFS = (RANDOM_STANDARD_NORMAL, TRUNCATED_NORMAL, RANDOM_UNIFORM, RANDOM_UNIFORM_INT,
           RANDOM_SHUFFLE, MULTINOMIAL)
