"""TensorFlow 1.x's RNN cells (`tf.nn.rnn_cell`, `tf.contrib.rnn`): one step of a recurrent
network, `output, new_state = cell(inputs, state)`, with TensorFlow's variable names.

A cell makes its variables on its first call, inside a variable scope: the `scope` given to
that call, or else `variable_scope(name or <default name>)` under the current scope, the
default name made unique there (`basic_lstm_cell`, `basic_lstm_cell_1`, ...).  So
`dynamic_rnn(BasicLSTMCell(n), ...)` owns `rnn/basic_lstm_cell/kernel` and
`rnn/basic_lstm_cell/bias`, as in TensorFlow, and checkpoints carry over by name.  Later
calls use the same variables (the cell is built once), whatever scope they are made in.
The ops of every call go to the name scope of the cell's variable scope.

Each cell is written from its equations (the docstrings give them); `x` is the step's
input, `[a, b]` a concatenation along the feature axis:
- `BasicRNNCell`: h' = act(W [x, h] + b).
- `BasicLSTMCell`: i, j, f, o = split(W [x, h] + b); c' = c sigmoid(f + forget_bias) +
  sigmoid(i) act(j); h' = act(c') sigmoid(o).
- `LSTMCell`: BasicLSTMCell's gates with optional peepholes, cell clipping and a
  projection of the output (Sak et al., 2014).
- `GRUCell`: r, u = sigmoid(W_g [x, h] + b_g); c = act(W_c [x, r h] + b_c);
  h' = u h + (1 - u) c.
The wrappers (MultiRNNCell, DropoutWrapper, ResidualWrapper) are in rnn_cell_wrappers.py.
"""

from __future__ import annotations

import collections

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor, get_default_graph
from ..compiler.core.shapes import TensorShape
from ..ops import api as ops
from ..ops import nn_ops
from ..ops.nest import flatten, pack
from ..ops.variable_scope import get_variable, variable_scope

__all__ = ["RNNCell", "LSTMStateTuple", "BasicRNNCell", "BasicLSTMCell", "LSTMCell",
           "GRUCell"]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the cell state `c` and the output `h` (TensorFlow's order)."""

    __slots__ = ()

    @property
    def dtype(self):
        """The dtype of both parts (TypeError if they differ)."""
        c, h = self
        if c.dtype is not h.dtype:
            raise TypeError(f"LSTMStateTuple: inconsistent dtypes c={c.dtype.name}, "
                            f"h={h.dtype.name}.")
        return c.dtype


def _depth(size) -> int:
    """The feature depth a state or output size stands for (an int or a TensorShape)."""
    if isinstance(size, TensorShape):
        return int(size.as_list()[-1])
    return int(size)


def feature_depth(x: Tensor, who: str) -> int:
    """The static size of the last axis of a rank-2 step input; ValueError otherwise."""
    if x.shape.ndims != 2:
        raise ValueError(f"{who}: inputs must be a rank-2 tensor [batch, depth], got "
                         f"{x.name} of shape {x.shape}.")
    depth = x.shape.as_list()[1]
    if depth is None:
        raise ValueError(f"{who}: the last dimension of the inputs ({x.name}, shape "
                         f"{x.shape}) must be known while building the graph.")
    return depth


def _activation(activation):
    return ops.tanh if activation is None else activation


class RNNCell:
    """An RNN cell: `state_size`, `output_size`, `zero_state(batch_size, dtype)` and
    `__call__(inputs, state, scope=None) -> (output, new_state)`.  Subclasses implement
    `build(input_depth)` (make variables with `get_variable`) and `call(inputs, state)`."""

    _default_name = "rnn_cell"

    def __init__(self, reuse=None, name=None, dtype=None):
        self._reuse = reuse
        self._name = name
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        self._scope = None       # the VariableScope of the first call
        self._name_scope = None  # its name scope, which later calls re-enter
        self.built = False

    @property
    def state_size(self):
        """The size of the state: an int, a TensorShape, or a nest of them."""
        raise NotImplementedError

    @property
    def output_size(self):
        """The size of the output (an int or a TensorShape)."""
        raise NotImplementedError

    @property
    def name(self) -> str | None:
        """The cell's variable scope name once called (else the name it was given)."""
        return self._scope.name if self._scope is not None else self._name

    def zero_state(self, batch_size, dtype):
        """Zeros shaped like the state for `batch_size` rows (an int or a scalar tensor)."""
        with get_default_graph().name_scope(f"{type(self).__name__}ZeroState"):
            return zero_state_for(self.state_size, batch_size, dtype)

    def build(self, input_depth: int, dtype) -> None:
        """Make the cell's variables (of `dtype`) for inputs of `input_depth` features."""

    def call(self, inputs, state):
        """One step: (output, new_state)."""
        raise NotImplementedError

    def __call__(self, inputs, state, scope=None):
        inputs = ops.convert_to_tensor(inputs)
        graph = get_default_graph()
        if self._scope is None:
            with variable_scope(scope if scope is not None else self._name,
                                default_name=self._default_name, reuse=self._reuse) as vs:
                self._scope, self._name_scope = vs, vs.original_name_scope
                self._build_once(inputs)
                return self.call(inputs, state)
        self._build_once(inputs)
        with variable_scope(self._scope, reuse=True, auxiliary_name_scope=False), \
                graph.name_scope(self._name_scope):
            return self.call(inputs, state)

    def _build_once(self, inputs) -> None:
        if not self.built:
            self.build(feature_depth(inputs, type(self).__name__), self._dtype or inputs.dtype)
            self.built = True


def zero_state_for(state_size, batch_size, dtype):
    """Zeros of [batch_size, depth] for every size in the nest `state_size`."""
    dtype = _dtypes.as_dtype(dtype)
    leaves = []
    for size in flatten(state_size):
        shape = ops.stack([batch_size, _depth(size)]) if isinstance(batch_size, Tensor) \
            else [int(batch_size), _depth(size)]
        leaves.append(ops.zeros(shape, dtype=dtype))
    return pack(state_size, leaves)


def _weights(name, shape, dtype, initializer=None):
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer)


