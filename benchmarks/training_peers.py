"""The W5 training step's shared pieces and its peers' steps (the benchmark: `training_step`).

Owns the model's training hyperparameters (TF 1.x's Adam defaults), the TF1 graph of the
step (`_graph_program`, `_session_step`: run by flowjit's Session and by TensorFlow's), the
`Unavailable` error, and the steps of the peers: JAX, PyTorch and TensorFlow.  Each `make_*`
builds the same step as `training_step`'s NumPy baseline (forward, backward, Adam) and
returns (step() -> loss, params() -> list of arrays); a peer that is not installed raises
`Unavailable`.
"""

from __future__ import annotations

import numpy as np

LR, BETA1, BETA2, EPSILON = 1e-3, 0.9, 0.999, 1e-8


class Unavailable(Exception):
    """The system (or the flowjit piece) is not there: the row says so, nothing is timed."""


def _graph_program(tf, x, y, init):
    """The example's graph with the given initial weights: (x, y, cost, train, vars, init)."""
    n_in, n_out = x.shape[1], y.shape[1]
    xp = tf.placeholder(tf.float32, [None, n_in], name="x")
    yp = tf.placeholder(tf.float32, [None, n_out], name="y")
    w1, b1, w2, b2 = variables = [tf.Variable(p) for p in init]
    a = tf.nn.tanh(tf.nn.bias_add(tf.matmul(xp, w1), b1))
    y_out = tf.nn.tanh(tf.nn.bias_add(tf.matmul(a, w2), b2), name="y_out")
    cost = tf.reduce_sum(tf.square(yp - y_out), name="cost")
    train = tf.train.AdamOptimizer().minimize(cost, name="train")
    return xp, yp, cost, train, variables, tf.global_variables_initializer()


def _session_step(tf, x, y, init, config):
    graph = tf.Graph()
    with graph.as_default():
        xp, yp, cost, train, variables, init_op = _graph_program(tf, x, y, init)
    sess = tf.Session(graph=graph, config=config)
    sess.run(init_op)
    feed = {xp: x, yp: y}
    fetches = [cost, train]
    return (lambda: sess.run(fetches, feed)[0]), (lambda: sess.run(variables))


def make_jax(x, y, init, threads):
    """jax.jit of the whole step: jax.value_and_grad of the loss, TF-style Adam in jnp."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as exc:
        raise Unavailable(f"jax not installed ({exc})") from None

    def loss_fn(params, xb, yb):
        w1, b1, w2, b2 = params
        out = jnp.tanh(jnp.tanh(xb @ w1 + b1) @ w2 + b2)
        return jnp.sum(jnp.square(yb - out))

    @jax.jit
    def train(params, m, v, t, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(params, xb, yb)
        t = t + 1
        lr_t = LR * jnp.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
        m = [BETA1 * mi + (1 - BETA1) * g for mi, g in zip(m, grads)]
        v = [BETA2 * vi + (1 - BETA2) * g * g for vi, g in zip(v, grads)]
        params = [p - lr_t * mi / (jnp.sqrt(vi) + EPSILON) for p, mi, vi in zip(params, m, v)]
        return loss, params, m, v, t

    xb, yb = jnp.asarray(x), jnp.asarray(y)
    state = [[jnp.asarray(p) for p in init], [jnp.zeros_like(p) for p in init],
             [jnp.zeros_like(p) for p in init], jnp.float32(0)]

    def step():
        loss, *state[:] = train(*state, xb, yb)
        return loss.block_until_ready()

    return step, lambda: [np.asarray(p) for p in state[0]]


def make_torch(x, y, init, threads):
    """PyTorch eager: autograd and torch.optim.Adam (eps=1e-8)."""
    try:
        import torch
    except ImportError as exc:
        raise Unavailable(f"torch not installed ({exc})") from None
    torch.set_num_threads(threads)
    params = [torch.tensor(p, requires_grad=True) for p in init]
    opt = torch.optim.Adam(params, lr=LR, betas=(BETA1, BETA2), eps=EPSILON)
    xb, yb = torch.from_numpy(x), torch.from_numpy(y)
    w1, b1, w2, b2 = params

    def step():
        opt.zero_grad(set_to_none=True)
        out = torch.tanh(torch.tanh(xb @ w1 + b1) @ w2 + b2)
        loss = torch.sum(torch.square(yb - out))
        loss.backward()
        opt.step()
        return loss.detach()

    return step, lambda: [p.detach().numpy().copy() for p in params]


def make_tensorflow(x, y, init, threads):
    """TensorFlow tf.compat.v1 Session running the same graph as flowjit."""
    try:
        import tensorflow.compat.v1 as tf
    except ImportError as exc:
        raise Unavailable(f"tensorflow not installed ({exc})") from None
    tf.disable_eager_execution()
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    return _session_step(tf, x, y, init, config)
