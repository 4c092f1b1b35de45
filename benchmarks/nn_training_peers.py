"""The CNN and LSTM training steps of `benchmarks/nn_training.py`, built by every system.

Owns the two models (their sizes, initial weights and TF1 graphs) and one `make_*` per system.
Each `make_*(model, data, init, threads)` returns `step() -> loss`; a system that is not
installed raises `Unavailable`.  Every system starts from the same NumPy weights and trains
on the same fed batch with Adam (TF 1.x defaults, learning rate 1e-3):

- CNN: 64 x 28x28x1 -> conv 5x5x32 SAME + bias + ReLU -> max-pool 2x2 -> conv 5x5x64 SAME
  + bias + ReLU -> max-pool 2x2 -> dense 3136 -> 10; mean sparse softmax cross entropy.
- LSTM: 32 sequences of 50 steps of 28 features -> BasicLSTMCell(128) (TF's gate layout
  i, j, f, o and forget bias 1) unrolled by dynamic_rnn -> dense 128 -> 10 on the last
  output; mean sparse softmax cross entropy.

flowjit and TensorFlow run the same TF1 graph (`build_graph`); JAX jits the whole step
(`lax.conv_general_dilated`, `lax.reduce_window`, a `lax.scan` over time); PyTorch runs
eagerly with `F.conv2d`/`F.max_pool2d` (NCHW, its native layout; the flattening follows
NHWC's order so the dense weights mean the same) and `nn.LSTM` (TF's weights re-ordered
to PyTorch's gate order i, f, g, o).
"""

from __future__ import annotations

import numpy as np

LR, BETA1, BETA2, EPSILON = 1e-3, 0.9, 0.999, 1e-8
MODELS = {"cnn": dict(batch=64, size=28, c1=32, c2=64, k=5, classes=10),
          "lstm": dict(batch=32, steps=50, features=28, hidden=128, classes=10)}


class Unavailable(Exception):
    """The system is not installed: the row says so, nothing is timed."""


def make_data(model: str, seed: int = 0):
    """(x, labels, initial weights) of `model` as float32/int32 NumPy arrays."""
    rng = np.random.default_rng(seed)
    p = MODELS[model]

    def glorot(shape, fan_in, fan_out):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, shape).astype(np.float32)

    labels = rng.integers(0, p["classes"], p["batch"]).astype(np.int32)
    if model == "cnn":
        k, c1, c2, s = p["k"], p["c1"], p["c2"], p["size"] // 4
        x = rng.random((p["batch"], p["size"], p["size"], 1), dtype=np.float32)
        init = [glorot((k, k, 1, c1), k * k, k * k * c1), np.full(c1, 0.1, np.float32),
                glorot((k, k, c1, c2), k * k * c1, k * k * c2), np.full(c2, 0.1, np.float32),
                glorot((s * s * c2, p["classes"]), s * s * c2, p["classes"]),
                np.zeros(p["classes"], np.float32)]
    else:
        n_in, h = p["features"], p["hidden"]
        x = rng.standard_normal((p["batch"], p["steps"], n_in)).astype(np.float32)
        init = [glorot((n_in + h, 4 * h), n_in + h, 4 * h), np.zeros(4 * h, np.float32),
                glorot((h, p["classes"]), h, p["classes"]), np.zeros(p["classes"], np.float32)]
    return x, labels, init


def build_graph(tf, model: str, x, init):
    """The model's TF1 graph in the default graph: (x, labels, loss, train, assign_init).

    `assign_init` sets every trainable variable to `init` (the LSTM cell creates its own
    variables, so weights are assigned after the initializer, not passed in)."""
    xp = tf.placeholder(tf.float32, x.shape, name="x")
    yp = tf.placeholder(tf.int32, [x.shape[0]], name="labels")
    if model == "cnn":
        w1, b1, w2, b2, w3, b3 = [tf.Variable(np.zeros_like(v)) for v in init]
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(xp, w1, [1, 1, 1, 1], "SAME"), b1))
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w2, [1, 1, 1, 1], "SAME"), b2))
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        logits = tf.matmul(tf.reshape(h, [x.shape[0], -1]), w3) + b3
    else:
        cell = tf.nn.rnn_cell.BasicLSTMCell(MODELS["lstm"]["hidden"])
        outputs, _ = tf.nn.dynamic_rnn(cell, xp, dtype=tf.float32)
        w3 = tf.Variable(np.zeros_like(init[2]))
        b3 = tf.Variable(np.zeros_like(init[3]))
        logits = tf.matmul(outputs[:, -1], w3) + b3
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp,
                                                                         logits=logits))
    train = tf.train.AdamOptimizer(LR, BETA1, BETA2, EPSILON).minimize(loss)
    variables = tf.trainable_variables()
    assign = tf.group(*[tf.assign(v, value) for v, value in zip(variables, init)])
    return xp, yp, loss, train, assign


def session_step(tf, model, x, labels, init, config):
    """A Session running `build_graph`'s step; returns step() -> loss."""
    graph = tf.Graph()
    with graph.as_default():
        xp, yp, loss, train, assign = build_graph(tf, model, x, init)
        init_op = tf.global_variables_initializer()
    sess = tf.Session(graph=graph, config=config)
    sess.run(init_op)
    sess.run(assign)
    feed, fetches = {xp: x, yp: labels}, [loss, train]
    return lambda: sess.run(fetches, feed)[0]


def make_tensorflow(model, x, labels, init, threads):
    """TensorFlow's tf.compat.v1 Session on the same graph (Keras 2 cells: tf_keras)."""
    import os
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")   # this child process only
    try:
        import tensorflow.compat.v1 as tf
    except ImportError as exc:
        raise Unavailable(f"tensorflow not installed ({exc})") from None
    tf.disable_eager_execution()
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    try:
        return session_step(tf, model, x, labels, init, config)
    except AttributeError as exc:     # TF >= 2.16 without tf_keras has no v1 RNN cells
        raise Unavailable(f"tensorflow lacks a TF1 API the model uses ({exc})") from None