def _bias(name, shape, dtype, initializer=None):
    return get_variable(name, shape=shape, dtype=dtype,
                        initializer=initializer if initializer is not None
                        else ops.zeros_initializer())


def _lstm_parts(state, is_tuple: bool, sizes, who: str):
    """(c, h) of an LSTM state: the pair, or the two slices of a concatenated state."""
    if is_tuple:
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise TypeError(f"{who}: with state_is_tuple=True the state must be an "
                            f"LSTMStateTuple (c, h), got {state!r}.")
        return state
    if isinstance(state, (tuple, list)):
        raise TypeError(f"{who}: with state_is_tuple=False the state must be one tensor of "
                        f"depth {sum(sizes)}, got {state!r}.")
    return ops.split(state, sizes, axis=1)


def _affine(parts, kernel, bias):
    """matmul(concat(parts, 1), kernel) + bias, TensorFlow's cell arithmetic."""
    return nn_ops.bias_add(ops.matmul(ops.concat(parts, 1), kernel), bias)


class BasicRNNCell(RNNCell):
    """h' = activation(W [x, h] + b); the output is h' (variables `kernel`, `bias`)."""

    _default_name = "basic_rnn_cell"

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None,
                 **kwargs):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._activation = _activation(activation)

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_depth, dtype):
        self._kernel = _weights("kernel", [input_depth + self._num_units, self._num_units],
                                dtype)
        self._bias = _bias("bias", [self._num_units], dtype)

    def call(self, inputs, state):
        output = self._activation(_affine([inputs, state], self._kernel, self._bias))
        return output, output


