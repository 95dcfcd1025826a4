"""The CUDA indexer called directly on checked arguments (no dispatcher, so CPU tensors work),
shared by the offline checks: check_cuda_interpreted.py runs it under the Triton interpreter,
check_cuda_compile.py with every launch recorded instead of run."""
from custom_ops import _checks
from custom_ops.backends.cuda import indexer as cuda_indexer


def call(args, kwargs, workers):
    full = _checks.indexer_arguments(kwargs)
    p = _checks.check_indexer(*args, **full)
    return cuda_indexer.indexer(*args, full["actual_seq_lengths_query"],
                                full["actual_seq_lengths_key"], full["block_table"], None,
                                p=p, workers=workers)
