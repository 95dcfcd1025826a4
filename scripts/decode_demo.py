"""Greedy decoding of a Llama-shaped decoder with three KV caches: torch.cat growth, virtual tensor
append, static preallocated cache. All in one process, from one prefill, with random weights.

    python scripts/decode_demo.py [--batch 32] [--prompt 3072] [--new 1024] [--out DIR]

Checks that the three produce the same tokens; prints per-step time at several lengths, the
total, peak memory and KV memory after the prefill and at the end. The virtual cache runs once
per physical layout (per_sequence, sequence_major): the measurement that settles SPEC §3's choice.
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import custom_ops  # noqa: F401  (registers the ops)
from custom_ops import vtensor

DTYPE = torch.bfloat16
PROFILED_STEPS = 8  # decoded after the timed run, under the profiler, for GPU time per step


class Decoder:
    """Random-weight Llama block stack: RMSNorm, RoPE, GQA attention, SwiGLU MLP."""

    def __init__(self, layers, hidden, heads, kv_heads, intermediate, vocab, max_len):
        def weight(rows, cols):
            return torch.randn(rows, cols, device="cuda", dtype=DTYPE) / math.sqrt(rows)
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.embed = torch.randn(vocab, hidden, device="cuda", dtype=DTYPE)
        self.layers = [{
            "qkv": weight(hidden, (heads + 2 * kv_heads) * self.head_dim),
            "o": weight(heads * self.head_dim, hidden),
            "gate_up": weight(hidden, 2 * intermediate),
            "down": weight(intermediate, hidden),
        } for _ in range(layers)]
        self.head = weight(hidden, vocab)
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2, device="cuda") / self.head_dim))
        angles = torch.arange(max_len, device="cuda")[:, None] * inv[None]
        self.cos, self.sin = angles.cos().to(DTYPE), angles.sin().to(DTYPE)

    @staticmethod
    def rope(x, cos, sin):  # x [B, T, N, D], cos/sin [T, 1, D/2]
        x1, x2 = x.chunk(2, -1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def forward(self, tokens, start, kv):
        """tokens [B, T] at positions start.. ; kv(layer, k, v) -> caches [B, S, Hkv, D]."""
        x = self.embed[tokens]
        batch, steps = tokens.shape
        cos, sin = self.cos[start:start + steps, None], self.sin[start:start + steps, None]
        for index, layer in enumerate(self.layers):
            h = F.rms_norm(x, (x.shape[-1],))
            qkv = (h @ layer["qkv"]).view(batch, steps, self.heads + 2 * self.kv_heads,
                                          self.head_dim)
            q, k, v = qkv.split([self.heads, self.kv_heads, self.kv_heads], 2)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            keys, values = kv(index, k, v.contiguous())
            attn = F.scaled_dot_product_attention(
                q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                is_causal=steps > 1, enable_gqa=True)
            x = x + attn.transpose(1, 2).reshape(batch, steps, -1) @ layer["o"]
            gate, up = (F.rms_norm(x, (x.shape[-1],)) @ layer["gate_up"]).chunk(2, -1)
            x = x + (F.silu(gate) * up) @ layer["down"]
        return (F.rms_norm(x[:, -1], (x.shape[-1],)) @ self.head).argmax(-1)


class CatCache:
    name = "torch.cat"

    def __init__(self, prefill, max_len):
        self.kv = [[k.clone(), v.clone()] for k, v in prefill]

    def __call__(self, layer, k, v):
        pair = self.kv[layer]
        pair[0] = torch.cat([pair[0], k], 1)
        pair[1] = torch.cat([pair[1], v], 1)
        return pair

    def kv_bytes(self):
        return sum(t.numel() * t.element_size() for pair in self.kv for t in pair)


class StaticCache:
    name = "static"

    def __init__(self, prefill, max_len):
        self.length = prefill[0][0].shape[1]
        self.kv = []
        for k, v in prefill:
            pair = [k.new_empty(k.shape[0], max_len, *k.shape[2:]) for _ in range(2)]
            pair[0][:, :self.length] = k
            pair[1][:, :self.length] = v
            self.kv.append(pair)

    def __call__(self, layer, k, v):
        end = self.length + k.shape[1]
        keys, values = self.kv[layer]
        keys[:, self.length:end] = k
        values[:, self.length:end] = v
        if layer == len(self.kv) - 1:
            self.length = end
        return keys[:, :end], values[:, :end]

    def kv_bytes(self):
        return sum(t.numel() * t.element_size() for pair in self.kv for t in pair)


class VirtualCache:
    def __init__(self, prefill, max_len, layout):
        self.name = f"vtensor ({layout})"
        batch, _, heads, head_dim = prefill[0][0].shape
        self.kv = [[torch.ops.custom.vtensor_append(
            vtensor.empty(batch, heads, head_dim, capacity=max_len, dtype=DTYPE, device="cuda",
                          layout=layout), t) for t in pair] for pair in prefill]

    def __call__(self, layer, k, v):
        pair = self.kv[layer]
        pair[0] = torch.ops.custom.vtensor_append(pair[0], k)
        pair[1] = torch.ops.custom.vtensor_append(pair[1], v)
        return pair

    def kv_bytes(self):
        return vtensor.memory_stats("cuda")["mapped_bytes"]


def decode(model, cache, first, start, steps):
    """Greedy decoding; returns tokens [B, steps] and per-step milliseconds (wall, by events)."""
    tokens = [first]
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
    events[0].record()
    for step in range(steps - 1):
        tokens.append(model.forward(tokens[-1][:, None], start + step, cache))
        events[step + 1].record()
    torch.cuda.synchronize()
    times = [events[i].elapsed_time(events[i + 1]) for i in range(steps - 1)]
    return torch.stack(tokens, 1), times


def device_ms_per_step(model, cache, token, start, steps):
    """GPU kernel time per step (profiler), whatever the host adds between kernels."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for step in range(steps):
            token = model.forward(token[:, None], start + step, cache)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    return sum(e.time_range.elapsed_us() for e in kernels) / 1e3 / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--prompt", type=int, default=3072)
    parser.add_argument("--new", type=int, default=1024)
    parser.add_argument("--out", default=None, help="folder for decode_demo_b<batch>.json")
    args = parser.parse_args()
    torch.manual_seed(0)
    max_len = args.prompt + args.new + PROFILED_STEPS
    model = Decoder(args.layers, args.hidden, args.heads, args.kv_heads, args.intermediate,
                    args.vocab, max_len)
    prompt = torch.randint(0, args.vocab, (args.batch, args.prompt), device="cuda")
    prefill = []

    def keep(layer, k, v):
        prefill.append((k.contiguous(), v))
        return k, v

    # Flash attention reads the strided cache views in place and handles GQA natively; forcing
    # it makes a refusal loud instead of a silent fall back that would copy K/V every step.
    with torch.no_grad(), sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        first = model.forward(prompt, 0, keep)
        torch.cuda.synchronize()
        print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  layers={args.layers} "
              f"hidden={args.hidden} heads={args.heads}/{args.kv_heads} batch={args.batch} "
              f"prompt={args.prompt} new={args.new}")
        makers = [lambda p: CatCache(p, max_len), lambda p: StaticCache(p, max_len)] + [
            (lambda layout: lambda p: VirtualCache(p, max_len, layout))(layout)
            for layout in ("per_sequence", "sequence_major")]
        results = [run(make, model, prefill, first, args) for make in makers]
    report(results, args)


