"""Tuned launch configurations of the CUDA indexer, as data (no autotuning: it cannot run
inside a CUDA-graph capture, and a table keeps every call's kernel choice predictable).

Keyed by shape class; measured on an H200 with scripts/bench_indexer.py (see NOTES.md).
"""
from __future__ import annotations

import dataclasses
import math
import struct

from ... import metadata as md

# Metadata: decode (≤ DECODE_MAX_Q query tokens per sequence) puts all of a sequence's tokens in
# one query block, so each key tile is loaded once and dotted against every token; prefill cuts
# the query axis so that one long sequence still yields many units.
DECODE_MAX_Q = 16
PREFILL_Q_BLOCK = 64
K_BLOCK = 512  # keys per work unit: a multiple of every BLOCK_K below

# Workspace budget per launch (SPEC §1.6): longer problems run in chunks of rows. Sized so that a
# 4096-token prefill at 32K context (a typical max_num_batched_tokens) is one launch: on the H200
# it ran 5411 µs fp8 in 2 chunks against 8109 µs in 5 (small chunks leave SMs idle at each tail).
WORKSPACE_BYTES = 5 << 28  # 1.25 GiB

# SPEC §1.6 (no memory proportional to max_model_len when the lengths are short): an eager call
# whose logits rows, at the block table's capacity, would take more than this reads the longest
# key length back (one host sync) and sizes the rows by it. Smaller workspaces skip the sync;
# a CUDA graph keeps the capacity (a replay may bring any length the table holds).
SIZE_BY_LENGTHS_BYTES = 64 << 20

# SPEC §1.6 under CUDA-graph capture, where the lengths cannot be read: logits rows as wide as
# the block table are kept while rows × capacity × 4 B stays within GRAPH_LOGITS_BYTES; beyond
# it the keys are scored in windows of a fixed width (at least MIN_WINDOW_KEYS: a 4096-token
# prefill at 32K context stays one window), each window's top-k merged into the previous ones'.
# The logits rows (their 1/8 sample copy aside) then take at most max(GRAPH_LOGITS_BYTES,
# rows × MIN_WINDOW_KEYS × 4 B), whatever the table's capacity (max_model_len); phase 2's arrays
# follow the rows and k only (scratch_bytes). A window past every length still costs its launches:
# ~30 µs at 64 rows, ~150 µs at 512 (H200, session 9), so the budget lets vLLM's largest default
# capture (512 tokens) over DeepSeek-V3.2's 160K-key tables (320 MiB) stay one window: with
# 256 MiB, B=256, next_n=2, 16K keys took 468 µs in two windows against 318 in one.
GRAPH_LOGITS_BYTES = 512 << 20
MIN_WINDOW_KEYS = 32768

# Phase 1 also writes every SAMPLE_EVERY-th score of a row after the row's logits (indexer_logits),
# so that the threshold's sample is read as consecutive words: a strided gather of single scores
# cost a 32-byte sector each (B64 64K next_n=4: 23 µs when the logits had left L2).
SAMPLE_EVERY = 8

# ReLU as one saturating multiply (indexer_logits._relu_times). PTX `mul.sat.f32` clamps to
# [0, 1] and maps NaN to +0. An int8 dot x (|x| <= 128 · 128 · 128 = 2^21) read as float bits is
# the subnormal x · 2^-149 when x >= 0 and a NaN when x < 0, so sat(bits(x) · 2^127) is
# ReLU(x) · 2^-22 with no int→float convert; an fp8 dot (float32, |x| <= 448 · 448 · 128 <
# 2^25, never below 2^-18 unless 0) gives sat(x · 2^-25) = ReLU(x) · 2^-25. The head weights
# carry the inverse power of two, so each product is ReLU(x) · weight, the same real number,
# rounded once: the same bits (tests/test_cuda_configs.py), unless |weight · qscale| >= 2^103.
RELU_INPUT_SCALE = {"int8": 2.0 ** 127, "fp8": 2.0 ** -25}
RELU_WEIGHT_SCALE = {"int8": 2.0 ** 22, "fp8": 2.0 ** 25}


