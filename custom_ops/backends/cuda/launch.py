"""Kernel launches of the CUDA indexer, the warm-up that only builds and loads them, and what a TMA
descriptor accepts.

A kernel cannot be loaded while a stream is being captured (cuModuleLoadData is refused), so every
kernel a CUDA graph will launch must already be loaded by the eager calls that precede the
capture. When an eager call takes another path than its capture would (logits rows sized by the
lengths instead of the block table; key windows), indexer.py runs the capture's path once inside
`warming()`: each launch is compiled and loaded but not run (`JITFunction.warmup`), and the
workspaces are one-element stand-ins (only their dtype and 16-byte alignment reach the compiler).

An eager call pays Triton's launch path on the host for each of its five or six kernels (about
half of the ~400 µs an eager call took on the H200 machine's CPU). `launch` takes the part of
that path which selects the compiled variant (Triton's own argument binder and cache key) and
launches the variant Triton already holds directly, leaving out the rest of JITFunction.run
(its per-launch Python: option handling, the check that no global changed since compilation,
the grid proxy). A variant Triton does not hold yet, a kernel with pre-run hooks, or a Triton
whose JITFunction lacks these internals takes `kernel[grid]` as before.

Inside `recording(recorder)` (plans.py, on the calling thread only) every launch, workspace
allocation (`empty`) and torch operation between launches (`torch_step`) is also reported, so
that later eager calls of the same signature can replay them without this module's Python.
"""
from __future__ import annotations

import contextlib
import functools
import threading

import torch

try:
    from triton import knobs
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction, compute_cache_key
except ImportError:  # a Triton without these internals: every launch takes kernel[grid]
    JITFunction = None

# held variants launched by _launch_held (False: every launch takes kernel[grid]; for comparing)
direct = True
# .recorder: a plans.Recorder while this thread's eager call is recorded; it is told of every
# launch, workspace allocation and torch step (per thread: another thread's launches are not
# this call's)
_local = threading.local()


def _is_warming() -> bool:
    return getattr(_local, "warming", False)


@contextlib.contextmanager
def warming():
    """Launches of this thread inside only build and load their kernels (per thread: another
    thread's calls meanwhile run for real)."""
    before = _is_warming()  # (nested: an inner block must not end the outer one)
    _local.warming = True
    try:
        yield
    finally:
        _local.warming = before


@contextlib.contextmanager
def recording(recorder):
    """Launches, allocations and torch steps of this thread inside are also reported to
    `recorder`."""
    _local.recorder = recorder
    try:
        yield recorder
    finally:
        _local.recorder = None


def _recorder():
    return getattr(_local, "recorder", None)


def _launch_held(kernel, grid, args, kwargs):
    """Launch the compiled variant of `kernel` that JITFunction.run would select for these
    arguments, if Triton already holds it (the same binder, cache key and launcher call), and
    return (that variant, the 3-d grid, the bound argument values); False, with nothing
    launched, otherwise."""
    if (JITFunction is None or getattr(type(kernel), "run", None) is not JITFunction.run
            or kernel.pre_run_hooks):  # the interpreter, a recorder, hooks: Triton's own path
        return False
    device = driver.active.get_current_device()
    caches = kernel.device_caches.get(device)
    if caches is None or len(caches) != 5:  # never launched here, or another Triton's layout
        return False
    kernel_cache, key_cache, _, _, binder = caches
    kwargs["debug"] = kwargs.get("debug", kernel.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    bound, specialization, options = binder(*args, **kwargs)
    compiled = kernel_cache.get(compute_cache_key(key_cache, specialization, options))
    if compiled is None or hasattr(compiled, "result"):  # not built yet, or still building
        return False
    stream = driver.active.get_current_stream(device)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    values = tuple(bound.values())
    compiled.run(grid[0], grid[1], grid[2], stream, compiled.function, compiled.packed_metadata,
                 compiled.launch_metadata(grid, stream, *values),
                 knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
    return compiled, grid, values


def launch(kernel, grid, *args, **kwargs):
    """kernel[grid](*args, **kwargs); while warming, build and load it without running it."""
    if not _is_warming():
        held = direct and _launch_held(kernel, grid, args, dict(kwargs))
        if not held:
            kernel[grid](*args, **kwargs)
        recorder = _recorder()
        if recorder is not None:
            recorder.launched(held or None)
        return
    compiled = kernel.warmup(*args, grid=grid, **kwargs)
    if hasattr(compiled, "result"):  # asynchronous compilation
        compiled = compiled.result()
    compiled._init_handles()


@functools.lru_cache(maxsize=None)
def _properties(index: int):
    return torch.cuda.get_device_properties(index)


def device_properties(device: torch.device):
    """torch.cuda.get_device_properties(device), read once per device (every eager call asks
    for the SM count and the compute capability)."""
    return _properties(torch.cuda.current_device() if device.index is None else device.index)


def empty(shape, dtype, device, *, stand_in: bool = True) -> torch.Tensor:
    """torch.empty(shape), or with stand_in one element while warming (nothing reads or writes
    it then; a tensor the host code indexes, such as the key windows' schedules, takes
    stand_in=False). Recorded as a workspace region while a call is recorded."""
    t = torch.empty(1 if stand_in and _is_warming() else shape, dtype=dtype, device=device)
    recorder = _recorder()
    if recorder is not None:
        recorder.allocated(t)
    return t


def torch_step(fn, *tensors):
    """fn(*tensors), a torch operation between two launches (a plan replays it as one);
    nothing while warming."""
    if _is_warming():
        return
    fn(*tensors)
    recorder = _recorder()
    if recorder is not None:
        recorder.stepped(fn, tensors)


def tma_aligned(t: torch.Tensor, strides) -> bool:
    """Whether a TMA descriptor may take t with these outer strides (elements): a 16-byte
    aligned base and 16-byte multiples (the innermost stride must be 1: the caller's check)."""
    return t.data_ptr() % 16 == 0 and all(s * t.element_size() % 16 == 0 for s in strides)
