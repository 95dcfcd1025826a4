"""The indexer's work split: the package's versioned int32[1024] metadata format (SPEC §2).

Layout (all int32):

    [0]  FORMAT_ID                 0x4C490001 ("LI", version 1)
    [1]  backend id                BACKEND_CPU / BACKEND_CUDA / BACKEND_NPU
    [2]  W    number of workers    (SMs, AI cores, CPU threads), 1..MAX_WORKERS
    [3]  q_block                   query tokens per work unit (0: all query tokens of a batch)
    [4]  k_block                   compressed keys per work unit
    [5]  B    batch size
    [6]  U    total work units
    [7]  QB   query blocks per batch (static: ceil(max_seqlen_q / q_block), 1 when q_block is 0)
    [8]  sparse_count   [9] sparse_mode   [10] cmp_ratio   [11] layout_query (0 BSND, 1 TND)
    [12..15] reserved, 0
    [16 + 4*w .. 16 + 4*w + 3]     worker w: first unit as (b, qb, kb), then its unit count

A work unit is (batch b, query block qb, key block kb). Units are enumerated batch-major, then
query block, then key block; worker w owns a contiguous run of that enumeration, so one long
sequence spreads over every worker. Key blocks of a query block stop at its last visible key
(SPEC §1.3), so masked work is never scheduled.

The split is written with torch ops on the lengths' device: no `.item()`, no host sync, static
shapes only (they depend on B and max_seqlen_q, never on length values), so it is capturable in a
CUDA graph and traceable by torch.compile. The NPU computes the same format with the portable C++
of op_host/common/ (its own cost model for A2/A3 AI cores).
"""
from __future__ import annotations

import dataclasses

import torch

METADATA_LEN = 1024
FORMAT_ID = 0x4C490001
BACKEND_CPU, BACKEND_CUDA, BACKEND_NPU = 1, 2, 3
BACKEND_NAMES = {BACKEND_CPU: "cpu", BACKEND_CUDA: "cuda", BACKEND_NPU: "npu"}
HEADER_LEN = 16
RECORD_LEN = 4
MAX_WORKERS = (METADATA_LEN - HEADER_LEN) // RECORD_LEN  # 252
LAYOUT_CODES = {"BSND": 0, "TND": 1}

# Header field positions.
F_FORMAT, F_BACKEND, F_WORKERS, F_QBLOCK, F_KBLOCK, F_BATCH, F_UNITS, F_QBLOCKS = range(8)
F_SPARSE_COUNT, F_SPARSE_MODE, F_CMP_RATIO, F_LAYOUT = range(8, 12)


@dataclasses.dataclass(frozen=True)
class SplitParams:
    """What a backend chooses: how many workers, and the size of one work unit."""

    backend: int
    num_workers: int
    q_block: int  # 0: one query block per batch
    k_block: int


def query_lengths(actual_seq_lengths_query, batch, layout_query, default_s1):
    """Per-batch query token counts S1_b as an int64 tensor [B] (SPEC §1.2), without a sync."""
    a = actual_seq_lengths_query
    if layout_query == "TND":
        a = a.to(torch.int64)
        if a.shape[0] == batch + 1:
            return a[1:] - a[:-1]
        return a - torch.cat([a.new_zeros(1), a[:-1]])
    if a is None:
        return torch.full((batch,), default_s1, dtype=torch.int64)
    return a.to(torch.int64)


def visible_keys(s_idx, s1, s2, cmp_ratio, sparse_mode):
    """Number L of compressed keys that query token s_idx (of s1 in its batch) sees (SPEC §1.3).

    All arguments broadcast; returns int64, clamped at 0.
    """
    s2c = torch.div(s2, cmp_ratio, rounding_mode="floor")
    if sparse_mode == 0:
        return torch.clamp(s2c + 0 * s_idx, min=0)
    causal = torch.div(s2 - s1 + s_idx + 1, cmp_ratio, rounding_mode="floor")
    return torch.clamp(torch.minimum(s2c, causal), min=0)


