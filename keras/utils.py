"""`tf.keras.utils`: `to_categorical`, `set_random_seed`."""

from __future__ import annotations

import numpy as np

from . import backend

__all__ = ["to_categorical", "set_random_seed"]


def to_categorical(y, num_classes=None, dtype="float32") -> np.ndarray:
    """One-hot rows for integer class labels `y` (classes 0 .. num_classes - 1)."""
    y = np.asarray(y, dtype=np.int64)
    if y.ndim > 1 and y.shape[-1] == 1:
        y = y[..., 0]
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"to_categorical: labels must lie in [0, {num_classes}), got values "
                         f"from {y.min()} to {y.max()}.")
    out = np.zeros((*y.shape, num_classes), dtype=dtype)
    np.put_along_axis(out, y[..., None], 1, axis=-1)
    return out


set_random_seed = backend.set_random_seed
