"""The `tf.layers.Layer` base class: variable scopes, weights, regularization and updates.

A layer is an object that builds its variables on its first call (`build(input_shape)`) and
computes its outputs in `call(inputs)`.  As in TensorFlow 1.x:

- the first call opens the layer's variable scope: the name given, or a unique default
  (`dense`, `dense_1`, ... per enclosing variable scope), so variables are `dense/kernel:0`;
  later calls re-enter the same scope (ops `dense/MatMul_1`) and share the variables;
- `add_weight` creates a variable with `get_variable`; a regularizer's loss goes into the
  layer's `losses` and the graph's `REGULARIZATION_LOSSES` collection (once per variable, not
  again when a variable is reused);
- an activity regularizer adds `regularizer(outputs) / batch_size` the same way;
- `add_update` collects ops (batch normalization's moving averages) that each call also puts
  into `UPDATE_OPS`.
"""

from __future__ import annotations

import re

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys, Tensor, get_default_graph
from ..compiler.core.shapes import TensorShape
from ..ops import api as ops
from ..ops.conversion import convert_to_tensor
from ..ops.variable_scope import get_variable, variable_scope

__all__ = ["Layer", "InputSpec"]


def snake_case(class_name: str) -> str:
    """`MaxPooling2D` -> `max_pooling2d`: TensorFlow's default layer names (a private class's
    name, which would start with "_", gets the prefix "private")."""
    words = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", class_name)
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()
    return "private" + name if name.startswith("_") else name


def _unique_layer_name(base: str) -> str:
    """`base`, `base_1`, ... per graph: the `name` of layers constructed without one."""
    counts = get_default_graph().__dict__.setdefault("_layer_name_counts", {})
    n = counts.get(base, 0)
    counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def add_to_collection_once(name: str, values) -> None:
    """Add each of `values` to the default graph's collection `name` unless already there."""
    graph = get_default_graph()
    present = graph.get_collection_ref(name)
    for value in values:
        if not any(value is p for p in present):
            present.append(value)


