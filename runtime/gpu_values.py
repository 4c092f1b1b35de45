"""Values that live in GPU memory during a step, and the copies between host and GPU
(docs/architecture.md, "The CUDA target").

On a GPU device, compiled clusters keep their outputs on the device (`CompiledKernel.kernel.
on_device`: numba-cuda device arrays) and the next cluster there reads them in place; only
Send/Recv move values between memories: a Recv on the GPU copies a host value to the device
(`arrived_on`, on the device's copy stream: `Streams`), and a Recv on the host copies a
device value back.  A GPU's kernels run on its compute stream.  Everything else that
needs host arrays gets them here: an op without a compiled kernel on the GPU (its NumPy
kernel), a cluster falling back to reference kernels, a variable update (variables live on
the host), a fetch.  Nothing here imports numba-cuda: a device array is recognized by its
`copy_to_host` method (the simulator's arrays have it too), and converting one needs the
package that made it.
"""

from __future__ import annotations

import threading

import numpy as np


def is_device_array(value) -> bool:
    """Whether `value` is a numba-cuda device array (or the simulator's)."""
    return not isinstance(value, np.ndarray) and hasattr(type(value), "copy_to_host")


def to_host(value):
    """A host array of a device array; anything else as it is."""
    if is_device_array(value):
        host = value.copy_to_host()
        return host.reshape(value.shape) if host.shape != tuple(value.shape) else host
    return value


def to_device(value):
    """A device array of a host array (already on the device: as it is)."""
    if is_device_array(value) or not isinstance(value, np.ndarray):
        return value
    from numba import cuda   # only reached for a GPU device: numba-cuda is there

    return cuda.to_device(np.ascontiguousarray(value))


class Streams:
    """A GPU device's two CUDA streams: kernels on `compute`, host-to-device copies of
    received values on `copy`, so a copy runs while kernels queued earlier still compute;
    an event makes the compute stream wait for each copy before the kernels reading it."""

    __slots__ = ("compute", "copy")

    def __init__(self):
        from numba import cuda

        self.compute = cuda.stream()
        self.copy = cuda.stream()


_STREAMS: dict = {}
_STREAMS_LOCK = threading.Lock()


def streams(device) -> Streams:
    """The streams of GPU `device` (made on first use)."""
    found = _STREAMS.get(device.name)
    if found is None:
        with _STREAMS_LOCK:
            found = _STREAMS.get(device.name)
            if found is None:
                found = _STREAMS[device.name] = Streams()
    return found


def arrived_on(device, value):
    """A received value in the memory of `device` (host for a CPU, device for a GPU: copied
    on the device's copy stream, which the compute stream then waits for)."""
    if device.device_type.name != "GPU":
        return to_host(value)
    if is_device_array(value) or not isinstance(value, np.ndarray):
        return value
    from numba import cuda

    pair = streams(device)
    copied = cuda.to_device(np.ascontiguousarray(value), stream=pair.copy)
    done = cuda.event()
    done.record(pair.copy)
    done.wait(pair.compute)
    return copied


def host_inputs(values: dict, tensors) -> None:
    """Replace device arrays among `values[t]` for `tensors` by host copies (in place)."""
    for t in tensors:
        v = values.get(t)
        if v is not None and is_device_array(v):
            values[t] = to_host(v)


def nbytes(value) -> int:
    """Bytes a value holds (host or device array; 0 for anything else)."""
    if isinstance(value, np.ndarray) or is_device_array(value):
        return int(value.nbytes)
    return 0
