"""Summary ops: each serializes a `Summary` protobuf (protos/) into a scalar string tensor.

TensorFlow 1.x's op types and inputs: `ScalarSummary(tags, values)` (one `simple_value`
per element), `HistogramSummary(tag, values)` (a `HistogramProto` of the finite values;
NaN or inf is an InvalidArgumentError naming the tag, as in TensorFlow),
`ImageSummary(tag, tensor)` (up to `max_images` PNG images of a [batch, height, width,
channels] tensor: uint8 as is, floats scaled to 0..255 the way TensorFlow does),
`TensorSummaryV2(tag, tensor, serialized_summary_metadata)` (the whole tensor, used for text
summaries) and `MergeSummary(inputs)` (the values of several serialized summaries in one).
All run on the host; none is differentiable or compiled.  The public functions
(`tf.summary.scalar`, ...) are in summary.py.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.attr_values import tensor_proto
from ..compiler.core.shapes import TensorShape
from ..errors import InvalidArgumentError
from ..protos import HistogramProto, Summary, SummaryMetadata
from .png_encode import encode_png
from .registry import OpDef, not_differentiable

_SCALAR = TensorShape([])


def _string_scalar(data: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = data
    return out


def _text(value) -> str:
    value = np.asarray(value).reshape(-1)[0] if np.size(value) else b""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _summary_infer(op):
    return [(_dtypes.string, _SCALAR)]


# --- scalars -------------------------------------------------------------------------------------


def _scalar_kernel(ctx, inputs, attrs):
    tags, values = inputs
    if tags.shape != values.shape:
        raise InvalidArgumentError(None, ctx.op, f"tags and values must have the same shape; "
                                                 f"got {tags.shape} and {values.shape}.")
    summary = Summary()
    for tag, value in zip(tags.reshape(-1), values.reshape(-1)):
        summary.value.add(tag=_text(tag), simple_value=float(value))
    return [_string_scalar(summary.SerializeToString())]


SCALAR_SUMMARY = OpDef("ScalarSummary", _summary_infer, _scalar_kernel,
                       gradient=not_differentiable,
                       doc="A Summary with one scalar value per element of `values`.")


# --- histograms ----------------------------------------------------------------------------------


def _bucket_limits() -> np.ndarray:
    """Right edges of the buckets: +-1e-12 * 1.1**k up to 1e20 and 0, then +-DBL_MAX; fine
    near zero and relatively even (10% wide) everywhere else."""
    positive = [1e-12]
    while positive[-1] < 1e20:
        positive.append(positive[-1] * 1.1)
    limits = [-x for x in reversed(positive)] + [0.0] + positive
    return np.array(limits + [np.finfo(np.float64).max])


_LIMITS = _bucket_limits()


def histogram_proto(values) -> HistogramProto:
    """The HistogramProto of finite `values`: min, max, count, sum, sum of squares and the
    non-empty span of the fixed buckets."""
    flat = np.asarray(values, np.float64).reshape(-1)
    proto = HistogramProto(num=float(flat.size))
    if flat.size == 0:
        return proto
    proto.min, proto.max = float(flat.min()), float(flat.max())
    proto.sum, proto.sum_squares = float(flat.sum()), float(np.dot(flat, flat))
    index = np.searchsorted(_LIMITS, flat, side="left")
    counts = np.bincount(index, minlength=_LIMITS.size)
    used = np.nonzero(counts)[0]
    first, last = used[0], used[-1]
    proto.bucket_limit.extend(_LIMITS[first:last + 1].tolist())
    proto.bucket.extend(counts[first:last + 1].astype(np.float64).tolist())
    return proto


def _histogram_kernel(ctx, inputs, attrs):
    tag, values = _text(inputs[0]), inputs[1]
    finite = np.isfinite(values) if values.dtype.kind in "fc" else np.ones(values.shape, bool)
    if not finite.all():
        raise InvalidArgumentError(None, ctx.op, f"Nan or Inf in summary histogram for: {tag}")
    summary = Summary()
    summary.value.add(tag=tag, histo=histogram_proto(np.real(values)))
    return [_string_scalar(summary.SerializeToString())]


HISTOGRAM_SUMMARY = OpDef("HistogramSummary", _summary_infer, _histogram_kernel,
                          gradient=not_differentiable,
                          doc="A Summary with a histogram of `values`.")


# --- images --------------------------------------------------------------------------------------


def _image_infer(op):
    images = op.inputs[1]
    if images.shape.ndims not in (None, 4):
        raise ValueError(f"image summary needs a 4-D [batch, height, width, channels] "
                         f"tensor, got shape {images.shape}.")
    channels = images.shape.dims[-1] if images.shape.ndims else None
    if channels not in (None, 1, 3, 4):
        raise ValueError(f"image summary needs 1, 3 or 4 channels, got {channels}.")
    return [(_dtypes.string, _SCALAR)]


def _to_uint8(image: np.ndarray) -> np.ndarray:
    """TensorFlow's conversion: floats scale so the largest magnitude maps to 255 (all
    non-negative) or 127 around a 128 midpoint (some negative); NaN/inf become red."""
    if image.dtype == np.uint8:
        return image
    data = image.astype(np.float64)
    finite = np.isfinite(data).all(axis=-1, keepdims=True)
    values = np.where(finite, data, 0.0)
    low, high = values.min(initial=0.0), values.max(initial=0.0)
    if low >= 0:
        scale = 255.0 / high if high > 0 else 0.0
        out = values * scale
    else:
        scale = 127.0 / max(-low, high) if max(-low, high) > 0 else 0.0
        out = values * scale + 128.0
    out = np.clip(np.round(out), 0, 255).astype(np.uint8)
    bad = np.zeros(image.shape[-1], np.uint8)
    bad[0] = 255
    return np.where(finite, out, bad)


def _image_kernel(ctx, inputs, attrs):
    tag, images = _text(inputs[0]), inputs[1]
    count = min(int(attrs["max_images"]), images.shape[0])
    summary = Summary()
    for i in range(count):
        pixels = _to_uint8(images[i])
        name = f"{tag}/image" if count == 1 else f"{tag}/image/{i}"
        summary.value.add(tag=name, image=Summary.Image(
            height=pixels.shape[0], width=pixels.shape[1], colorspace=pixels.shape[2],
            encoded_image_string=encode_png(pixels)))
    return [_string_scalar(summary.SerializeToString())]


IMAGE_SUMMARY = OpDef("ImageSummary", _image_infer, _image_kernel,
                      gradient=not_differentiable,
                      doc="A Summary with up to `max_images` PNG images of a batch.")


# --- tensors (text) ------------------------------------------------------------------------------


def _tensor_kernel(ctx, inputs, attrs):
    tag, value, metadata = inputs
    summary = Summary()
    entry = summary.value.add(tag=_text(tag), tensor=tensor_proto(value))
    raw = metadata.reshape(-1)[0] if metadata.size else b""
    if raw:
        entry.metadata.CopyFrom(SummaryMetadata.FromString(raw))
    return [_string_scalar(summary.SerializeToString())]


TENSOR_SUMMARY = OpDef("TensorSummaryV2", _summary_infer, _tensor_kernel,
                       gradient=not_differentiable,
                       doc="A Summary holding a whole tensor (text summaries use it).")


def text_metadata() -> bytes:
    """The serialized SummaryMetadata that marks a tensor summary as text for TensorBoard."""
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text")) \
        .SerializeToString()


# --- merging -------------------------------------------------------------------------------------


def _merge_infer(op):
    for t in op.inputs:
        if t.dtype is not _dtypes.string:
            raise TypeError(f"merge: every input must be a serialized summary (string), got "
                            f"{t.name} of type {t.dtype.name}.")
    return [(_dtypes.string, _SCALAR)]


def _merge_kernel(ctx, inputs, attrs):
    merged, tags = Summary(), set()
    for value in inputs:
        for raw in np.asarray(value).reshape(-1):
            part = Summary.FromString(bytes(raw))
            for entry in part.value:
                if entry.tag in tags:
                    raise InvalidArgumentError(None, ctx.op, f"Duplicate tag {entry.tag} "
                                                             "found in summary inputs")
                tags.add(entry.tag)
                merged.value.append(entry)
    return [_string_scalar(merged.SerializeToString())]


MERGE_SUMMARY = OpDef("MergeSummary", _merge_infer, _merge_kernel,
                      gradient=not_differentiable,
                      doc="One Summary holding the values of all the inputs.")

OP_DEFS = [SCALAR_SUMMARY, HISTOGRAM_SUMMARY, IMAGE_SUMMARY, TENSOR_SUMMARY, MERGE_SUMMARY]
