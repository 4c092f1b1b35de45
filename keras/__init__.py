"""A small Keras-style API (`tf.keras`): Sequential models, layers, compile/fit/evaluate/predict.

Built on flowjit's graph, Session and compiler: a model owns a Graph, its training step is
one Session run of compiled clusters.
"""

from . import (activations, backend, callbacks, initializers, layers, losses, metrics,  # noqa
               optimizers, regularizers, utils)
from .engine import Input  # noqa: F401
from .model import Model, Sequential  # noqa: F401