def relu_asm(kind: str) -> str:
    """The PTX of `_relu_times` for "int8" or "fp8" dots: one saturating multiply."""
    bits = struct.unpack("<I", struct.pack("<f", RELU_INPUT_SCALE[kind]))[0]
    return f"mul.sat.f32 $0, $1, 0f{bits:08X};"


@dataclasses.dataclass(frozen=True)
class LogitsConfig:
    block_k: int  # keys per tile
    programs_per_worker: int  # P: programs sharing one metadata worker's units
    num_warps: int
    num_stages: int
    fp8_as_f16: bool = True  # fp8 dots as exact fp16 ones: Hopper's fp8 MMA accumulates coarsely
    # query tokens stacked into one dot: decode, a unit's tokens if there are at most this many;
    # prefill, groups of this many (a power of two; 1 = the per-token loop)
    max_stack: int = 4
    tma: bool = False  # page-contiguous tiles by TMA descriptor
    scale_pairs: bool = False  # 2-byte key scales read as int32 pairs (asynchronous copies)
    max_registers: int = 0  # ptxas register cap per thread (Triton's maxnreg); 0: none
    # four or more stacked tokens as two halves, both dots issued before either epilogue (MMA of
    # one half under the other's epilogue): B64 64K next_n=4 486 -> 472 µs int8, 642 -> 594 fp8;
    # prefill 3884 -> 3511 int8, 5013 -> 4633 fp8. The Triton kernel not at two tokens (one
    # token's dot per half): B64 64K next_n=2 313 -> 349 µs int8 (H200, session 6); the Gluon
    # kernel at two int8 tokens too, its first token's epilogue under the second's dot (B64
    # 64K next_n=2 -1.2 %, next_n=4 -2.7 % from waiting for each half apart; H200, session 33)
    split_dot: bool = False
    # each tile's epilogue (with split_dot, its second half's) deferred past the next tile's
    # (first) dot, so an epilogue runs under a dot in flight. Pays where the MMA is long (fp8 as
    # fp16 runs at half the int8 rate): B64 64K next_n=4 fp8 600 -> 550 µs, next_n=2 367 -> 340,
    # prefill 4096@32K 4826 -> 4443; int8 within noise at next_n 2 and 4, prefill 3461 -> 3676;
    # one-token path slower (64 -> 126 registers int8: B64 209 -> 250 µs) (H200, session 7)
    rotate_epilogue: bool = False
    # > 0: phase 1 as the Gluon kernel (indexer_logits_gluon) with rings of this many key tiles,
    # where it applies (int8 or fp8 decode, next_n <= 4, page-contiguous tiles, TMA-describable
    # cache, scales and query; else the Triton kernel with the fields above): one CTA per SM, two
    # loader warps issue the copies, two consumer warpgroups store the scores from the
    # accumulators' registers. B64 64K logits, H200: next_n=1 152.0 -> 144.1 µs, 2 197.6 ->
    # 191.7-193.9, 4 343.8 -> 328.2 (bit-identical; session 11)
    gluon_stages: int = 0
    # > 0: the Gluon kernel only for calls of at most this many logits (rows x row width).
    # fp8 (1 << 17): where each SM has few key tiles its one CTA per SM wins (B1 64K next_n=1
    # 31.3 -> 25.7 µs, B8 4K 43.4 -> 37.6), with many the Triton kernel's four programs per SM
    # hide the fp16 dots better than two consumer warpgroups (B64 64K 211 -> 218-234 µs, n4
    # 508 -> 558; H200, session 12)
    gluon_max_keys: int = 0
    # > 0: fp8 one-token calls of at least this many logits run the Gluon kernel as two CTAs
    # per worker (four consumer warpgroups per SM, no prefetched A operand, 4-stage rings; see
    # indexer_logits_gluon), in place of the Triton kernel. Same-call A/B against the Triton
    # kernel (H200, session 25): B64 64K 187.7 -> 182.8 µs, B64 128K 345.2 -> 334.8; B32 64K
    # 105.3 -> 106.1, B64 16K 73.1 -> 73.3, B8 64K 40.2 -> 40.5, B64 4K 43.0 -> 44.6, B1 64K
    # (one CTA per worker there) 20.6 -> 22.0
    gluon_two_ctas_keys: int = 0
    # > 0: one-token calls of at least this many logits on the Gluon kernel without a
    # prefetched A operand (int8; fp8 at two CTAs per worker) share work: pairs done with their
    # share take parts of units from the back of others' (indexer_logits_gluon), so the pass
    # does not wait for its slowest SMs. Same-call A/B against the static split (H200, session
    # 26): B64 64K 177.8 -> 175.2 µs, B64 128K 324.8 -> 321.6, B32 64K 100.7 -> 100.1, B64 32K
    # 106.9 -> 106.0; smaller calls lost 0.6-2.4 µs (B64 16K, B64 4K, B8 64K, B1 64K), fp8 at
    # two CTAs 4.5 µs (its consumer spills 32 bytes at 104 registers) and 5-7 µs without the
    # spill (docs/probes/steal_fp8_qa_smem.patch): fp8 keeps the static split
    gluon_steal_keys: int = 0


