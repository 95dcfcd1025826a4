import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from custom_ops.backends.cuda import indexer as cuda_indexer
from custom_ops.backends.cuda.indexer_topk import _indexer_segments_kernel
from custom_ops.testing import make_indexer_inputs, tie_keys, assert_indexer_close
from cuda_indexer_call import call
for distinct in (1, 0, 64):
    segs = []
    real = cuda_indexer.launch
    def spy(kernel, grid, *a, **kw):
        if kernel is _indexer_segments_kernel:
            segs.append(a[4].clone() if False else a[4])
        return real(kernel, grid, *a, **kw)
    cuda_indexer.launch = spy
    args, kwargs = make_indexer_inputs(q_lens=[1, 1], k_lens=[6000, 6000], sparse_count=512, return_value=True, seed=7)
    tie_keys(args, distinct, seed=1)
    idx, val = call(args, kwargs, 8)
    assert_indexer_close(idx, val, args, kwargs)
    cuda_indexer.launch = real
    c = segs[-1]
    print(distinct, tuple(c.shape), "above", c[:, 0].sum(1).tolist(), "at", c[:, 1].sum(1).tolist())
