"""Shared pieces of the sweep tests: specs whose numbers are worked out by hand, and a real Dask cluster."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from gemv_timing import symmetric_kernel_ns

# The fused GEMV + AllReduce on the ideal fabric, 4 GPUs, one workgroup each, one packet per
# write, memory with no bandwidth limit: its kernel time is derived in gemv_timing.py.
T_NS, R_NS = 2000.0, 400.0
LATENCIES_NS = (100, 250, 500)
MEMORY_NS = (200, 300)
SEEDS = (1, 2)


def gemv_kernel_ns(latency_ns: float, memory_ns: float) -> float:
    """The hand-derived kernel time of the 4-GPU GEMV sweep's point."""
    return symmetric_kernel_ns(4, latency_ns, memory_ns, 100.0, T_NS, R_NS)


def write_gemv_sweep(tmp: Path, platform: Path, extra: str = "") -> Path:
    """A 12-point sweep spec: fabric latency x memory latency x seed, on the generator above."""
    spec = tmp / "gemv-sweep.yaml"
    spec.write_text(f"""\
sweep: 1
name: gemv-latency
platform: {platform.name}
generator: {{name: gemv_allreduce, gpus: 4, workgroups: 1, vector_bytes: 1024, tile_ns: {T_NS:g},
             reduce_ns: {R_NS:g}, interval_ns: 100}}
grid:
  fabric.latency: [{", ".join(f"{x}ns" for x in LATENCIES_NS)}]
  gpus.memory.latency: [{", ".join(f"{x}ns" for x in MEMORY_NS)}]
  seed: [{", ".join(map(str, SEEDS))}]
metrics: [kernel_time_ns, flag_reads, atomics]
{extra}""")
    return spec


def gemv_platform(write_platform) -> Path:  # type: ignore[no-untyped-def]
    """The ideal 4-GPU platform the GEMV sweep varies (memory bandwidth high enough to cost 0 ps)."""
    return write_platform(gpus=4, workgroups=1, mem_bw="1000PB/s")


def write_ring_sweep(tmp: Path, repo: Path, seeds: int = 6) -> Path:
    """A sweep of slower points (about 0.2-0.5 s each): ring all-reduce on the 8-GPU packet ring."""
    spec = tmp / "ring-sweep.yaml"
    spec.write_text(f"""\
sweep: 1
name: ring
platform: {repo / "platforms" / "ring-8gpu.yaml"}
generator: {{name: ring_allreduce, gpus: 8, nbytes: 1MiB, workgroups: 2}}
grid:
  generator.nbytes: [2MiB, 4MiB]
  seed: {list(range(1, seeds + 1))}
metrics: [kernel_time_ns, busbw_GBps, link_util_max]
""")
    return spec


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dask(*args: str, log: Path) -> subprocess.Popen[bytes]:
    # Its own process group, so teardown also ends what the process forked (its running points).
    exe = Path(sys.executable).parent / "dask"
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", f"distributed.cli.dask_{args[0]}", *args[1:]]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "wb"), start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@contextlib.contextmanager
def dask_cluster(tmp: Path, workers: int = 2) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """A real `dask scheduler` and `workers` real `dask worker` processes (1 thread, no nanny) on 127.0.0.1.

    Yields (address, worker processes); every process group is killed on the way out, failure or not.
    """
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard", log=tmp / "scheduler.log")]
    try:
        for i in range(workers):
            procs.append(_dask("worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name",
                               f"w{i}", "--local-directory", str(tmp / f"w{i}"), log=tmp / f"worker{i}.log"))
        deadline = time.monotonic() + 45
        while True:  # the scheduler may not listen yet
            try:
                with Client(address, timeout="5s") as client:
                    client.wait_for_workers(workers, timeout=40)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield address, procs[1:]
    finally:
        for p in reversed(procs):
            _stop(p)
