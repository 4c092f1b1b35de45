"""Cells made of cells (`tf.nn.rnn_cell`): `MultiRNNCell` stacks cells, `DropoutWrapper`
drops out a cell's inputs, outputs and state, `ResidualWrapper` adds the input to the
output, `DeviceWrapper` places the cell's ops on a device.  The wrappers open no variable
scope of their own: a wrapped cell's variables keep the names they would have unwrapped
(`rnn/basic_lstm_cell/kernel`), as in TensorFlow; `MultiRNNCell` puts cell i's under
`multi_rnn_cell/cell_<i>/`.

Dropout (`x / keep_prob` where a uniform draw is below `keep_prob`, else 0) inside
`dynamic_rnn` draws its numbers through models/rnn_noise.py: for all time steps at once,
outside the loop, so the loop holds no random op (it compiles whole, and its gradient
recomputes each step with the same mask).  `variational_recurrent=True` uses one mask,
drawn once per run, at every step (Gal and Ghahramani, 2016); its masks have one row,
shared by the batch, as in TensorFlow 1.x.
"""

from __future__ import annotations

import numbers

from ..compiler.core.graph import Tensor, get_default_graph
from ..ops import api as ops
from ..ops.nest import flatten, pack
from ..ops.variable_scope import variable_scope
from . import rnn_noise
from .rnn_cell import RNNCell, zero_state_for

