"""Batches of variable-length sequences: ReverseSequence (`reverse_sequence`) and the
composite `sequence_mask`.

`reverse_sequence(input, seq_lengths, seq_axis, batch_axis=0)`: for each batch entry b,
the first `seq_lengths[b]` elements along `seq_axis` in reverse order, the rest as they
were (TensorFlow's ReverseSequence, attrs `seq_dim`, `batch_dim`).  A length below 0 or
above the sequence axis's size is an InvalidArgumentError at run time.  It is how
`bidirectional_dynamic_rnn` runs its backward direction over padded batches.

Gradient: the same reversal of the output gradient (the op is a permutation that is its
own inverse); the lengths get none.  Lowered to one COMPUTE that loads the input at the
mirrored position, `s < L ? L - 1 - s : s` with `L = seq_lengths[b]`; a REDUCE over the
lengths checks their range first, and the loads are clamped with a bound that reads that
check's flag, so the check runs before them and no load leaves the input.

`sequence_mask(lengths, maxlen=None, dtype=bool)`: `mask[..., j] = j < lengths[...]`
(`maxlen` defaults to the largest length), built from Range, Less and Cast.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from . import fill_ops, math_cast, math_compare, reduction_ops, rearrange_ops
from . import lower_index as lx
from .array_common import check_rank, normalize_axis, runtime_error
from .builder import check_dtype, make_op, to_tensor
from .lower_util import require_real
from .registry import OpDef

_LENGTH_TYPES = (_dtypes.int32, _dtypes.int64)


def _infer(op):
    x, lengths = op.inputs
    check_dtype(lengths, _LENGTH_TYPES, "seq_lengths")
    check_rank(lengths, 1, "seq_lengths")
    seq, batch = op.get_attr("seq_dim"), op.get_attr("batch_dim")
    if seq == batch:
        raise ValueError(f"{op.name}: seq_dim and batch_dim must differ, both are {seq}.")
    rank = x.shape.ndims
    if rank is not None:
        if max(seq, batch) >= rank:
            raise ValueError(f"{op.name}: seq_dim {seq} and batch_dim {batch} must be below "
                             f"the rank of input {x.name} ({rank}, shape {x.shape}).")
        n, m = x.shape.as_list()[batch], lengths.shape.as_list()[0] \
            if lengths.shape.ndims == 1 else None
        if n is not None and m is not None and n != m:
            raise ValueError(f"{op.name}: seq_lengths has {m} entries but input {x.name} has "
                             f"{n} rows along batch_dim {batch} (shape {x.shape}).")
    return [(x.dtype, x.shape)]


def _kernel(ctx, inputs, attrs):
    x, lengths = inputs
    seq, batch = attrs["seq_dim"], attrs["batch_dim"]
    if lengths.shape[0] != x.shape[batch]:
        raise runtime_error(ctx, f"seq_lengths has {lengths.shape[0]} entries, input has "
                                 f"{x.shape[batch]} along batch_dim {batch}")
    out = np.array(x, copy=True)
    for b, length in enumerate(lengths.tolist()):
        if not 0 <= length <= x.shape[seq]:
            raise runtime_error(ctx, f"seq_lengths[{b}] = {length} is not in [0, "
                                     f"{x.shape[seq]}] (the size of seq_dim {seq})")
        key = [slice(None)] * x.ndim
        key[batch], key[seq] = b, slice(0, length)
        part = x[tuple(key)]
        out[tuple(key)] = np.flip(part, axis=seq - (1 if batch < seq else 0))
    return [out]


def _gradient(op, grad):
    return [make_op(REVERSE_SEQUENCE, [grad, op.inputs[1]], dict(op.attrs)).outputs[0], None]


def _lower(ctx, op, inputs):
    require_real(op, complex_ok=True)
    x, lengths = inputs
    seq, batch = op.get_attr("seq_dim"), op.get_attr("batch_dim")
    size = x.shape[seq]
    lx.require_equal(ctx, lengths.shape[0], x.shape[batch],
                     f"seq_lengths must have one entry per row of batch_dim in {op.name}")
    r = ir.reduce_var(0)
    length = lx.index(ir.load(lengths, (r,)))
    ok = ir.reduce(_dtypes.bool_, [], [], [r], lengths.shape,
                   lx.all_of([lx.ge(length, 0), lx.le(length, size)]), ir.Combiner.AND)
    flag = ir.load(ok, ())
    ctx.check(flag, f"{op.name}: a sequence length is not in [0, size of seq_dim]")
    axes = ir.axis_vars(len(x.shape))
    n = lx.index(ir.load(lengths, (axes[batch],)))
    s = axes[seq]
    mirrored = lx.select(lx.lt(s, n), lx.sub(lx.sub(n, 1), s), s)
    at = lx.maximum(lx.minimum(mirrored, lx.select(flag, lx.sub(size, 1), ir.index(0))), 0)
    index = list(axes)
    index[seq] = at
    return [ir.compute(x.dtype, x.shape, axes, ir.load(x, tuple(index)))]


REVERSE_SEQUENCE = OpDef("ReverseSequence", _infer, _kernel, gradient=_gradient, lower=_lower,
                         doc="Each batch entry's first seq_lengths[b] elements along seq_dim "
                             "reversed.")


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,
                     seq_dim=None, batch_dim=None) -> Tensor:
    """`input` with, for each index b along `batch_axis` (default 0), its first
    `seq_lengths[b]` elements along `seq_axis` reversed (`seq_dim`/`batch_dim`: TF 1.x's
    names for the axes)."""
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else (batch_dim or 0)
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis is required.")
    x = to_tensor(input)
    lengths = to_tensor(seq_lengths, graph=x.graph, name="seq_lengths")
    rank = x.shape.ndims
    seq_axis, batch_axis = int(seq_axis), int(batch_axis)
    if rank is not None:
        seq_axis = normalize_axis(seq_axis, rank, "seq_axis")
        batch_axis = normalize_axis(batch_axis, rank, "batch_axis")
    elif seq_axis < 0 or batch_axis < 0:
        raise ValueError("reverse_sequence: negative axes need an input of known rank.")
    return make_op(REVERSE_SEQUENCE, [x, lengths], {"seq_dim": seq_axis,
                                                    "batch_dim": batch_axis},
                   name or "ReverseSequence").outputs[0]


def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool_, name=None) -> Tensor:
    """mask[i..., j] = j < lengths[i...], of shape lengths.shape + [maxlen]; `maxlen`
    defaults to the largest length."""
    lengths = to_tensor(lengths)
    check_dtype(lengths, _LENGTH_TYPES, "lengths")
    with lengths.graph.name_scope(name or "SequenceMask"):
        if maxlen is None:
            maxlen = reduction_ops.reduce_max(lengths)
        limit = math_cast.cast(to_tensor(maxlen, graph=lengths.graph), lengths.dtype)
        positions = fill_ops.range(0, limit, 1, dtype=lengths.dtype)
        mask = math_compare.less(positions, rearrange_ops.expand_dims(lengths, -1))
        dtype = _dtypes.as_dtype(dtype)
        return mask if dtype is _dtypes.bool_ else math_cast.cast(mask, dtype)


OP_DEFS = (REVERSE_SEQUENCE,)
