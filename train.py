"""`flowjit.train`: TensorFlow 1.x's `tf.train` namespace.

Kept small: it re-exports what lives elsewhere (optimizers, savers, ... as they are added)
and holds only thin glue such as `write_graph`.
"""

from __future__ import annotations

import os

from . import gfile as _gfile
from .compiler.graph import Graph
from .compiler.graph_def import GraphDef

__all__ = ["write_graph"]


def write_graph(graph_or_graph_def, logdir, name, as_text: bool = True) -> str:
    """Write a Graph (or GraphDef) to `logdir/name`; returns the path written.

    `as_text=True` writes the readable text form, otherwise the binary form; both are read
    back by `GraphDef().ParseFromString`.  `logdir` is created if needed, and the file is
    written atomically (a temporary file in the same directory, then a rename), so an
    existing file is only replaced by a complete new one.
    """
    if isinstance(graph_or_graph_def, Graph):
        graph_def = graph_or_graph_def.as_graph_def(add_shapes=True)
    elif isinstance(graph_or_graph_def, GraphDef):
        graph_def = graph_or_graph_def
    else:
        raise TypeError("write_graph expects a Graph or a GraphDef, got "
                        f"{type(graph_or_graph_def).__name__}.")
    data = str(graph_def) if as_text else graph_def.SerializeToString()
    path = os.path.join(os.fspath(logdir), name)
    _gfile.MakeDirs(os.path.dirname(path) or ".")
    _gfile.atomic_write_string_to_file(path, data)
    return path