def _adam(jnp, params, grads, m, v, t):
    t = t + 1
    lr_t = LR * jnp.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
    m = [BETA1 * mi + (1 - BETA1) * g for mi, g in zip(m, grads)]
    v = [BETA2 * vi + (1 - BETA2) * g * g for vi, g in zip(v, grads)]
    return [p - lr_t * mi / (jnp.sqrt(vi) + EPSILON) for p, mi, vi in zip(params, m, v)], m, v, t


def make_jax(model, x, labels, init, threads):
    """jax.jit of the whole step (value_and_grad and Adam)."""
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except ImportError as exc:
        raise Unavailable(f"jax not installed ({exc})") from None

    def cross_entropy(logits, yb):
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, yb[:, None], axis=1))

    def pool(h):
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def conv(h, w, b):
        out = lax.conv_general_dilated(h, w, (1, 1), "SAME",
                                       dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.nn.relu(out + b)

    def cnn_loss(params, xb, yb):
        w1, b1, w2, b2, w3, b3 = params
        h = pool(conv(pool(conv(xb, w1, b1)), w2, b2))
        return cross_entropy(h.reshape(h.shape[0], -1) @ w3 + b3, yb)

    def lstm_loss(params, xb, yb):
        kernel, bias, w3, b3 = params
        hidden = w3.shape[0]

        def cell(carry, x_t):
            c, h = carry
            i, j, f, o = jnp.split(jnp.concatenate([x_t, h], 1) @ kernel + bias, 4, axis=1)
            c = c * jax.nn.sigmoid(f + 1.0) + jax.nn.sigmoid(i) * jnp.tanh(j)
            h = jnp.tanh(c) * jax.nn.sigmoid(o)
            return (c, h), None

        zeros = jnp.zeros((xb.shape[0], hidden), xb.dtype)
        (_, h), _ = lax.scan(cell, (zeros, zeros), jnp.swapaxes(xb, 0, 1))
        return cross_entropy(h @ w3 + b3, yb)

    loss_fn = cnn_loss if model == "cnn" else lstm_loss

    @jax.jit
    def train(params, m, v, t, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(params, xb, yb)
        params, m, v, t = _adam(jnp, params, grads, m, v, t)
        return loss, params, m, v, t

    xb, yb = jnp.asarray(x), jnp.asarray(labels)
    state = [[jnp.asarray(p) for p in init], [jnp.zeros_like(p) for p in init],
             [jnp.zeros_like(p) for p in init], jnp.float32(0)]

    def step():
        loss, *state[:] = train(*state, xb, yb)
        return loss.block_until_ready()

    return step


def _lstm_gates_to_torch(kernel_part, hidden):
    """TF's (in, 4h) block in gate order i, j, f, o -> PyTorch's (4h, in), order i, f, g, o."""
    i, j, f, o = np.split(kernel_part, 4, axis=-1)
    return np.ascontiguousarray(np.concatenate([i, f, j, o], axis=-1).T)


def make_torch(model, x, labels, init, threads):
    """PyTorch eager: autograd and torch.optim.Adam."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as exc:
        raise Unavailable(f"torch not installed ({exc})") from None
    torch.set_num_threads(threads)
    yb = torch.from_numpy(labels.astype(np.int64))
    if model == "cnn":
        w1, b1, w2, b2, w3, b3 = init
        params = [torch.tensor(w1.transpose(3, 2, 0, 1).copy(), requires_grad=True),
                  torch.tensor(b1, requires_grad=True),
                  torch.tensor(w2.transpose(3, 2, 0, 1).copy(), requires_grad=True),
                  torch.tensor(b2, requires_grad=True), torch.tensor(w3, requires_grad=True),
                  torch.tensor(b3, requires_grad=True)]
        xb = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))

        def forward():
            k1, c1, k2, c2, k3, c3 = params
            h = F.max_pool2d(F.relu(F.conv2d(xb, k1, c1, padding=2)), 2)
            h = F.max_pool2d(F.relu(F.conv2d(h, k2, c2, padding=2)), 2)
            return h.permute(0, 2, 3, 1).reshape(h.shape[0], -1) @ k3 + c3
    else:
        kernel, bias, w3, b3 = init
        n_in, hidden = x.shape[2], w3.shape[0]
        lstm = torch.nn.LSTM(n_in, hidden, batch_first=True)
        with torch.no_grad():
            lstm.weight_ih_l0.copy_(torch.from_numpy(_lstm_gates_to_torch(kernel[:n_in], hidden)))
            lstm.weight_hh_l0.copy_(torch.from_numpy(_lstm_gates_to_torch(kernel[n_in:], hidden)))
            i, j, f, o = np.split(bias, 4)
            lstm.bias_ih_l0.copy_(torch.from_numpy(np.concatenate([i, f + 1.0, j, o])))
            lstm.bias_hh_l0.zero_()
        lstm.bias_hh_l0.requires_grad_(False)        # TF's cell has one bias
        dense = [torch.tensor(w3, requires_grad=True), torch.tensor(b3, requires_grad=True)]
        params = [lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, *dense]
        xb = torch.from_numpy(x)

        def forward():
            out, _ = lstm(xb)
            return out[:, -1] @ dense[0] + dense[1]

    opt = torch.optim.Adam(params, lr=LR, betas=(BETA1, BETA2), eps=EPSILON)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(forward(), yb)
        loss.backward()
        opt.step()
        return loss.detach()

    return step
