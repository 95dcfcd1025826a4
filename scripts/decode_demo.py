"""Greedy decoding of a Llama-shaped decoder with three KV caches: torch.cat growth, virtual tensor
append, static preallocated cache. All in one process, from one prefill, with random weights.

    python scripts/decode_demo.py [--batch 32] [--prompt 3072] [--new 1024] [--out DIR]
    python scripts/decode_demo.py --device cpu     (smoke run: tiny shapes, CPU mmap driver)
    python scripts/decode_demo.py --eager          (no CUDA graphs: the fully eager decode loop)

Decode steps run as vLLM runs them: piecewise CUDA graphs. Everything of a step but the KV-cache
update and attention (whose length grows) is captured once, in L + 1 pieces (embedding + layer 0
up to RoPE; then per layer o-proj, residual, MLP, residual, the next layer's norm, QKV and RoPE;
the last piece ends with the final norm, LM head and argmax), into CUDA graphs with static
buffers; each step replays them with the cache call and flash attention run eagerly in between.
The same graphs serve every cache, and the prefill stays eager. --eager (and --device cpu, where
CUDA graphs do not exist) runs the whole step eagerly; a failed capture prints why and falls back
to eager. Before the timed runs the piecewise step is checked against the eager one (same tokens
over CHECK_STEPS steps, static cache); on the CPU the pieces are called without graphs for it.

Checks that the three produce the same tokens; prints per-step time at several lengths, the
total, the host time to issue a step (see `decode` for what it can show), peak memory
and KV memory after the prefill and at the end. The virtual cache runs once per physical layout
(per_sequence, sequence_major): the measurement that settles SPEC §3's choice.

The model keeps its per-step torch calls few, alike for every cache: the eager loop is
host-bound on a fast GPU, so each call costs wall time. RoPE is one multiply, one roll and one
addcmul over the whole QKV projection (tables per head; V's heads rotate by zero), and keys and
values of a layer share one cache tensor [B, S, 2 * Hkv, D], so a step makes one cache call per
layer.
"""
import argparse
import functools
import json
import math
import statistics
import time
import traceback

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import custom_ops  # noqa: F401  (registers the ops)
from custom_ops import vtensor

DTYPE = torch.bfloat16
PROFILED_STEPS = 8  # decoded after the timed run, under the profiler, for GPU time per step
CHECK_STEPS = 16  # piecewise step vs eager step, static cache, before the timed runs
# The default shapes are the H200 run's; --device cpu takes these unless given on the line.
CPU_SHAPES = {"layers": 2, "hidden": 256, "heads": 4, "kv_heads": 2, "intermediate": 512,
              "vocab": 512, "batch": 4, "prompt": 64, "new": 48}