@dataclasses.dataclass(frozen=True)
class TopkConfig:
    samples: int  # NS: scores sampled per row to pick the compaction threshold (at least)
    block_n: int  # elements per scan step
    num_warps: int  # warps of the merge kernel
    programs: int  # segment programs in all (rows × G) aimed at, so few rows still fill the GPU
    min_segment: int  # keys per segment program at least
    # segment programs resident at once (56 registers, 4 warps: 9 per SM on 132 SMs): a grid
    # past it runs a second wave of whole-segment programs after the first (256 rows of 64K:
    # 5 segments per row made 1280 programs; NOTES, session 24)
    resident_segments: int = 9 * 132
    threshold_bits: int = 20  # top bits of the threshold found by bisection
    threshold_step: int = 1  # bits decided per serial reduction: 1 or 2 (2: within noise)
    # rows sampled with room to spare (need <= half the samples, at least half the slots
    # sampled): t0 as the mean of one estimate per warp, bisected without block barriers
    threshold_per_warp: bool = True
    max_samples: int = 8192  # NS at most (the sample lives in registers of one program)
    sample_stride: int = 16  # longer rows get more samples, up to max_samples, to keep this stride
    pdl: bool = False  # phase 2 as programmatic dependent launches (Hopper) for every call
    # ... and for calls of at most this many rows whatever `pdl` says: each launch's start then
    # overlaps the previous kernel's tail. B1 64K next_n=1 25.1-25.7 -> 23.8-23.9 µs int8, 26.8
    # -> 24.7 fp8; at B64 no gain at next_n=1 and +4-8 µs at next_n 2 and 4, B8 +1-2 µs (H200,
    # session 12; earlier sessions measured it with the Triton logits kernel: NOTES)
    pdl_max_rows: int = 1
    # ... and for calls of at most this many rows, phase 2's kernels after the threshold (the
    # threshold itself a plain launch after phase 1, which keeps every SM to itself): B8 64K
    # next_n=1 42.5-43.1 -> 40.4-41.2 µs int8, B16 64K 62.7-64.9 -> 60.9-62.8, B8 64K next_n=2
    # 50.0-51.0 -> 48.3-50.1, at 32 rows 0.3-1 µs; at 64, 128 and 256 rows no gain, B64 4K
    # +0.6 (H200, session 21)
    phase2_pdl_max_rows: int = 32
    segment_warps: int = 4  # warps of the segment (compaction) kernel
    # warps of the threshold kernel (one program per row, its NS samples in registers, a serial
    # chain of block reductions), at least NS / 4096: 8 measured best (1 and 2 slower, 4 and 16
    # equal on the H200; NOTES)
    threshold_warps: int = 8
    # ordering of the candidates: up to this many rows by buckets (grouped by score range into
    # `buckets` groups, each ordered by comparing keys: latency-bound launches), beyond it by
    # torch.sort (one block radix sort per row). With place and rank as two launches the sort
    # won at 256 rows (B64 64K next_n=4 410-417 µs against 425-432; H200, session 21); with
    # them as one (place_rank_rows below) buckets win there too: B64 next_n=4 64K 391.0 ->
    # 388.4 µs int8, 476.6 -> 472.0 fp8, 16K 149.2 -> 147.0, 4K 87.8 -> 84.3, B256 16K
    # next_n=1 211.0 -> 205.3 (same-call A/B, 3 rounds, H200, session 31). Past 256 rows
    # (prefill, B128 next_n=4) the sort stays: unmeasured against buckets since session 21
    bucket_max_rows: int = 256
    buckets: int = 1024  # NB, a power of two
    bucket_block: int = 32  # candidates per program of the bucket rank kernel (one per thread)
    # group members each slot compares per step there: B64 64K rank 5.2 µs at 16, 6.9 at 8,
    # about 16's at 32 (H200, session 20)
    bucket_block_j: int = 16
    # slots past k the rank grid covers in its first pass (the placed groups end a few past k;
    # programs loop over what lies beyond): fewer programs that only find nothing to do
    rank_slots_past_k: int = 256
    candidate_block: int = 256  # compacted candidates per step (bucket counts and placement)
    # warps of the place and rank programs: 2 or 8 for place measured no faster than 4 at
    # B=1/8/64 (H200, session 12); rank: one warp of 32 slots, each reading its own group
    # (blocks of 64 on 2 warps, 128 on 4 within noise of it, session 20)
    place_warps: int = 4
    rank_warps: int = 1
    # calls of at least this many rows (and at most bucket_max_rows) place and rank in one
    # launch (topk/place_rank.py): J programs a row, each owning the groups that start in 1/J
    # of its positions, reading every candidate of the row; J = ceil(place_rank_programs /
    # rows), at most G (a row in the exact fallback lends each program a segment slot).
    # Same-call A/B against place then rank: B64 64K next_n=1 176.0 -> 173.6 µs int8, 183.0 ->
    # 180.3 fp8, B64 4K next_n=2 58.4 -> 54.4, B32 64K next_n=4 214.0 -> 208.7; 8 * 64
    # programs +1.9 to +2.6 % at 64 rows; with every bucket call in one launch B8 64K lost 13 %
    # and B1 64K 14 %: at few rows the two launches' many short programs win (H200, session 30)
    place_rank_rows: int = 64
    place_rank_programs: int = 4 * 64
    # and at least this many a row, at most half the row's G segments: at 256 rows (B=64,
    # next_n=4) 2 a row against 1, same-call A/B (H200, session 39): 64K int8 343.6 -> 339.1
    # µs, fp8 460.8 -> 457.0, 16K (G = 4) 137.6 -> 135.1; but 4K (G = 2) 80.7 -> 85.0, where
    # a second program re-reads every candidate of a short row for little ranking work (with
    # the floor at G // 2, 4K kept 1 a row: 81.6 -> 80.3, 128K 620.7 -> 619.0, 64K 342.8 -> 340.3)
    place_rank_row_programs: int = 2
    # slots a place-rank program ranks a step: 512 and 128 equal at 64 rows, 512 -2.5 % at
    # 128 rows of 4K keys (session 30)
    place_rank_block: int = 512
    place_rank_tile: int = 1024  # candidates it reads a step, from all segments at once
    # candidate slots per row at least (CAP, a power of two). The sampled threshold aims at
    # sqrt(k·CAP) candidates; its count must land in [k, CAP]. With slots of only 2·k, a long
    # row's sample holds too few scores above the threshold for small k: simulated (i.i.d.
    # scores, 64K keys, stride 16) 20 % of rows missed at k=64, 8.6 % at 256, 1.2 % at 512 and
    # took the exact fallback; with 4096 slots none in 1000 trials for any k <= 2048 (NOTES)
    min_slots: int = 4096

    def __post_init__(self):
        # the rank grid is CAP / bucket_block programs and CAP >= 512 (candidate_slots)
        for name in ("buckets", "bucket_block", "bucket_block_j", "candidate_block", "min_slots",
                     "place_rank_block", "place_rank_tile"):
            v = getattr(self, name)
            if v < 1 or v & (v - 1):
                raise ValueError(f"TopkConfig.{name}={v}: must be a power of two")
        for name in ("bucket_block", "candidate_block"):
            if getattr(self, name) > 512:
                raise ValueError(f"TopkConfig.{name}={getattr(self, name)}: must be at most 512, "
                                 "the fewest candidate slots a row has")


