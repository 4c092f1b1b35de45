"""`keras.Model` and `keras.Sequential`: a model's layers, its own Graph and Session, weights.

A model owns one flowjit `Graph` and, once something runs, one `Session` on it (made with
`backend.session_config()`).  Building the model (when its input shape is known: an
`Input`, an `input_shape` on the first layer, `build(shape)`, or the first data given to
fit/predict) makes the input placeholder `[None, *shape]` and calls the layers on it for
inference, which makes their weights; `compile`/`fit` add the training forward pass (the
same layers called with `training=True`), the loss and the optimizer's update ops (see
keras/training.py).  New variables are initialized in the session when they first need to
be; `get_weights`/`set_weights` read and assign them in it.

Three ways to define a model: `Sequential([...])`/`.add`; the functional form
`Model(inputs=keras.Input(shape), outputs=...)` (one input and one output), whose layer
calls are replayed into the model's graph; a subclass defining `call(inputs, training)`,
whose layer attributes are tracked.
"""

from __future__ import annotations

import numpy as np

from ..compiler.core.graph import Graph, GraphKeys, get_default_graph
from ..ops.basic_ops import placeholder
from ..ops.variables import variables_initializer
from ..runtime.session import Session
from . import backend, model_io, training
from .engine import InputLayer, KerasTensor, Layer

__all__ = ["Model", "Sequential"]


class Model(training.TrainingMixin):
    """A model (module docstring).  `Model(inputs, outputs)` is the functional form."""

    def __init__(self, inputs=None, outputs=None, name=None, **kwargs):
        if kwargs:
            raise TypeError(f"keras.Model: unknown keyword argument(s) {sorted(kwargs)}.")
        self.__dict__["_tracked"] = []
        self.name = name or backend.unique_layer_name(
            backend.snake_case(type(self).__name__) if type(self) is not Model else "model")
        self.stop_training = False
        self.history = None
        self._graph = None
        self._session = None
        self._initialized: set = set()
        self._input_spec = None        # (shape without the batch dimension, dtype) once known
        self._nodes = None             # functional: KerasTensors in call order
        self._compiled = None
        self._steps = None
        if inputs is not None or outputs is not None:
            self._init_functional(inputs, outputs)
        elif type(self) is Model:
            raise TypeError("keras.Model needs inputs= and outputs= (keras.Input tensors and "
                            "what the layers made of them), or subclass it and define call().")

    def __setattr__(self, key, value):
        found = [value] if isinstance(value, Layer) else \
            [v for v in value if isinstance(v, Layer)] if isinstance(value, (list, tuple)) else []
        self._tracked.extend(layer for layer in found if layer not in self._tracked)
        object.__setattr__(self, key, value)

    # --- the functional form ------------------------------------------------------------------
    def _init_functional(self, inputs, outputs):
        inputs = _single(inputs, "inputs")
        outputs = _single(outputs, "outputs")
        if not isinstance(inputs, KerasTensor) or inputs.input_layer is None:
            raise TypeError("keras.Model: inputs must be a keras.Input.")
        if not isinstance(outputs, KerasTensor):
            raise TypeError("keras.Model: outputs must be what layers made from the inputs.")
        order, seen = [], set()

        def visit(node):
            if id(node) in seen:
                return
            seen.add(id(node))
            if node.layer is None:
                if node is not inputs:
                    raise ValueError(f"keras.Model: output depends on {node}, which is not "
                                     "the model's input (one input per model).")
                return
            for parent in node.inputs:
                visit(parent)
            order.append(node)

        visit(outputs)
        self._nodes, self._model_input, self._model_output = order, inputs, outputs
        self._input_spec = (tuple(inputs.shape.as_list()[1:]), inputs.dtype)
        self._build_graph()

    # --- the layers ---------------------------------------------------------------------------
    @property
    def layers(self) -> list:
        """The model's layers in call order (a functional model lists its InputLayer first)."""
        if self._nodes is not None:
            found = [self._model_input.input_layer]
            for node in self._nodes:
                if node.layer not in found:
                    found.append(node.layer)
            return found
        return list(self._tracked)

    def get_layer(self, name=None, index=None) -> Layer:
        """The layer called `name`, or at position `index` of `layers`."""
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. The model has "
                         f"{[layer.name for layer in self.layers]}.")

    def call(self, inputs, training=False):
        """The forward pass on graph tensor `inputs` (subclasses define their own)."""
        if self._nodes is None:
            raise NotImplementedError(f"{type(self).__name__} must define call(inputs, "
                                      "training=False).")
        values = {id(self._model_input): inputs}
        for node in self._nodes:
            args = [values[id(p)] for p in node.inputs]
            mode = training if node.training is None else node.training
            values[id(node)] = node.layer(args[0] if len(args) == 1 else args,
                                          training=mode, **node.kwargs)
        return values[id(self._model_output)]

    # --- building -----------------------------------------------------------------------------
    @property
    def built(self) -> bool:
        """Whether the graph (input placeholder, inference outputs, weights) exists."""
        return self._graph is not None

    def build(self, input_shape=None) -> None:
        """Build the model for inputs of `input_shape` (with the batch dimension first, as
        Keras' `build` takes it); without one, from the shape the model already knows."""
        if input_shape is not None:
            shape = tuple(input_shape)[1:]
            dtype = self._input_spec[1] if self._input_spec else backend.floatx()
            self._input_spec = (shape, dtype)
        self._build_graph()

    def _known_input(self, x=None) -> bool:
        if self._input_spec is None and x is not None:
            self._input_spec = (tuple(np.shape(x)[1:]), backend.floatx())
        return self._input_spec is not None

    def _build_graph(self) -> None:
        if self._graph is not None:
            return
        if self._input_spec is None:
            raise ValueError(f"Model {self.name} has not been built: give the first layer an "
                             "input_shape, start with keras.Input, call build(input_shape), "
                             "or call fit/predict on data first.")
        shape, dtype = self._input_spec
        graph = Graph()
        seed = backend.random_seed()
        graph.seed = seed if seed is not None else get_default_graph().seed
        with graph.as_default():
            self._x = placeholder(dtype, [None, *shape], name="input")
            self._graph = graph
            try:
                self._y_pred = self.call(self._x, training=False)
            except Exception:
                self._graph = None
                raise
        self.output_shape = self._y_pred.shape

    @property
    def graph(self) -> Graph:
        """The model's flowjit Graph (built on first use)."""
        self._build_graph()
        return self._graph

    @property
    def session(self) -> Session:
        """The model's Session, its variables initialized."""
        self._build_graph()
        if self._session is None:
            self._session = Session(graph=self._graph, config=backend.session_config())
        self._initialize_new_variables()
        return self._session

    def _initialize_new_variables(self) -> None:
        fresh = [v for v in self._graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                 if v.op not in self._initialized]
        if fresh:
            with self._graph.as_default():
                self._session.run(variables_initializer(fresh))
            self._initialized.update(v.op for v in fresh)

    # --- weights ------------------------------------------------------------------------------
    @property
    def weights(self) -> list:
        """Every layer's weights, layer by layer (each layer's trainable ones first)."""
        self._build_graph()
        found = []
        for layer in self.layers:
            found += [w for w in layer.weights if w not in found]
        return found

    @property
    def trainable_weights(self) -> list:
        """The weights training updates."""
        return [w for w in self.weights if any(w is t for layer in self.layers
                                                for t in layer.trainable_weights)]

    @property
    def non_trainable_weights(self) -> list:
        """The weights training does not differentiate (batch normalization's statistics)."""
        trainable = self.trainable_weights
        return [w for w in self.weights if not any(w is t for t in trainable)]

    def get_weights(self) -> list:
        """The weights' values (NumPy arrays), in the order of `weights`."""
        return list(self.session.run(self.weights)) if self.weights else []

    def set_weights(self, values) -> None:
        """Assign the weights from NumPy arrays in the order of `weights` (shapes must match)."""
        model_io.assign_weights(self, self.weights, list(values))

    def count_params(self) -> int:
        """The number of scalars in all weights."""
        return sum(int(w.shape.num_elements()) for w in self.weights)

    def summary(self, line_length=None, positions=None, print_fn=None) -> None:
        """Print the layers, their output shapes and parameter counts, and the totals."""
        model_io.summary(self, line_length, print_fn)

    def save_weights(self, filepath, overwrite=True, save_format=None) -> None:
        """Write the weights to a flowjit checkpoint (model_io.save_weights)."""
        model_io.save_weights(self, filepath, overwrite)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False) -> None:
        """Read the weights back from `save_weights`' file (model_io.load_weights)."""
        model_io.load_weights(self, filepath, by_name)

    def __call__(self, x, training=False):
        if isinstance(x, KerasTensor):
            raise NotImplementedError("Calling a model on keras.Input (nesting models) is not "
                                      "supported; use its layers.")
        return self.predict(np.asarray(x), verbose=0)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


