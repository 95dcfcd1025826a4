"""The CUDA backend's workspace arithmetic (SPEC §1.6), checked without a GPU: every launch's
scratch (logits and phase-2 candidate arrays) stays within the budget, the chunk is the largest
that does, and the benchmark's bar cases run unchunked."""
import dataclasses
import math

import pytest
import torch

from custom_ops.backends.cuda import configs

BUDGET = configs.WORKSPACE_BYTES


@pytest.mark.parametrize("k", [1, 255, 256, 2048])
@pytest.mark.parametrize("cap", [16, 2048, 5000, 65536, 131072, 249856, 1 << 20, 1 << 23])
def test_chunk_is_the_largest_within_budget(cap, k):
    rows = configs.rows_per_chunk(cap, k, BUDGET)
    assert rows >= 1
    if rows > 1:
        assert configs.scratch_bytes(rows, cap, k) <= BUDGET
    assert configs.scratch_bytes(rows + 1, cap, k) > BUDGET


@pytest.mark.parametrize("cap", [2048, 65536, 249856])
def test_scratch_bound_is_monotone_and_covers_every_launch(cap):
    """Smaller launches (a last chunk, an unchunked call) never exceed what a full chunk may use,
    and the bound covers what either top-k order allocates (indexer._run: logits and their
    sample, threshold record, rows × G segment slots and counts, then the bucket order's
    counters, grouped keys, group words and totals or the sort order's merged arrays, sort
    outputs and totals)."""
    k = 2048
    slots = configs.candidate_slots(k)
    tc = configs.TOPK
    sizes = [configs.scratch_bytes(r, cap, k) for r in range(1, 700)]
    assert sizes == sorted(sizes)
    for rows in range(1, 700):
        g = configs.segments(rows, cap, tc)
        logits = (cap + configs.sample_columns(cap)) * 4
        common = rows * (logits + 16) + rows * g * (slots * 8 + 4)
        buckets = common + rows * (2 * tc.buckets * 4 + slots * 8 + slots * 4 + 4)
        sort = common + rows * (slots * 8 + slots * 12 + 4)
        assert max(buckets, sort) <= configs.scratch_bytes(rows, cap, k)


@pytest.mark.parametrize("key_windows", [False, True])
def test_key_windows_count_their_top_k_buffers(key_windows):
    """A graph over a wide table (keys in windows) also holds three [rows, k] pairs of index and
    score buffers; its chunks leave room for them."""
    width, k = configs.window_keys(4096, 1 << 20, 64), 2048
    rows = configs.rows_per_chunk(width, k, BUDGET, key_windows=key_windows)
    windows = 3 * rows * k * 8 if key_windows else 0
    assert configs.scratch_bytes(rows, width, k) + windows <= BUDGET
    assert configs.scratch_bytes(rows + 1, width, k) + windows + 3 * k * 8 * key_windows > BUDGET


def test_scratch_counts_phase_two():
    """With short rows the candidate arrays, not the logits, bound the chunk (2048 keys, k=2048:
    the logits alone would allow four times as many rows)."""
    assert configs.rows_per_chunk(2048, 2048, BUDGET) < BUDGET // (2048 * 4) // 4


@pytest.mark.parametrize("rows,cap", [(64, 65536), (256, 65536), (4096, 32768)])
def test_bar_cases_are_not_chunked(rows, cap):
    """decode B=64 at 64K, next_n 1 and 4, and prefill of 4096 tokens at 32K: one launch of
    each phase."""
    assert configs.rows_per_chunk(cap, 2048, BUDGET) >= rows


def test_topk_config_rejects_blocks_the_kernels_cannot_tile():
    for change in (dict(bucket_block=1024), dict(candidate_block=24), dict(buckets=1000),
                   dict(place_rank_tile=1000)):
        with pytest.raises(ValueError, match=next(iter(change))):
            dataclasses.replace(configs.TOPK, **change)