# (dtype class, kernel path) -> config; paths: "single" (decode, one token per sequence),
# "pair" (decode, two tokens stacked), "stacked" (decode, three to max_stack tokens stacked),
# "prefill" (a query block: tokens in groups of max_stack)
LOGITS = {
    # 64 registers: 8 programs per SM, one wave (the sample's stores took it to 72 uncapped;
    # with rotate_epilogue, never used here, the cap spills)
    ("int8", "single"): LogitsConfig(block_k=64, programs_per_worker=8, num_warps=4, num_stages=3,
                                     max_registers=64, gluon_stages=5, gluon_steal_keys=1 << 21),
    # two int8 tokens (142 registers, no split) fit 3 programs per SM: B64 64K next_n=2 305 ->
    # 281 µs; fp8 (238 registers) 346 -> 412 with 3, so it keeps the stacked config (H200,
    # session 8); split_dot here splits the Gluon kernel's pair only (session 33)
    ("int8", "pair"): LogitsConfig(block_k=64, programs_per_worker=3, num_warps=4, num_stages=5,
                                   tma=True, gluon_stages=5, split_dot=True),
    ("int8", "stacked"): LogitsConfig(block_k=64, programs_per_worker=2, num_warps=4, num_stages=5,
                                      tma=True, split_dot=True, gluon_stages=5),
    ("int8", "prefill"): LogitsConfig(block_k=64, programs_per_worker=2, num_warps=4, num_stages=3,
                                      tma=True, max_stack=4, split_dot=True),
    # fp8 one-token: 116 registers leave 4 programs per SM, whose 3-stage pipelines left the
    # tiles' loads exposed (ncu: 31 % of stall samples on the tile wait, DRAM 47 %); 5 stages of
    # TMA copies: B64 64K 274 -> 221 µs, B8 59.5 -> 53.2 (H200, session 7)
    ("fp8", "single"): LogitsConfig(block_k=64, programs_per_worker=4, num_warps=4, num_stages=5,
                                    tma=True, gluon_stages=5, gluon_max_keys=1 << 17,
                                    gluon_two_ctas_keys=1 << 22),
    ("fp8", "stacked"): LogitsConfig(block_k=64, programs_per_worker=2, num_warps=4, num_stages=5,
                                     tma=True, split_dot=True, rotate_epilogue=True,
                                     gluon_stages=5, gluon_max_keys=1 << 17),
    ("fp8", "prefill"): LogitsConfig(block_k=64, programs_per_worker=2, num_warps=4, num_stages=3,
                                     tma=True, max_stack=4, split_dot=True, rotate_epilogue=True),
}
LOGITS[("fp8", "pair")] = LOGITS[("fp8", "stacked")]