class Sequential(Model):
    """A plain stack of layers, each called on the previous one's output."""

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        for layer in layers or ():
            self.add(layer)

    def add(self, layer) -> None:
        """Append a layer (an InputLayer or keras.Input only sets the input shape).  When the
        input shape is known the model is (re)built at once, as in Keras, so its layers have
        their weights; adding layers after the model has run is an error."""
        self._unbuild()
        if isinstance(layer, KerasTensor) and layer.input_layer is not None:
            layer = layer.input_layer
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add takes layers, got {type(layer).__name__}.")
        if isinstance(layer, InputLayer):
            if self._tracked:
                raise ValueError("An InputLayer must come before the other layers.")
            self._input_spec = (layer._input_shape_arg, layer.dtype)
            return
        if not self._tracked and layer._input_shape_arg is not None \
                and self._input_spec is None:
            self._input_spec = (layer._input_shape_arg, backend.floatx())
        self._tracked.append(layer)
        if self._input_spec is not None:
            self._build_graph()

    def _unbuild(self) -> None:
        """Drop the graph built so far (and the layers' weights in it) to build again."""
        if not self.built:
            return
        if self._session is not None:
            raise ValueError(f"Sequential {self.name} has already run; add or pop layers "
                             "before compiling, fitting or predicting.")
        for layer in self._tracked:
            layer._reset()
        self._graph, self._steps = None, None

    def pop(self) -> None:
        """Remove the last layer (before the model has run)."""
        if not self._tracked:
            raise TypeError("There are no layers in the model.")
        self._unbuild()
        self._tracked.pop()
        if self._input_spec is not None and self._tracked:
            self._build_graph()

    def call(self, inputs, training=False):
        if not self._tracked:
            raise ValueError(f"Sequential {self.name} has no layers.")
        x = inputs
        for layer in self._tracked:
            x = layer(x, training=training)
        return x


def _single(value, what):
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise NotImplementedError(f"keras.Model: one tensor of {what} is supported, got "
                                      f"{len(value)}.")
        return value[0]
    return value
