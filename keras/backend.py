"""Process-wide settings of `tf.keras`: layer names, the random seed, the Session config.

Owns what Keras keeps in its backend module: the per-class counters that name layers
(`dense`, `dense_1`, ...) until `clear_session()`, the seed `utils.set_random_seed` sets
(each model's graph takes it as its graph-level seed, so its initial weights and dropout
masks repeat from run to run), `floatx()`, and the `ConfigProto` a model's Session is made
with (`set_session_config`; None is flowjit's default, the tiered compile policy).
"""

from __future__ import annotations

import collections
import random
import re

import numpy as np

_name_counts: collections.Counter = collections.Counter()
_state = {"seed": None, "config": None, "floatx": "float32"}


def unique_layer_name(base: str) -> str:
    """`base` the first time, then `base_1`, `base_2`, ... (Keras' automatic layer names)."""
    count = _name_counts[base]
    _name_counts[base] += 1
    return base if count == 0 else f"{base}_{count}"


def snake_case(class_name: str) -> str:
    """`MaxPooling2D` -> `max_pooling2d`: the base of a layer class's automatic names."""
    text = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", text).lower()


def clear_session() -> None:
    """Forget the automatic layer names handed out so far (names start again at `dense`)."""
    _name_counts.clear()


def set_random_seed(seed: int | None) -> None:
    """Seed Python's `random`, NumPy's global generator (fit's shuffling) and the graph-level
    seed of every model built from now on (initial weights, dropout masks)."""
    _state["seed"] = None if seed is None else int(seed)
    if seed is not None:
        random.seed(int(seed))
        np.random.seed(int(seed) % 2**32)


def random_seed() -> int | None:
    """The seed `set_random_seed` set, or None."""
    return _state["seed"]


def set_session_config(config) -> None:
    """The `tf.ConfigProto` of the Session of each model that starts one from now on
    (None: flowjit's default)."""
    _state["config"] = config


def session_config():
    """The ConfigProto models' Sessions are made with (None: the default)."""
    return _state["config"]


def floatx() -> str:
    """The float type of weights and inputs: always "float32"."""
    return _state["floatx"]


def epsilon() -> float:
    """The fuzz factor of Keras' losses and optimizers: 1e-7."""
    return 1e-7
