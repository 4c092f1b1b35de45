"""Per-session mutable state: variable values, random-number generators and resources
(queues).

Owns `SessionState` (one per Session: the values of that session's variables and the
generator of each random op).  `VariableRef`, the value a variable op produces, is defined
with the variable ops (ops/variable_ref.py) and re-exported here.

Invariant: a stored variable value is never mutated while anything else can see it;
assignments replace the array (read-only, so a kernel bug that writes into one fails loudly),
so every value handed out earlier stays a correct snapshot.  (A row update of a large table
writes in place when nothing else holds the array and no other step of the session is
running: `VariableRef.writable_in_place`, which reads `steps_running`.)
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..ops.variable_ref import VariableRef  # noqa: F401 - re-exported for the runtime


class SessionState:
    """Everything a session keeps between `run` calls."""

    def __init__(self):
        self.variables: dict[str, np.ndarray] = {}
        self.lock = threading.RLock()
        self._generators: dict[str, np.random.Generator] = {}
        self._resources: dict = {}   # key -> resource object (queues): made on first use
        self.steps_running = 0       # Session.run calls in progress (several threads may run)

    @contextlib.contextmanager
    def running_step(self):
        """Count one step while it runs (`steps_running`)."""
        with self.lock:
            self.steps_running += 1
        try:
            yield
        finally:
            with self.lock:
                self.steps_running -= 1

    def resource(self, key, make):
        """The session's resource under `key` (a queue), made by `make()` on first use."""
        found = self._resources.get(key)
        if found is None:
            with self.lock:
                found = self._resources.get(key)
                if found is None:
                    found = self._resources[key] = make()
        return found

    def close_resources(self) -> None:
        """Close every queue (pending enqueues cancelled), waking threads blocked on them:
        the session is closing."""
        for r in list(self._resources.values()):
            close = getattr(r, "close", None)
            if close is not None:
                close(cancel_pending_enqueues=True)

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
