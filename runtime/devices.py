"""Devices: the places ops run (2015 TensorFlow paper §3.2), and the registry of their types.

A `Device` has a type (`DeviceType`: CPU, GPU, or one registered with `register_type`), an
index, a full name (`/job:localhost/replica:0/task:0/device:CPU:0`), the targets its kernels
are compiled for, its share of the cores (`threads`: the threads its compiled kernels may
use and the size of its inter-op pool), and an allocator that accounts the bytes of the
values it holds during a step (`DeviceAllocator`: in use and peak).

`make_devices(config)` builds a Session's devices from `ConfigProto.device_count`:
`{"CPU": 2}` makes two *virtual* CPU devices in this process, each with its own share of
the cores (2 cores: one each), so multi-device graphs run and are tested on one machine.
Every GPU numba-cuda finds is a device unless device_count says otherwise (runtime/
gpu_device.py: none without numba-cuda or a driver; one under its simulator); asking for
more than exist gives what exists, as in TensorFlow.

Compiled kernels of different devices run at the same time.  Each kernel call happens in
`device.kernel_slot()`: it tells the target how many threads kernels launched from this
thread may use (numba's thread-local `set_num_threads`: the device's share), and holds the
device's kernel lock, so one device runs one compiled kernel at a time over all of its
threads (like a GPU stream) and never oversubscribes its cores.  numba's omp and tbb
threading layers accept launches from several threads at once; its workqueue layer does not
(it aborts the process), so when it is the layer, one process-wide lock is held as well
(`Target.concurrent_launches`).  docs/architecture.md ("Devices") has the whole picture.

The device a thread is running for is thread-local (`running_on`); outside any device
executor it is the host device (CPU:0 with all cores), so a one-device Session behaves as
before: one compiled kernel at a time, each using every core.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..compiler.core.device_spec import DeviceSpec
from ..targets.target import TargetKind
from . import gpu_device
from .targets import get_target

LOCAL_PREFIX = "/job:localhost/replica:0/task:0"


@dataclasses.dataclass(frozen=True)
class DeviceType:
    """A kind of device (a typed key: compare with CPU and GPU, never with strings)."""

    name: str

    def __str__(self):
        return self.name


CPU = DeviceType("CPU")
GPU = DeviceType("GPU")


@dataclasses.dataclass(frozen=True)
class DeviceTypeInfo:
    """What the registry knows of a device type.

    targets: the targets that compile its clusters, preferred first;
    supports(op): whether it has a kernel for the op (CPU: every op);
    physical_count(): how many devices of the type this machine has.
    """

    device_type: DeviceType
    targets: tuple
    supports: Callable
    physical_count: Callable


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


_REGISTRY: dict = {
    CPU: DeviceTypeInfo(CPU, (TargetKind.CPU, TargetKind.REFERENCE), lambda op: True,
                        lambda: 1),
    GPU: DeviceTypeInfo(GPU, gpu_device.TARGETS, gpu_device.supports,
                        gpu_device.gpu_count),
}
_REGISTRY_LOCK = threading.Lock()


def register_type(info: DeviceTypeInfo) -> None:
    """Add (or replace) a device type; `make_devices` then honours device_count for it."""
    with _REGISTRY_LOCK:
        _REGISTRY[info.device_type] = info


def unregister_type(device_type: DeviceType) -> None:
    """Remove a device type added with register_type (CPU and GPU stay)."""
    if device_type in (CPU, GPU):
        raise ValueError(f"{device_type} is built in and cannot be removed.")
    with _REGISTRY_LOCK:
        _REGISTRY.pop(device_type, None)


def type_info(device_type: DeviceType) -> DeviceTypeInfo:
    return _REGISTRY[device_type]


def type_named(name: str) -> DeviceType | None:
    """The registered device type called `name` (any case), or None."""
    upper = name.upper()
    with _REGISTRY_LOCK:
        for t in _REGISTRY:
            if t.name == upper:
                return t
    return None


class DeviceAllocator:
    """Bytes of the values a device holds during steps: in use now, and the peak since the
    last `reset_peak` (values live in NumPy's memory; this is their account per device)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.in_use = 0
        self.peak = 0

    def allocated(self, nbytes: int) -> None:
        with self._lock:
            self.in_use += nbytes
            if self.in_use > self.peak:
                self.peak = self.in_use

    def freed(self, nbytes: int) -> None:
        with self._lock:
            self.in_use -= nbytes

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.in_use


_PROCESS_KERNEL_LOCK = threading.Lock()   # for threading layers without concurrent launches


class Device:
    """One device of a Session (module docstring)."""

    def __init__(self, device_type: DeviceType, index: int, threads: int,
                 prefix: str = LOCAL_PREFIX):
        self.device_type = device_type
        self.index = index
        self.threads = max(1, int(threads))
        self.name = f"{prefix}/device:{device_type.name}:{index}"
        self.spec = DeviceSpec.parse(self.name)
        self.targets = type_info(device_type).targets
        self.allocator = DeviceAllocator()
        self.kernel_lock = threading.Lock()
        self._pool = None
        self._pool_lock = threading.Lock()
        self._slots: dict = {}       # TargetKind -> _KernelSlot
        self.share_threads = True    # set the kernels' thread count (False: the host default)

    def __repr__(self):
        return f"<Device {self.name} threads={self.threads}>"

    def supports(self, op) -> bool:
        """Whether this device has a kernel for `op`."""
        return type_info(self.device_type).supports(op)

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The device's inter-op threads (started on first use)."""
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        self.threads, thread_name_prefix=f"flowjit-{self.device_type.name}"
                        f"{self.index}", initializer=_enter, initargs=(self,))
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def kernel_slot(self, target_kind: TargetKind = TargetKind.CPU) -> "_KernelSlot":
        """Hold this device for one compiled kernel call (module docstring):
        `with device.kernel_slot(kind): kernel(...)`."""
        slot = self._slots.get(target_kind)
        if slot is None:
            slot = self._slots[target_kind] = _KernelSlot(self, get_target(target_kind))
        if not self.share_threads and slot.target.concurrent_launches():
            return self.kernel_lock     # the host device: its lock is the whole slot
        return slot


