"""CUDA backend: Triton kernels of the indexer and its metadata.

Registered for the CUDA dispatch key only where Triton imports; on a machine without it (the CPU
CI) this package imports nothing and registers nothing, and CUDA calls fail in the dispatcher.
"""
import importlib.util

if importlib.util.find_spec("triton") is not None:
    from . import indexer, indexer_metadata  # noqa: F401  (registration side effects)
