"""Batch-normalization pieces shared by norm_ops.py (FusedBatchNormV3) and
norm_grad_ops.py (FusedBatchNormGradV3): the attrs with TensorFlow's defaults, the operand
checks of shape inference, the channels-last views of the reference kernels, and
`Channels`, the kernel-IR builder of per-channel sums and elementwise bodies.

The channel is the last dim for NHWC/NDHWC and dim 1 for NCHW/NCDHW; x is float16
(computed in float32), float32 or float64, the per-channel vectors ("U") float32 or x's
dtype; the mean/variance inputs of a training op without blending may be empty.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.ir import Combiner
from ..compiler.core.ir import Scalar as S
from ..compiler.core.ir_build import cast
from . import lower_index as lx
from .array_common import check_rank, runtime_error
from .builder import check_dtype

X_TYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64)
RANKS = {"NHWC": 4, "NCHW": 4, "NDHWC": 5, "NCDHW": 5}


def channel_axis(data_format: str) -> int:
    """The channel dim of a `data_format` tensor."""
    return 1 if data_format.startswith("NC") else RANKS[data_format] - 1


def settings(attrs):
    """(epsilon, exponential_avg_factor, data_format, is_training) with TF's defaults."""
    return (float(attrs.get("epsilon", 1e-4)), float(attrs.get("exponential_avg_factor", 1.0)),
            attrs.get("data_format", "NHWC"), bool(attrs.get("is_training", True)))


def stats_optional(attrs) -> bool:
    """Whether the mean/variance inputs may be empty (training without blending)."""
    _, factor, _, training = settings(attrs)
    return training and factor == 1.0


# --- shape inference -----------------------------------------------------------------------------


def check_operands(op, data_names, vector_names):
    """Dtype/rank checks; returns (data_format, channel count or None, U)."""
    data_format = settings(op.attrs)[2]
    if data_format not in RANKS:
        raise ValueError(f"{op.type}: data_format must be one of {sorted(RANKS)}, got "
                         f"{data_format!r}.")
    rank, axis = RANKS[data_format], channel_axis(data_format)
    n_data = len(data_names)
    data, vectors = op.inputs[:n_data], op.inputs[n_data:n_data + len(vector_names)]
    for t, name in zip(data, data_names):
        check_dtype(t, X_TYPES, name)
        check_rank(t, rank, name)
        if t.dtype is not data[0].dtype or not t.shape.is_compatible_with(data[0].shape):
            raise ValueError(f"{op.type}: {name} ({t.dtype.name} {t.shape}) must have the "
                             f"dtype and shape of {data_names[0]} ({data[0].dtype.name} "
                             f"{data[0].shape}).")
    u = vectors[0].dtype
    if u not in (_dtypes.float32, data[0].dtype):
        raise TypeError(f"{op.type}: {vector_names[0]} must be float32 or {data[0].dtype.name}"
                        f" (the dtype of {data_names[0]}), got {u.name}.")
    shape = data[0].shape
    channels = shape.dims[axis] if shape.ndims is not None else None
    for t, name in zip(vectors, vector_names):
        if t.dtype is not u:
            raise TypeError(f"{op.type}: {name} has dtype {t.dtype.name} but "
                            f"{vector_names[0]} has {u.name}; the vectors share one dtype.")
        check_rank(t, 1, name)
        size = t.shape.dims[0] if t.shape.ndims == 1 else None
        optional = name in ("mean", "variance") and stats_optional(op.attrs)
        if channels is not None and size is not None and size != channels \
                and not (optional and size == 0):
            raise ValueError(f"{op.type}: {name} must have one element per channel: "
                             f"{size} elements for {channels} channels (dim {axis} of "
                             f"{data_names[0]} {shape}, data_format {data_format}).")
        if channels is None and size is not None and not (optional and size == 0):
            channels = size
    return data_format, channels, u


# --- reference kernels ---------------------------------------------------------------------------


