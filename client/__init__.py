"""TensorFlow's `tf.client` names: `timeline` (Chrome traces of a step's RunMetadata)."""

from . import timeline

__all__ = ["timeline"]
