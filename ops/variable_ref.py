"""`VariableRef`: the value a variable op produces when it runs.

A reference that consumers dereference when *they* run, so reads ordered after an
assignment by a control dependency see the new value (TensorFlow's ref semantics).  It
lives with the variable ops (docs/architecture.md: state handles belong to the op family
that makes them); the runtime's per-session state (runtime/state.py) holds the values it
points at: `state.variables[key]`.

A variable updated by a compiled cluster on a GPU keeps its value in device memory (a
numba-cuda device array, recognized here by its `copy_to_host` method: ops never import the
runtime); `read` hands host copies to everyone else.

Invariant: a stored variable value is never mutated while anything else holds it; `assign`
replaces the array (read-only, so a kernel bug that writes into one fails loudly), so every
value handed out earlier stays a correct snapshot.  The one exception keeps that promise:
a row update of a large table (a sparse optimizer step, ops/variable_scatter_ops.py) writes
into the stored array when `writable_in_place` finds that nothing but the session's state
holds it (no fetched result, no running kernel, no view) and no other step runs: copying
the table would cost more than the update.
"""

from __future__ import annotations

import sys

import numpy as np

from ..errors import FailedPreconditionError


_REFERENCES_WHEN_UNSHARED = 3


class VariableRef:
    """A reference to variable `key` of a session, produced by VariableV2 ops."""

    __slots__ = ("state", "key", "op")

    def __init__(self, state, key: str, op):
        # state: the owning session's runtime.state.SessionState (only `.variables` is used)
        self.state = state
        self.key = key
        self.op = op

    def read(self, reader=None) -> np.ndarray:
        """The variable's current value as a host array; FailedPreconditionError if it is
        uninitialized.  A value a GPU's compiled cluster stored stays in device memory
        (`stored`); readers here get a host copy."""
        value = self.stored(reader)
        if type(value) is not np.ndarray and hasattr(type(value), "copy_to_host"):
            return value.copy_to_host()
        return value

    def stored(self, reader=None):
        """The value as stored: a host array, or a device array that a GPU's compiled
        cluster wrote (read by the next GPU cluster in place)."""
        value = self.state.variables.get(self.key)
        if value is None:
            msg = f"Attempting to use uninitialized value {self.key}"
            if reader is not None and reader is not self.op:
                msg += f" (read by op '{reader.name}')"
            msg += (". Run its initializer first, e.g. "
                    "sess.run(flowjit.global_variables_initializer()).")
            raise FailedPreconditionError(None, self.op, msg)
        return value

    def assign(self, value: np.ndarray) -> np.ndarray:
        value = np.array(value, copy=True)
        value.flags.writeable = False
        self.state.variables[self.key] = value
        return value

    def writable_in_place(self):
        """The stored array, made writable, when nothing but the session's state refers to it
        and no other step of the session runs (so nobody can see it change); None otherwise
        (a GPU value, a view, an array that a fetched result, a running kernel or a view
        still holds, or another step running).  The caller holds the state
        lock, writes, and hands it back with `install`."""
        if getattr(self.state, "steps_running", 0) > 1:
            return None   # another step could be reading it right now
        value = self.state.variables.get(self.key)
        if type(value) is not np.ndarray or not value.flags.owndata:
            return None
        # the references: the state's dict, `value` here and getrefcount's argument
        if sys.getrefcount(value) > _REFERENCES_WHEN_UNSHARED:
            return None
        value.flags.writeable = True
        return value

    def install(self, value: np.ndarray) -> np.ndarray:
        """Store `value`, a fresh array the caller made and keeps no writer of, without a
        copy (a scatter update's new value: copying a large table twice per step is the
        cost a sparse update avoids); it becomes read-only."""
        value.flags.writeable = False
        self.state.variables[self.key] = value
        return value

    def is_initialized(self) -> bool:
        return self.key in self.state.variables
