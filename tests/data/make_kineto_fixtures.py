"""Make the Kineto and Chakra fixtures under tests/data/ from a real PyTorch job (CPU, gloo).

Run once, by hand, with PyTorch installed (the tests only read what this wrote):

    python tests/data/make_kineto_fixtures.py            # 2- and 4-rank Kineto traces, PyTorch ETs
    python tests/data/make_kineto_fixtures.py --chakra   # also Chakra ETs (needs mlc-chakra)

Each rank is a process on 127.0.0.1 running a small data-parallel step a few times: matrix
multiplies (host compute, seconds, so compute dominates the timeline as in a real job) then
collectives on small tensors. torch.profiler records the Kineto trace (kineto/RANKS/rank-R.json.gz),
and ExecutionTraceObserver records the PyTorch execution trace for the Chakra path
(chakra/RANKS/pytorch_et_R.json); chakra_trace_link and chakra_converter turn both into
chakra/RANKS/chakra.R.et.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NUMEL = 1024  # float32 elements per collective tensor: 4 KiB, divisible by ranks * workgroups
# Matrix side of the host compute. Gloo's collectives take 0.1-40 ms each here (~120 ms in all per
# rank); at 3072 the matrix multiplies take seconds, so compute dominates the timeline (as in a real
# training step) and the ideal-fabric replay test can hold the replay to 1% of the trace's span.
MM = 3072


def _step(rank: int, world: int, it: int) -> None:
    import torch
    import torch.distributed as dist

    a = torch.full((MM, MM), 1.0 + rank)
    for _ in range(4):  # host compute: hundreds of ms of aten::mm
        a = torch.mm(a, a) / MM
    t = torch.ones(NUMEL)
    dist.all_reduce(t)
    a = torch.mm(a, a)
    out = torch.empty(NUMEL * world)
    dist.all_gather_into_tensor(out, torch.ones(NUMEL))
    dist.broadcast(t, src=0)
    if it == 0:
        dist.all_to_all_single(torch.empty(NUMEL), torch.ones(NUMEL))
        peer = rank ^ 1  # pairs 0-1, 2-3: a send/recv each way
        if rank % 2 == 0:
            dist.send(torch.ones(NUMEL // 4), dst=peer)
        else:
            dist.recv(torch.empty(NUMEL // 4), src=peer)
    dist.barrier()


def _rank(rank: int, world: int, port: int, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    _step(rank, world, 1)  # warm-up outside the trace: connection set-up is not the workload
    et = ExecutionTraceObserver().register_callback(f"{out}/pytorch_et_{rank}.json")
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, execution_trace_observer=et) as prof:
        for it in range(3):
            _step(rank, world, it)
    prof.export_chrome_trace(f"{out}/rank-{rank}.json")
    dist.destroy_process_group()


def make(world: int, port: int, chakra: bool) -> None:
    import torch.multiprocessing as mp

    tmp = HERE / f"_tmp{world}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    mp.spawn(_rank, args=(world, port, str(tmp)), nprocs=world, join=True)
    kdir, cdir = HERE / "kineto" / f"gloo{world}", HERE / "chakra" / f"gloo{world}"
    kdir.mkdir(parents=True, exist_ok=True)
    for r in range(world):
        data = json.loads((tmp / f"rank-{r}.json").read_text())
        # Compact and gzipped: the fixtures stay small in the repository.
        with gzip.open(kdir / f"rank-{r}.json.gz", "wt", compresslevel=9) as f:
            json.dump(data, f, separators=(",", ":"))
    if chakra:
        cdir.mkdir(parents=True, exist_ok=True)
        bindir = Path(sys.executable).parent
        for r in range(world):
            # chakra_trace_link merges the Kineto durations in, but needs et_replay, which is not on
            # PyPI; without it the host execution trace is converted alone (no durations, no COMM nodes).
            linked = tmp / f"linked_{r}.json"
            link = subprocess.run([str(bindir / "chakra_trace_link"), "--rank", str(r),
                                   "--chakra-host-trace", str(tmp / f"pytorch_et_{r}.json"),
                                   "--chakra-device-trace", str(tmp / f"rank-{r}.json"), "--output-file", str(linked)])
            source = linked if link.returncode == 0 else tmp / f"pytorch_et_{r}.json"
            subprocess.run([str(bindir / "chakra_converter"), "PyTorch", "--input", str(source),
                            "--output", str(cdir / f"pytorch.{r}.et")], check=True)
            subprocess.run(["gzip", "-9", "-f", str(cdir / f"pytorch.{r}.et")], check=True)  # protolib reads gzip
        # ASTRA-sim's own example ETs, written by the chakra package's generator: every node type.
        subprocess.run([str(bindir / "chakra_generator"), "--num_npus", str(world), "--default_runtime", "5",
                        "--default_comm_size", "65536"], check=True, cwd=cdir)
    shutil.rmtree(tmp)


def main() -> None:
    """Make the 2- and 4-rank fixtures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chakra", action="store_true", help="also make Chakra ETs (needs mlc-chakra)")
    parser.add_argument("--ranks", type=int, nargs="*", default=[2, 4])
    a = parser.parse_args()
    for i, world in enumerate(a.ranks):
        make(world, 29611 + i, a.chakra)


if __name__ == "__main__":
    main()
