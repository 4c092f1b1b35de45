"""`tf.keras.regularizers`: weight penalties added to a model's training loss.

A regularizer is called on a weight Variable and returns a scalar tensor; a layer given
`kernel_regularizer=...` (or bias/embeddings) keeps the pair, and the model adds the sum of
the penalties to the loss it trains and reports (as Keras does).
"""

from __future__ import annotations

from ..ops import api as ops

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get"]


class Regularizer:
    """Base class: `penalty = regularizer(weight)`."""

    def __call__(self, weight):
        raise NotImplementedError


class L1L2(Regularizer):
    """l1 * sum(|w|) + l2 * sum(w^2)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, weight):
        total = ops.constant(0.0, dtype=weight.dtype)
        if self.l1:
            total = total + self.l1 * ops.reduce_sum(ops.abs(weight))
        if self.l2:
            total = total + self.l2 * ops.reduce_sum(ops.square(weight))
        return total


class L1(L1L2):
    """l1 * sum(|w|) (Keras' default factor 0.01)."""

    def __init__(self, l1=0.01):
        super().__init__(l1=l1)


class L2(L1L2):
    """l2 * sum(w^2) (Keras' default factor 0.01)."""

    def __init__(self, l2=0.01):
        super().__init__(l2=l2)


def l1(l1=0.01):  # noqa: E741 - Keras' name
    """An L1 penalty."""
    return L1(l1)


def l2(l2=0.01):
    """An L2 penalty."""
    return L2(l2)


def l1_l2(l1=0.01, l2=0.01):  # noqa: E741
    """L1 and L2 penalties together."""
    return L1L2(l1, l2)


def get(identifier):
    """A regularizer from None, a name ("l1", "l2", "l1_l2") or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        made = {"l1": L1, "l2": L2, "l1_l2": lambda: L1L2(0.01, 0.01)}.get(identifier.lower())
        if made is None:
            raise ValueError(f"Unknown regularizer: {identifier!r}. Known: l1, l2, l1_l2.")
        return made()
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret regularizer identifier: {identifier!r}.")
