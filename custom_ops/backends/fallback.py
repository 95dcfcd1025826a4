"""Kernel for metadata calls whose arguments give the dispatcher no device (every length is None).

Such a call is always invalid (PA_BSND needs actual_seq_lengths_key); this turns the dispatcher's
'no tensor arguments' NotImplementedError into the argument error of SPEC §4.
"""
import torch

from .. import _checks


@torch.library.impl("custom::npu_vllm_quant_lightning_indexer_metadata", "CompositeExplicitAutograd")
def npu_vllm_quant_lightning_indexer_metadata(**kwargs):
    kw = _checks.metadata_arguments(kwargs)
    _checks.check_metadata_args(**kw)
    raise ValueError(f"device {kw['device']!r} has no backend of "
                     "npu_vllm_quant_lightning_indexer_metadata in this process "
                     "(CUDA needs triton, an NPU needs torch_npu)")
