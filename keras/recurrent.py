"""`tf.keras.layers`' recurrent layers: SimpleRNN, LSTM and GRU, with Keras' weights.

Inputs are [batch, time, features].  Each layer has a `kernel` (features, gates * units), a
`recurrent_kernel` (units, gates * units, orthogonal by default) and a `bias`, in Keras'
gate order (LSTM: i, f, c, o with the forget bias starting at 1; GRU: z, r, h, with
`reset_after=True` a bias row for the input and one for the recurrent product).  The input
products of all time steps are one matrix product before the recurrence; each step then
adds `h @ recurrent_kernel`.  `unroll=True` writes the steps out in the graph (best for
short sequences: the whole recurrence is one compiled cluster); otherwise the recurrence
is `tf.nn.dynamic_rnn` (models/rnn.py: one while loop over time, compiled whole, its
gradient a second loop) of a cell that runs the layer's step on the precomputed input
products.  `dropout` drops input features and `recurrent_dropout`
state units while training, with one mask per sequence.
"""

from __future__ import annotations

import numpy as np

from .. import nn
from ..compiler.core.shapes import TensorShape, as_shape
from ..models import rnn
from ..models.rnn_cell import RNNCell
from ..ops import api as ops
from . import activations
from . import initializers as _initializers
from .engine import Layer

__all__ = ["SimpleRNN", "LSTM", "GRU"]


class _Recurrent(Layer):
    """The shared part of the recurrent layers: weights, dropout masks and the time loop.
    Subclasses give `_gates`, `_bias_shape()`, `_bias_initializer()` and `_step`."""

    _gates = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, time_major=False, **kwargs):
        super().__init__(**kwargs)
        if return_state or stateful or time_major:
            raise NotImplementedError(f"{type(self).__name__}: return_state, stateful and "
                                      "time_major are not supported.")
        if int(units) <= 0:
            raise ValueError(f"{type(self).__name__}: units must be positive, got {units!r}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.recurrent_initializer = recurrent_initializer
        self.bias_initializer = bias_initializer
        self.regularizers = (kernel_regularizer, recurrent_regularizer, bias_regularizer)
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        self.return_sequences, self.go_backwards = bool(return_sequences), bool(go_backwards)
        self.unroll = bool(unroll)
        self.training_differs = self.dropout > 0.0 or self.recurrent_dropout > 0.0

    def build(self, input_shape):
        dims = as_shape(input_shape).as_list()
        if len(dims) != 3 or dims[-1] is None:
            raise ValueError(f"{type(self).__name__} {self.name} expects inputs [batch, time, "
                             f"features] with known features, got {as_shape(input_shape)}.")
        width = self._gates * self.units
        kernel_reg, recurrent_reg, bias_reg = self.regularizers
        self.kernel = self.add_weight("kernel", [dims[-1], width], self.kernel_initializer,
                                      regularizer=kernel_reg)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [self.units, width],
                                                self.recurrent_initializer,
                                                regularizer=recurrent_reg)
        self.bias = self.add_weight("bias", self._bias_shape(), self._bias_initializer(),
                                    regularizer=bias_reg) if self.use_bias else None

    def _bias_shape(self) -> list:
        return [self._gates * self.units]

    def _bias_initializer(self):
        return self.bias_initializer

    def _input_bias(self):
        return self.bias

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        if self.return_sequences:
            return TensorShape([dims[0], dims[1], self.units])
        return TensorShape([dims[0], self.units])

    def _state_count(self) -> int:
        return 1

    def call(self, inputs, training=False):
        x = ops.cast(inputs, self.dtype) if inputs.dtype is not self.dtype else inputs
        if self.go_backwards:
            x = ops.reverse(x, [1])
        batch = ops.shape(x)[0]
        if training and self.dropout:
            x = nn.dropout(x, rate=self.dropout,
                           noise_shape=ops.stack([batch, 1, ops.shape(x)[2]]))
        features = x.shape.as_list()[-1]
        width = self._gates * self.units
        xw = ops.matmul(ops.reshape(x, [-1, features]), self.kernel)
        bias = self._input_bias()
        if bias is not None:
            xw = nn.bias_add(xw, bias)
        xw = ops.reshape(xw, ops.stack([batch, ops.shape(x)[1], width]))
        zeros = ops.zeros(ops.stack([batch, self.units]), dtype=self.dtype)
        mask = None
        if training and self.recurrent_dropout:
            mask = nn.dropout(ops.ones_like(zeros), rate=self.recurrent_dropout)
        states = tuple(zeros for _ in range(self._state_count()))
        steps = x.shape.as_list()[1]
        if self.unroll:
            if steps is None:
                raise ValueError(f"{type(self).__name__} {self.name}: unroll=True needs a "
                                 "known number of time steps.")
            return self._unrolled(xw, states, mask, steps)
        out = self._looped(xw, states, mask)
        out.set_shape(self.compute_output_shape(inputs.shape))
        return out

    def _unrolled(self, xw, states, mask, steps):
        outputs = []
        for t in range(steps):
            h, states = self._step(xw[:, t, :], states, mask)
            outputs.append(h)
        return ops.stack(outputs, axis=1) if self.return_sequences else outputs[-1]

    def _looped(self, xw, states, mask):
        outputs, final = rnn.dynamic_rnn(_StepCell(self, mask, len(states)), xw,
                                         initial_state=states, scope="loop")
        return outputs if self.return_sequences else final[0]

    def _recurrent(self, h, mask):
        """h (dropped out while training) times the recurrent kernel."""
        return ops.matmul(h * mask if mask is not None else h, self.recurrent_kernel)


