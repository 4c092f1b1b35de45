"""A multilayer perceptron on scikit-learn's handwritten digits, in TensorFlow 1.x's graph API.

The data is `sklearn.datasets.load_digits()` (1797 8x8 grey images of the digits 0-9,
bundled with scikit-learn: no download; `pip install flowjit[datasets]`), scaled to [0, 1]
and split 80/20 into training and test sets (stratified, `random_state=0`).  The model is
64 -> 128 (ReLU) -> 10 logits built with placeholders and `tf.layers.dense`, trained with
`tf.train.AdamOptimizer` on the mean sparse softmax cross entropy in shuffled mini-batches
of 32, one `Session.run` per batch (flowjit compiles the training step in the background).
Seeds are fixed (the graph's, NumPy's): runs differ only by float rounding (compiled
kernels round differently from NumPy's, and when the compiled step takes over depends on
timing).

Measured test accuracy (360 test images): 97.2% after 10 epochs (the default; seeds 0-3:
96.1-97.2%); `tests/test_digits_examples.py` checks >= 95% after 10 epochs.

    python examples/digits_mlp.py [EPOCHS]
"""

import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import flowjit as tf


def load_data():
    """(x_train, x_test, y_train, y_test): images as 64 floats in [0, 1], integer labels."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    return train_test_split(x, digits.target.astype(np.int32), test_size=0.2,
                            random_state=0, stratify=digits.target)


def main(epochs=10, batch_size=32, learning_rate=0.003, seed=0, verbose=True):
    """Train the MLP for `epochs` and return its accuracy on the test set."""
    x_train, x_test, y_train, y_test = load_data()
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        images = tf.placeholder(tf.float32, [None, 64], name="images")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        hidden = tf.layers.dense(images, 128, activation=tf.nn.relu, name="hidden")
        logits = tf.layers.dense(hidden, 10, name="logits")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        train = tf.train.AdamOptimizer(learning_rate).minimize(loss)
        correct = tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32), labels)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(seed)
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for epoch in range(epochs):
            order = rng.permutation(len(x_train))
            losses = []
            for start in range(0, len(order), batch_size):
                batch = order[start:start + batch_size]
                _, value = sess.run([train, loss], {images: x_train[batch],
                                                    labels: y_train[batch]})
                losses.append(value)
            if verbose:
                print(f"epoch {epoch + 1}/{epochs}: loss {np.mean(losses):.4f}")
        test_accuracy = float(sess.run(accuracy, {images: x_test, labels: y_test}))
    if verbose:
        print(f"test accuracy: {test_accuracy:.4f}")
    return test_accuracy


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