class Decoder:
    """Random-weight Llama block stack: RMSNorm, RoPE, GQA attention, SwiGLU MLP."""

    def __init__(self, layers, hidden, heads, kv_heads, intermediate, vocab, max_len, device):
        def weight(rows, cols):
            return torch.randn(rows, cols, device=device, dtype=DTYPE) / math.sqrt(rows)
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.embed = torch.randn(vocab, hidden, device=device, dtype=DTYPE)
        self.layers = [{
            "qkv": weight(hidden, (heads + 2 * kv_heads) * self.head_dim),
            "o": weight(heads * self.head_dim, hidden),
            "gate_up": weight(hidden, 2 * intermediate),
            "down": weight(intermediate, hidden),
        } for _ in range(layers)]
        self.head = weight(hidden, vocab)
        # RoPE (rotate-half form) as x * cos + roll(x, D/2) * sin with sin's first half negated,
        # tabulated per head of the QKV projection: [max_len, heads + 2 * kv_heads, D]. V's heads
        # get cos 1, sin 0, so one pass over the projection rotates Q and K and leaves V as is.
        half = self.head_dim // 2
        inv = 1.0 / (10000 ** (torch.arange(0, half, device=device) / half))
        angles = torch.arange(max_len, device=device)[:, None] * inv[None]  # [max_len, D/2]
        cos, sin = angles.cos(), angles.sin()
        rotated = heads + kv_heads

        def table(rotate, keep):
            per_head = torch.full((max_len, heads + 2 * kv_heads, self.head_dim), keep,
                                  device=device)
            per_head[:, :rotated] = rotate[:, None]
            return per_head.to(DTYPE)
        self.cos = table(torch.cat([cos, cos], -1), 1.0)
        self.sin = table(torch.cat([-sin, sin], -1), 0.0)

    def forward(self, tokens, start, kv):
        """tokens [B, T] at positions start.. ; kv(layer, states) -> cache [B, S, 2 * Hkv, D].

        states [B, T, 2 * Hkv, D] holds the layer's new keys (first Hkv heads) and values.
        """
        x = self.embed[tokens]
        batch, steps = tokens.shape
        cos, sin = self.cos[start:start + steps], self.sin[start:start + steps]
        for index, layer in enumerate(self.layers):
            h = F.rms_norm(x, (x.shape[-1],))
            qkv = (h @ layer["qkv"]).view(batch, steps, -1, self.head_dim)
            qkv = torch.addcmul(qkv * cos, qkv.roll(self.head_dim // 2, -1), sin)
            # split_with_sizes and chunk, not Tensor.split: its Python wrapper costs a call's time
            q, states = qkv.split_with_sizes([self.heads, 2 * self.kv_heads], 2)
            keys, values = kv(index, states).transpose(1, 2).chunk(2, 1)
            attn = F.scaled_dot_product_attention(
                q.transpose(1, 2), keys, values, is_causal=steps > 1, enable_gqa=True)
            x = x + attn.transpose(1, 2).reshape(batch, steps, -1) @ layer["o"]
            gate, up = (F.rms_norm(x, (x.shape[-1],)) @ layer["gate_up"]).chunk(2, -1)
            x = x + (F.silu(gate) * up) @ layer["down"]
        return (F.rms_norm(x[:, -1], (x.shape[-1],)) @ self.head).argmax(-1)


class CatCache:
    name = "torch.cat"

    def __init__(self, prefill, max_len, device):
        self.kv = [states.clone() for states in prefill]

    def __call__(self, layer, states):
        # contiguous inputs keep torch.cat on its batched copy kernel; with the strided slice of
        # the projection it falls back to a generic strided copy, several times slower on the
        # H200 (30 vs ~9 ms per step measured), which would flatter the other caches
        self.kv[layer] = torch.cat([self.kv[layer], states.contiguous()], 1)
        return self.kv[layer]

    def kv_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.kv)


class StaticCache:
    name = "static"

    def __init__(self, prefill, max_len, device):
        self.length = prefill[0].shape[1]
        self.kv = []
        for states in prefill:
            cache = states.new_empty(states.shape[0], max_len, *states.shape[2:])
            cache[:, :self.length] = states
            self.kv.append(cache)

    def __call__(self, layer, states):
        end = self.length + states.shape[1]
        cache = self.kv[layer]
        cache[:, self.length:end] = states
        if layer == len(self.kv) - 1:
            self.length = end
        return cache[:, :end]

    def kv_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.kv)


class VirtualCache:
    def __init__(self, prefill, max_len, device, layout):
        self.name, self.device = f"vtensor ({layout})", device
        batch, _, heads, head_dim = prefill[0].shape
        self.kv = [torch.ops.custom.vtensor_append(
            vtensor.empty(batch, heads, head_dim, capacity=max_len, dtype=DTYPE, device=device,
                          layout=layout), states) for states in prefill]

    def __call__(self, layer, states):
        self.kv[layer] = torch.ops.custom.vtensor_append(self.kv[layer], states)
        return self.kv[layer]

    def kv_bytes(self):
        return vtensor.memory_stats(self.device)["mapped_bytes"]


class EagerStep:
    """The fully eager decode step: Decoder.forward on one token."""
    mode = "eager"

    def __init__(self, model):
        self.model = model

    def start(self, token, position):
        self.token, self.position = token, position

    def step(self, cache):
        self.token = self.model.forward(self.token[:, None], self.position, cache)
        self.position += 1
        return self.token


