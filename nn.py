"""`flowjit.nn`: TensorFlow's neural-network op names (filled in by ops/nn_ops.py)."""

from .ops.nn_ops import *  # noqa: F401,F403
from .ops.composite_ops import dropout, l2_normalize, moments  # noqa: F401,E402
from .ops.selection_ops import embedding_lookup, in_top_k  # noqa: F401,E402
from .ops.sort_ops import top_k  # noqa: F401,E402
