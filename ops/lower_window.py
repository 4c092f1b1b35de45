"""Sliding-window geometry shared by the convolution and pooling ops (conv_ops.py,
conv_grad_ops.py, pool_ops.py): attrs, output sizes and padding, for static shapes
(Python ints, None where unknown), for kernel IR (int64 `Expr`s) and for the NumPy
reference kernels.

Conventions (TensorFlow's):
- a `Layout` names where the batch, the spatial dims and the channels are in a shape, from
  a data_format string: NHWC / NCHW (2-D), NWC / NCW (1-D), NDHWC / NCDHW (3-D);
- per-dimension attrs (`strides`, `dilations`, `ksize`) hold one value per dimension of the
  input, in data_format order, 1 on the batch and channel dims;
- `Padding.SAME`: out = ceil(in / stride), the total padding max((out - 1) * stride +
  effective - in, 0) split with the smaller half before; `VALID`: no padding, out =
  (in - effective) // stride + 1; `EXPLICIT`: given (before, after) pairs per spatial dim,
  out = (in + before + after - effective) // stride + 1.  effective = (size - 1) *
  dilation + 1 is the extent of a dilated window;
- an output position o and a window tap k read input position o * stride + k * dilation -
  before; positions outside [0, in) are padding.

Nothing here defines an op; op modules import this one as a module object.
"""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from ..compiler.core import ir
from ..compiler.core.ir import Expr
from . import lower_index as lx


class Padding(enum.Enum):
    """TensorFlow's padding schemes for windowed ops."""

    SAME = "SAME"
    VALID = "VALID"
    EXPLICIT = "EXPLICIT"


def padding_attr(value, op_type: str, explicit_ok: bool = True) -> Padding:
    """The `padding` attr as a Padding; ValueError with TensorFlow's message otherwise
    (the attr is case-sensitive, as in TensorFlow's op definitions)."""
    allowed = [p.value for p in Padding if explicit_ok or p is not Padding.EXPLICIT]
    if isinstance(value, Padding):
        value = value.value
    if value not in allowed:
        raise ValueError(f"Attr 'padding' of '{op_type}' Op passed string {value!r} not in: "
                         + ", ".join(f'"{v}"' for v in allowed) + ".")
    return Padding(value)


_LAYOUTS = {"NHWC": (0, (1, 2), 3), "NCHW": (0, (2, 3), 1), "NWC": (0, (1,), 2),
            "NCW": (0, (2,), 1), "NDHWC": (0, (1, 2, 3), 4), "NCDHW": (0, (2, 3, 4), 1)}


@dataclasses.dataclass(frozen=True)
class Layout:
    """Positions of the batch dim, the spatial dims and the channel dim in a shape."""

    data_format: str
    batch: int
    spatial: tuple
    channel: int

    @staticmethod
    def of(data_format: str, op_type: str, allowed=("NHWC", "NCHW")) -> Layout:
        """The layout of `data_format`; ValueError naming the op if it is not allowed."""
        if data_format not in allowed or data_format not in _LAYOUTS:
            raise ValueError(f"{op_type}: data_format must be one of {list(allowed)}, got "
                             f"{data_format!r}.")
        batch, spatial, channel = _LAYOUTS[data_format]
        return Layout(data_format, batch, spatial, channel)

    @property
    def rank(self) -> int:
        return len(self.spatial) + 2

    @property
    def channels_last(self) -> bool:
        return self.channel == self.rank - 1

    def to_channels_last(self, x: np.ndarray) -> np.ndarray:
        """`x` (this layout) as a batch, spatial..., channel array (a view)."""
        return x if self.channels_last else np.moveaxis(x, 1, -1)

    def from_channels_last(self, x: np.ndarray) -> np.ndarray:
        """A batch, spatial..., channel array in this layout (a view)."""
        return x if self.channels_last else np.moveaxis(x, -1, 1)

    def shape(self, batch, spatial, channels) -> list:
        """A shape in this layout from its batch size, spatial sizes and channel count."""
        out = [None] * self.rank
        out[self.batch], out[self.channel] = batch, channels
        for axis, size in zip(self.spatial, spatial):
            out[axis] = size
        return out

    def index(self, batch, spatial, channel) -> tuple:
        """An index in this layout (same as `shape`, for index expressions)."""
        return tuple(self.shape(batch, spatial, channel))