class BasicLSTMCell(RNNCell):
    """The LSTM of Zaremba et al. (2014): no peepholes, no clipping, no projection;
    `forget_bias` is added to the forget gate (variables `kernel` [depth + n, 4n], `bias`
    [4n]; gate order i, j, f, o).  `state_is_tuple=False` concatenates c and h."""

    _default_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_depth, dtype):
        n = self._num_units
        self._kernel = _weights("kernel", [input_depth + n, 4 * n], dtype)
        self._bias = _bias("bias", [4 * n], dtype)

    def call(self, inputs, state):
        c, h = _lstm_parts(state, self._state_is_tuple, [self._num_units] * 2, "BasicLSTMCell")
        i, j, f, o = ops.split(_affine([inputs, h], self._kernel, self._bias), 4, axis=1)
        forget = ops.sigmoid(f + ops.cast(self._forget_bias, f.dtype))
        new_c = c * forget + ops.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * ops.sigmoid(o)
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else \
            ops.concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(RNNCell):
    """The LSTM with optional peepholes (`use_peepholes`: diagonal weights `w_f_diag`,
    `w_i_diag`, `w_o_diag` from the cell state into the gates), cell clipping (`cell_clip`),
    an output projection (`num_proj`: `projection/kernel`, clipped by `proj_clip`) and
    `initializer` for the kernels.  Gates as in BasicLSTMCell; with peepholes
    c' = sigmoid(f + b_f + w_f c) c + sigmoid(i + w_i c) act(j), m = sigmoid(o + w_o c') act(c')."""

    _default_name = "lstm_cell"

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None, **kwargs):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = int(num_proj) if num_proj is not None else None
        self._proj_clip = proj_clip
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        n, m = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, m) if self._state_is_tuple else n + m

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def build(self, input_depth, dtype):
        n, m = self._num_units, self._num_proj or self._num_units
        self._kernel = _weights("kernel", [input_depth + m, 4 * n], dtype, self._initializer)
        self._bias = _bias("bias", [4 * n], dtype)
        if self._use_peepholes:
            self._w_f_diag = _weights("w_f_diag", [n], dtype, self._initializer)
            self._w_i_diag = _weights("w_i_diag", [n], dtype, self._initializer)
            self._w_o_diag = _weights("w_o_diag", [n], dtype, self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = _weights("projection/kernel", [n, self._num_proj], dtype,
                                         self._initializer)

    def call(self, inputs, state):
        n = self._num_units
        c_prev, m_prev = _lstm_parts(state, self._state_is_tuple, [n, self._num_proj or n],
                                     "LSTMCell")
        i, j, f, o = ops.split(_affine([inputs, m_prev], self._kernel, self._bias), 4, axis=1)
        forget_bias = ops.cast(self._forget_bias, f.dtype)
        if self._use_peepholes:
            c = (ops.sigmoid(f + forget_bias + self._w_f_diag * c_prev) * c_prev +
                 ops.sigmoid(i + self._w_i_diag * c_prev) * self._activation(j))
        else:
            c = ops.sigmoid(f + forget_bias) * c_prev + ops.sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = ops.sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = ops.sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = ops.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(c, m) if self._state_is_tuple else ops.concat([c, m], 1)
        return m, new_state


class GRUCell(RNNCell):
    """The gated recurrent unit of Cho et al. (2014): variables `gates/kernel`
    [depth + n, 2n], `gates/bias` (ones unless `bias_initializer`), `candidate/kernel`
    [depth + n, n], `candidate/bias` (zeros unless `bias_initializer`); gate order r, u."""

    _default_name = "gru_cell"

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None, **kwargs):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_depth, dtype):
        n = self._num_units
        gate_bias = self._bias_initializer or ops.constant_initializer(1.0, dtype=dtype)
        self._gate_kernel = _weights("gates/kernel", [input_depth + n, 2 * n], dtype,
                                     self._kernel_initializer)
        self._gate_bias = _bias("gates/bias", [2 * n], dtype, gate_bias)
        self._candidate_kernel = _weights("candidate/kernel", [input_depth + n, n], dtype,
                                          self._kernel_initializer)
        self._candidate_bias = _bias("candidate/bias", [n], dtype, self._bias_initializer)

    def call(self, inputs, state):
        gates = ops.sigmoid(_affine([inputs, state], self._gate_kernel, self._gate_bias))
        r, u = ops.split(gates, 2, axis=1)
        candidate = self._activation(_affine([inputs, r * state], self._candidate_kernel,
                                             self._candidate_bias))
        new_h = u * state + (1 - u) * candidate
        return new_h, new_h