class InputSpec:
    """What a layer accepts: `ndim`, `min_ndim`, `max_ndim` and `axes` ({axis: size})."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None):
        self.dtype, self.shape, self.ndim = dtype, shape, ndim
        self.max_ndim, self.min_ndim, self.axes = max_ndim, min_ndim, dict(axes or {})

    def check(self, layer_name: str, shape: TensorShape) -> None:
        """ValueError naming the layer when `shape` does not satisfy the spec."""
        rank = shape.ndims
        if rank is None:
            return
        if self.ndim is not None and rank != self.ndim:
            raise ValueError(f"Input of layer {layer_name} is incompatible: expected "
                             f"ndim={self.ndim}, found ndim={rank} (shape {shape}).")
        if self.min_ndim is not None and rank < self.min_ndim:
            raise ValueError(f"Input of layer {layer_name} is incompatible: expected "
                             f"min_ndim={self.min_ndim}, found ndim={rank} (shape {shape}).")
        if self.max_ndim is not None and rank > self.max_ndim:
            raise ValueError(f"Input of layer {layer_name} is incompatible: expected "
                             f"max_ndim={self.max_ndim}, found ndim={rank} (shape {shape}).")
        dims = shape.as_list()
        for axis, size in self.axes.items():
            got = dims[axis]
            if size is not None and got is not None and got != size:
                raise ValueError(f"Input of layer {layer_name} is incompatible: axis {axis} "
                                 f"should have size {size}, found shape {shape}.")


class Layer:
    """TensorFlow 1.x's `tf.layers.Layer`: subclasses implement `build` and `call`."""

    def __init__(self, trainable=True, name=None, dtype=None, activity_regularizer=None,
                 _scope=None, _reuse=None, **kwargs):
        allowed = {"input_shape", "batch_input_shape", "batch_size", "weights",
                   "autocast", "dynamic"}
        unknown = set(kwargs) - allowed
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments "
                            f"{sorted(unknown)}.")
        self.trainable = bool(trainable)
        self._given_name = name
        self._base_name = name or snake_case(type(self).__name__)
        self._name = name or _unique_layer_name(self._base_name)
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        self.activity_regularizer = activity_regularizer
        self._scope = _scope
        self._reuse = _reuse
        self.built = False
        self.input_spec = None
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        self._losses: list = []
        self._updates: list = []

    # --- properties ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def scope_name(self) -> str:
        if self._scope is None:
            raise ValueError(f"No name available for layer scope because the layer "
                             f"{self._name!r} has not been used yet.")
        return self._scope.name

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def losses(self) -> list:
        return list(self._losses)

    @property
    def updates(self) -> list:
        return list(self._updates)

    # --- the subclass interface -----------------------------------------------------------
    def build(self, input_shape):
        """Create the layer's variables for inputs of `input_shape` (default: none)."""
        self.built = True

    def call(self, inputs, **kwargs):
        """The layer's computation (default: identity)."""
        return inputs

    def compute_output_shape(self, input_shape):
        """The static output shape for `input_shape`, where the subclass knows it."""
        raise NotImplementedError(f"{type(self).__name__}.compute_output_shape")

    def add_weight(self, name, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None, **kwargs):
        """A variable `scope/name` made with get_variable; registers its regularizer once."""
        graph = get_default_graph()
        dtype = _dtypes.as_dtype(dtype or self._dtype or _dtypes.float32)
        existing = {id(v) for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)}
        variable = get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                                trainable=bool(trainable and self.trainable))
        if bool(trainable):
            self._trainable_weights.append(variable)
        else:
            self._non_trainable_weights.append(variable)
        if regularizer is not None and id(variable) not in existing:
            with graph.name_scope(f"{name}/Regularizer"):
                loss = regularizer(variable)
            if loss is not None:
                self.add_loss(loss)
        return variable

    add_variable = add_weight   # TensorFlow 1.x's older name

    def add_loss(self, losses, inputs=None):
        """Record regularization losses (also into REGULARIZATION_LOSSES)."""
        losses = list(losses) if isinstance(losses, (list, tuple)) else [losses]
        losses = [convert_to_tensor(t) for t in losses if t is not None]
        self._losses.extend(losses)
        add_to_collection_once(GraphKeys.REGULARIZATION_LOSSES, losses)

    def add_update(self, updates, inputs=None):
        """Record update ops (they go into UPDATE_OPS after the call)."""
        updates = list(updates) if isinstance(updates, (list, tuple)) else [updates]
        self._updates.extend(u.op if isinstance(u, Tensor) else u for u in updates)

    # --- calling ---------------------------------------------------------------------------
    def _open_scope(self):
        """Choose the layer's variable scope (and name scope) on its first call."""
        if self._scope is not None:
            return
        if self._given_name is not None or self._reuse:
            opened = variable_scope(self._base_name, reuse=self._reuse)
        else:
            opened = variable_scope(None, default_name=self._base_name)
        with opened as scope:
            self._scope = scope

    def __call__(self, inputs, *args, **kwargs):
        """Build on the first call (in the layer's scope), then run `call`."""
        inputs = _as_tensors(inputs)
        first = _first_tensor(inputs)
        if self._dtype is None and first is not None:
            self._dtype = first.dtype.base_dtype
        self._open_scope()
        graph = get_default_graph()
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False), \
                graph.name_scope(self._scope.original_name_scope):
            if self.input_spec is not None and first is not None:
                self.input_spec.check(self._name, first.shape)
            if not self.built:
                self.build(_input_shapes(inputs))
                self.built = True
            outputs = self.call(inputs, *args, **kwargs)
            if self.activity_regularizer is not None:
                self._regularize_activity(outputs)
        add_to_collection_once(GraphKeys.UPDATE_OPS, self._updates)
        return outputs

    apply = __call__

    def _regularize_activity(self, outputs):
        graph = get_default_graph()
        for output in (outputs if isinstance(outputs, (list, tuple)) else [outputs]):
            with graph.name_scope("ActivityRegularizer"):
                loss = self.activity_regularizer(output)
                batch = ops.cast(ops.shape(output)[0], loss.dtype)
                self.add_loss(ops.truediv(loss, batch))

    # --- values ------------------------------------------------------------------------------
    def count_params(self) -> int:
        """The number of scalars in the layer's variables."""
        return int(sum(v.shape.num_elements() for v in self.weights))

    def get_weights(self, session=None) -> list:
        """The variables' values in `session` (default: the default session)."""
        return [v.eval(session=session) for v in self.weights]

    def set_weights(self, values, session=None) -> None:
        """Load `values` (one array per variable of `weights`) into `session`."""
        weights = self.weights
        if len(values) != len(weights):
            raise ValueError(f"Layer {self._name}: set_weights got {len(values)} arrays for "
                             f"{len(weights)} weights.")
        for variable, value in zip(weights, values):
            variable.load(value, session=session)


def _as_tensors(inputs):
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(_as_tensors(x) for x in inputs)
    if isinstance(inputs, dict):
        return {k: _as_tensors(v) for k, v in inputs.items()}
    return inputs if isinstance(inputs, Tensor) else convert_to_tensor(inputs)


def _first_tensor(inputs):
    if isinstance(inputs, Tensor):
        return inputs
    values = inputs.values() if isinstance(inputs, dict) else inputs
    for value in values:
        found = _first_tensor(value)
        if found is not None:
            return found
    return None


def _input_shapes(inputs):
    if isinstance(inputs, Tensor):
        return inputs.shape
    if isinstance(inputs, dict):
        return {k: _input_shapes(v) for k, v in inputs.items()}
    return [_input_shapes(x) for x in inputs]
