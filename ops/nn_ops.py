"""`flowjit.nn`: TensorFlow 1.x's neural-network names, gathered in one place.

The ops themselves, each with its gradient and lowering, live in activation_ops.py (Relu,
Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu, BiasAdd), softmax_ops.py (Softmax,
LogSoftmax) and loss_ops.py (L2Loss and the cross entropies); this module re-exports their
public functions plus math_ops' `sigmoid` and `tanh` (the same function objects, so
`tf.nn.sigmoid is tf.sigmoid`), and lists every nn op in `OP_DEFS` for registration.
"""

from . import activation_ops, loss_ops, softmax_ops
from .activation_ops import (bias_add, elu, leaky_relu, relu, relu6, selu, softplus, softsign,
                             xw_plus_b)
from .loss_ops import (l2_loss, sigmoid_cross_entropy_with_logits,
                       softmax_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2,
                       sparse_softmax_cross_entropy_with_logits)
from .math_ops import sigmoid, tanh
from .softmax_ops import log_softmax, softmax

__all__ = ["relu", "relu6", "elu", "selu", "softplus", "softsign", "leaky_relu", "bias_add",
           "xw_plus_b", "softmax", "log_softmax", "l2_loss", "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "sparse_softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits", "sigmoid", "tanh"]

OP_DEFS = (*activation_ops.OP_DEFS, *softmax_ops.OP_DEFS, *loss_ops.OP_DEFS)