def run(make, model, prefill, first, args):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    cache = make(prefill)
    decode(model, cache, first, args.prompt, 8)  # warm-up with this cache type
    del cache
    vtensor.synchronize()
    cache = make(prefill)
    after_prefill = cache.kv_bytes()
    tokens, times = decode(model, cache, first, args.prompt, args.new)
    at_end = cache.kv_bytes()
    device_ms = device_ms_per_step(model, cache, tokens[:, -1], args.prompt + args.new - 1,
                                   PROFILED_STEPS)
    result = {"name": cache.name, "tokens": tokens, "times": times, "total_ms": sum(times),
              "device_ms": device_ms, "kv_after_prefill": after_prefill, "kv_at_end": at_end,
              "peak_allocator": torch.cuda.max_memory_allocated(),
              "vmm_mapped": vtensor.memory_stats("cuda")["mapped_bytes"]}
    del cache
    vtensor.synchronize()
    return result


def report(results, args):
    reference = results[0]["tokens"]
    marks = [1, args.new // 4, args.new // 2, 3 * args.new // 4, args.new - 2]
    header = "".join(f"{'@' + str(args.prompt + m):>9}" for m in marks)
    print(f"wall ms per step at context length (mean of 32 steps), total, GPU ms per step at "
          f"{args.prompt + args.new} (profiler), KV bytes, peak = allocator peak + mapped")
    print(f"{'cache':<25}{header}{'total ms':>10}{'GPU ms':>8}{'KV@prefill':>11}{'KV@end':>8}"
          f"{'peak':>8}  same tokens")
    for r in results:
        def window(mark):
            part = r["times"][max(0, mark - 16):mark + 16]
            return sum(part) / len(part)
        cells = "".join(f"{window(m):>9.3f}" for m in marks)
        r["same_tokens"] = torch.equal(r["tokens"], reference)
        print(f"{r['name']:<25}{cells}{r['total_ms']:>10.1f}{r['device_ms']:>8.3f}"
              f"{r['kv_after_prefill'] / 2**30:>10.2f}G{r['kv_at_end'] / 2**30:>7.2f}G"
              f"{(r['peak_allocator'] + r['vmm_mapped']) / 2**30:>7.2f}G  {r['same_tokens']}")
    by_name = {r["name"]: r for r in results}
    cat, static = by_name["torch.cat"], by_name["static"]
    for layout in ("per_sequence", "sequence_major"):
        virtual = by_name[f"vtensor ({layout})"]
        for what, key in (("end to end", "total_ms"), ("GPU time", "device_ms")):
            faster = 1 - virtual[key] / cat[key]
            vs_static = virtual[key] / static[key] - 1
            print(f"vtensor ({layout}), {what}: {faster * 100:.1f}% less than torch.cat "
                  f"[{'PASS' if faster >= 0.10 else 'FAIL'} >= 10%], {vs_static * 100:+.1f}% vs "
                  f"static [{'PASS' if vs_static <= 0.05 else 'FAIL'} <= 5%]")
        ratio = virtual["kv_after_prefill"] / virtual["kv_at_end"]
        print(f"vtensor ({layout}): KV after prefill / at end {ratio:.3f} (token ratio "
              f"{args.prompt / (args.prompt + args.new - 1):.3f}); static holds "
              f"{static['kv_after_prefill'] / virtual['kv_at_end']:.3f}x its end KV from the "
              f"start; tokens {'match' if virtual['same_tokens'] else 'DIFFER'}")
    if args.out:
        with open(f"{args.out}/decode_demo_b{args.batch}.json", "w") as handle:
            json.dump([{k: v for k, v in r.items() if k != "tokens"} for r in results], handle)


if __name__ == "__main__":
    main()
