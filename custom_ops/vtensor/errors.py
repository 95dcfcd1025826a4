"""Exceptions of the virtual-memory KV append: each names what ran out or which call failed."""
import torch


class VTensorError(RuntimeError):
    """Base of every virtual-tensor error."""


class ReservationExhaustedError(VTensorError):
    """The cache needs more tokens than its virtual reservation holds; nothing was changed."""


class VTensorOutOfMemoryError(VTensorError, torch.OutOfMemoryError):
    """Physical memory (the device, or the budget set with ``set_memory_budget``) ran out.

    Subclasses ``torch.OutOfMemoryError`` so code that already handles allocator OOMs handles it.
    """


class DriverError(VTensorError):
    """A virtual-memory driver call failed; the message names the call and its arguments."""


class DroppedWritesError(VTensorError):
    """``vtensor_append_`` dropped writes that fell beyond the mapped backing (see ``check``)."""
