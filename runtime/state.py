"""Per-session mutable state: variable values and random-number generators.

Owns `SessionState` (one per Session: the values of that session's variables and the
generator of each random op) and `VariableRef`, the value a variable op produces when it
runs: a reference that consumers dereference when *they* run, so reads ordered after an
assignment by a control dependency see the new value (TensorFlow's ref semantics).

Invariant: a stored variable value is never mutated in place; assignments replace the
array (read-only, so a kernel bug that writes into one fails loudly), so every value handed
out earlier stays a correct snapshot.
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import FailedPreconditionError


class VariableRef:
    """A reference to variable `key` of a session, produced by VariableV2 ops."""

    __slots__ = ("state", "key", "op")

    def __init__(self, state: SessionState, key: str, op):
        self.state = state
        self.key = key
        self.op = op

    def read(self, reader=None) -> np.ndarray:
        """The variable's current value; FailedPreconditionError if it is uninitialized."""
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

    def is_initialized(self) -> bool:
        return self.key in self.state.variables


class SessionState:
    """Everything a session keeps between `run` calls."""

    def __init__(self):
        self.variables: dict[str, np.ndarray] = {}
        self.lock = threading.RLock()
        self._generators: dict[str, np.random.Generator] = {}

    def generator(self, op, seed: int, seed2: int) -> np.random.Generator:
        """The random generator of `op` in this session (made on first use).

        Seeded ops get a Philox generator keyed by (seed, seed2), so each new session
        starts the same sequence; unseeded ops (seed == seed2 == 0) draw fresh entropy.
        """
        gen = self._generators.get(op.name)
        if gen is None:
            with self.lock:
                gen = self._generators.get(op.name)
                if gen is None:
                    if seed == 0 and seed2 == 0:
                        gen = np.random.Generator(np.random.Philox())
                    else:
                        key = ((int(seed) & 0xFFFFFFFFFFFFFFFF) << 64) | (
                            int(seed2) & 0xFFFFFFFFFFFFFFFF)
                        gen = np.random.Generator(np.random.Philox(key=key))
                    self._generators[op.name] = gen
        return gen
