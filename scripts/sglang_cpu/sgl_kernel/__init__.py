"""Stand-in for SGLang's compiled kernel package on a CPU-only torch (see scripts/setup-sglang-cpu.sh).

SGLang imports these names from `sgl_kernel` unconditionally when it runs on the CPU, but on
the route the tests take (torch-native attention, page size 1, no speculative decoding) it
never calls them. Each one raises if it ever is, so a change of route fails loudly instead of
computing garbage.
"""

from collections.abc import Callable

# Imported at start-up by sglang 0.5.23 with --device cpu.
_IMPORTED_ON_CPU = (
    "assign_draft_cache_locs_contiguous_cpu",
    "assign_extend_cache_locs_cpu",
    "assign_req_to_token_pool_cpu",
    "build_tree_kernel_efficient_cpu",
    "copy_all_layer_kv_cache_cpu",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "verify_tree_greedy_cpu",
)


def _missing(name: str) -> Callable[..., None]:
    """A function named `name` that says it is a kernel this stand-in does not have."""
    def kernel(*args: object, **kwargs: object) -> None:
        raise NotImplementedError(f"sgl_kernel.{name} is a compiled SGLang kernel; this CPU stand-in has none")
    kernel.__name__ = name
    return kernel


globals().update({name: _missing(name) for name in _IMPORTED_ON_CPU})
