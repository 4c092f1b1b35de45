"""`flowjit.nn`: TensorFlow's neural-network op names (filled in by ops/nn_ops.py)."""

from .ops.nn_ops import *  # noqa: F401,F403
from .ops.composite_ops import dropout, l2_normalize, moments  # noqa: F401,E402
from .ops.selection_ops import embedding_lookup, in_top_k  # noqa: F401,E402
from .ops.sort_ops import top_k  # noqa: F401,E402
from .ops.conv_api import (atrous_conv2d, conv1d, conv1d_transpose,  # noqa: F401,E402
                           conv2d_transpose, convolution, depthwise_conv2d,
                           separable_conv2d)
from .ops.conv_grad_ops import (conv2d_backprop_filter, conv2d_backprop_input,  # noqa: F401,E402
                                depthwise_conv2d_native_backprop_filter,
                                depthwise_conv2d_native_backprop_input)
from .ops.conv_ops import conv2d, depthwise_conv2d_native  # noqa: F401,E402
from .ops.pool_ops import (avg_pool, avg_pool1d, avg_pool2d, max_pool,  # noqa: F401,E402
                           max_pool1d, max_pool2d, pool)
from .ops.norm_ops import batch_normalization, fused_batch_norm  # noqa: F401,E402
from .ops.lrn_ops import local_response_normalization, lrn  # noqa: F401,E402
from .ops.nn_composites import *  # noqa: F401,F403,E402 - swish, crelu, moments helpers, ...
from .models.rnn import (bidirectional_dynamic_rnn, dynamic_rnn,  # noqa: F401,E402
                         static_bidirectional_rnn, static_rnn)
from .ops.pool_argmax_ops import max_pool_with_argmax  # noqa: F401,E402