__all__ = ["MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]


class MultiRNNCell(RNNCell):
    """Cells applied in sequence: cell i's output is cell i+1's input; the state is the
    tuple of the cells' states (`state_is_tuple=False`: their concatenation)."""

    _default_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        cells = list(cells)
        if not cells:
            raise ValueError("MultiRNNCell: must specify at least one cell.")
        for c in cells:
            if not isinstance(c, RNNCell):
                raise TypeError(f"MultiRNNCell: {c!r} is not an RNNCell.")
        if not state_is_tuple and any(isinstance(c.state_size, (tuple, list)) for c in cells):
            raise ValueError("MultiRNNCell: some cells return tuples of states; use "
                             "state_is_tuple=True.")
        self._cells = cells
        self._state_is_tuple = state_is_tuple

    @property
    def state_size(self):
        if self._state_is_tuple:
            return tuple(c.state_size for c in self._cells)
        return sum(int(c.state_size) for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        """Each cell's zero state (their concatenation without state_is_tuple)."""
        with get_default_graph().name_scope("MultiRNNCellZeroState"):
            if self._state_is_tuple:
                return tuple(c.zero_state(batch_size, dtype) for c in self._cells)
            return zero_state_for(self.state_size, batch_size, dtype)

    def _build_once(self, inputs) -> None:
        self.built = True   # the cells build themselves, in their own scopes

    def call(self, inputs, state):
        if self._state_is_tuple:
            if not isinstance(state, (tuple, list)) or len(state) != len(self._cells):
                raise ValueError(f"MultiRNNCell: expected a state tuple of "
                                 f"{len(self._cells)} states, got {state!r}.")
            states = list(state)
        else:
            states = ops.split(state, [int(c.state_size) for c in self._cells], axis=1)
        new_states, x = [], inputs
        for i, (cell, s) in enumerate(zip(self._cells, states)):
            with variable_scope(f"cell_{i}"):
                x, new = cell(x, s)
            new_states.append(new)
        new_state = tuple(new_states) if self._state_is_tuple else ops.concat(new_states, 1)
        return x, new_state


class _Wrapper(RNNCell):
    """A cell around `cell`, calling it in the caller's scope (no scope of its own)."""

    def __init__(self, cell):
        super().__init__()
        if not isinstance(cell, RNNCell):
            raise TypeError(f"{type(self).__name__}: {cell!r} is not an RNNCell.")
        self._cell = cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        """The wrapped cell's zero state."""
        with get_default_graph().name_scope(f"{type(self).__name__}ZeroState"):
            return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self.call(ops.convert_to_tensor(inputs), state, scope)


def _keep_value(keep_prob, what: str):
    """A keep probability: a float in (0, 1] checked now, or a scalar float tensor."""
    if isinstance(keep_prob, numbers.Real):
        if not 0.0 < float(keep_prob) <= 1.0:
            raise ValueError(f"DropoutWrapper: {what} must be in (0, 1], got {keep_prob}.")
        return float(keep_prob)
    keep = ops.convert_to_tensor(keep_prob)
    if not keep.dtype.is_floating or keep.shape.ndims not in (None, 0):
        raise TypeError(f"DropoutWrapper: {what} must be a float or a scalar float tensor, "
                        f"got {keep.name} ({keep.dtype.name}, shape {keep.shape}).")
    return keep


class DropoutWrapper(_Wrapper):
    """Dropout on the cell's inputs, outputs and new state, with keep probabilities that
    may be floats or tensors (a placeholder: 1.0 when evaluating).  A probability of
    exactly 1.0 (a float) adds no op.  `dropout_state_filter_visitor(s)` says which state
    leaves to drop (default: all but an LSTMStateTuple's `c`)."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__(cell)
        self._input_keep = _keep_value(input_keep_prob, "input_keep_prob")
        self._output_keep = _keep_value(output_keep_prob, "output_keep_prob")
        self._state_keep = _keep_value(state_keep_prob, "state_keep_prob")
        self._seed = seed
        self._state_filter = dropout_state_filter_visitor or _default_state_filter
        self._variational = None
        if variational_recurrent:
            if dtype is None:
                raise ValueError("DropoutWrapper: variational_recurrent=True needs dtype.")
            if input_size is None and not _is_one(self._input_keep):
                raise ValueError("DropoutWrapper: variational_recurrent=True with input "
                                 "dropout needs input_size.")
            self._variational = {
                "input": _row_masks(input_size, dtype, seed, 0) if input_size else None,
                "state": _row_masks(cell.state_size, dtype, seed, 1),
                "output": _row_masks(cell.output_size, dtype, seed, 2)}

    def call(self, inputs, state, scope=None):
        inputs = self._drop(inputs, self._input_keep, "input", 0)
        output, new_state = self._cell(inputs, state, scope=scope)
        if not _is_one(self._state_keep):
            leaves = flatten(new_state)
            keep_mask = flatten(_filter_mask(new_state, self._state_filter))
            masks = (flatten(self._variational["state"]) if self._variational
                     else [None] * len(leaves))
            dropped = [self._apply(x, self._state_keep, m, 10 + k) if keep else x
                       for k, (x, keep, m) in enumerate(zip(leaves, keep_mask, masks))]
            new_state = pack(new_state, dropped)
        output = self._drop(output, self._output_keep, "output", 1)
        return output, new_state

    def _drop(self, x, keep, which: str, salt: int):
        if _is_one(keep):
            return x
        mask = self._variational[which] if self._variational else None
        return self._apply(x, keep, mask, salt)

    def _apply(self, x, keep, mask, salt: int):
        """x / keep where the draw (the variational mask's, else a fresh one) < keep."""
        with get_default_graph().name_scope("dropout"):
            keep_t = ops.cast(keep, x.dtype)
            draw = mask if mask is not None else rnn_noise.uniform_like(
                x, seed=None if self._seed is None else self._seed + salt)
            kept = ops.less(draw, keep_t)
            return ops.where_v2(kept, x / keep_t, ops.zeros_like(x))


def _is_one(keep) -> bool:
    return not isinstance(keep, Tensor) and float(keep) == 1.0


def _default_state_filter(substate):
    """TensorFlow's default: drop every state leaf but an LSTM's memory cell `c`."""
    from .rnn_cell import LSTMStateTuple

    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _like(structure, items):
    if hasattr(structure, "_fields"):
        return type(structure)(*items)
    return type(structure)(items)


def _filter_mask(state, visitor):
    """A nest like `state` of bools: which leaves dropout applies to.  `visitor(sub)` says
    for a sub-nest either one bool (all of it, or none) or a nest of bools one level deep,
    whose True entries are visited in turn (TensorFlow's traversal)."""
    decision = visitor(state)
    if not isinstance(state, (tuple, list)):
        if not isinstance(decision, bool):
            raise TypeError(f"DropoutWrapper: dropout_state_filter_visitor returned "
                            f"{decision!r} for a state leaf; expected a bool.")
        return decision
    if isinstance(decision, bool):
        if not decision:
            return _like(state, [_filter_mask(s, lambda _: False) for s in state])
        return _like(state, [_filter_mask(s, visitor) for s in state])
    if not isinstance(decision, (tuple, list)) or len(decision) != len(state):
        raise TypeError(f"DropoutWrapper: dropout_state_filter_visitor returned "
                        f"{decision!r} for {state!r}; expected a bool or one per element.")
    return _like(state, [_filter_mask(s, visitor) if t else
                         _filter_mask(s, lambda _: False) for t, s in zip(decision, state)])


def _row_masks(sizes, dtype, seed, salt: int):
    """One uniform draw of shape [1, depth] per size in the nest `sizes` (variational
    dropout: the same numbers at every step of a run)."""
    leaves = [ops.random_uniform([1, int(s)], dtype=dtype,
                                 seed=None if seed is None else seed + 100 * salt + k)
              for k, s in enumerate(flatten(sizes))]
    return pack(sizes, leaves)


class ResidualWrapper(_Wrapper):
    """output = cell output + inputs (`residual_fn(inputs, output)` if given); the state is
    the cell's."""

    def __init__(self, cell, residual_fn=None):
        super().__init__(cell)
        self._residual_fn = residual_fn

    def call(self, inputs, state, scope=None):
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        if inputs.shape.is_fully_defined() and output.shape.is_fully_defined() and \
                inputs.shape.as_list() != output.shape.as_list():
            raise ValueError(f"ResidualWrapper: the inputs ({inputs.shape}) and the cell's "
                             f"output ({output.shape}) must have the same shape.")
        return output + inputs, new_state


class DeviceWrapper(_Wrapper):
    """The cell's ops (and its zero state) placed on `device` (`tf.device`'s argument)."""

    def __init__(self, cell, device):
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size, dtype):
        """The wrapped cell's zero state, on the device."""
        with get_default_graph().device(self._device):
            return super().zero_state(batch_size, dtype)

    def call(self, inputs, state, scope=None):
        with get_default_graph().device(self._device):
            return self._cell(inputs, state, scope=scope)
