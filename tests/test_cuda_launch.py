"""launch.launch's direct path: it launches only a variant Triton already compiled for exactly
these arguments' specialization (alignment, values of 1, divisibility), and what it launches
computes what kernel[grid] does."""
import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA GPU (the launch path of a real device)")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

from custom_ops.backends.cuda import launch as L  # noqa: E402


@triton.jit
def _scaled_copy(src, dst, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n)
    tl.store(dst + offs, x * scale, mask=offs < n)


def _variants() -> int:
    return len(_scaled_copy.device_caches[torch.cuda.current_device()][0])


def _check(src, dst, n, scale):
    dst.fill_(float("nan"))  # poisoned: an unlaunched or wrong kernel leaves NaN or junk
    L.launch(_scaled_copy, (triton.cdiv(n, 128),), src, dst, n, scale, BLOCK=128)
    torch.testing.assert_close(dst[:n], src[:n] * scale, rtol=0, atol=0)
    assert torch.isnan(dst[n:]).all()


def test_held_variant_launches_directly_and_new_specialisations_compile():
    base = torch.randn(4096 + 64, device="cuda")
    out = torch.empty_like(base)
    # first launch: Triton compiles; the direct path must decline (nothing held yet)
    assert not L._launch_held(_scaled_copy, (8,), (base, out, 1000, 2.0), {"BLOCK": 128})
    _check(base, out, 1000, 2.0)
    held = _variants()
    assert L._launch_held(_scaled_copy, (8,), (base, out, 1000, 2.0), {"BLOCK": 128})
    _check(base, out, 1000, 3.0)  # same variant, new values
    _check(base, out, 1003, 0.5)
    assert _variants() == held
    # another specialisation (4-byte aligned pointers; n divisible by 16; n == 1) is not
    # the held variant: the direct path declines and Triton compiles it
    for src, dst, n in ((base[1:], out[1:], 1000), (base, out, 1024), (base, out, 1)):
        before = _variants()
        assert not L._launch_held(_scaled_copy, (triton.cdiv(n, 128),), (src, dst, n, 2.0),
                                  {"BLOCK": 128})
        _check(src, dst, n, 2.0)
        assert _variants() == before + 1
        _check(src, dst, n, 1.5)
        assert _variants() == before + 1


def test_warming_blocks_nest():
    """An inner warming block (a chunk's header gate, loaded inside the capture path's warm-up)
    must not end the outer one: the launches after it would run for real on stand-in buffers."""
    with L.warming():
        with L.warming():
            assert L._is_warming()
        assert L._is_warming()
    assert not L._is_warming()
