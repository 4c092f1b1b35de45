"""`tf.nn.in_top_k` and `tf.nn.embedding_lookup`, composed of existing ops (no op types of
their own; `tf.nn.top_k` is with the sorts, ops/sort_ops.py).

- `in_top_k(predictions, targets, k)`: per row, whether the target's prediction is among
  the k largest: fewer than k entries are strictly larger, so ties at the boundary count
  as in (TensorFlow's rule); a non-finite target prediction is never in.
- `embedding_lookup(params, ids, partition_strategy="mod", max_norm=None)`: rows of
  `params` (a tensor or Variable, or a list of shards) at `ids`.  With shards, "mod" puts
  id i in shard i % n at row i // n, and "div" splits the ids into contiguous ranges, the
  first `size % n` shards one row longer, as TensorFlow does.  `max_norm` scales rows whose
  L2 norm exceeds it down to it.  The gradient of each table (or shard: one gather per
  shard) is an IndexedSlices of the rows looked up (ops/indexed_slices.py), as in
  TensorFlow.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import get_default_graph
from . import (array_ops, fill_ops, gather_ops, math_binary, math_cast,
               math_compare, math_unary, reduction_ops, select_ops, shape_ops)
from .builder import to_tensor

__all__ = ["in_top_k", "embedding_lookup"]


def in_top_k(predictions, targets, k, name=None):
    """bool [batch]: whether `predictions[i, targets[i]]` is among row i's `k` largest."""
    graph = get_default_graph()
    with graph.name_scope(name or "InTopKV2"):
        p = to_tensor(predictions, name="predictions")
        t = to_tensor(targets, name="targets")
        if p.shape.ndims not in (None, 2) or t.shape.ndims not in (None, 1):
            raise ValueError(f"in_top_k: predictions must be [batch, classes] and targets "
                             f"[batch], got {p.shape} and {t.shape}.")
        target_value = gather_ops.gather(p, t, axis=1, batch_dims=1)
        above = math_compare.greater(p, array_ops.expand_dims(target_value, 1))
        larger = reduction_ops.reduce_sum(math_cast.cast(above, _dtypes.int32), axis=1)
        return math_compare.logical_and(math_compare.less(larger, int(k)),
                                        math_unary.is_finite(target_value))


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """Rows of `params` (or of its shards) at `ids` (module docstring)."""
    del validate_indices   # indices are always validated
    shards = list(params) if isinstance(params, (list, tuple)) else [params]
    if not shards:
        raise ValueError("embedding_lookup: params is an empty list.")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"embedding_lookup: partition_strategy must be 'mod' or 'div', not "
                         f"{partition_strategy!r}.")
    graph = get_default_graph()
    with graph.name_scope(name or "embedding_lookup"):
        ids = to_tensor(ids, name="ids")
        tables = [to_tensor(s) for s in shards]
        if len(tables) == 1:
            out = gather_ops.gather(tables[0], ids)
        else:   # a gather per shard: each shard's gradient is its own IndexedSlices
            n = len(tables)
            sizes = [math_cast.cast(shape_ops.shape(t)[0], ids.dtype) for t in tables]
            # ids outside [0, total rows) are an InvalidArgumentError, as a gather's
            ids = gather_ops.gather(fill_ops.range(0, math_binary.add_n(sizes), dtype=ids.dtype),
                                    ids)
            out, start = None, None
            for p, (table, size) in enumerate(zip(tables, sizes)):
                if partition_strategy == "mod":
                    row_of, mask = ids // n, math_compare.equal(ids % n, p)
                else:   # contiguous ranges of ids, in shard order
                    row_of = ids if start is None else ids - start
                    mask = math_compare.logical_and(math_compare.greater_equal(row_of, 0),
                                                    math_compare.less(row_of, size))
                    start = size if start is None else start + size
                rows = math_binary.maximum(math_binary.minimum(row_of, size - 1), 0)
                picked = gather_ops.gather(table, rows)
                extra = (picked.shape.ndims or 0) - (mask.shape.ndims or 0)
                for _ in range(max(extra, 0)):   # one per embedding dimension
                    mask = array_ops.expand_dims(mask, -1)
                part = select_ops.where_v2(mask, picked, fill_ops.zeros_like(picked))
                out = part if out is None else out + part
        if max_norm is not None:
            squares = reduction_ops.reduce_sum(math_binary.multiply(out, out), axis=-1,
                                               keepdims=True)
            norm = math_unary.sqrt(squares)
            scale = select_ops.where_v2(math_compare.greater(norm, max_norm), max_norm / norm,
                                        fill_ops.ones_like(norm))
            out = out * scale
        return out
