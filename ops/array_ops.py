"""Array manipulation ops: the one public face of the array-op modules.

It defines nothing: the array ops live beside this module and are re-exported from it, so
`OP_DEFS` and `__all__` below cover them all: `rearrange_ops` (Transpose,
ConjugateTranspose, ExpandDims, Squeeze, ReverseV2), `reshape_ops` (Reshape), `join_ops`
(ConcatV2, Pack, Unpack), `split_ops` (Split, SplitV), `fill_ops` (Fill, ZerosLike,
OnesLike, Range and zeros/ones), `one_hot_ops` (OneHot), `pad_ops` (Pad, PadV2, MirrorPad,
Tile, BroadcastTo).  Each module gives its OpDefs their gradients and lowerings.  Like every
gathering module it is imported by no op module (see ops/__init__.py): op modules import the
defining modules.

Shape, axis and permutation arguments are int32/int64 *tensor inputs*, as in TensorFlow: their
values are read with `static_value` for shape inference when known, and unknown dimensions
result otherwise.  Errors visible from static values are ValueErrors at construction; the
same errors found while running are InvalidArgumentErrors naming the shapes and values.
"""

from __future__ import annotations

from . import fill_ops, join_ops, one_hot_ops, pad_ops, rearrange_ops, reshape_ops, split_ops
from .builder import make_op  # noqa: F401 - array_ops.make_op, as before the split
from .fill_ops import fill, ones, ones_like, range, zeros, zeros_like  # noqa: F401,A004
from .join_ops import concat, stack, unstack  # noqa: F401
from .one_hot_ops import one_hot  # noqa: F401
from .pad_ops import broadcast_to, pad, tile  # noqa: F401
from .rearrange_ops import (CONJUGATE_TRANSPOSE, EXPAND_DIMS, REVERSE_V2,  # noqa: F401
                            SQUEEZE, TRANSPOSE, expand_dims, reverse, reverse_v2, squeeze,
                            transpose)
from .reshape_ops import RESHAPE, reshape  # noqa: F401
from .split_ops import split  # noqa: F401

OP_DEFS = (reshape_ops.OP_DEFS + rearrange_ops.OP_DEFS + join_ops.OP_DEFS + split_ops.OP_DEFS
           + fill_ops.OP_DEFS + one_hot_ops.OP_DEFS + pad_ops.OP_DEFS)
__all__ = ["reshape", *rearrange_ops.__all__, *join_ops.__all__, *split_ops.__all__,
           *fill_ops.__all__, *one_hot_ops.__all__, *pad_ops.__all__]
