"""The base of `tf.keras` layers: `Layer`, the symbolic `KerasTensor`, `Input`, `InputLayer`.

A layer is a Python object that, called on a graph tensor, adds its ops to that tensor's
graph: its first call builds its weights (Variables, under the name scope `<layer name>/`)
from the input's static shape, every call adds the forward computation.  A model calls each
layer twice, once for inference and once for training (`training=True`: dropout drops,
batch normalization uses the batch's moments and records its moving-average updates in
`layer.updates`), on the same weights; `training` is a Python bool, never a graph value, so
neither graph holds a branch (a `cond` would compute both sides, and ops inside its branches
run uncompiled).

Called on a `KerasTensor` (what `keras.Input` returns) a layer records the call instead, and
returns a new KerasTensor: the functional API's graph of layers, which `keras.Model(inputs,
outputs)` replays into its own flowjit Graph.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape, as_shape
from ..ops.variables import Variable
from . import backend
from . import initializers as _initializers
from . import regularizers as _regularizers

__all__ = ["Layer", "KerasTensor", "Input", "InputLayer"]

_LAYER_KWARGS = ("trainable", "name", "dtype", "input_shape", "batch_input_shape",
                 "input_dim", "batch_size", "input_length")


class Layer:
    """Base class of layers.  Subclasses define `build(input_shape)` (make weights with
    `add_weight`), `call(inputs, training=False)` (the forward ops) and, for the functional
    API's static shapes, `compute_output_shape(input_shape)` (default: unchanged)."""

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None,
                 batch_input_shape=None, input_dim=None, batch_size=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown keyword argument(s) "
                            f"{sorted(kwargs)}; layers accept {', '.join(_LAYER_KWARGS)}.")
        self.name = name or backend.unique_layer_name(backend.snake_case(type(self).__name__))
        self.trainable = bool(trainable)
        self.dtype = _dtypes.as_dtype(dtype or backend.floatx())
        if batch_input_shape is not None:
            input_shape = tuple(batch_input_shape)[1:]
        elif input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        self._input_shape_arg = None if input_shape is None else tuple(
            None if d is None else int(d) for d in input_shape)
        self.built = False
        self._graph = None
        self._weights: list = []          # Variables, in the order add_weight made them
        self._trainable_flags: list = []
        self._regularized: list = []      # (weight, regularizer) pairs: model loss terms
        self.updates: list = []           # ops the last training call asks to run each step
        self.input_shape = None           # TensorShapes of the first call, for summary()
        self.output_shape = None

    # --- what subclasses define ---------------------------------------------------------------
    def build(self, input_shape) -> None:
        """Make the layer's weights for inputs of `input_shape` (a TensorShape)."""

    def call(self, inputs, training=False):
        """The layer's forward ops on the graph tensor `inputs`."""
        return inputs

    def compute_output_shape(self, input_shape) -> TensorShape:
        """The output's static shape for inputs of `input_shape` (default: the same)."""
        return as_shape(input_shape)

    def _reset(self) -> None:
        """Forget the weights and shapes of a graph a model dropped (to build again)."""
        self.built, self._graph = False, None
        self._weights, self._trainable_flags, self._regularized = [], [], []
        self.updates, self.input_shape, self.output_shape = [], None, None

    # --- weights ------------------------------------------------------------------------------
    def add_weight(self, name, shape, initializer="glorot_uniform", dtype=None,
                   trainable=True, regularizer=None, constraint=None):
        """A new Variable `<layer name>/<name>` of `shape`, initialized by `initializer`
        (a Keras name, an initializer object or a callable `(shape, dtype) -> tensor`)."""
        dtype = _dtypes.as_dtype(dtype or self.dtype)
        init = _initializers.get(initializer)
        shape = [int(d) for d in shape]
        trainable = bool(trainable) and self.trainable
        variable = Variable(lambda: init(shape, dtype=dtype), trainable=trainable, name=name,
                            dtype=dtype)
        self._weights.append(variable)
        self._trainable_flags.append(trainable)
        penalty = _regularizers.get(regularizer)
        if penalty is not None:
            self._regularized.append((variable, penalty))
        return variable

    def regularization_losses(self) -> list:
        """One scalar penalty tensor per regularized weight, built in the weights' graph."""
        return [penalty(weight) for weight, penalty in self._regularized]

    @property
    def weights(self) -> list:
        """Every weight Variable: trainable ones first (as Keras orders them)."""
        return self.trainable_weights + self.non_trainable_weights

    @property
    def trainable_weights(self) -> list:
        """The Variables the optimizer updates."""
        return [w for w, t in zip(self._weights, self._trainable_flags) if t]

    @property
    def non_trainable_weights(self) -> list:
        """Weights no gradient updates (batch normalization's moving statistics)."""
        return [w for w, t in zip(self._weights, self._trainable_flags) if not t]

    def count_params(self) -> int:
        """The number of scalars in the layer's weights (it must be built)."""
        if not self.built:
            raise ValueError(f"You tried to call count_params on layer {self.name}, but the "
                             "layer isn't built. Build it by calling it on data or a model "
                             "holding it.")
        return sum(int(w.shape.num_elements()) for w in self.weights)

    # --- calling ------------------------------------------------------------------------------
    def __call__(self, inputs, training=None, **kwargs):
        if isinstance(inputs, (list, tuple)) and inputs and isinstance(inputs[0], KerasTensor):
            return KerasTensor._from_call(self, list(inputs), training, kwargs)
        if isinstance(inputs, KerasTensor):
            return KerasTensor._from_call(self, [inputs], training, kwargs)
        if not isinstance(inputs, Tensor):
            raise TypeError(f"Layer {self.name} was called on {type(inputs).__name__}: call "
                            "it on a graph tensor or on a keras.Input.")
        graph = inputs.graph
        with graph.as_default(), graph.name_scope(self.name + "/"):
            if not self.built:
                if self._graph is not None and self._graph is not graph:
                    raise ValueError(f"Layer {self.name} belongs to another model's graph.")
                self.build(inputs.shape)
                self._graph = graph
                self.built = True
                self.input_shape = inputs.shape
            elif graph is not self._graph:
                raise ValueError(f"Layer {self.name} was built in another graph (another "
                                 "model): a layer's weights live in one model's graph.")
            outputs = self.call(inputs, training=bool(training), **kwargs)
        if self.output_shape is None:
            self.output_shape = outputs.shape
        return outputs

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


