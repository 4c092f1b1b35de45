"""`tf.keras.layers`: every Keras layer flowjit has, in one namespace.

The layers live in engine.py (Layer, InputLayer), core_layers.py (Dense, Activation,
Dropout, Flatten, Reshape, Embedding), conv_layers.py (Conv2D, MaxPooling2D,
AveragePooling2D), norm_layers.py (BatchNormalization) and recurrent.py (SimpleRNN, LSTM,
GRU).
"""

from .conv_layers import AveragePooling2D, Conv2D, MaxPooling2D  # noqa: F401
from .core_layers import Activation, Dense, Dropout, Embedding, Flatten, Reshape  # noqa: F401
from .engine import Input, InputLayer, Layer  # noqa: F401
from .norm_layers import BatchNormalization  # noqa: F401
from .recurrent import GRU, LSTM, SimpleRNN  # noqa: F401

Convolution2D, MaxPool2D, AvgPool2D = Conv2D, MaxPooling2D, AveragePooling2D
