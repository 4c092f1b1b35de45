"""TensorFlow 1.x's model-building APIs, written with flowjit's ops and graph.

- `rnn_cell`, `rnn`: RNN cells and the static/dynamic unrolls (`tf.nn.rnn_cell`,
  `tf.nn.dynamic_rnn`, `tf.contrib.rnn`).
- `layers`: `tf.layers` (dense, conv2d, pooling, flatten, dropout, batch_normalization).
- `losses`: `tf.losses`; `metrics`: `tf.metrics` (local variables and update ops).

Nothing here is a separate engine: every function adds ops to the default graph, and a
Session runs and compiles them like any other graph.
"""
