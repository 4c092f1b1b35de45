"""The systems the compiler benchmark compares: NumPy (the baseline), its peers, and flowjit.

A `Peer` imports its system lazily (`setup`, after the thread-count variables are set),
converts the float32 inputs to its native arrays once, outside the timed region
(`to_native`), and turns each workload kernel into one or more timed `Variant`s: the kernel
methods (`chain`, `softmax`, `layernorm`, `matmul`, `matmul_bias_relu`, `affine`, named by
`Case.kernel`; the base class documents each, returning None) return the natural code a
user of that system writes, and `modes` wraps it
(`jax.jit`, `torch.compile`, `numba.njit`, ...).  A peer without a kernel method skips that
workload.  A variant's `call` runs the kernel on the native inputs and waits for the result
(`sync`: JAX dispatches asynchronously); `to_numpy` is used only for the correctness check.

flowjit's exceptions `AttributeError`, `NotImplementedError` and `ImportError` mark its rows
"unavailable" (the JIT, or one of its lowerings, is not there yet); any exception from a peer
marks that row "failed" with the reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from .workloads import LAYERNORM_EPS, Case


@dataclasses.dataclass
class Variant:
    """One timed implementation of a case; `call` is None when it could not be built."""

    name: str
    call: Callable[[], Any] | None
    to_numpy: Callable[[Any], np.ndarray] = np.asarray
    error: str = ""           # why it could not be built
    build_status: str = ""    # "unavailable" or "FAILED" when it could not be built
    soft_errors: tuple = ()   # exception types that mean "unavailable" rather than "failed"


def describe(exc: BaseException) -> str:
    """`Type: first line of the message`, short enough for a table cell."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
    return line if len(line) <= 160 else line[:157] + "..."


class Peer:
    """A system under comparison; subclasses add kernel methods and `modes`."""

    key = ""
    soft_errors: tuple = ()

    def setup(self, threads: int) -> None:
        """Import the system and give it `threads` threads (raises when not installed)."""

    def to_native(self, array: np.ndarray):
        """The system's own array holding `array` (made outside the timed region)."""
        return array

    def sync(self, out):
        """Wait until `out` is computed; returns it."""
        return out

    def to_numpy(self, out) -> np.ndarray:
        """`out` as a NumPy array, for the correctness check."""
        return np.asarray(out)

    def modes(self, case: Case) -> list:
        """(variant name, wrap) pairs: wrap(kernel function) -> the function to time."""
        return [(self.key, lambda fn: fn)]

    # The kernels: each returns the function to wrap and time, or None (workload skipped).

    def chain(self):
        """W1: tanh(x*1.7+0.3)*exp(-x*x)+sqrt(abs(x)) of a float32 vector."""
        return None

    def softmax(self):
        """W2: softmax over the last axis of x."""
        return None

    def layernorm(self):
        """W3: (x-mean)/sqrt(var+eps)*gamma+beta over the last axis of x (gamma, beta)."""
        return None

    def matmul(self):
        """W4: a @ b."""
        return None

    def matmul_bias_relu(self):
        """W4: relu(a @ b + bias)."""
        return None

    def affine(self):
        """W6: x*2+1 (call overhead)."""
        return None

    def variants(self, case: Case) -> list:
        """The timed variants of this system for `case` ([] when it has no such kernel)."""
        kernel = getattr(self, case.kernel)()
        if kernel is None:
            return []
        native = tuple(self.to_native(a) for a in case.inputs)
        result = []
        for name, wrap in self.modes(case):
            try:
                fn = wrap(kernel)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                status = "unavailable" if isinstance(exc, self.soft_errors) else "FAILED"
                result.append(Variant(name, None, error=describe(exc), build_status=status))
                continue
            result.append(Variant(name, lambda fn=fn: self.sync(fn(*native)), self.to_numpy,
                                  soft_errors=self.soft_errors))
        return result