def test_candidate_slots_and_segments():
    assert [configs.candidate_slots(k) for k in (1, 256, 257, 2048)] == [4096] * 4
    small = dataclasses.replace(configs.TOPK, min_slots=512)
    assert [configs.candidate_slots(k, small) for k in (1, 256, 257, 2048)] == [512, 512, 1024,
                                                                               4096]
    tc = configs.TOPK
    for rows in (1, 8, 64, 256, 4096):
        g = configs.segments(rows, 65536, tc)
        assert 1 <= g <= -(-65536 // tc.min_segment)
        assert rows * g <= tc.programs + rows


@pytest.mark.parametrize("width", [4096, 16384, 65536, 131072])
def test_segment_grid_is_one_wave(width):
    """Rows of more than one segment never make more segment programs than are resident at once:
    a second wave would run whole segments after the first (256 rows of 64K keys: 5 segments
    per row were 1280 programs; 4 are one wave, B64 64K next_n=4 4.9 µs faster on the H200)."""
    tc = configs.TOPK
    for rows in range(1, 1300, 7):
        g = configs.segments(rows, width, tc)
        assert g == 1 or rows * g <= tc.resident_segments
    assert configs.segments(256, 65536, tc) == 4


@pytest.mark.parametrize("width", [512, 2048, 4096, 16384, 65536, 131072, 100352])
def test_every_segment_of_a_full_row_holds_keys(width):
    """The segments cut a full row as _segment_bounds does (whole scan steps): no program of
    the segment and place grids is left without keys (at 64 rows of 64K, 17 programs per row
    had cut 16 segments)."""
    tc = configs.TOPK
    for rows in (1, 8, 33, 64, 128, 256, 4096):
        g = configs.segments(rows, width, tc)
        seg = configs.segment_keys(width, g, tc)
        assert seg % tc.block_n == 0 and (g - 1) * seg < width <= g * seg
    assert configs.segments(64, 65536, tc) == 16


@pytest.mark.parametrize("slack", [0, 100, 256, 1 << 20])
@pytest.mark.parametrize("k", [1, 31, 32, 300, 2047, 2048])
def test_rank_grid_covers_k_and_no_more_than_the_slots(k, slack):
    """The rank kernel's first pass covers every output position (padding included) and at most
    the row's CAP slots; the programs loop over whatever placed slots lie past it."""
    tc = dataclasses.replace(configs.TOPK, rank_slots_past_k=slack)
    cap = configs.candidate_slots(k, tc)
    programs = configs.rank_programs(k, cap, tc)
    assert programs * tc.bucket_block >= min(cap, k + slack)
    assert programs * tc.bucket_block >= k
    assert programs <= cap // tc.bucket_block
    assert (programs - 1) * tc.bucket_block < k + slack


@pytest.mark.parametrize("programs", [1, 100, 4 * 64, 1 << 20])
@pytest.mark.parametrize("width", [2048, 4096, 65536, 131072])
def test_place_rank_programs_lend_each_a_segment_slot(width, programs):
    """J place-rank programs per row: at least 1, at most G (a row in the exact fallback gives
    each program a segment slot of its own), at least tc.place_rank_row_programs below G, and
    about tc.place_rank_programs over all rows."""
    tc = dataclasses.replace(configs.TOPK, place_rank_programs=programs)
    for rows in (1, 8, 64, 128, 256):
        g = configs.segments(rows, width, tc)
        j = configs.place_rank_programs(rows, g, tc)
        assert 1 <= j <= g
        floor = min(tc.place_rank_row_programs, g // 2)
        assert j >= floor
        assert j == g or rows * j >= programs > rows * (j - 1) or (
            j == floor and rows * j >= programs)
    assert configs.place_rank_programs(64, 16, configs.TOPK) == 4  # B=64, 64K
    assert configs.place_rank_programs(256, 4, configs.TOPK) == 2  # B=64, 64K, next_n=4
    assert configs.place_rank_programs(256, 2, configs.TOPK) == 1  # B=64, 4K, next_n=4


def test_threshold_samples_keep_the_stride():
    """Rows up to 64K keys keep 4096 samples; 128K rows get 8192 (stride 16, not 32); longer rows
    stop at max_samples."""
    tc = configs.TOPK
    assert [configs.threshold_samples(c, tc) for c in (100, 65536, 65537, 131072, 1 << 20)] == [
        4096, 4096, 8192, 8192, 8192]


@pytest.mark.parametrize("cap", [64, 512, 5000, 1 << 20])
@pytest.mark.parametrize("longest", [-3, 0, 1, 511, 512, 513, 4999, 5000, 1 << 21])
def test_row_width_holds_the_longest_row_within_the_table(cap, longest):
    """An eager call's logits rows (SPEC §1.6): wide enough for the longest row the table can
    hold, never wider than the table, in whole K_BLOCKs unless the table itself is narrower."""
    w = configs.row_width(cap, longest)
    assert min(max(longest, 0), cap) <= w <= cap
    assert w == cap or w % configs.K_BLOCK == 0
    assert w < cap + configs.K_BLOCK and w < max(longest, 0) + configs.K_BLOCK + 1


@pytest.mark.parametrize("block_size", [16, 48, 64, 1024])
@pytest.mark.parametrize("rows", [1, 12, 64, 256, 4096, 1 << 16])
def test_graph_window_is_bounded_whatever_the_table(rows, block_size):
    """SPEC §1.6 in a CUDA graph: the table's width while its logits fit GRAPH_LOGITS_BYTES;
    beyond it windows that start on pages and K_BLOCKs, whose logits stay within
    max(GRAPH_LOGITS_BYTES, rows x MIN_WINDOW_KEYS x 4 B) and whose width stops growing with the
    table. The benchmark's decode and prefill cases stay one window."""
    step = math.lcm(configs.K_BLOCK, block_size)
    bound = max(configs.GRAPH_LOGITS_BYTES, rows * configs.MIN_WINDOW_KEYS * 4)
    widths = []
    for keys in (block_size, 65536, 1 << 20, 1 << 23, 1 << 26):
        cap = keys // block_size * block_size  # a table holds whole pages
        w = configs.window_keys(rows, cap, block_size)
        assert 0 < w <= cap
        if rows * cap * 4 <= configs.GRAPH_LOGITS_BYTES:
            assert w == cap
        else:
            assert w % step == 0 and rows * w * 4 <= bound
            widths.append(w)
    assert len(set(widths)) <= 1 or widths[-1] == widths[-2]
    # the bar cases, and vLLM's largest default capture (512 tokens) at DeepSeek-V3.2's 160K
    for rows, cap in ((256, 131072), (64, 1 << 20), (4096, 32768), (512, 163840)):
        assert configs.window_keys(rows, cap, 64) == cap


@pytest.mark.parametrize("k", [1, 64, 255, 256, 300, 512, 1024, 2048])
def test_threshold_target_leaves_room_on_both_sides(k):
    """The sampled threshold aims at sqrt(k·CAP) candidates: at 64K keys (16 keys a sample) at
    least 4 standard deviations of its relative noise (1/sqrt(samples above it)) from both k and
    CAP, so a row almost never takes the exact fallback."""
    cap = configs.candidate_slots(k)
    t = configs.target_candidates(k, cap)
    assert k <= t <= cap
    above = t / 16
    if above >= 16:  # a few samples only for the smallest k: a wide [k, CAP] covers them
        sd = 1 / math.sqrt(above)
        assert math.log(t / k) >= 4 * sd and math.log(cap / t) >= 4 * sd
    else:
        assert cap / t >= 32 and t / max(k, 1) >= 8


@pytest.mark.parametrize("block", [64, 256, 512])
@pytest.mark.parametrize("k", [1, 300, 2048])
@pytest.mark.parametrize("width", [2048, 4096, 16384, 65536, 131072])
def test_place_programs_cover_the_aimed_candidates_within_the_slots(width, k, block):
    """P place programs per segment: each program's first chunk lies inside its segment's slot
    (P·block <= CAP), and G·P chunks cover the candidates the threshold aims at unless P is at
    that bound; rows of many short segments keep one program per segment."""
    tc = dataclasses.replace(configs.TOPK, candidate_block=block)
    cap = configs.candidate_slots(k, tc)
    for rows in (1, 8, 64):
        g = configs.segments(rows, width, tc)
        p = configs.place_programs(g, k, cap, tc)
        assert 1 <= p and p * block <= cap
        assert g * p * block >= configs.target_candidates(k, cap) or p * block == cap
    assert configs.place_programs(17, 2048, 4096, configs.TOPK) == 1  # B=64, 64K
    assert configs.place_programs(2, 2048, 4096, configs.TOPK) == 6  # a 4K row


def _saturate(x):
    """PTX mul.sat.f32's result clamp: [0, 1], NaN to +0."""
    return torch.nan_to_num(x, nan=0.0).clamp(0.0, 1.0)


WEIGHTS = torch.tensor([1.0, -1.0, 0.37, -2.5e-3, 6.1e4, -3.3e-30, 7e-42, -1e-45, 2.0 ** 100, 0.0])


def test_relu_as_a_saturating_multiply_keeps_every_bit_of_int8_scores():
    """Every int8 dot value (|x| <= 2^21) read as float bits, saturated after × 2^127, times the
    weight × 2^22: the bits of max(x, 0) · weight, for weights from subnormal to 2^100."""
    x = torch.arange(-(1 << 21), (1 << 21) + 1, dtype=torch.int32)
    r = _saturate(x.view(torch.float32) * configs.RELU_INPUT_SCALE["int8"])
    relu = x.to(torch.float32).clamp_min(0.0)
    assert torch.equal(r, relu * 2.0 ** -22)  # exact: ReLU(x) · 2^-22
    for w in WEIGHTS.tolist():
        a = torch.tensor(w, dtype=torch.float32)
        got = r * (a * configs.RELU_WEIGHT_SCALE["int8"]) + 0.0  # (+ 0.0: the kernel's -0 fix)
        assert torch.equal(got.view(torch.int32), (relu * a + 0.0).view(torch.int32)), w


def test_relu_as_a_saturating_multiply_keeps_every_bit_of_fp8_scores():
    """fp8 dots (float32, 0 or 2^-18 <= |x| <= 448 · 448 · 128) saturated after × 2^-25, times
    the weight × 2^25: the bits of max(x, 0) · weight."""
    g = torch.Generator().manual_seed(0)
    mag = torch.exp2(torch.empty(1 << 20).uniform_(-18, 24.6, generator=g))
    x = (mag * torch.randn(1 << 20, generator=g).sign()).to(torch.float32)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 2.0 ** -18, -(2.0 ** -18), 448.0 * 448 * 128])])
    r = _saturate(x * configs.RELU_INPUT_SCALE["fp8"])
    relu = x.clamp_min(0.0)
    assert torch.equal(r, relu * 2.0 ** -25)
    for w in WEIGHTS.tolist():
        a = torch.tensor(w, dtype=torch.float32)
        got = r * (a * configs.RELU_WEIGHT_SCALE["fp8"]) + 0.0
        assert torch.equal(got.view(torch.int32), (relu * a + 0.0).view(torch.int32)), w


def test_relu_asm_multiplies_by_the_input_scale():
    import struct

    for kind, scale in configs.RELU_INPUT_SCALE.items():
        hexbits = configs.relu_asm(kind).split("0f")[1].rstrip(";")
        assert struct.unpack("<f", bytes.fromhex(hexbits)[::-1])[0] == scale