def compute(
    params: SplitParams,
    actual_seq_lengths_query,
    actual_seq_lengths_key,
    *,
    batch: int,
    max_seqlen_q: int,
    layout_query: str,
    sparse_count: int,
    sparse_mode: int,
    cmp_ratio: int,
    device,
) -> torch.Tensor:
    """Build the int32 [METADATA_LEN] schedule on `device` (see the module docstring)."""
    s2 = actual_seq_lengths_key.to(device=device, dtype=torch.int64)
    asq = None if actual_seq_lengths_query is None else actual_seq_lengths_query.to(device)
    s1 = query_lengths(asq, batch, layout_query, max_seqlen_q).to(device)
    q_block = params.q_block if (params.q_block > 0 and max_seqlen_q > 0) else 0
    qb_count = -(-max_seqlen_q // q_block) if q_block else 1

    units = _row_units(s1, s2, q_block, qb_count, params.k_block, cmp_ratio, sparse_mode)  # [R]
    cum = torch.cumsum(units, 0)
    total = cum[-1:] if cum.numel() else units.new_zeros(1)

    w = torch.arange(params.num_workers + 1, device=device, dtype=torch.int64)
    starts = torch.div(w * total, params.num_workers, rounding_mode="floor")  # [W + 1]
    first = starts[:-1]
    row = torch.searchsorted(cum, first, right=True)
    rows = units.numel()
    row_c = torch.clamp(row, max=max(rows - 1, 0))
    kb = first - (cum[row_c] - units[row_c]) if rows else torch.zeros_like(first)
    empty = row >= rows
    b = torch.where(empty, batch, torch.div(row_c, qb_count, rounding_mode="floor"))
    qbi = torch.where(empty, 0, row_c % qb_count)
    kb = torch.where(empty, 0, kb)
    records = torch.stack([b, qbi, kb, starts[1:] - first], dim=1).reshape(-1)

    header = torch.tensor(
        [FORMAT_ID, params.backend, params.num_workers, q_block, params.k_block, batch, 0,
         qb_count, sparse_count, sparse_mode, cmp_ratio, LAYOUT_CODES[layout_query], 0, 0, 0, 0],
        dtype=torch.int64, device=device)
    header = torch.cat([header[:F_UNITS], total, header[F_UNITS + 1:]])
    pad = torch.zeros(METADATA_LEN - HEADER_LEN - records.numel(), dtype=torch.int64, device=device)
    return torch.cat([header, records, pad]).to(torch.int32)


def _row_units(s1, s2, q_block, qb_count, k_block, cmp_ratio, sparse_mode):
    """Units of every row (b, qb), batch-major, int64 [B * qb_count]: a row's key blocks end at
    the last visible key of its last query token."""
    qb = torch.arange(qb_count, device=s1.device, dtype=torch.int64)
    if q_block:
        last_s = torch.minimum((qb[None, :] + 1) * q_block, s1[:, None]) - 1  # [B, QB]
    else:
        last_s = (s1 - 1)[:, None]
    row_live = last_s >= qb[None, :] * max(q_block, 1) if q_block else last_s >= 0
    keys = visible_keys(last_s, s1[:, None], s2[:, None], cmp_ratio, sparse_mode)
    return torch.where(row_live, -(-keys // k_block), 0).reshape(-1)


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A decoded metadata tensor (host side: tests, the CPU backend, error messages)."""

    backend: int
    num_workers: int
    q_block: int
    k_block: int
    batch: int
    total_units: int
    q_blocks: int
    sparse_count: int
    sparse_mode: int
    cmp_ratio: int
    layout_query: int
    workers: tuple  # ((b, qb, kb, count), ...)


def decode(metadata: torch.Tensor) -> Schedule:
    """Parse and check a metadata tensor; raise ValueError naming what is wrong."""
    if metadata.dtype != torch.int32 or metadata.shape != (METADATA_LEN,):
        raise ValueError(
            f"metadata must be an int32 tensor of shape [{METADATA_LEN}], "
            f"got {metadata.dtype} {list(metadata.shape)}")
    m = metadata.cpu().tolist()
    if m[F_FORMAT] != FORMAT_ID:
        raise ValueError(
            f"metadata format id must be {FORMAT_ID:#x} (custom_ops schedule v1), got {m[0] & 0xffffffff:#x}")
    if m[F_BACKEND] not in BACKEND_NAMES:
        raise ValueError(f"metadata backend id must be one of {sorted(BACKEND_NAMES)}, got {m[1]}")
    w = m[F_WORKERS]
    if not 1 <= w <= MAX_WORKERS:
        raise ValueError(f"metadata worker count must be in [1, {MAX_WORKERS}], got {w}")
    recs = tuple(tuple(m[HEADER_LEN + RECORD_LEN * i: HEADER_LEN + RECORD_LEN * (i + 1)])
                 for i in range(w))
    return Schedule(m[F_BACKEND], w, m[F_QBLOCK], m[F_KBLOCK], m[F_BATCH], m[F_UNITS],
                    m[F_QBLOCKS], m[F_SPARSE_COUNT], m[F_SPARSE_MODE], m[F_CMP_RATIO],
                    m[F_LAYOUT], recs)


def check_matches(sched: Schedule, *, backend: int, batch: int, sparse_mode: int, cmp_ratio: int,
                  layout_query: str, num_workers: int | None = None) -> None:
    """Raise ValueError unless `sched` was computed for this backend and this call's attributes."""
    name = BACKEND_NAMES[backend]
    if sched.backend != backend:
        raise ValueError(f"metadata was computed for backend '{BACKEND_NAMES[sched.backend]}', "
                         f"but this call runs on the {name} backend: compute it with device='{name}'")
    fields = [] if num_workers is None else [("worker count", sched.num_workers, num_workers)]
    fields += [("batch size", sched.batch, batch), ("sparse_mode", sched.sparse_mode, sparse_mode),
               ("cmp_ratio", sched.cmp_ratio, cmp_ratio),
               ("layout_query", sched.layout_query, LAYOUT_CODES[layout_query])]
    for field, got, want in fields:
        if got != want:
            raise ValueError(f"metadata was computed for {field} {got}, but this call has {want}")


def check_covers(sched: Schedule, actual_seq_lengths_query, actual_seq_lengths_key, *,
                 layout_query: str, max_s1: int) -> None:
    """Raise ValueError unless the records of `sched` split exactly this call's units: walked in
    worker order, the non-empty runs start at unit 0, each where the previous one ended and
    inside a row that has units, and end at the last unit, and no query block the header leaves
    out holds units. Metadata computed for other lengths (a stale step's) would leave keys
    unscored or name rows the call does not have. Reads the lengths (a host sync). Query blocks
    past max_s1 tokens have no units and are not enumerated."""
    if sched.k_block <= 0 or sched.q_block < 0 or sched.q_blocks < 1:
        raise ValueError(f"metadata must have k_block > 0, q_block >= 0 and at least one query "
                         f"block, got k_block {sched.k_block}, q_block {sched.q_block}, "
                         f"{sched.q_blocks} query blocks")
    s1 = query_lengths(actual_seq_lengths_query, sched.batch, layout_query, max_s1).cpu()
    s2 = actual_seq_lengths_key.cpu().to(torch.int64)
    blocks = -(-max_s1 // sched.q_block) if sched.q_block > 0 else 1  # the call's query blocks
    per_row = _row_units(s1, s2, sched.q_block, blocks, sched.k_block, sched.cmp_ratio,
                         sched.sparse_mode).reshape(sched.batch, blocks)
    declared = min(sched.q_blocks, blocks)
    if per_row[:, declared:].any():
        b = int(per_row[:, declared:].any(1).nonzero()[0])
        raise ValueError(
            f"metadata covers {declared} query blocks of {sched.q_block} tokens per sequence, "
            f"but sequence {b} of this call has {int(s1[b])}: compute the metadata with this "
            "call's max_seqlen_q")
    units = per_row.reshape(-1).tolist()
    starts = [0] + torch.cumsum(per_row.reshape(-1), 0).tolist()  # row r's first unit
    at = 0  # where the next non-empty run must start
    for w, (b, qb, kb, count) in enumerate(sched.workers):
        if count == 0:
            continue
        row = b * blocks + qb
        if (count < 0 or not 0 <= b < sched.batch or not 0 <= qb < declared
                or not 0 <= kb < units[row] or starts[row] + kb != at):
            raise ValueError(
                f"metadata does not split this call's work: worker {w}'s run (batch {b}, query "
                f"block {qb}, key block {kb}, {count} units) does not start at unit {at} of "
                f"{starts[-1]}; compute the metadata from this call's lengths")
        at += count
    if at != starts[-1]:
        raise ValueError(f"metadata does not split this call's work: its runs cover {at} units, "
                         f"this call has {starts[-1]}; compute the metadata from this call's "
                         "lengths")
