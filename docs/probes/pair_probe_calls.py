"""The run loop the per-pair probes share (pair_ends_probe.py, pair_speed_probe.py,
steal_ends_probe.py): one-token calls of `batch` rows of `ctx` keys, each writing the patched
kernel's probe buffer (indexer_logits_gluon.PROBE: int64, four words a pair)."""
import torch
from custom_ops.testing import make_indexer_inputs
from custom_ops.backends.cuda import indexer_logits_gluon as g, plans


def probe_calls(batch: int, ctx: int, qk_dtype, calls: int = 20) -> list:
    """Each of `calls` eager calls' probe records as a numpy array [slots, 4] (-1 where no pair
    wrote), after three warm-up calls."""
    args, kwargs = make_indexer_inputs(q_lens=[1] * batch, k_lens=[ctx] * batch,
                                       sparse_count=2048, block_size=64, device="cuda", seed=1,
                                       qk_dtype=qk_dtype)
    op = torch.ops.custom.npu_vllm_quant_lightning_indexer
    for _ in range(3):
        op(*args, **kwargs)
    torch.cuda.synchronize()
    out = []
    for _ in range(calls):
        g.PROBE = torch.full((4 * 1024,), -1, dtype=torch.int64, device="cuda")
        plans.clear()  # a replayed plan would pass the recorded arguments, not PROBE
        op(*args, **kwargs)
        torch.cuda.synchronize()
        out.append(g.PROBE.view(-1, 4).cpu().numpy().copy())
    g.PROBE = None
    return out
