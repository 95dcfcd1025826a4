"""Kernel launches of the CUDA indexer, the warm-up that only builds and loads them, and what a TMA
descriptor accepts.

A kernel cannot be loaded while a stream is being captured (cuModuleLoadData is refused), so every
kernel a CUDA graph will launch must already be loaded by the eager calls that precede the
capture. When an eager call takes another path than its capture would (logits rows sized by the
lengths instead of the block table; key windows), indexer.py runs the capture's path once inside
`warming()`: each launch is compiled and loaded but not run (`JITFunction.warmup`), and the
workspaces are one-element stand-ins (only their dtype and 16-byte alignment reach the compiler).
"""
from __future__ import annotations

import contextlib

import torch

_warming = False


@contextlib.contextmanager
def warming():
    global _warming
    _warming = True
    try:
        yield
    finally:
        _warming = False


def is_warming() -> bool:
    return _warming


def launch(kernel, grid, *args, **kwargs):
    """kernel[grid](*args, **kwargs); while warming, build and load it without running it."""
    if not _warming:
        kernel[grid](*args, **kwargs)
        return
    compiled = kernel.warmup(*args, grid=grid, **kwargs)
    if hasattr(compiled, "result"):  # asynchronous compilation
        compiled = compiled.result()
    compiled._init_handles()


def empty(shape, dtype, device) -> torch.Tensor:
    """torch.empty(shape), or one element while warming (nothing reads or writes it then)."""
    return torch.empty(1 if _warming else shape, dtype=dtype, device=device)


def tma_aligned(t: torch.Tensor, strides) -> bool:
    """Whether a TMA descriptor may take t with these outer strides (elements): a 16-byte
    aligned base and 16-byte multiples (the innermost stride must be 1: the caller's check)."""
    return t.data_ptr() % 16 == 0 and all(s * t.element_size() % 16 == 0 for s in strides)