class PiecewiseStep:
    """A decode step as L + 1 pieces around the eager cache call + attention of each layer.

    Each piece reads and writes only the static buffers below (in place or with ``out=``), so
    calling a piece and replaying its captured graph do the same thing: a graph captured once is
    right at every step. The position lives on the device (``position``, [1]); piece 0 gathers
    that position's RoPE rows into ``cos``/``sin``, the last piece adds one to it and writes the
    argmax into ``token``, which piece 0 reads at the next step. Buffers:
      token [B] (int64)          next input token = this step's output
      x [B, 1, hidden]           the residual stream, updated in place by every piece
      qkv [B, 1, H + 2Hkv, D]    the roped projection: q for attention, states for the cache
      attn [B, 1, H, D]          attention output, copied in eagerly after the attention call
    Without ``capture`` the pieces are called (any device): this checks the split on the CPU.
    """

    def __init__(self, model, batch, device, capture):
        self.model = model
        hidden, head_dim = model.embed.shape[1], model.head_dim
        heads = model.heads + 2 * model.kv_heads

        def buffer(*shape, dtype=DTYPE):
            return torch.zeros(*shape, dtype=dtype, device=device)
        self.token = buffer(batch, dtype=torch.int64)
        self.position = buffer(1, dtype=torch.int64)
        self.cos, self.sin = buffer(1, heads, head_dim), buffer(1, heads, head_dim)
        self.x = buffer(batch, 1, hidden)
        self.qkv = buffer(batch, 1, heads, head_dim)
        self.attn = buffer(batch, 1, model.heads, head_dim)
        q, self.states = self.qkv.split_with_sizes([model.heads, 2 * model.kv_heads], 2)
        self.q = q.transpose(1, 2)  # what attention reads, a fixed view of the buffer
        self.attn_in = self.attn.transpose(1, 2)  # [B, H, 1, D], attention's output layout
        count = len(model.layers) + 1
        self.pieces = [functools.partial(self.piece, index) for index in range(count)]
        self.run = self.pieces
        self.mode, self.capture_ms = "pieces (no graphs)", 0.0
        if capture:
            begin = time.perf_counter()
            self.run = self.capture()
            self.capture_ms = (time.perf_counter() - begin) * 1e3
            self.mode = "piecewise CUDA graphs"

    def piece(self, index):
        model, x = self.model, self.x
        hidden = (x.shape[-1],)
        if index == 0:
            torch.index_select(model.cos, 0, self.position, out=self.cos)
            torch.index_select(model.sin, 0, self.position, out=self.sin)
            torch.index_select(model.embed, 0, self.token, out=x.view(x.shape[0], -1))
        else:
            layer = model.layers[index - 1]
            x.add_(self.attn.view(x.shape) @ layer["o"])
            gate, up = (F.rms_norm(x, hidden) @ layer["gate_up"]).chunk(2, -1)
            x.add_((F.silu(gate) * up) @ layer["down"])
        if index < len(model.layers):
            layer = model.layers[index]
            qkv = (F.rms_norm(x, hidden) @ layer["qkv"]).view(self.qkv.shape)
            torch.addcmul(qkv * self.cos, qkv.roll(model.head_dim // 2, -1), self.sin,
                          out=self.qkv)
        else:
            torch.argmax(F.rms_norm(x[:, -1], hidden) @ model.head, -1, out=self.token)
            self.position.add_(1)

    def capture(self):
        """One CUDA graph per piece, in one memory pool, replayed in capture order.

        As torch.cuda.graphs asks: warm-up on a side stream first (lazy cuBLAS/allocator set-up
        must not happen during capture). The buffers are allocated outside the graphs, so the
        pool only holds each piece's temporaries; the warm-up's values do not matter (start()
        sets token and position before a run).
        """
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                for piece in self.pieces:
                    piece()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        pool, graphs = torch.cuda.graph_pool_handle(), []
        for piece in self.pieces:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool):
                piece()
            graphs.append(graph)
        torch.cuda.synchronize()
        return [graph.replay for graph in graphs]

    def start(self, token, position):
        self.token.copy_(token)
        self.position.fill_(position)

    def step(self, cache):
        run, q, states, attn_in = self.run, self.q, self.states, self.attn_in
        for layer in range(len(run) - 1):
            run[layer]()
            keys, values = cache(layer, states).transpose(1, 2).chunk(2, 1)
            attn_in.copy_(F.scaled_dot_product_attention(q, keys, values, enable_gqa=True))
        run[-1]()
        return self.token.clone()  # the buffer is overwritten at the next step


