"""SPEC §4 checks of the three vtensor ops, from shapes, dtypes, devices and strides only.

The real ops (ops.py) and their fakes (custom_ops/fake.py) both run them, so a traced bad call
fails as it does eagerly, and a call that mixes meta tensors with others (which the dispatcher
sends to the fake) raises instead of returning an uninitialised tensor.
"""
import torch


def check_append_args(cache: torch.Tensor, states: torch.Tensor, name: str,
                      cache_name: str = "cache", states_name: str = "states") -> None:
    """Ranks, matching B/H/D, dtype and device: shared by the three ops."""
    if cache.dim() != 4:
        raise ValueError(f"{name}: {cache_name} must be 4-D [B, S, H, D], got shape "
                         f"{tuple(cache.shape)}")
    if states.dim() != 4:
        raise ValueError(f"{name}: {states_name} must be 4-D [B, T, H, D], got shape "
                         f"{tuple(states.shape)}")
    if states.shape[0] != cache.shape[0] or states.shape[2:] != cache.shape[2:]:
        raise ValueError(
            f"{name}: {states_name} [B, T, H, D] must match {cache_name} in B, H, D: got "
            f"{states_name} {tuple(states.shape)} for {cache_name} {tuple(cache.shape)}")
    if states.dtype != cache.dtype:
        raise TypeError(f"{name}: {states_name} dtype must equal {cache_name} dtype "
                        f"{cache.dtype}, got {states.dtype}")
    if states.device != cache.device:
        raise ValueError(f"{name}: {states_name} must be on the {cache_name}'s device "
                         f"{cache.device}, got {states.device}")


def check_functional_args(cache: torch.Tensor, states: torch.Tensor, name: str,
                          cache_name: str = "cache", states_name: str = "states") -> None:
    """vtensor_append / vtensor_reserve_one_token: their result is a virtual cache, which needs
    a token of at least one byte in each of at least one sequence."""
    check_append_args(cache, states, name, cache_name, states_name)
    batch, _, heads, head_dim = cache.shape
    if min(batch, heads, head_dim) < 1:
        raise ValueError(f"{name}: {cache_name} [B, S, H, D] must have B, H and D of at least 1 "
                         f"(a virtual cache of empty tokens holds nothing), got shape "
                         f"{tuple(cache.shape)}")


def check_reserve_one_token_args(key_cache: torch.Tensor, key_states: torch.Tensor) -> None:
    name = "vtensor_reserve_one_token"
    check_functional_args(key_cache, key_states, name, "key_cache", "key_states")
    if key_states.shape[1] != 1:
        raise ValueError(f"{name}: key_states must be [B, 1, H, D], got shape "
                         f"{tuple(key_states.shape)}; use vtensor_append for several tokens")


def check_inplace_args(cache: torch.Tensor, states: torch.Tensor,
                       positions: torch.Tensor) -> None:
    """vtensor_append_: the shared checks, positions [B] int32/int64 on the cache's device,
    T <= S, and no repeated rows."""
    name = "vtensor_append_"
    check_append_args(cache, states, name)
    batch, steps = states.shape[:2]
    if positions.dim() != 1 or positions.shape[0] != batch:
        raise ValueError(f"{name}: positions must be [B] = [{batch}], got shape "
                         f"{tuple(positions.shape)}")
    if positions.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name}: positions must be int32 or int64, got {positions.dtype}")
    if positions.device != cache.device:
        raise ValueError(f"{name}: positions must be on the cache's device {cache.device}, "
                         f"got {positions.device}")
    if steps > cache.shape[1]:
        raise ValueError(f"{name}: states carry T = {steps} tokens, more than the cache holds "
                         f"(S = {cache.shape[1]})")
    if any(size > 1 and stride == 0 for size, stride in zip(cache.shape[:2], cache.stride()[:2])):
        raise ValueError(f"{name}: cache must not repeat rows (a stride of 0 on B or S: an "
                         f"expanded tensor), got strides {tuple(cache.stride())}")