class NumpyPeer(Peer):
    """NumPy: the baseline every ratio is taken against."""

    key = "numpy"

    def chain(self):
        return lambda x: np.tanh(x * 1.7 + 0.3) * np.exp(-x * x) + np.sqrt(np.abs(x))

    def softmax(self):
        def softmax(x):
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        return softmax

    def layernorm(self):
        def layernorm(x, gamma, beta):
            mean = x.mean(axis=-1, keepdims=True)
            d = x - mean
            var = (d * d).mean(axis=-1, keepdims=True)
            return d / np.sqrt(var + LAYERNORM_EPS) * gamma + beta
        return layernorm

    def matmul(self):
        return lambda a, b: a @ b

    def matmul_bias_relu(self):
        return lambda a, b, bias: np.maximum(a @ b + bias, 0.0)

    def affine(self):
        return lambda x: x * 2.0 + 1.0


class NumexprPeer(Peer):
    """numexpr: W1 as one multi-threaded, blocked expression (float32 constants)."""

    key = "numexpr"

    def setup(self, threads: int) -> None:
        import numexpr

        numexpr.set_num_threads(threads)
        self.ne = numexpr

    def chain(self):
        ne = self.ne
        a, b = np.float32(1.7), np.float32(0.3)
        expr = "tanh(x * a + b) * exp(-x * x) + sqrt(abs(x))"
        return lambda x: ne.evaluate(expr, local_dict={"x": x, "a": a, "b": b})


class NumbaPeer(Peer):
    """numba: the natural loops of `numba_kernels`, serial @njit and @njit(parallel=True)."""

    key = "numba"

    def setup(self, threads: int) -> None:
        import numba

        from . import numba_kernels

        self.numba, self.k = numba, numba_kernels

    def modes(self, case: Case) -> list:
        modes = [("numba", self.numba.njit)]
        if case.kernel in ("chain", "softmax", "layernorm"):
            modes.append(("numba parallel", lambda fn: self.numba.njit(parallel=True)(fn)))
        return modes

    def chain(self):
        return self.k.chain

    def softmax(self):
        return self.k.softmax

    def layernorm(self):
        return self.k.layernorm

    def affine(self):
        return self.k.affine

    def variants(self, case: Case) -> list:
        if case.kernel == "layernorm":  # eps is a fourth (scalar) argument
            case = dataclasses.replace(case, inputs=case.inputs + (LAYERNORM_EPS,))
        return super().variants(case)


class JaxPeer(Peer):
    """JAX: `jax.jit` of jax.numpy code on the CPU backend."""

    key = "jax"

    def setup(self, threads: int) -> None:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_platforms", "cpu")
        self.jax, self.jnp = jax, jnp

    def modes(self, case: Case) -> list:
        return [("jax.jit", self.jax.jit)]

    def to_native(self, array):
        return self.jax.device_put(array)

    def sync(self, out):
        return out.block_until_ready()

    def chain(self):
        jnp = self.jnp
        return lambda x: jnp.tanh(x * 1.7 + 0.3) * jnp.exp(-x * x) + jnp.sqrt(jnp.abs(x))

    def softmax(self):
        return lambda x: self.jax.nn.softmax(x, axis=-1)

    def layernorm(self):
        jnp = self.jnp

        def layernorm(x, gamma, beta):
            mean = jnp.mean(x, axis=-1, keepdims=True)
            d = x - mean
            var = jnp.mean(d * d, axis=-1, keepdims=True)
            return d / jnp.sqrt(var + LAYERNORM_EPS) * gamma + beta
        return layernorm

    def matmul(self):
        return lambda a, b: a @ b

    def matmul_bias_relu(self):
        return lambda a, b, bias: self.jax.nn.relu(a @ b + bias)

    def affine(self):
        return lambda x: x * 2.0 + 1.0