class _KernelSlot:
    """The device's kernel lock (the process-wide one instead while the target cannot take
    launches from several threads), and the thread count of the calling thread set to the
    device's share (only when it changes: the setting is the thread's own).  One per device
    and target; the lock a thread took is remembered in its thread-local state."""

    __slots__ = ("device", "target")

    def __init__(self, device: Device, target):
        self.device = device
        self.target = target

    def __enter__(self):
        device = self.device
        lock = device.kernel_lock if self.target.concurrent_launches() \
            else _PROCESS_KERNEL_LOCK
        lock.acquire()
        _running.held = lock
        if device.share_threads and _running.threads != device.threads:
            self.target.set_thread_count(device.threads)
            _running.threads = device.threads
        return self

    def __exit__(self, *exc):
        _running.held.release()
        return False


class _Running(threading.local):
    """Per thread: the device it runs for, the kernel thread count it last set, the kernel
    lock it holds (class attributes are the defaults: a missing attribute would cost an
    exception on every kernel call)."""

    device = None
    threads = None
    held = None


_running = _Running()


def _enter(device: Device) -> None:
    _running.device = device
    _running.threads = None   # the pool's threads start with the layer's default


def running_on() -> Device:
    """The device the calling thread runs ops for (the host device outside executors)."""
    device = _running.device
    if device is not None:
        return device
    return _HOST if _HOST is not None else host_device()


@contextlib.contextmanager
def running(device: Device):
    """Run the block as `device` (the calling thread's kernels take its slot)."""
    saved = _running.device
    _running.device = device
    try:
        yield device
    finally:
        _running.device = saved


