"""The graph-building program of TensorFlow's C++ API guide, in Python with TF 1.x names.

A two-layer perceptron (32 -> 16 -> 8, tanh), a squared-error `cost`, an Adam `train` op and
an `init_all_vars_op`, written to `mlp.pb` (binary) in the current directory.  A second
program then loads `mlp.pb`, runs `init_all_vars_op` once and, for each step, `cost` and
`train` with the same random `x` (100x32) and `y` (100x8) fed: in C++ in the original, here
`python -m flowjit run`:

    python examples/mlp_train.py
    python -m flowjit run mlp.pb --seed 1 --run init_all_vars_op \\
        --feed x=@random:100x32 --feed y=@random:100x8 --fetch cost --run train --steps 10

This file is the TensorFlow program unchanged: replace the import by
`import tensorflow.compat.v1 as tf; tf.disable_eager_execution()` and it runs under
TensorFlow (which then writes its own protobuf GraphDef, not flowjit's format).  Like the
original it sets no random seed, so the initial weights differ from run to run; `--seed` of
`python -m flowjit run` makes the loaded graph's initializers reproducible.
"""

import flowjit as tf

x = tf.placeholder(tf.float32, [None, 32], name="x")
y = tf.placeholder(tf.float32, [None, 8], name="y")

w1 = tf.Variable(tf.truncated_normal([32, 16], stddev=0.1))
b1 = tf.Variable(tf.constant(0.0, shape=[16]))

w2 = tf.Variable(tf.truncated_normal([16, 8], stddev=0.1))
b2 = tf.Variable(tf.constant(0.0, shape=[8]))

a = tf.nn.tanh(tf.nn.bias_add(tf.matmul(x, w1), b1))
y_out = tf.nn.tanh(tf.nn.bias_add(tf.matmul(a, w2), b2), name="y_out")
cost = tf.reduce_sum(tf.square(y - y_out), name="cost")
optimizer = tf.train.AdamOptimizer().minimize(cost, name="train")

init = tf.initialize_variables(tf.all_variables(), name="init_all_vars_op")

with tf.Session() as sess:
    tf.train.write_graph(sess.graph_def, "./", "mlp.pb", as_text=False)