def channels_last(ctx, op_type, attrs, x, vectors, names):
    """(x as [..., C] in the compute dtype, the vectors in it, accumulator dtype)."""
    data_format = settings(attrs)[2]
    if x.ndim != RANKS[data_format]:
        raise runtime_error(ctx, f"{op_type}: the input must be {RANKS[data_format]}-"
                                 f"dimensional for {data_format}, got shape {list(x.shape)}")
    acc = np.float64 if x.dtype == np.float64 else np.float32
    x_last = np.moveaxis(x, channel_axis(data_format), -1).astype(acc)
    channels = x_last.shape[-1]
    out = []
    for v, name in zip(vectors, names):
        if v.shape != (channels,) and not (name in ("mean", "variance") and v.size == 0
                                            and stats_optional(attrs)):
            raise runtime_error(ctx, f"{op_type}: {name} must have shape [{channels}] (one "
                                     f"element per channel of {list(x.shape)}), got "
                                     f"{list(v.shape)}")
        out.append(v.astype(acc))
    return x_last, out, acc


def restore(x_last, like, data_format):
    """A channels-last result in `data_format` order and the dtype of `like`."""
    return np.ascontiguousarray(np.moveaxis(x_last, -1, channel_axis(data_format))
                                .astype(like.dtype))


# --- kernel IR -----------------------------------------------------------------------------------


class Channels:
    """Kernel-IR pieces of a per-channel normalization of node `x` (in the op's layout),
    computed in `acc`."""

    def __init__(self, x, data_format: str, acc):
        self.x, self.acc = x, acc
        self.rank, self.axis = len(x.shape), channel_axis(data_format)
        self.others = [k for k in range(self.rank) if k != self.axis]
        self.channels = x.shape[self.axis]
        self.count = lx.product(x.shape[k] for k in self.others)

    def op(self, kind: S, *args) -> ir.Expr:
        """A scalar operation in the compute dtype."""
        return ir.make(kind, self.acc, args)

    def load(self, node, idx) -> ir.Expr:
        """node[idx] in the compute dtype."""
        return cast(ir.load(node, tuple(idx)), self.acc)

    def at(self, vector, c) -> ir.Expr:
        """Element c of a per-channel vector in the compute dtype."""
        return cast(ir.load(vector, (c,)), self.acc)

    def const(self, value) -> ir.Expr:
        """A constant of the compute dtype."""
        return ir.const(value, self.acc)

    def sum(self, body_fn):
        """[C]: the sum over every other dim of body_fn(index of x)."""
        rvars = [ir.reduce_var(j) for j in range(len(self.others))]
        idx = [None] * self.rank
        idx[self.axis] = ir.index(0) if ir.is_const(self.channels, 1) else ir.axis_var(0)
        for k, r in zip(self.others, rvars):
            idx[k] = r
        return ir.reduce(self.acc, (self.channels,), (ir.axis_var(0),), rvars,
                         [self.x.shape[k] for k in self.others], body_fn(idx), Combiner.ADD)

    def vector(self, fn):
        """[C]: fn(channel index)."""
        c = ir.axis_var(0)
        return ir.compute(self.acc, (self.channels,), (c,), fn(c))

    def elementwise(self, fn, dtype):
        """x-shaped: fn(index, channel index), cast to `dtype`."""
        axes = ir.axis_vars(self.rank)
        return ir.compute(dtype, self.x.shape, axes, cast(fn(axes, axes[self.axis]), dtype))


def accumulator(dtype):
    """The dtype a normalization of `dtype` computes in (float32 for float16)."""
    return _dtypes.float64 if dtype is _dtypes.float64 else _dtypes.float32


def require_channels(ctx, k: Channels, vectors, op_type):
    """Run-time checks that each (vector node, name) has one element per channel."""
    for v, name in vectors:
        ctx.check_equal(v.shape[0], k.channels, f"{op_type}: {name} must have one element "
                                                "per channel")


def empty(u):
    """An empty vector of dtype `u` (the unused reserve-space outputs)."""
    return ir.compute(u, (ir.index(0),), ir.axis_vars(1), ir.const(0, u))


def square(k: Channels, e):
    """e * e in k's compute dtype."""
    return k.op(S.MUL, e, e)


def float_attr(value) -> float:
    """A float attr as a GraphDef holds it (32 bits, as TensorFlow), so a written and
    re-read graph computes what this one does."""
    return float(np.float32(value))
