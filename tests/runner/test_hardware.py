"""GPU memory as NVML reports it, read as the size the card is sold with."""

from __future__ import annotations

import pytest

from runner.hardware import marketed_gb


@pytest.mark.parametrize(("mib", "expected"), [
    (143_771, 141),  # H200: the seeds print 141 GB
    (81_559, 80),  # H100 SXM
    (183_359, 180),  # B200
    (24_564, 24),  # RTX 4090
    (46_068, 45),  # L40S: 45 GiB is 6 % under its 48 GB, too far to snap
    (110_000, 107),  # nothing sold near it: whole GiB
])
def test_nvml_memory_reads_as_the_marketed_size(mib: int, expected: float) -> None:
    assert marketed_gb(mib * 2**20) == expected
