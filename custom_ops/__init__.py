"""custom_ops: DeepSeek sparse-attention indexer and virtual-memory KV append as torch.ops.custom.

`import custom_ops` registers every op (schemas, fakes, the CPU backend, and the CUDA / NPU
backends where their runtimes import) and re-exports the typed public API of `custom_ops.ops`.
"""
from . import _schemas, fake  # noqa: F401  (registration side effects)
from .backends import cpu as _cpu  # noqa: F401
from .backends import fallback as _fallback  # noqa: F401
from .backends import cuda as _cuda  # noqa: F401  (registers only where CUDA + Triton exist)
from .backends import npu as _npu  # noqa: F401  (registers only where torch_npu imports)
from . import vtensor  # noqa: F401
from .ops import (  # noqa: F401
    npu_vllm_quant_lightning_indexer,
    npu_vllm_quant_lightning_indexer_metadata,
)

__version__ = "0.1.0"
