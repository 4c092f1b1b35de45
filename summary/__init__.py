"""`tf.summary` (TF 1.x): summary ops and the event-file writer for TensorBoard.

`scalar`, `histogram`, `image`, `text` and `tensor_summary` add an op (ops/summary_ops.py)
whose value is a serialized `Summary` protobuf, add it to the `summaries` collection
(`GraphKeys.SUMMARIES`) and return it; the tag is the op's name in the current name scope,
as in TensorFlow.  `merge(inputs)` and `merge_all()` combine them into one string;
`FileWriter` (summary/writer.py) writes what a session computes to event files that
TensorBoard reads.  `Summary`, `Event`, `SessionLog` and `HistogramProto` are the protobuf
messages (protos/).
"""

from __future__ import annotations

import re

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys, get_default_graph
from ..ops import summary_ops
from ..ops.builder import make_op, to_tensor
from ..protos import Event, HistogramProto, SessionLog, Summary, SummaryMetadata
from .writer import FileWriter, run_metadata_proto

__all__ = ["scalar", "histogram", "image", "text", "tensor_summary", "merge", "merge_all",
           "FileWriter", "FileWriterCache", "Summary", "Event", "SessionLog",
           "HistogramProto", "SummaryMetadata", "run_metadata_proto"]


def _collect(summary, collections):
    graph = summary.graph
    for key in (collections if collections is not None else [GraphKeys.SUMMARIES]):
        graph.add_to_collection(key, summary)
    return summary


def _clean(name: str) -> str:
    """`name` with characters a scope name cannot hold replaced by "_" and leading "/"
    removed, as TensorFlow cleans summary names."""
    return re.sub(r"[^-/\w.]", "_", str(name)).lstrip("/")


def _scoped(name: str, family=None):
    """(tag, scope) for a summary called `name` in the current name scope."""
    graph = get_default_graph()
    name = _clean(name)
    scope_name = f"{_clean(family)}/{name}" if family else name
    with graph.name_scope(scope_name) as scope:
        return scope.rstrip("/"), scope


def scalar(name: str, tensor, collections=None, family=None):
    """A summary of one scalar value, tagged with `name` in the current name scope."""
    tensor = to_tensor(tensor)
    if tensor.shape.ndims not in (None, 0):
        raise ValueError(f"tf.summary.scalar '{name}' needs a scalar, got {tensor.name} of "
                         f"shape {tensor.shape}.")
    if not (tensor.dtype.is_floating or tensor.dtype.is_integer or tensor.dtype.is_bool):
        raise TypeError(f"tf.summary.scalar '{name}' needs a real number, got "
                        f"{tensor.dtype.name}.")
    tag, scope = _scoped(name, family)
    tags = to_tensor(np.array(tag.encode(), dtype=object), dtype=_dtypes.string)
    op = make_op(summary_ops.SCALAR_SUMMARY, [tags, tensor], {}, scope)
    return _collect(op.outputs[0], collections)


def histogram(name: str, values, collections=None, family=None):
    """A summary of the distribution of `values` (any shape, real numbers)."""
    values = to_tensor(values)
    if not values.dtype.is_numeric and not values.dtype.is_bool:
        raise TypeError(f"tf.summary.histogram '{name}' needs numbers, got "
                        f"{values.dtype.name}.")
    tag, scope = _scoped(name, family)
    op = make_op(summary_ops.HISTOGRAM_SUMMARY, [_tag(tag), values], {}, scope)
    return _collect(op.outputs[0], collections)


def image(name: str, tensor, max_outputs: int = 3, collections=None, family=None):
    """A summary of up to `max_outputs` images of a [batch, height, width, 1|3|4] tensor
    (uint8 values as they are; floats scaled as TensorFlow does)."""
    tensor = to_tensor(tensor)
    tag, scope = _scoped(name, family)
    op = make_op(summary_ops.IMAGE_SUMMARY, [_tag(tag), tensor],
                 {"max_images": int(max_outputs)}, scope)
    return _collect(op.outputs[0], collections)


def text(name: str, tensor, collections=None):
    """A summary of a string tensor, shown by TensorBoard's text dashboard."""
    tensor = to_tensor(tensor)
    if tensor.dtype is not _dtypes.string:
        raise TypeError(f"tf.summary.text '{name}' needs strings, got {tensor.dtype.name}.")
    return _tensor_summary(name, tensor, summary_ops.text_metadata(), collections)


def tensor_summary(name: str, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """A summary holding the whole `tensor`."""
    metadata = summary_metadata or SummaryMetadata()
    if display_name:
        metadata.display_name = display_name
    if summary_description:
        metadata.summary_description = summary_description
    return _tensor_summary(name, to_tensor(tensor), metadata.SerializeToString(),
                           collections, family)


def _tensor_summary(name, tensor, metadata: bytes, collections, family=None):
    tag, scope = _scoped(name, family)
    meta = to_tensor(np.array(metadata, dtype=object), dtype=_dtypes.string)
    op = make_op(summary_ops.TENSOR_SUMMARY, [_tag(tag), tensor, meta], {}, scope)
    return _collect(op.outputs[0], collections)


def _tag(tag: str):
    return to_tensor(np.array(tag.encode(), dtype=object), dtype=_dtypes.string)


def merge(inputs, collections=None, name=None):
    """One summary holding the values of every summary in `inputs`."""
    inputs = [to_tensor(t) for t in inputs]
    op = make_op(summary_ops.MERGE_SUMMARY, inputs, {"N": len(inputs)},
                 name or "MergeSummary")
    if collections:
        for key in collections:
            op.graph.add_to_collection(key, op.outputs[0])
    return op.outputs[0]


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """Merge every summary in the collection `key` (None when there are none)."""
    found = get_default_graph().get_collection(key, scope)
    return merge(found, name=name) if found else None


class FileWriterCache:
    """One FileWriter per log directory (TF 1.x `tf.summary.FileWriterCache`)."""

    _writers: dict = {}

    @classmethod
    def get(cls, logdir) -> FileWriter:
        """The cached FileWriter of `logdir`, made on first use."""
        writer = cls._writers.get(logdir)
        if writer is None:
            writer = cls._writers[logdir] = FileWriter(logdir)
        return writer

    @classmethod
    def clear(cls) -> None:
        """Close and forget every cached writer."""
        for writer in cls._writers.values():
            writer.close()
        cls._writers.clear()