def window_attr(values, name: str, layout: Layout, op_type: str) -> list:
    """A per-dimension attr (`strides`, `dilations`, `ksize`) checked: one positive int per
    dimension, 1 on the batch and channel dims; returns the spatial values."""
    values = list(values)
    if len(values) != layout.rank or not all(isinstance(v, (int, np.integer)) for v in values):
        raise ValueError(f"{op_type}: {name} must hold {layout.rank} ints (one per dimension "
                         f"of the {layout.data_format} input), got {values}.")
    if values[layout.batch] != 1 or values[layout.channel] != 1:
        raise ValueError(f"{op_type}: {name} {values} must be 1 on the batch and channel "
                         f"dimensions: the current implementation does not yet support "
                         f"{name} in the batch and depth dimensions.")
    spatial = [int(values[a]) for a in layout.spatial]
    if any(v < 1 for v in spatial):
        raise ValueError(f"{op_type}: {name} must be positive, got {values}.")
    return spatial


def sequence_arg(value, n_spatial: int, layout: Layout, name: str) -> list:
    """A public function's `strides`/`dilations`/`ksize` argument as the op's per-dimension
    list: an int, or a list of 1, n_spatial or n_spatial + 2 ints (TensorFlow's
    `_get_sequence`); None is all ones."""
    if value is None:
        return [1] * (n_spatial + 2)
    if isinstance(value, (int, np.integer)):
        value = [int(value)]
    value = [int(v) for v in value]
    if len(value) == n_spatial + 2:
        return value
    if len(value) == 1:
        value = value * n_spatial
    if len(value) != n_spatial:
        raise ValueError(f"{name} should be of length 1, {n_spatial} or {n_spatial + 2} but "
                         f"was {len(value)}")
    full = [1] * (n_spatial + 2)
    for axis, v in zip(layout.spatial, value):
        full[axis] = v
    return full


def padding_arg(padding, layout: Layout):
    """A public function's `padding` (a string, or one (before, after) pair per dimension in
    data_format order) as the op attrs (padding string, explicit_paddings flat list)."""
    if isinstance(padding, str):
        return padding, []
    pairs = [list(p) for p in padding]
    if len(pairs) != layout.rank or any(len(p) != 2 for p in pairs):
        raise ValueError(f"When padding is a list, it must have {layout.rank} (before, after) "
                         f"pairs, one per dimension of the {layout.data_format} input; got "
                         f"{padding}.")
    return Padding.EXPLICIT.value, [int(v) for p in pairs for v in p]


def explicit_pairs(padding: Padding, explicit_paddings, layout: Layout, op_type: str) -> list:
    """The (before, after) padding per spatial dim of an EXPLICIT op (zeros otherwise),
    with TensorFlow's checks of the `explicit_paddings` attr."""
    flat = [int(v) for v in (explicit_paddings or [])]
    if padding is not Padding.EXPLICIT:
        if flat:
            raise ValueError(f"{op_type}: explicit_paddings must be empty unless padding is "
                             f"EXPLICIT, got {flat}.")
        return [(0, 0)] * len(layout.spatial)
    if len(flat) != 2 * layout.rank:
        raise ValueError(f"{op_type}: explicit_paddings must hold {2 * layout.rank} values "
                         f"(a (before, after) pair per dimension), got {len(flat)}: {flat}.")
    pairs = [(flat[2 * a], flat[2 * a + 1]) for a in range(layout.rank)]
    if any(v < 0 for v in flat):
        raise ValueError(f"{op_type}: explicit_paddings must be non-negative, got {flat}.")
    if pairs[layout.batch] != (0, 0) or pairs[layout.channel] != (0, 0):
        raise ValueError(f"{op_type}: Nonzero explicit padding in the batch or depth "
                         f"dimensions is not supported (explicit_paddings {flat}).")
    return [pairs[a] for a in layout.spatial]


# --- output sizes ------------------------------------------------------------------------------


def effective_size(size, dilation: int):
    """The extent of a window of `size` taps `dilation` apart (None if size is unknown)."""
    return None if size is None else (size - 1) * dilation + 1


