"""GPU benchmark of the CUDA target: elementwise chain, softmax, layernorm and matmul in GB/s
and TFLOP/s, against the device's measured copy bandwidth and CuPy / PyTorch when present.

Inputs live on the device (the kernels' `on_device` entry: no host copies are timed); each
variant runs `--repeats` batches after a warm-up, synchronizing the device around each
batch, and the median batch gives the rate.  The copy bandwidth is a device-to-device copy
of the largest input (bytes read + written per second); the targets are elementwise and
softmax at >= 70% of it and float32 matmul at >= 50% of cuBLAS (PyTorch's or CuPy's).

Run on a GPU: `python -m flowjit.benchmarks.gpu` (under five minutes).  `--tiny` runs tiny
sizes once, which also works on numba-cuda's simulator (NUMBA_ENABLE_CUDASIM=1): CI runs it
so to prove the script works; its numbers mean nothing there.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import flowjit


def chain(x, y):
    return np.tanh(x * 1.5 + y) * y - x * 0.25


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(x, g, b):
    m = x.mean(axis=1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def matmul(a, b):
    return a @ b


def workloads(tiny: bool) -> dict:
    """{name: (function, host inputs, bytes moved, flops)} at full or tiny sizes."""
    rng = np.random.default_rng(0)
    n = 1 << 24 if not tiny else 64
    rows, cols = (8192, 4096) if not tiny else (4, 40)
    m = 4096 if not tiny else 9
    f32 = np.float32
    x, y = rng.standard_normal(n).astype(f32), rng.standard_normal(n).astype(f32)
    r = rng.standard_normal((rows, cols)).astype(f32)
    g, b = rng.standard_normal(cols).astype(f32), rng.standard_normal(cols).astype(f32)
    a, c = rng.standard_normal((m, m)).astype(f32), rng.standard_normal((m, m)).astype(f32)
    return {"elementwise chain": (chain, (x, y), 3 * x.nbytes, 0),
            "softmax": (softmax, (r,), 2 * r.nbytes, 0),
            "layernorm": (layernorm, (r, g, b), 2 * r.nbytes, 0),
            "matmul": (matmul, (a, c), 3 * a.nbytes, 2 * m ** 3)}


def _kernel(fn, args):
    lowered = flowjit.jit(fn, target="cuda", measure_runs=0).lower(*args)
    if not lowered.compiled:
        raise RuntimeError(f"{fn.__name__} did not compile for CUDA:\n{lowered}")
    return lowered.entry.compiled.cluster.kernel if hasattr(lowered.entry, "compiled") \
        else lowered.entry.cluster.kernel


def _time(call, sync, repeats: int, batch: int) -> float:
    call()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(batch):
            call()
        sync()
        times.append((time.perf_counter() - start) / batch)
    return statistics.median(times)


def _peers():
    out = {}
    try:
        import torch

        if torch.cuda.is_available():
            out["torch"] = torch
    except ImportError:
        pass
    try:
        import cupy

        out["cupy"] = cupy
    except ImportError:
        pass
    return out


def _peer_call(peer, module, name, args):
    if peer == "torch":
        t = [module.as_tensor(a, device="cuda") for a in args]
        fns = {"elementwise chain": lambda: module.tanh(t[0] * 1.5 + t[1]) * t[1] - t[0] * 0.25,
               "softmax": lambda: module.softmax(t[0], dim=1),
               "layernorm": lambda: module.nn.functional.layer_norm(
                   t[0], t[0].shape[1:], t[1], t[2], 1e-5),
               "matmul": lambda: t[0] @ t[1]}
        return fns[name], module.cuda.synchronize
    t = [module.asarray(a) for a in args]
    fns = {"elementwise chain": lambda: chain(*t), "softmax": lambda: softmax(*t),
           "layernorm": lambda: layernorm(*t), "matmul": lambda: t[0] @ t[1]}
    return fns[name], module.cuda.Device().synchronize


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny sizes, one repeat")
    parser.add_argument("--repeats", type=int, default=7)
    opts = parser.parse_args(argv)
    from numba import cuda

    repeats, batch = (1, 1) if opts.tiny else (opts.repeats, 10)
    loads = workloads(opts.tiny)
    biggest = max((args[0] for _, args, _, _ in loads.values()), key=lambda a: a.nbytes)
    src = cuda.to_device(biggest.reshape(-1))
    dst = cuda.device_array_like(src)
    copy = _time(lambda: dst.copy_to_device(src), cuda.synchronize, repeats, batch)
    copy_rate = 2 * biggest.nbytes / copy / 1e9
    device = getattr(cuda.get_current_device(), "name", "numba-cuda simulator")
    print(f"device: {device}  copy bandwidth {copy_rate:.1f} GB/s")
    peers = _peers() if not opts.tiny else {}
    print(f"{'workload':20s} {'flowjit':>22s} {'of copy':>8s}  " +
          "  ".join(f"{p:>16s}" for p in peers))
    for name, (fn, args, nbytes, flops) in loads.items():
        kernel = _kernel(fn, args)
        expected = fn(*args)
        dev = [cuda.to_device(a) for a in args]
        got = kernel.on_device(*dev)[0].copy_to_host()
        np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3)
        seconds = _time(lambda: kernel.on_device(*dev), cuda.synchronize, repeats, batch)
        rate = (f"{flops / seconds / 1e12:8.2f} TFLOP/s" if flops else
                f"{nbytes / seconds / 1e9:8.1f} GB/s   ")
        share = f"{nbytes / seconds / 1e9 / copy_rate:7.0%}" if not flops else "      -"
        cells = []
        for peer, module in peers.items():
            call, sync = _peer_call(peer, module, name, args)
            t = _time(call, sync, repeats, batch)
            cells.append(f"{seconds / t:6.2f}x its time")
        print(f"{name:20s} {rate:>22s} {share:>8s}  " + "  ".join(f"{c:>16s}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
