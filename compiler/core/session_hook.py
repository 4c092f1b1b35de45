"""The default-session hook: which session `Tensor.eval()` and `Operation.run()` use.

The graph core knows no runtime (docs/architecture.md, "Layers"), yet `Tensor.eval()` must
find the session of the enclosing `with sess.as_default():` block.  This module owns that
stack of default sessions (one per thread) and the InteractiveSession list; `runtime/session.py`
pushes and pops sessions here, and the graph model only calls `session_for` and the object's
`run(fetches, feed_dict)`.  Nothing here imports a session type.
"""

from __future__ import annotations

import threading

_local = threading.local()
_interactive: list = []


def default_sessions() -> list:
    """This thread's stack of sessions made default with `as_default()` (innermost last)."""
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def push_interactive(session) -> None:
    """Make `session` the fallback default in every thread (an InteractiveSession)."""
    _interactive.append(session)


def remove_interactive(session) -> bool:
    """Forget an InteractiveSession; True if it was registered."""
    if session in _interactive:
        _interactive.remove(session)
        return True
    return False


def get_default_session():
    """The innermost session of `with sess.as_default()` (or an InteractiveSession), or None."""
    stack = default_sessions()
    if stack:
        return stack[-1]
    return _interactive[-1] if _interactive else None


def session_for(session, graph):
    """`session`, or the default session, checked to run ops of `graph`."""
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                         "registered. Use `with sess.as_default()` or pass an explicit session "
                         "to `eval(session=sess)`.")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph "
                         "is different from the session's graph.")
    return session