class KerasTensor:
    """A symbolic value of the functional API: its static shape (batch dimension first,
    None) and dtype, and the layer call that produces it (None for a `keras.Input`)."""

    def __init__(self, shape, dtype, layer=None, inputs=(), training=None, kwargs=None,
                 name=None):
        self.shape = as_shape(shape)
        self.dtype = _dtypes.as_dtype(dtype)
        self.layer, self.inputs = layer, list(inputs)
        self.training, self.kwargs = training, dict(kwargs or {})
        self.name = name
        self.input_layer = None   # the InputLayer of a keras.Input

    @classmethod
    def _from_call(cls, layer, inputs, training, kwargs):
        shapes = [t.shape for t in inputs]
        shape = layer.compute_output_shape(shapes[0] if len(shapes) == 1 else shapes)
        return cls(shape, layer.dtype, layer, inputs, training, kwargs)

    def __repr__(self):
        made_by = f", made by layer {self.layer.name!r}" if self.layer else ""
        return f"<KerasTensor shape={self.shape} dtype={self.dtype.name}{made_by}>"


def Input(shape=None, batch_size=None, name=None, dtype=None, batch_shape=None):  # noqa: N802
    """A symbolic model input of `shape` (without the batch dimension): what the functional
    API's first layer is called on."""
    if batch_shape is not None:
        shape = tuple(batch_shape)[1:]
    if shape is None:
        raise ValueError("keras.Input needs a shape (without the batch dimension).")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    layer = InputLayer(input_shape=shape, dtype=dtype, name=name)
    return layer.output


class InputLayer(Layer):
    """The layer of a model's input: `input_shape` (without the batch dimension) and dtype.
    A model makes a placeholder of shape [None, *input_shape] for it."""

    def __init__(self, input_shape=None, batch_size=None, dtype=None, name=None, **kwargs):
        super().__init__(name=name, dtype=dtype, input_shape=input_shape, **kwargs)
        if self._input_shape_arg is None:
            raise ValueError("InputLayer needs an input_shape.")
        shape = TensorShape([None, *self._input_shape_arg])
        self.output = KerasTensor(shape, self.dtype, name=self.name)
        self.output.input_layer = self
        self.input_shape = self.output_shape = shape
