"""Launch plans: an eager call's kernel launches recorded once per call signature, then replayed.

An eager indexer call spent about 300 µs on the host of the H200 machine (session 15), most of
it deciding again what the previous call of the same shapes had decided: configuration and
path choices, a dozen workspace allocations, and for each of its five or six kernels Triton's
argument binder, cache key and launcher, which asks the driver about every pointer. All of
that follows from the call's signature (the problem's scalars; each tensor's shape, strides,
dtype and address alignment; the configurations; the device) and nothing of it from the
tensors' contents or addresses. So the first eager call of a signature takes the full path
inside `launch.recording` and becomes a plan: each kernel's compiled variant, grid and argument
values, every pointer written as a region (one of the call's tensors, or one of its workspace
allocations) and a byte offset into it, and the torch steps between launches. A later call of
that signature allocates its workspace as one block, writes its own addresses into the recorded
arguments and calls the compiled variants' launchers directly.

A recording that cannot be replayed is dropped, and that signature keeps the full path: a launch
of a variant Triton had not compiled yet (`launch.launch` took `kernel[grid]`), or a pointer that
lies in no region or in more than one (e.g. a tensor a torch operation made between launches).
The caller keys plans by everything its host code decides from; a non-tensor argument that
varied with anything else would be replayed stale, so the host code passes none. Plans are for
eager calls only: the caller takes the full path during CUDA graph capture, torch.compile tracing,
warming and under the interpreter.
"""
from __future__ import annotations

import dataclasses

import torch

from . import launch

try:
    from triton import knobs
    from triton.runtime import driver
except ImportError:  # no Triton: nothing is ever recorded
    knobs = driver = None

_ALIGN = 512  # workspace regions inside the one block start where torch's allocator would put them
_plans: dict = {}  # key -> Plan, or None for a signature that cannot be replayed
_PLANS_MAX = 256
_failed: dict = {}  # key -> recordings that failed; after _TRIES the signature is not planned
_TRIES = 3
enabled = True  # False: every call takes the full path (for comparing)


class _Address(int):
    """An address where the launcher reads a tensor: an int for a pointer argument (no driver
    query), `data_ptr()` for a TMA descriptor's base."""

    def data_ptr(self) -> int:
        return int(self)


@dataclasses.dataclass
class _Descriptor:
    """What Triton's launcher reads of a host TMA descriptor."""
    base: _Address
    shape: tuple
    strides: tuple
    padding: str


@dataclasses.dataclass
class _Launch:
    compiled: object
    grid: tuple
    values: list  # the bound arguments; None where a pointer or a descriptor is filled in
    pointers: list  # (argument index, region, byte offset)
    descriptors: list  # (argument index, region, byte offset, shape, strides, padding)

    def run(self, addresses, stream, enter, leave, arena):
        values = self.values.copy()
        for i, region, offset in self.pointers:
            values[i] = addresses[region] + offset
        for i, region, offset, shape, strides, padding in self.descriptors:
            values[i] = _Descriptor(_Address(addresses[region] + offset), shape, strides, padding)
        c, g = self.compiled, self.grid
        c.run(g[0], g[1], g[2], stream, c.function, c.packed_metadata,
              c.launch_metadata(g, stream, *values), enter, leave, *values)


@dataclasses.dataclass
class _TorchStep:
    fn: object
    tensors: list  # (region, byte offset, shape, stride, dtype), inside workspace regions

    def run(self, addresses, stream, enter, leave, arena):
        views = []
        for region, offset, shape, stride, dtype in self.tensors:
            t = torch.empty(0, dtype=dtype, device=arena.device)
            views.append(t.set_(arena.untyped_storage(), offset // t.element_size(), shape,
                                stride))
        self.fn(*views)


