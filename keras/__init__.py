"""A small Keras-style API (`tf.keras`): Sequential models, layers, compile/fit/evaluate/predict.

Built on flowjit's graph, Session and compiler: a model owns a Graph, its training step is
one Session run of compiled clusters.  Modules: `models` (Model, Sequential: layers, graph,
session, weights), `training` (compile/fit/evaluate/predict), `engine` (the Layer base,
keras.Input), the layers (`core_layers`, `conv_layers`, `norm_layers`, `recurrent`,
gathered in `layers`), `losses`, `metrics`, `optimizers`, `callbacks`, `model_io` (weights
files, summary), `activations`, `initializers`, `regularizers`, `backend`, `utils`.
Semantics follow Keras 2 (tf_keras); tests/test_keras_programs.py checks them against it.
"""

from . import (activations, backend, callbacks, initializers, layers, losses, metrics,  # noqa
               models, optimizers, regularizers, utils)
from .engine import Input  # noqa: F401
from .models import Model, Sequential  # noqa: F401
