"""Probe (session 24): are the SMs that end the logits pass late the same in every call?

The static split gives every worker (one CTA per SM) the same number of key tiles, yet at
B=64 64K next_n=1 the workers end 123-148 µs after the start (session 16): the last ~10 µs of the
pass wait for the slowest. If the slow SMs were the same from call to call, a split weighted by
each SM's measured speed could recover part of that; if not, only dynamic balancing could (and
that lost, sessions 16 and 22). Per call this records each consumer's start and end
(%globaltimer) and its %smid, over input sets that take turns (different pages per worker), then
compares the calls by SM and by worker index, and estimates what a split weighted by the other
half of the calls' per-SM speeds would have ended at.

    git apply docs/probes/sm_ends.patch
    PYTHONPATH=$PWD:$PWD/scripts python3 docs/probes/sm_ends_probe.py
"""
from __future__ import annotations

import torch

import bench_indexer as b
from custom_ops.backends.cuda import indexer_logits_gluon as G, plans

CALLS = 16
SETS = 4


def corr(x: torch.Tensor, y: torch.Tensor) -> float:
    x = x - x.mean()
    y = y - y.mean()
    return float((x * y).sum() / (x.norm() * y.norm()))


def main():
    plans.enabled = False
    w = torch.cuda.get_device_properties(0).multi_processor_count
    for batch, ctx, n in [(64, 65536, 1), (64, 65536, 4), (64, 16384, 1)]:
        sets = []
        for s in range(SETS):
            args, kwargs = b.make_case(batch, ctx, n, "int8", seed=s)
            sets.append((args, b.with_metadata(args, kwargs, n)))
        probe = torch.zeros(w * 2 * 3, dtype=torch.int64, device="cuda")
        G.PROBE = probe
        for args, kw in sets:
            b.OP(*args, **kw)
        torch.cuda.synchronize()
        by_sm, by_worker, same_map = [], [], 0
        first_map = None
        for c in range(CALLS):
            args, kw = sets[c % SETS]
            probe.zero_()
            b.OP(*args, **kw)
            torch.cuda.synchronize()
            r = probe.view(w, 2, 3).cpu()
            t0 = r[:, :, 0].min()
            end = (r[:, :, 1].max(dim=1).values - t0).double() / 1000  # µs, per worker
            smid = r[:, 0, 2]
            assert torch.equal(smid, r[:, 1, 2]), "a worker's two consumers on two SMs"
            assert len(set(smid.tolist())) == w, "two workers on one SM"
            if first_map is None:
                first_map = smid.clone()
            same_map += int(torch.equal(smid, first_map))
            e_sm = torch.empty(w, dtype=torch.float64)
            e_sm[smid] = end
            by_sm.append(e_sm)
            by_worker.append(end)
        E = torch.stack(by_sm)  # [calls, smid]
        Wk = torch.stack(by_worker)  # [calls, worker]
        q = torch.quantile(E, torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=torch.float64), dim=1)
        print(f"B{batch} {ctx // 1024}K n{n}: {CALLS} calls over {SETS} input sets; worker->SM "
              f"map the same as the first call's in {same_map}; worker ends µs "
              f"min/p10/median/p90/max (median over calls): "
              + " ".join(f"{v:.1f}" for v in q.median(dim=1).values.tolist()))
        pairs_sm = [corr(E[i], E[j]) for i in range(CALLS) for j in range(i + 1, CALLS)]
        pairs_wk = [corr(Wk[i], Wk[j]) for i in range(CALLS) for j in range(i + 1, CALLS)]
        same_set = [corr(Wk[i], Wk[j]) for i in range(CALLS) for j in range(i + 1, CALLS)
                    if i % SETS == j % SETS]
        print(f"    correlation of the ends between calls: by SM {sum(pairs_sm) / len(pairs_sm):.2f}, "
              f"by worker {sum(pairs_wk) / len(pairs_wk):.2f}, by worker with the same inputs "
              f"{sum(same_set) / len(same_set):.2f}")
        half = CALLS // 2
        speed = 1.0 / E[:half].mean(dim=0)  # per SM, from the first half
        print(f"    split-half correlation of the per-SM mean end: "
              f"{corr(E[:half].mean(0), E[half:].mean(0)):.2f}")
        order = E.mean(0).argsort()
        print("    fastest SMs (mean end): " + ", ".join(
            f"{int(s)}:{E[:, s].mean():.1f}" for s in order[:8]))
        print("    slowest SMs (mean end): " + ", ".join(
            f"{int(s)}:{E[:, s].mean():.1f}" for s in order[-8:]))
        # a split weighted by the first half's speeds, applied to the second half's calls
        # (time taken as proportional to work): the last worker's end, against the even split's
        share = speed / speed.mean()
        weighted = (E[half:] * share).max(dim=1).values
        even = E[half:].max(dim=1).values
        print(f"    second half: last end even split {even.mean():.1f} µs, weighted by the first "
              f"half's per-SM speed {weighted.mean():.1f} µs (ideal balance "
              f"{(1.0 / (1.0 / E[half:]).mean(dim=1)).mean():.1f})")
        del sets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
