"""Notebook display hooks of the graph core: which function renders a core object as HTML.

The graph core imports nothing above it (docs/architecture.md, "Layers"), yet a Graph should
draw itself in Jupyter with the view that lives in the top layer (client/graph_view.py).  This
module owns the small registry between them: the root package registers a renderer per class
at import time, and `Graph._repr_html_` asks `html_for`.  With no renderer registered, the
answer is None and Jupyter shows the plain repr.
"""

from __future__ import annotations

_HTML_RENDERERS: dict = {}


def register_html_renderer(cls, fn) -> None:
    """Render instances of `cls` (and of its subclasses) in notebooks with `fn(obj) -> str`."""
    _HTML_RENDERERS[cls] = fn


def html_for(obj):
    """The HTML of `obj` from the renderer registered for its class or nearest base class,
    or None when none is registered."""
    for cls in type(obj).__mro__:
        fn = _HTML_RENDERERS.get(cls)
        if fn is not None:
            return fn(obj)
    return None
