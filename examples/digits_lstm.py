"""An LSTM classifier on scikit-learn's handwritten digits, reading each image row by row.

The data is `sklearn.datasets.load_digits()` (1797 8x8 grey images of the digits 0-9,
bundled with scikit-learn: no download; `pip install flowjit[datasets]`), scaled to [0, 1]
and split 80/20 into training and test sets (stratified, `random_state=0`).  Each image is a
sequence of its 8 rows (8 pixels each); a `keras.layers.LSTM` of 64 units reads them and a
softmax layer classifies its last output:

    LSTM(64) over 8 steps of 8 features -> Dense(10, softmax)

trained with Adam (learning rate 0.01) on the sparse categorical cross entropy in shuffled
batches of 32.  `unroll=True` writes the 8 steps out in the graph, so the whole training
step (forward, backward through time, Adam) is one flowjit cluster; `unroll=False` runs
the recurrence as `tf.nn.dynamic_rnn`'s while loop.  Seeds are fixed
(`keras.utils.set_random_seed`): runs differ only by float rounding (compiled kernels round
differently from NumPy's, and when the compiled step takes over depends on timing).

Measured test accuracy (360 test images): 97.8% after 20 epochs (the default; seeds 0-2:
97.8-98.9%); `tests/test_digits_examples.py` checks >= 95% after 20 epochs.

    python examples/digits_lstm.py [EPOCHS]
"""

import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from flowjit import keras


def load_data():
    """(x_train, x_test, y_train, y_test): images as [n, 8 rows, 8 pixels] in [0, 1]."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    return train_test_split(x, digits.target, test_size=0.2, random_state=0,
                            stratify=digits.target)


def build_model(unroll=True):
    """The LSTM classifier of the module docstring, compiled."""
    layers = keras.layers
    model = keras.Sequential([
        layers.LSTM(64, input_shape=(8, 8), unroll=unroll),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(keras.optimizers.Adam(learning_rate=0.01),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def main(epochs=20, seed=0, verbose=1, unroll=True):
    """Train the LSTM classifier for `epochs` and return its accuracy on the test set."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    x_train, x_test, y_train, y_test = load_data()
    model = build_model(unroll)
    if verbose:
        model.summary()
    model.fit(x_train, y_train, batch_size=32, epochs=epochs, verbose=verbose)
    loss, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    if verbose:
        print(f"test loss {loss:.4f}, test accuracy: {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
