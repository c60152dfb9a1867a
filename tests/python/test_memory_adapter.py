"""The memory estimate counts the AT-to-LT adapters' worker threads in front of an LT plugin fabric (platform/memory.py):
one SC_THREAD per transaction in flight (at most fabric.plugin.workers per GPU when set), each with SystemC's default
stack, which the run's address-space limit counts whole. Counts derived by hand; per-thread cost from memory.py."""

from __future__ import annotations

import ctypes

import pytest
import yaml

from eidola import ConfigError, cli
from eidola.platform import memory, platform_from_dict

GPUS, WORKGROUPS = 4, 8


def _plugin_doc(repo, protocol="lt", window=2048, workers=None, limit=None):
    """Four eidolon GPUs on the example bus (header-only as declared here: nothing is compiled to elaborate)."""
    ip = repo / "examples/third_party_ip"
    plugin = {"headers": [str(ip / "include/vendor/simple_bus.h")], "include_dirs": [str(ip / "include")],
              "class": "vendor::LtBus" if protocol == "lt" else "vendor::AtBus", "args": [GPUS, 40, 500.0],
              "protocol": protocol, "targets": "target_socket[{i}]", "initiators": "initiator_socket[{i}]"}
    if workers is not None:
        plugin["workers"] = workers
    doc = {"eidola": 1, "name": "bus", "gpus": {"count": GPUS, "workgroups": WORKGROUPS, "max_outstanding": window},
           "address_map": {"base": 0, "stride": "1TiB"}, "fabric": {"model": "plugin", "plugin": plugin}}
    if limit is not None:
        doc["limits"] = {"memory": limit}
    return doc


def _plugin_platform(repo, **kwargs):
    return platform_from_dict(_plugin_doc(repo, **kwargs), source="bus.yaml")


def _estimate(plat):
    comps = list(plat.components.values())
    return memory.estimate(comps, {c.name: c.resolved() for c in comps}, GPUS)


#: Everything but the adapters: the base, 4 x 4 GPU pairs, 4 GPUs with 8 workgroups each (the plugin itself: 0).
REST = memory.BASE + memory.PER_GPU_PAIR * GPUS * GPUS + GPUS * (memory.PER_GPU + WORKGROUPS * memory.PER_WORKGROUP)


def test_the_stack_is_systemcs_default():
    # SC_DEFAULT_STACK_SIZE is only declared in the headers (sysc/kernel/sc_constants.h): read the library's own.
    from eidola.run.native import native_library

    native_library()  # the sc_main shim first, so that libsystemc loads
    try:
        lib = ctypes.CDLL("libsystemc.so")
    except OSError:
        pytest.skip("libsystemc.so (libsystemc-dev) not found by that name")
    assert ctypes.c_int.in_dll(lib, "_ZN7sc_core21SC_DEFAULT_STACK_SIZEE").value == memory.WORKER_STACK == 256 * 1024
    assert memory.WORKER_STACK < memory.PER_WORKER <= memory.WORKER_STACK + 4096


def test_an_lt_plugin_counts_one_worker_per_packet_of_each_window(repo):
    # 4 GPUs x 2,048-packet windows: 8,192 workers x 257 KiB = 2.16 GB, the largest term.
    need, what, key = _estimate(_plugin_platform(repo, window=2048))
    assert need == REST + 4 * 2048 * memory.PER_WORKER
    assert 4 * 2048 * memory.PER_WORKER == 8192 * 263_168 == 2_155_872_256
    assert what.startswith("the stacks of 8192 AT-to-LT adapter worker threads, 263 kB each (one per packet of the "
                           "GPUs' windows, gpus.max_outstanding = 2048;")
    assert key == "fabric.plugin.workers"


@pytest.mark.parametrize("workers, per_gpu", [(16, 16), (2048, 2048), (100_000, 2048)])
def test_fabric_plugin_workers_caps_them_per_gpu(repo, workers, per_gpu):
    # A worker is made only for a request that finds the others busy, so never more than the GPU's window.
    need, what, _ = _estimate(_plugin_platform(repo, window=2048, workers=workers))
    assert need == REST + GPUS * per_gpu * memory.PER_WORKER
    assert f"the stacks of {GPUS * per_gpu} AT-to-LT adapter worker threads" in what
    assert f"fabric.plugin.workers = {workers} per GPU" in what


def test_an_at_plugin_has_no_adapters(repo):
    need, what, _ = _estimate(_plugin_platform(repo, protocol="at", window=2048))
    assert need == REST and "adapter" not in what


def test_the_estimate_refuses_large_windows_through_an_lt_plugin(repo, tmp_path, capsys):
    # 4 GPUs x 4,096 packets: 16,384 workers x 263,168 B = 4.31 GB of stacks (4.32 GB with the rest), past a 2 GB
    # limit. Before this term the estimate was a few MB and the run found out by failing.
    with pytest.raises(ConfigError) as e:
        _plugin_platform(repo, window=4096, limit="2GB").elaborate()  # (building it elaborates it already)
    assert str(e.value).startswith("bus.yaml: this platform needs about 4.32 GB of memory to simulate, limits.memory is 2 GB")
    assert "the stacks of 16384 AT-to-LT adapter worker threads" in str(e.value)
    assert "fabric.plugin.workers" in str(e.value)
    # 64 workers per GPU: 256 x 263,168 B = 67 MB, fine.
    _plugin_platform(repo, window=4096, workers=64, limit="2GB").elaborate()
    # The same through the command, with --set.
    path = tmp_path / "bus.yaml"
    path.write_text(yaml.safe_dump(_plugin_doc(repo)))
    code = cli.main(["validate", str(path), "--set", "gpus.max_outstanding=4096", "--set", "limits.memory=2GB"])
    err = capsys.readouterr().err
    assert code == 2 and "(fabric.plugin.workers): make that smaller, or raise limits.memory" in err, err


def test_more_workers_than_the_process_may_map_are_refused_whatever_the_memory_limit(repo):
    # Each worker's stack is two mappings (stack and guard page); past vm.max_map_count a thread fails to start
    # ("stack setup failed", then an LLVM out-of-memory abort, found at 4 x 8,192). A fifth is left to the rest.
    maps = int(open("/proc/sys/vm/max_map_count").read())
    allowed = maps * 4 // 5 // 2
    window = allowed // GPUS + 1  # one worker past what may start, over the four GPUs
    with pytest.raises(ConfigError) as e:
        _plugin_platform(repo, window=window, limit="1000GB").elaborate()
    msg = str(e.value)
    assert msg.startswith(f"bus.yaml: fabric.plugin.workers: the AT-to-LT adapters in front of this LT plugin fabric "
                          f"may make {GPUS * window} worker threads"), msg
    assert f"more than the {allowed} this machine's vm.max_map_count ({maps})" in msg
    assert f"set fabric.plugin.workers to at most {allowed // GPUS} per GPU" in msg
    # Exactly what may start passes (with a memory limit that holds their stacks), and so does a cap per GPU.
    _plugin_platform(repo, window=allowed // GPUS, limit="1000GB").elaborate()
    _plugin_platform(repo, window=window, workers=allowed // GPUS, limit="1000GB").elaborate()
