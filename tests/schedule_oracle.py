"""A plain-Python oracle of the metadata schedule, shared by the CPU/CUDA and NPU split tests."""


def expected_units(q_lens, k_lens, q_block, k_block, layout_query, sparse_mode, cmp, max_s1):
    """Plain-Python oracle: every (b, qb, kb) that has visible work, in schedule order."""
    units = []
    for b, (s1, s2) in enumerate(zip(q_lens, k_lens)):
        qbs = [(0, s1)] if q_block == 0 else [(i * q_block, min((i + 1) * q_block, s1))
                                               for i in range(-(-max_s1 // q_block))]
        for qb, (lo, hi) in enumerate(qbs):
            if hi <= lo:
                continue
            last = hi - 1
            vis = s2 // cmp if sparse_mode == 0 else min(s2 // cmp, (s2 - s1 + last + 1) // cmp)
            units += [(b, qb, kb) for kb in range(-(-max(vis, 0) // k_block))]
    return units


def walk(sched, q_lens, k_lens, layout_query, sparse_mode, cmp, max_s1):
    """Expand each worker's (b, qb, kb, count) record into its units, as a kernel walks them."""
    order = expected_units(q_lens, k_lens, sched.q_block, sched.k_block, layout_query,
                           sparse_mode, cmp, max_s1)
    pos = {u: i for i, u in enumerate(order)}
    out = []
    for b, qb, kb, count in sched.workers:
        if count:
            start = pos[(b, qb, kb)]
            out.append(order[start:start + count])
        else:
            out.append([])
    return order, out
