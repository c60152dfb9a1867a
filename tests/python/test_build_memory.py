"""A workload built in the calling process stays under limits.memory (an architect's trial, 2026-12-07: eidola perf
at 1,024 GPUs x 16 GiB ran the host out of memory, 24.4 GB, building NCCL's profile before any child existed)."""

from __future__ import annotations

import resource

import numpy as np
import pytest
from conftest import REPO

from eidola.errors import MemoryLimitExceeded
from eidola.run.build_memory import building_within


def test_a_build_past_the_limit_is_named_and_the_cap_is_lifted_after():
    before = resource.getrlimit(resource.RLIMIT_AS)
    with pytest.raises(MemoryLimitExceeded, match=r"the test's array: building it needed more than limits.memory = "):
        with building_within(64 << 20, "the test's array"):
            np.ones(256 << 20, dtype=np.uint8)  # 256 MiB past a 64 MiB cap
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    with building_within(64 << 20, "a small one"):
        assert np.ones(16 << 20, dtype=np.uint8).sum() == 16 << 20  # within the cap: built
    assert resource.getrlimit(resource.RLIMIT_AS) == before


def test_eidola_perf_names_the_size_whose_profile_does_not_fit(cli):
    # NCCL's 1 GiB all-reduce on 64 GPUs of rail-16gpu is 1.5 million ops (a tree, 16 channels): more than 20 MiB
    # to build, while the platform itself fits (its estimate is checked first, and passes).
    out = cli("perf", REPO / "platforms" / "rail-16gpu.yaml", "--op", "all_reduce", "--set", "gpus.count=64",
              "--set", "fabric.model=flow", "--set", "limits.memory=20MiB", "-b", "1G", "-e", "1G")
    assert out.returncode == 3, out.stderr
    assert ("size 1073741824 B (all_reduce on 64 GPUs): building it needed more than limits.memory = 21 MB"
            in out.stderr) and "Traceback" not in out.stderr
