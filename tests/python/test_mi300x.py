"""platforms/mi300x-8gpu.yaml on the packet fabric against the published MI300X figures (DESIGN.md).

Expected per-link payload bandwidth when every link carries data one way and 16-byte acks the
other: 64 GB/s x 256 / (256 + 85 + 16) = 45.9 GB/s, inside the published 45-48 GB/s usable range.
A direct all-reduce moves (p-1)/p of the data over 7 links at once in each of its two phases, so
its bus bandwidth approaches 7 x 45.9 = 321 GB/s; RCCL reports about 318 GB/s.
"""

import sys

import pytest


@pytest.fixture(scope="module")
def check(request):
    root = request.config.rootpath
    sys.path.insert(0, str(root / "experiments"))
    import mi300x_check

    yield mi300x_check
    sys.path.remove(str(root / "experiments"))


SIZE = 7 * 8 << 19  # 28 MiB per GPU: long enough that ramp-up costs under 2%


def test_all_to_all_reaches_the_usable_link_bandwidth(check):
    mean, low = check.all_to_all_link_gbs(SIZE)
    assert 45.0 <= low and mean <= 48.0 and low <= mean * (1 + 1e-12)
    assert mean <= 64 * 256 / (256 + 85 + 16) + 1e-9   # never above what the wire allows


def test_large_allreduce_bus_bandwidth_matches_rccl(check):
    busbw = check.allreduce_busbw_gbs(SIZE)
    assert busbw == pytest.approx(318, rel=0.10)
    assert busbw <= 7 * 64 * 256 / (256 + 85 + 16)
