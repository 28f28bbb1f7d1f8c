"""How many GPUs a run's per-GPU figures divide by: the one rule for tok/s per GPU and for cost.

A disaggregated deployment serves output tokens from its decode GPUs, so output tok/s per GPU is
per decode GPU (README, `--decode-gpus`); the cost of its tokens is that of every GPU it holds,
the prefill side's too.
"""

from __future__ import annotations

from msgspec import UNSET

from runner.bundle.schema import Bundle


def per_gpu(total: float, gpu_count: int | None) -> float | None:
    """Throughput per GPU, or None when the GPU count is unknown (or zero)."""
    return total / gpu_count if gpu_count else None


def output_gpu_count(gpu_count: int | None, decode_gpus: int | None) -> int | None:
    """The GPUs output tok/s is divided by: the decode side's where the run records them, else the run's GPU count."""
    return decode_gpus or gpu_count


def output_gpus(bundle: Bundle) -> int | None:
    """output_gpu_count of a bundle."""
    topology = bundle.topology
    return output_gpu_count(bundle.hardware.gpu_count, topology.decode_gpus if topology is not UNSET else None)


def paid_gpus(bundle: Bundle) -> int | None:
    """The GPUs a price per GPU-hour is paid for: both sides of a disaggregated deployment where the run
    records both, else the run's GPU count."""
    topology = bundle.topology
    if topology is not UNSET and topology.prefill_gpus and topology.decode_gpus:
        return topology.prefill_gpus + topology.decode_gpus
    return bundle.hardware.gpu_count