class TorchPeer(Peer):
    """PyTorch on the CPU: eager, and `torch.compile` (inductor, static shapes)."""

    key = "torch"

    def setup(self, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.torch = torch

    def modes(self, case: Case) -> list:
        return [("torch", lambda fn: fn),
                ("torch.compile", lambda fn: self.torch.compile(fn, dynamic=False))]

    def to_native(self, array):
        return self.torch.from_numpy(array)

    def to_numpy(self, out):
        return out.detach().numpy()

    def chain(self):
        t = self.torch
        return lambda x: t.tanh(x * 1.7 + 0.3) * t.exp(-x * x) + t.sqrt(t.abs(x))

    def softmax(self):
        return lambda x: self.torch.softmax(x, dim=-1)

    def layernorm(self):
        f = self.torch.nn.functional
        return lambda x, gamma, beta: f.layer_norm(x, gamma.shape, gamma, beta, LAYERNORM_EPS)

    def matmul(self):
        return lambda a, b: a @ b

    def matmul_bias_relu(self):
        return lambda a, b, bias: self.torch.relu(a @ b + bias)

    def affine(self):
        return lambda x: x * 2.0 + 1.0


class TensorflowPeer(Peer):
    """TensorFlow 2: `tf.function(jit_compile=True)` (XLA) of tf ops on the CPU."""

    key = "tensorflow"

    def setup(self, threads: int) -> None:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
        self.tf = tf

    def modes(self, case: Case) -> list:
        return [("tf.function(xla)", lambda fn: self.tf.function(fn, jit_compile=True))]

    def to_native(self, array):
        return self.tf.constant(array)

    def to_numpy(self, out):
        return out.numpy()

    def chain(self):
        tf = self.tf
        return lambda x: tf.tanh(x * 1.7 + 0.3) * tf.exp(-x * x) + tf.sqrt(tf.abs(x))

    def softmax(self):
        return lambda x: self.tf.nn.softmax(x, axis=-1)

    def layernorm(self):
        tf = self.tf

        def layernorm(x, gamma, beta):
            mean = tf.reduce_mean(x, axis=-1, keepdims=True)
            d = x - mean
            var = tf.reduce_mean(d * d, axis=-1, keepdims=True)
            return d / tf.sqrt(var + LAYERNORM_EPS) * gamma + beta
        return layernorm

    def matmul(self):
        return lambda a, b: self.tf.matmul(a, b)

    def matmul_bias_relu(self):
        return lambda a, b, bias: self.tf.nn.relu(self.tf.matmul(a, b) + bias)

    def affine(self):
        return lambda x: x * 2.0 + 1.0


class FlowjitPeer(Peer):
    """flowjit: `flowjit.jit` of flowjit ops, called with and returning NumPy arrays."""

    key = "flowjit"
    soft_errors = (AttributeError, NotImplementedError, ImportError)

    def setup(self, threads: int) -> None:
        import flowjit

        self.fj = flowjit

    def modes(self, case: Case) -> list:
        return [("flowjit.jit", lambda fn: self.fj.jit(fn))]

    def chain(self):
        fj = self.fj
        return lambda x: fj.tanh(x * 1.7 + 0.3) * fj.exp(-x * x) + fj.sqrt(fj.abs(x))

    def softmax(self):
        return lambda x: self.fj.nn.softmax(x)

    def layernorm(self):
        fj = self.fj

        def layernorm(x, gamma, beta):
            mean = fj.reduce_mean(x, axis=-1, keepdims=True)
            d = x - mean
            var = fj.reduce_mean(d * d, axis=-1, keepdims=True)
            return d * fj.rsqrt(var + LAYERNORM_EPS) * gamma + beta
        return layernorm

    def matmul(self):
        return lambda a, b: self.fj.matmul(a, b)

    def matmul_bias_relu(self):
        return lambda a, b, bias: self.fj.nn.relu(self.fj.matmul(a, b) + bias)

    def affine(self):
        return lambda x: x * 2.0 + 1.0


PEERS = (NumexprPeer, NumbaPeer, JaxPeer, TorchPeer, TensorflowPeer)
PEER_KEYS = tuple(p.key for p in PEERS)