TOPK = TopkConfig(samples=4096, block_n=1024, num_warps=8, programs=8 * 132,
                  min_segment=2048)


def candidate_slots(k: int, tc: TopkConfig | None = None) -> int:
    """CAP: candidate slots per row in phase 2, a power of two: 2·K_PAD (K_PAD >= k) and at least
    tc.min_slots (4096 by default: every k <= 2048 gets the slots of k = 2048)."""
    tc = tc or TOPK
    return max(tc.min_slots, 2 * max(256, 1 << (k - 1).bit_length()))


def target_candidates(k: int, cap: int) -> int:
    """Candidates the sampled threshold aims at: the geometric middle of [k, CAP], so that the
    sample's noise (relative, ~1/sqrt(samples above the threshold)) misses either end alike."""
    return math.isqrt(k * cap)


def row_width(cap: int, longest: int) -> int:
    """Logits row width for rows of at most `longest` compressed keys in a block table of `cap`:
    rounded up to K_BLOCK (few distinct widths), never above cap."""
    return min(cap, max(K_BLOCK, -(-longest // K_BLOCK) * K_BLOCK))


def window_keys(rows: int, cap: int, block_size: int, budget: int | None = None) -> int:
    """Keys per window of a call captured in a CUDA graph whose block table holds `cap` keys:
    cap itself while rows × cap fp32 logits fit `budget` (GRAPH_LOGITS_BYTES), else the widest
    whole number of K_BLOCKs and pages within it, at least MIN_WINDOW_KEYS (rounded likewise)."""
    budget = GRAPH_LOGITS_BYTES if budget is None else budget
    if rows * cap * 4 <= budget:
        return cap
    step = K_BLOCK * block_size // math.gcd(K_BLOCK, block_size)  # windows start on both
    keys = max(budget // (rows * 4), MIN_WINDOW_KEYS)
    return min(cap, max(step, keys // step * step))


def sample_columns(width: int) -> int:
    """Columns after a logits row of `width` keys holding its every SAMPLE_EVERY-th score
    (rounded to 16, so that rows stay 64-byte aligned)."""
    sampled = -(-width // SAMPLE_EVERY)
    return -(-sampled // 16) * 16


def threshold_samples(cap: int, tc: TopkConfig) -> int:
    """NS for rows of up to `cap` keys: a power of two from tc.samples to tc.max_samples, so that
    every sample_stride-th score is sampled. The threshold is the score reached by
    target_candidates/stride samples; with fewer of them its count misses [k, CAP] more often and
    the row takes the exact fallback (~500 µs on the H200). A stride of SAMPLE_EVERY or more is
    rounded up to a multiple of it (the threshold then reads phase 1's copy): strides 9–16 all
    become 16, the stride of a 64K-key row at 4096 samples. Simulated (i.i.d. scores,
    k 2048, CAP 4096, a 1.5·k target; NOTES): stride 32 (4096 samples) misses 0.08 % of rows,
    stride 16 none in 4000 trials."""
    want = 1 << max(0, (-(-cap // tc.sample_stride) - 1).bit_length())
    return max(tc.samples, min(tc.max_samples, want))


def segments(rows: int, cap: int, tc: TopkConfig) -> int:
    """G: segment programs per row, so that rows·G is about tc.programs
    (rows·G <= programs + rows) but no more than tc.resident_segments where a row has more
    than one, then only as many as a full row's segments fill: segments are
    whole scan steps (topk.segments._segment_bounds), so at 64 rows of 64K keys 17 programs per
    row cut 16 segments of 4096 and the 17th found nothing (an empty program per row in the
    segment and place grids; cheap: removing them changed no timing, H200, session 22)."""
    g = -(-tc.programs // rows)
    if rows * g > tc.resident_segments:  # one wave of longer segments, not a second wave
        g = tc.resident_segments // rows
    g = max(1, min(g, -(-cap // tc.min_segment)))
    return -(-cap // segment_keys(cap, g, tc))


def segment_keys(n: int, g: int, tc: TopkConfig) -> int:
    """Keys per segment of a row of n keys cut into g: whole scan steps of tc.block_n (the
    host's copy of topk.segments._segment_bounds' length)."""
    return -(-(-(-n // g)) // tc.block_n) * tc.block_n


def rank_programs(k: int, cap: int, tc: TopkConfig) -> int:
    """Programs per row of the bucket rank kernel: blocks of tc.bucket_block slots covering k
    and tc.rank_slots_past_k more, at most the cap's."""
    block = tc.bucket_block
    return min(cap // block, -(-(k + tc.rank_slots_past_k) // block))


def place_programs(g: int, k: int, cap: int, tc: TopkConfig) -> int:
    """P: place programs per segment, so that each takes about one chunk of
    tc.candidate_block of the candidates the threshold aims at (a row of G = 2 long segments
    placed ~1450 candidates per program in six serial chunks: B=1 4K place 7.5 µs, B=64 4K
    10.3); at most cap / candidate_block (a program's first chunk lies inside its slot)."""
    per_segment = -(-target_candidates(k, cap) // g)
    return max(1, min(cap // tc.candidate_block, -(-per_segment // tc.candidate_block)))


def place_rank_programs(rows: int, g: int, tc: TopkConfig) -> int:
    """J: place-rank programs per row, so that rows·J is about tc.place_rank_programs, and at
    least tc.place_rank_row_programs where that is at most half of G; at most G, the segment
    slots a row in the exact fallback lends its programs, and at least 1."""
    wanted = max(min(tc.place_rank_row_programs, g // 2), -(-tc.place_rank_programs // rows))
    return max(1, min(g, wanted))


def scratch_bytes(rows: int, cap: int, k: int, tc: TopkConfig | None = None,
                  key_windows: bool = False) -> int:
    """Upper bound of the device memory one launch of both phases allocates for `rows` rows of
    `cap` keys: fp32 logits and their sample, an fp16 copy of the query (fp8 prefill), the
    segment slots (int64; rows·G <= programs + rows, which keeps the bound monotone in rows),
    the ordering's arrays (buckets: bucket counts and cursors, the grouped int64 candidates and
    their groups; sort: the merged (mono, index) arrays and the sort's int64 positions, counted
    with a separate values array the in-place sort no longer needs) and small
    per-row counters; with key_windows (keys in windows of `cap`) also the windows' three
    [rows, k] (index, score) top-k buffers."""
    tc = tc or TOPK
    slots = candidate_slots(k, tc)
    order = max(slots * 12 + tc.buckets * 8, slots * 8 + slots * 12)
    # threshold record (4 int32), total, ties filled, and each row's share of the segment
    # counts (rows·G <= programs + rows: the programs' share is in the fixed term below)
    counters = 16 + 4 + 4 + 4
    per_row = (cap + sample_columns(cap)) * 4 + 64 * 128 * 2 + slots * 8 + order + counters
    if key_windows:
        per_row += 3 * k * 8
    return rows * per_row + tc.programs * (slots * 8 + 4)


def rows_per_chunk(cap: int, k: int, budget: int, tc: TopkConfig | None = None,
                   key_windows: bool = False) -> int:
    """The most rows one launch may take so that scratch_bytes stays within `budget` (SPEC §1.6);
    at least 1."""
    tc = tc or TOPK
    fixed = scratch_bytes(0, cap, k, tc, key_windows)
    return max(1, (budget - fixed) // (scratch_bytes(1, cap, k, tc, key_windows) - fixed))


def split_params(workers: int, max_seqlen_q: int) -> md.SplitParams:
    q_block = 0 if max_seqlen_q <= DECODE_MAX_Q else PREFILL_Q_BLOCK
    return md.SplitParams(md.BACKEND_CUDA, num_workers=workers, q_block=q_block, k_block=K_BLOCK)


def logits_path(is_int8: bool, unit_tokens: int) -> tuple[str, LogitsConfig]:
    """Phase-1 path and its configuration for a call whose work units hold up to `unit_tokens`
    query tokens: "single" (one), "pair" (two), "stacked" (decode, up to the stacked config's
    max_stack), "prefill" (query blocks in groups of tokens: prefill, and decode beyond
    max_stack). "pair" and "stacked" are the same kernel path with their own launch configs."""
    dtype = "int8" if is_int8 else "fp8"
    if unit_tokens <= 1:
        path = "single"
    elif unit_tokens == 2 and LOGITS[(dtype, "stacked")].max_stack >= 2:
        path = "pair"
    elif unit_tokens <= min(DECODE_MAX_Q, LOGITS[(dtype, "stacked")].max_stack):
        path = "stacked"
    else:
        path = "prefill"
    return path, LOGITS[(dtype, path)]


def topk_config() -> TopkConfig:
    return TOPK