_HOST = None


def host_device() -> Device:
    """CPU:0 with every core: where ops run when no multi-device session placed them."""
    global _HOST
    if _HOST is None:
        host = Device(CPU, 0, _cpu_count())
        host.share_threads = False    # the threading layer's default already is all cores
        _HOST = host
    return _HOST


def make_devices(device_count: dict | None = None, gpus: bool = True) -> list:
    """A Session's devices from ConfigProto.device_count (module docstring): CPUs first,
    then the other types, each numbered from 0.  One CPU (the default) is the host device.
    Every GPU is included unless device_count says how many; `gpus=False` leaves them out
    unless it does (a Session whose graph asks for none: numba-cuda is not even loaded)."""
    counts = {}
    for name, count in (device_count or {}).items():
        device_type = type_named(str(name))
        if device_type is None:
            raise ValueError(f"ConfigProto.device_count names an unknown device type "
                             f"{name!r}; known: {', '.join(t.name for t in _REGISTRY)}.")
        counts[device_type] = int(count)
    if GPU not in counts and gpus:
        counts[GPU] = type_info(GPU).physical_count()   # every GPU, as in TensorFlow
    n_cpu = max(1, counts.pop(CPU, 1))
    if n_cpu == 1:
        devices = [host_device()]
    else:
        cores = _cpu_count()
        devices = [Device(CPU, i, _share(cores, n_cpu, i)) for i in range(n_cpu)]
    for device_type, count in counts.items():
        if count <= 0:
            continue
        available = type_info(device_type).physical_count()
        for i in range(min(count, available)):
            devices.append(Device(device_type, i, 1))
    return devices


def task_devices(prefixes: list) -> list:
    """One CPU device per task of an in-process cluster (runtime/local_cluster.py), named
    `<prefix>/device:CPU:0`, the cores shared between them."""
    cores = _cpu_count()
    return [Device(CPU, 0, _share(cores, len(prefixes), i), prefix=prefix)
            for i, prefix in enumerate(prefixes)]


def _share(cores: int, n: int, i: int) -> int:
    """Device i's share of `cores` split over n devices (at least one thread each)."""
    return max(1, cores // n + (1 if i < cores % n else 0))


@dataclasses.dataclass(frozen=True)
class PhysicalDevice:
    """A device of the machine (tf.config.PhysicalDevice)."""

    name: str
    device_type: str


@dataclasses.dataclass(frozen=True)
class LogicalDevice:
    """A device ops can be placed on (tf.config.LogicalDevice)."""

    name: str
    device_type: str


@dataclasses.dataclass(frozen=True)
class DeviceAttributes:
    """What Session.list_devices() reports per device (TensorFlow's _DeviceAttributes)."""

    name: str
    device_type: str
    memory_limit_bytes: int
    incarnation: int


def list_physical_devices(device_type: str | None = None) -> list:
    """The machine's devices of `device_type` (all types when None), as PhysicalDevices."""
    out = []
    with _REGISTRY_LOCK:
        infos = list(_REGISTRY.values())
    for info in infos:
        if device_type is not None and info.device_type.name != device_type.upper():
            continue
        for i in range(info.physical_count()):
            out.append(PhysicalDevice(f"/physical_device:{info.device_type.name}:{i}",
                                      info.device_type.name))
    return out


def list_logical_devices(device_type: str | None = None, device_count: dict | None = None):
    """The devices a Session with ConfigProto(device_count=...) places ops on."""
    return [LogicalDevice(d.name, d.device_type.name) for d in make_devices(device_count)
            if device_type is None or d.device_type.name == device_type.upper()]


def describe(devices) -> list:
    """DeviceAttributes of `devices` (Session.list_devices)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = 0
    return [DeviceAttributes(d.name, d.device_type.name, memory // max(1, len(devices)),
                             hash(d.name) & 0x7FFFFFFF) for d in devices]