def decode(stepper, cache, first, start, steps):
    """Greedy decoding: tokens [B, steps] and per-step milliseconds, wall and host.

    wall: CUDA events between steps (on the CPU, where every op is synchronous, the host time).
    host: time.perf_counter around issuing the step, nothing synchronised. Well below the wall
    time it shows the GPU is the bound; about equal proves nothing on its own, because once the
    launch queue is full issuing waits for the GPU too (the first steps, before it fills, show
    the real host cost).
    """
    cuda = first.is_cuda
    tokens, host = [first], []
    stepper.start(first, start)
    if cuda:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
        events[0].record()
    for step in range(steps - 1):
        begin = time.perf_counter()
        tokens.append(stepper.step(cache))
        if cuda:
            events[step + 1].record()
        host.append((time.perf_counter() - begin) * 1e3)
    if cuda:
        torch.cuda.synchronize()
        times = [events[i].elapsed_time(events[i + 1]) for i in range(steps - 1)]
    else:
        times = host
    return torch.stack(tokens, 1), times, host


def device_ms_per_step(stepper, cache, token, start, steps):
    """GPU kernel time per step (profiler), whatever the host adds between kernels."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    stepper.start(token, start)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            stepper.step(cache)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    return sum(e.time_range.elapsed_us() for e in kernels) / 1e3 / steps


def make_stepper(model, args, prefill, first, max_len):
    """The decode step of this run, checked against the eager one; eager if capture fails."""
    eager = EagerStep(model)
    if args.eager:
        return eager, None
    try:
        stepper = PiecewiseStep(model, args.batch, args.device,
                                capture=args.device == "cuda" and not args.pieces)
        check = [decode(step, StaticCache(prefill, max_len, args.device), first, args.prompt,
                        CHECK_STEPS)[0] for step in (eager, stepper)]
    except Exception:  # noqa: BLE001  (reported, and the run goes on eagerly)
        print("piecewise step failed, falling back to the eager loop:")
        traceback.print_exc()
        eager.mode = "eager (piecewise CUDA graph capture failed)"
        return eager, None
    same = torch.equal(*check)
    print(f"{stepper.mode}: {len(stepper.pieces)} pieces, capture {stepper.capture_ms:.1f} ms "
          f"(outside the timed loop); first {CHECK_STEPS} tokens vs the eager step: "
          f"{'match' if same else 'DIFFER'}")
    if args.device == "cpu" and not args.pieces:
        eager.mode = "eager (CPU: no CUDA graphs; the pieces were checked above)"
        return eager, same
    return stepper, same


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                        help="cpu: a smoke run with tiny shapes (unless given) on the mmap driver")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--hidden", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--kv-heads", type=int)
    parser.add_argument("--intermediate", type=int)
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--prompt", type=int)
    parser.add_argument("--new", type=int)
    parser.add_argument("--out", default=None, help="folder for decode_demo_b<batch>.json")
    parser.add_argument("--eager", action="store_true",
                        help="the fully eager decode loop (no CUDA graphs); always so on the CPU")
    parser.add_argument("--pieces", action="store_true",
                        help="the piecewise step with its pieces called, not graphed (a check)")
    args = parser.parse_args()
    defaults = CPU_SHAPES if args.device == "cpu" else {
        "layers": 8, "hidden": 4096, "heads": 32, "kv_heads": 8, "intermediate": 14336,
        "vocab": 32000, "batch": 64, "prompt": 3072, "new": 1024}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    torch.manual_seed(0)
    device = args.device
    max_len = args.prompt + args.new + PROFILED_STEPS
    model = Decoder(args.layers, args.hidden, args.heads, args.kv_heads, args.intermediate,
                    args.vocab, max_len, device)
    prompt = torch.randint(0, args.vocab, (args.batch, args.prompt), device=device)
    prefill = []

    def keep(layer, states):
        prefill.append(states.contiguous())
        return prefill[-1]

    # Flash attention reads the strided cache views in place and handles GQA natively; forcing
    # it makes a refusal loud instead of a silent fall back that would copy K/V every step.
    with torch.no_grad(), sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        first = model.forward(prompt, 0, keep)
        name = torch.cuda.get_device_name() if device == "cuda" else "CPU"
        print(f"{name}  torch {torch.__version__}  layers={args.layers} hidden={args.hidden} "
              f"heads={args.heads}/{args.kv_heads} batch={args.batch} prompt={args.prompt} "
              f"new={args.new}")
        stepper, matches = make_stepper(model, args, prefill, first, max_len)
        makers = [lambda p: CatCache(p, max_len, device),
                  lambda p: StaticCache(p, max_len, device)] + [
            (lambda layout: lambda p: VirtualCache(p, max_len, device, layout))(layout)
            for layout in ("per_sequence", "sequence_major")]
        results = [run(make, stepper, prefill, first, args) for make in makers]
    for r in results:
        r.update(mode=stepper.mode, capture_ms=getattr(stepper, "capture_ms", 0.0),
                 step_matches_eager=matches)
    report(results, args)


def run(make, stepper, prefill, first, args):
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    cache = make(prefill)
    decode(stepper, cache, first, args.prompt, 8)  # warm-up with this cache type
    del cache
    vtensor.synchronize()
    cache = make(prefill)
    after_prefill = cache.kv_bytes()
    tokens, times, host = decode(stepper, cache, first, args.prompt, args.new)
    at_end = cache.kv_bytes()
    device_ms = (device_ms_per_step(stepper, cache, tokens[:, -1], args.prompt + args.new - 1,
                                    PROFILED_STEPS) if cuda else None)
    result = {"name": cache.name, "tokens": tokens, "times": times, "host_times": host,
              "total_ms": sum(times), "host_ms": statistics.median(host),
              "device_ms": device_ms, "kv_after_prefill": after_prefill, "kv_at_end": at_end,
              "peak_allocator": torch.cuda.max_memory_allocated() if cuda else 0,
              "vmm_mapped": vtensor.memory_stats(args.device)["mapped_bytes"]}
    del cache
    vtensor.synchronize()
    return result


def report(results, args):
    reference = results[0]["tokens"]
    marks = [1, args.new // 4, args.new // 2, 3 * args.new // 4, args.new - 2]
    header = "".join(f"{'@' + str(args.prompt + m):>9}" for m in marks)
    gpu = args.device == "cuda"
    print(f"decode step: {results[0]['mode']}")
    print(f"wall ms per step at context length (mean of 32 steps), total, host ms to issue a step "
          f"(median), GPU ms per step at {args.prompt + args.new} (profiler), KV bytes, peak = "
          f"{'allocator peak + ' if gpu else ''}mapped")
    print(f"{'cache':<25}{header}{'total ms':>10}{'host ms':>9}{'GPU ms':>8}{'KV@prefill':>11}"
          f"{'KV@end':>8}{'peak':>8}  same tokens")
    for r in results:
        def window(mark):
            part = r["times"][max(0, mark - 16):mark + 16]
            return sum(part) / len(part)
        cells = "".join(f"{window(m):>9.3f}" for m in marks)
        r["same_tokens"] = torch.equal(r["tokens"], reference)
        device_ms = f"{r['device_ms']:>8.3f}" if gpu else f"{'n/a':>8}"
        sizes = (r["kv_after_prefill"], r["kv_at_end"], r["peak_allocator"] + r["vmm_mapped"])
        unit, scale = ("G", 2**30) if max(sizes) >= 2**30 else ("M", 2**20)  # M: CPU smoke run
        kv_prefill, kv_end, peak = (f"{size / scale:.2f}{unit}" for size in sizes)
        print(f"{r['name']:<25}{cells}{r['total_ms']:>10.1f}{r['host_ms']:>9.3f}{device_ms}"
              f"{kv_prefill:>11}{kv_end:>8}{peak:>8}  {r['same_tokens']}")
    by_name = {r["name"]: r for r in results}
    cat, static = by_name["torch.cat"], by_name["static"]
    measures = (("end to end", "total_ms"), ("host per step", "host_ms")) + (
        (("GPU time", "device_ms"),) if gpu else ())
    for layout in ("per_sequence", "sequence_major"):
        virtual = by_name[f"vtensor ({layout})"]
        for what, key in measures:
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