class Plan:
    """A recorded call: its workspace layout and its steps."""

    def __init__(self, roots: int, sizes: list, steps: list):
        self.roots = roots
        self.offsets, total = [], 0
        for size in sizes:
            self.offsets.append(total)
            total += -(-size // _ALIGN) * _ALIGN
        self.total = total
        # a torch step's views are made from the block: their offsets are into it
        for step in steps:
            if isinstance(step, _TorchStep):
                step.tensors = [(r, self.offsets[r - roots] + off, *rest)
                                for r, off, *rest in step.tensors]
        self.steps = steps

    def run(self, tensors, device: torch.device):
        """The recorded launches on `tensors` (the roots, in the recording's order) and a fresh
        workspace."""
        arena = (torch.empty(self.total, dtype=torch.uint8, device=device) if self.total
                 else None)
        addresses = [0 if t is None else t.data_ptr() for t in tensors]
        if arena is not None:
            start = arena.data_ptr()
            addresses += [start + off for off in self.offsets]
        stream = driver.active.get_current_stream(driver.active.get_current_device())
        enter, leave = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        for step in self.steps:
            step.run(addresses, stream, enter, leave, arena)


def _extent(t: torch.Tensor) -> int:
    """Bytes from t's first element past its last."""
    if t.numel() == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


class Recorder:
    """Told by `launch` of every launch, allocation and torch step of one call; `plan()` is the
    call as a Plan, or None where it cannot be replayed."""

    def __init__(self, roots):
        self.regions = list(roots)
        self.roots = len(self.regions)
        self.steps = []
        self.ok = knobs is not None

    def allocated(self, t: torch.Tensor):
        self.regions.append(t)

    def _place(self, t: torch.Tensor):
        """(region, byte offset) of the tensor t: the region it is, or the one region it lies
        in; the recording fails where there is none or more than one."""
        for j, r in enumerate(self.regions):
            if r is t:
                return j, 0
        ptr, end = t.data_ptr(), t.data_ptr() + _extent(t)
        inside = [j for j, r in enumerate(self.regions)
                  if r is not None and r.data_ptr() <= ptr and end <= r.data_ptr() + _extent(r)
                  and _extent(r) > 0]
        if len(inside) != 1:
            self.ok = False
            return 0, 0
        return inside[0], ptr - self.regions[inside[0]].data_ptr()

    def launched(self, held):
        if held is None:  # Triton compiled it just now (kernel[grid]): nothing to hold
            self.ok = False
            return
        compiled, grid, values = held
        values = list(values)
        pointers, descriptors = [], []
        for i, v in enumerate(values):
            if isinstance(v, torch.Tensor):
                pointers.append((i, *self._place(v)))
            elif hasattr(v, "base") and hasattr(v, "block_shape"):  # a TMA descriptor
                descriptors.append((i, *self._place(v.base), tuple(v.shape),
                                    tuple(v.strides), v.padding))
            else:
                continue
            values[i] = None
        self.steps.append(_Launch(compiled, grid, values, pointers, descriptors))

    def stepped(self, fn, tensors):
        placed = []
        for t in tensors:
            region, offset = self._place(t)
            if region < self.roots:  # only workspace views can be made from the block
                self.ok = False
            placed.append((region, offset, tuple(t.shape), tuple(t.stride()), t.dtype))
        self.steps.append(_TorchStep(fn, placed))

    def plan(self) -> Plan | None:
        if not self.ok:
            return None
        sizes = [t.numel() * t.element_size() for t in self.regions[self.roots:]]
        return Plan(self.roots, sizes, self.steps)


def signature(t) -> tuple | None:
    """What a plan depends on of one tensor: shape, strides, dtype and address alignment (Triton
    specialises on 16-byte alignment; TMA and paired-scale reads need it too)."""
    if t is None:
        return None
    return (t.shape, t.stride(), t.dtype, t.data_ptr() % 16)


def usable() -> bool:
    """Whether calls may be planned: Triton's internals are there and launches take the direct
    path (launch.direct False compares against Triton's own launch path)."""
    return enabled and knobs is not None and launch.direct


def call(key, tensors, device: torch.device, run) -> None:
    """run() (the call's full path on `tensors`), or the plan recorded for `key` from an
    earlier call. A call without a plan is recorded (the first call of a signature usually
    compiles, so the second one records); a signature whose recordings failed _TRIES times
    always takes the full path, unrecorded."""
    plan = _plans.get(key, False)
    if plan:
        plan.run(tensors, device)
        return
    if plan is None:
        run()
        return
    with launch.recording(Recorder(tensors)) as recorder:
        run()
    plan = recorder.plan()
    if plan is None:
        _failed[key] = _failed.get(key, 0) + 1
        if _failed[key] < _TRIES:
            return
        del _failed[key]
    if len(_plans) >= _PLANS_MAX:
        _plans.pop(next(iter(_plans)))
    _plans[key] = plan


def clear() -> None:
    _plans.clear()
    _failed.clear()