def output_size(size, window, stride: int, dilation: int, padding: Padding, pads=(0, 0)):
    """(output size, padding before, padding after) along one spatial dim, as ints, or
    None for those the unknown `size`/`window` leave unknown.  A window that does not fit
    is a ValueError with TensorFlow's message ("Negative dimension size ...")."""
    eff = effective_size(window, dilation)
    if padding is Padding.EXPLICIT:
        before, after = pads
        if size is None or eff is None:
            return None, before, after
        padded = size + before + after
        if padded < eff:
            raise ValueError(f"Computed output size would be negative: "
                             f"{(padded - eff) // stride + 1} [input_size: {size}, "
                             f"effective_filter_size: {eff}, stride: {stride}]")
        return (padded - eff) // stride + 1, before, after
    if padding is Padding.VALID:
        if size is None or eff is None:
            return None, 0, 0
        if size < eff:
            raise ValueError(f"Negative dimension size caused by subtracting {eff} from "
                             f"{size}: the window does not fit the input.")
        return (size - eff) // stride + 1, 0, 0
    out = None if size is None else -(-size // stride)
    if size is None or eff is None:
        return out, None, None
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2, total - total // 2


def runtime_output_size(size: int, window: int, stride: int, dilation: int, padding: Padding,
                        pads=(0, 0)):
    """`output_size` for a kernel's concrete sizes, with the size problem as a message
    (TensorFlow's run-time one) instead of an exception: (out, before, after, message or
    None)."""
    try:
        out, before, after = output_size(size, window, stride, dilation, padding, pads)
    except ValueError:
        padded = size + (sum(pads) if padding is Padding.EXPLICIT else 0)
        eff = effective_size(window, dilation)
        return None, None, None, (f"Computed output size would be negative: "
                                  f"{(padded - eff) // stride + 1} [input_size: {size}, "
                                  f"effective_filter_size: {eff}, stride: {stride}]")
    return out, before, after, None


def output_size_expr(ctx, size: Expr, window: Expr, stride: int, dilation: int,
                     padding: Padding, pads=(0, 0), what: str = "window"):
    """(output size, padding before) along one dim as int64 Exprs (sizes may be run-time
    values); records the run-time check that the window fits (VALID, EXPLICIT)."""
    eff = lx.add(lx.mul(lx.sub(window, 1), dilation), 1)
    if padding is Padding.SAME:
        out = lx.floordiv(lx.add(size, stride - 1), stride)
        total = lx.maximum(lx.sub(lx.add(lx.mul(lx.sub(out, 1), stride), eff), size), 0)
        return out, lx.floordiv(total, 2)
    before, after = pads if padding is Padding.EXPLICIT else (0, 0)
    padded = lx.add(size, before + after)
    lx.require(ctx, lx.ge(padded, eff), f"Computed output size would be negative: the "
                                        f"{what} is larger than the padded input")
    return lx.add(lx.floordiv(lx.sub(padded, eff), stride), 1), ir.index(before)


# --- index arithmetic for kernel IR -----------------------------------------------------------


def input_position(out_index, tap, stride: int, dilation: int, before) -> Expr:
    """The input position output position `out_index` reads at window tap `tap`."""
    return lx.sub(lx.add(lx.mul(out_index, stride), lx.mul(tap, dilation)), before)


def inside(position, size) -> Expr:
    """Whether `position` lies in [0, size) (not in the padding)."""
    return lx.all_of([lx.ge(position, 0), lx.lt(position, size)])


def source_output(in_index, tap, stride: int, dilation: int, before, out_size):
    """(condition, output position) of the output that reads input position `in_index` at
    window tap `tap`: o = (in_index + before - tap * dilation) / stride when that divides
    exactly and lies in [0, out_size).  The position is clamped into range (generated code
    evaluates both arms of a select), so it is only meaningful where the condition holds."""
    offset = lx.sub(lx.add(in_index, before), lx.mul(tap, dilation))
    position = lx.floordiv(offset, stride)
    conds = [lx.ge(offset, 0), lx.lt(position, out_size)]
    if stride != 1:
        conds.append(lx.eq(lx.mod(offset, stride), 0))
    return lx.all_of(conds), lx.clamp(position, out_size)


# --- NumPy helpers for reference kernels -----------------------------------------------------


def pad_spatial(x: np.ndarray, pads, value=0) -> np.ndarray:
    """A channels-last array padded by (before, after) per spatial dim with `value`."""
    widths = [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)]
    if not any(b or a for b, a in pads):
        return x
    return np.pad(x, widths, constant_values=value)


def tap_slices(taps, out_sizes, strides, dilations) -> tuple:
    """The index of a channels-last padded array that gives, for window tap `taps` (one
    index per spatial dim), the inputs every output position reads there."""
    return (slice(None),) + tuple(
        slice(k * d, k * d + (o - 1) * s + 1, s) for k, o, s, d in
        zip(taps, out_sizes, strides, dilations)) + (slice(None),)


def window_view(padded: np.ndarray, window, out_sizes, strides, dilations) -> np.ndarray:
    """A read-only (N, *out_sizes, *window, C) view of a channels-last padded array whose
    element [n, o..., k..., c] is padded[n, o * stride + k * dilation ..., c]: every
    output position's window, as im2col reads it."""
    s = padded.strides
    rank = len(out_sizes)
    shape = (padded.shape[0], *out_sizes, *window, padded.shape[-1])
    steps = (s[0], *[s[1 + i] * st for i, st in enumerate(strides)],
             *[s[1 + i] * d for i, d in enumerate(dilations)], s[rank + 1])
    return np.lib.stride_tricks.as_strided(padded, shape, steps, writeable=False)