class SimpleRNN(_Recurrent):
    """h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)."""

    def _step(self, xw_t, states, mask):
        h = self.activation(xw_t + self._recurrent(states[0], mask))
        return h, (h,)


class LSTM(_Recurrent):
    """Long short-term memory (Hochreiter & Schmidhuber) in Keras' form; states (h, c)."""

    _gates = 4

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base = _initializers.get(self.bias_initializer)
        units = self.units

        def forget_ones(shape, dtype=None, partition_info=None):
            rest = base([units], dtype=dtype)
            return ops.concat([rest, ops.ones([units], dtype=dtype), rest, rest], axis=0) \
                if units * 4 == int(np.prod(shape)) else base(shape, dtype=dtype)

        return forget_ones

    def _state_count(self) -> int:
        return 2

    def _step(self, xw_t, states, mask):
        h, c = states
        z = xw_t + self._recurrent(h, mask)
        i, f, candidate, o = ops.split(z, 4, axis=1)
        c = self.recurrent_activation(f) * c + \
            self.recurrent_activation(i) * self.activation(candidate)
        h = self.recurrent_activation(o) * self.activation(c)
        return h, (h, c)


class GRU(_Recurrent):
    """Gated recurrent unit (Cho et al.) in Keras' form; `reset_after=True` (the default)
    applies the reset gate after the recurrent product, with a separate recurrent bias."""

    _gates = 3

    def __init__(self, units, reset_after=True, **kwargs):
        super().__init__(units, **kwargs)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        width = 3 * self.units
        return [2, width] if self.reset_after else [width]

    def _input_bias(self):
        if self.bias is None or not self.reset_after:
            return self.bias
        return self.bias[0]

    def _step(self, xw_t, states, mask):
        (h,) = states
        u = self.units
        x_z, x_r, x_h = ops.split(xw_t, 3, axis=1)
        h_in = h * mask if mask is not None else h
        if self.reset_after:
            hu = ops.matmul(h_in, self.recurrent_kernel)
            if self.bias is not None:
                hu = nn.bias_add(hu, self.bias[1])
            h_z, h_r, h_h = ops.split(hu, 3, axis=1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            candidate = self.activation(x_h + r * h_h)
        else:
            h_zr = ops.matmul(h_in, self.recurrent_kernel[:, :2 * u])
            h_z, h_r = ops.split(h_zr, 2, axis=1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            candidate = self.activation(x_h + ops.matmul(r * h_in,
                                                          self.recurrent_kernel[:, 2 * u:]))
        h = z * h + (1.0 - z) * candidate
        return h, (h,)


class _StepCell(RNNCell):
    """The recurrence of a Keras recurrent layer as a `tf.nn.rnn_cell` for `dynamic_rnn`: its
    inputs are the layer's input products (x_t @ kernel + bias), its state the layer's
    states (h, and c for LSTM); it makes no variables (the layer's are captured)."""

    def __init__(self, layer, mask, count):
        super().__init__(name="cell")
        self._layer, self._mask, self._count = layer, mask, count

    @property
    def state_size(self):
        return (self._layer.units,) * self._count

    @property
    def output_size(self):
        return self._layer.units

    def call(self, inputs, state):
        h, new_states = self._layer._step(inputs, tuple(state), self._mask)
        return h, tuple(new_states)
