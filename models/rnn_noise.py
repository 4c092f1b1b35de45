"""Uniform random numbers for the steps of a `dynamic_rnn`, drawn outside its loop.

A random op inside a while loop would make the loop stateful: it could not compile whole
(runtime/loop_steps.py), and its gradient, which recomputes each step's body
(ops/while_gradient.py), would draw other numbers than the forward step used.  So while
`dynamic_rnn` builds its step (`steps(noise, time)`), a cell asking for uniform numbers
shaped like a step's tensor `x` [batch, depth...] (`uniform_like(x)`: DropoutWrapper)
gets row `time` of ONE draw of shape [max_time, batch, depth...] made outside the loop,
once per run.  The draws are kept on the `StepNoise` in the order the step asks for
them, so the gradient's recomputation of the step, which asks again in the same order,
reads the same numbers.  Outside `dynamic_rnn` (`static_rnn`, a cell called by hand)
`uniform_like` is a plain `random_uniform`.
"""

from __future__ import annotations

import contextlib
import threading

from ..compiler.core.graph import get_default_graph
from ..ops import api as ops

_local = threading.local()


class StepNoise:
    """The draws of one dynamic_rnn: `max_time` and `batch_size` are scalar int32 tensors
    of the context outside the loop (`outer`, where the draws are built)."""

    def __init__(self, max_time, batch_size):
        self.graph = get_default_graph()
        self.outer = self.graph._get_control_flow_context()
        scope = self.graph.get_name_scope()
        self.name_scope = scope + "/" if scope else ""
        self.max_time, self.batch_size = max_time, batch_size
        self.draws: list = []

    def draw(self, position: int, like, seed):
        """The `position`-th draw: built outside the loop on first request."""
        if position < len(self.draws):
            return self.draws[position]
        depth = like.shape.as_list()[1:] if like.shape.ndims is not None else None
        if depth is None or None in depth:
            raise ValueError(f"dropout inside dynamic_rnn needs the depth of {like.name} "
                             f"(shape {like.shape}) while building the graph.")
        with self.graph._control_flow_context(self.outer), \
                self.graph.control_dependencies(None), self.graph.name_scope(self.name_scope):
            shape = ops.stack([self.max_time, self.batch_size] + depth)
            self.draws.append(ops.random_uniform(shape, dtype=like.dtype, seed=seed,
                                                 name="step_noise"))
        return self.draws[position]


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


@contextlib.contextmanager
def steps(noise: StepNoise, time):
    """While building one step of `noise`'s loop at `time` (a scalar int32 tensor)."""
    _stack().append([noise, time, 0])
    try:
        yield
    finally:
        _stack().pop()


def uniform_like(x, seed=None):
    """Uniform numbers in [0, 1) of x's shape and dtype: a row of the loop's draw inside a
    `dynamic_rnn` step, else a fresh `random_uniform`."""
    stack = _stack()
    if not stack:
        return ops.random_uniform(ops.shape(x), dtype=x.dtype, seed=seed)
    entry = stack[-1]
    noise, time, position = entry
    entry[2] += 1
    return ops.strided_slice(noise.draw(position, x, seed), [time], [time + 1], [1],
                             shrink_axis_mask=1)
