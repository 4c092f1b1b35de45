"""`tf.layers`: TensorFlow 1.x's layers, as classes and as functions applying one layer.

The layers live in layers_base.py (the `Layer` base: scopes, weights, regularization,
updates), layers_core.py (Dense, Dropout, Flatten), layers_conv.py (convolutions and
pooling) and layers_norm.py (BatchNormalization); this module is the namespace.
"""

from .layers_base import InputSpec, Layer
from .layers_conv import (AveragePooling1D, AveragePooling2D, Conv1D, Conv2D, MaxPooling1D,
                          MaxPooling2D, average_pooling1d, average_pooling2d, conv1d, conv2d,
                          max_pooling1d, max_pooling2d)
from .layers_core import Dense, Dropout, Flatten, dense, dropout, flatten
from .layers_norm import BatchNormalization, batch_normalization

# TensorFlow's aliases
Convolution1D, Convolution2D = Conv1D, Conv2D
MaxPool1D, MaxPool2D, AvgPool1D, AvgPool2D = (MaxPooling1D, MaxPooling2D, AveragePooling1D,
                                              AveragePooling2D)

__all__ = ["Layer", "InputSpec", "Dense", "Dropout", "Flatten", "Conv1D", "Conv2D",
           "Convolution1D", "Convolution2D", "MaxPooling1D", "MaxPooling2D",
           "AveragePooling1D", "AveragePooling2D", "MaxPool1D", "MaxPool2D", "AvgPool1D",
           "AvgPool2D", "BatchNormalization", "dense", "dropout", "flatten", "conv1d",
           "conv2d", "max_pooling1d", "max_pooling2d", "average_pooling1d",
           "average_pooling2d", "batch_normalization"]
