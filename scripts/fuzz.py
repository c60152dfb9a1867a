"""Fuzz campaigns against the ``eidola`` command: platforms, profiles, timestamps CSVs, CLI arguments and sweeps.

Every case writes a mutated input and runs ``eidola.cli.main(argv)`` in a child forked from this
process (so the SystemC models are loaded once and each case costs milliseconds), with a wall
limit. The only acceptable outcomes are exit 0 (ok), 2 (bad input) and 3 (the simulation failed);
exit 1, a signal or a hang past the limit is a finding, kept with its input and output in --keep, and so is
an exit 3 whose report is a C++ exception that escaped a model (SystemC's E549 "uncaught exception"): a
model that meets input it cannot run reports it (bad input or a named failure), and never throws past the
kernel (the flow campaign's custom topology without edges did, 2026-12-06).

    python scripts/fuzz.py --cases 2500              # 2,500 cases of each campaign
    python scripts/fuzz.py --cases 100 --campaign csv --seed 7

Cases are made from (campaign, seed, index) only, so a finding is reproduced by its index.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from eidola import cli
from eidola.generators import gemv_allreduce
from eidola.profile import ProfileBuilder

REPO = Path(__file__).resolve().parents[1]

CAMPAIGNS = ("platform", "profile", "csv", "cli", "sweep", "import", "netsweep", "rundir", "memory", "flow")
GOOD = {0, 2, 3}
UNCAUGHT = "uncaught exception"  #: in SystemC's report of a C++ exception that escaped a model (E549)

# ---------------------------------------------------------------- random values

_UNITS = ("ns", "us", "ms", "s", "ps", "GHz", "MHz", "B", "KiB", "MiB", "TiB", "GB/s", "TB/s", "B/s", "", "xx", "µs")


def _scalar(r: random.Random) -> Any:
    """A value of any type a YAML key might get: the interesting edges of each."""
    choice = r.randrange(14)
    if choice == 0:
        return r.choice([0, -1, 1, 2, 3, 7, 2**31, 2**31 - 1, 2**32, 2**63, 2**63 - 1, 2**64, -(2**63) - 1, 10**30,
                         100_000, 2**20, 2**20 + 1])
    if choice == 1:
        return r.choice([0.0, -0.5, 1e-300, 1e300, float("inf"), float("nan"), 3.5, 1e20])
    if choice == 2:
        return r.choice([True, False, None])
    if choice == 3:
        return f"{r.choice(['0', '1', '-1', '1.5', '1e400', '1e-400', '300', '2.1', '64', '99999999999999999999', '.5', 'nan'])}" \
               f"{r.choice(_UNITS)}"
    if choice == 4:
        return r.choice(["", " ", "../../x", "/etc/passwd", "a" * 5000, "\u00e9\u4e2d", "\x00", "ideal", "packet",
                         "plugin", "ring", "mesh2d", "torus2d", "switch", "hierarchical", "custom", "poll", "syncmon"])
    if choice == 5:
        return {"a": 1, "model": "ideal"}
    if choice == 6:
        return [1, 2, "x"]
    if choice == 7:
        return [r.randrange(-3, 100) for _ in range(r.randrange(0, 4))]
    if choice == 8:
        return {}
    if choice == 9:
        return []
    if choice == 10:
        return r.randrange(-5, 70)
    if choice == 11:
        return f"{r.randrange(0, 2000)}{r.choice(_UNITS)}"
    if choice == 12:
        return "/dev/" + r.choice(["zero", "urandom", "null", "stdin"])
    return r.getrandbits(r.choice([8, 40, 70, 200]))


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a nested dict/list document."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:20]):
            out += _paths(v, prefix + (i,))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return doc


def _pop(doc: Any, path: tuple[Any, ...], lists: bool = True) -> None:
    """Removes the node at `path` from its mapping (or, with `lists`, from its list)."""
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
    elif lists and isinstance(parent, list) and parent:
        parent.pop(path[-1])


def _mutate_doc(r: random.Random, doc: Any, keys: list[str]) -> Any:
    """One to three structural changes: a value replaced, a key removed or added, a subtree duplicated."""
    doc = copy.deepcopy(doc)
    for _ in range(r.randrange(1, 4)):
        paths = _paths(doc)
        path = r.choice(paths)
        action = r.randrange(5)
        if action <= 1 or not path:
            doc = _set(doc, path, _scalar(r)) if path else doc
        elif action == 2:
            _pop(doc, path)
        elif action == 3:
            node = doc
            for p in path:
                node = node[p]
            if isinstance(node, dict):
                node[r.choice(keys)] = _scalar(r)
        else:
            node = doc
            for p in path[:-1]:
                node = node[p]
            if isinstance(node, dict):
                node[path[-1]] = {"deep": _deep(r.randrange(1, 30))}
    return doc


def _deep(n: int) -> Any:
    out: Any = 1
    for _ in range(n):
        out = [out]
    return out


_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


def _mutate_text(r: random.Random, text: str) -> bytes:
    """A textual change: bytes flipped, binary inserted, truncated, nested or aliased beyond reason."""
    data = text.encode()
    action = r.randrange(11)
    if action == 0 and data:
        b = bytearray(data)
        for _ in range(r.randrange(1, 8)):
            b[r.randrange(len(b))] = r.randrange(256)
        return bytes(b)
    if action == 1:
        pos = r.randrange(len(data) + 1)
        return data[:pos] + bytes(r.randrange(256) for _ in range(r.randrange(1, 64))) + data[pos:]
    if action == 2:
        return data[:r.randrange(len(data) + 1)]
    if action == 3:
        n = r.choice([70, 1000, 20000, 200000])
        return data + (f"\ndeep: {'[' * n}{']' * n}\n" if r.random() < 0.5 else "\ndeep:\n" + "".join(
            "  " * i + "k:\n" for i in range(min(n, 3000)))).encode()
    if action == 4:
        return data + b"\n" + _BOMB.encode()
    if action == 5:
        return _BOMB.encode() + b"\n" + data
    if action == 6:
        lines = data.split(b"\n")
        i = r.randrange(len(lines))
        lines.insert(i, lines[r.randrange(len(lines))])  # a duplicate key, usually
        return b"\n".join(lines)
    if action == 7:
        return data.replace(b" ", b"\t", r.randrange(1, 5))
    if action == 8:
        return bytes(r.randrange(256) for _ in range(r.randrange(1, 4096)))
    if action == 9:
        return b"\xff\xfe" + data.decode().encode("utf-16-le")
    return data.replace(b": ", b": &x ", 1) + b"\nz: *x\nw: *nope\n"


# ---------------------------------------------------------------- campaigns

class Workspace:
    """Seed inputs, written once into a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.small_profile = root / "small.yaml"
        gemv_allreduce(gpus=4, workgroups=2, vector_bytes=4 * 2 * 1024).save(self.small_profile)
        self.platforms: list[dict[str, Any]] = []
        for p in sorted((REPO / "platforms").glob("*.yaml")):
            doc = yaml.safe_load(p.read_text())
            doc["profile"] = str(self.small_profile)
            self.platforms.append(doc)
        #: The shipped packet platforms (case_flow switches them to the flow fabric).
        self.packet_platforms = [p for p in self.platforms
                                 if isinstance(p.get("fabric"), dict) and p["fabric"].get("model") == "packet"]
        self.small_platform = root / "plat.yaml"
        self.small_platform.write_text(yaml.safe_dump(self.platforms[[p["name"] for p in self.platforms]
                                                                      .index("gemv-allreduce-4gpu")]))
        self.profiles: list[dict[str, Any]] = []
        self.profile_texts: list[str] = []
        for prof in (gemv_allreduce(gpus=4, workgroups=2, vector_bytes=4 * 2 * 1024), _ping()):
            path = root / "p.yaml"
            prof.save(path)
            self.profile_texts.append(path.read_text())
            self.profiles.append(prof.to_dict())
        self.csv = (
            "gpu,wg,t_ns,event,peer,flag,value,nbytes,cond,mode,t_end_ns\n"
            "0,0,0,start,,,,,,,\n0,0,100,write,1,,,4096,,,350\n0,0,400,signal,1,ready,1,,,,\n0,0,500,end,,,,,,,\n"
            "1,0,0,start,,,,,,,\n1,0,10,wait_begin,,ready,,,>=,poll,\n1,0,900,wait_end,,ready,,,,,\n"
            "1,0,1000,end,,,,,,,\n")
        # A finished run's folder (traced, so it has every table), for the rundir campaign to mutate.
        self.run_dir = root / "run"
        with open(os.devnull, "w") as quiet:
            saved, sys.stdout = sys.stdout, quiet
            try:
                cli.main(["run", str(self.small_platform), "--out", str(self.run_dir), "--trace"])
            finally:
                sys.stdout = saved
        self.run_files = {p.name: p.read_bytes() for p in self.run_dir.iterdir() if p.is_file()}
        # Traces for the import campaign: a gloo Kineto pair (small) and a Chakra ET, as shipped in tests/data.
        self.kineto = [json.loads(gzip.decompress(p.read_bytes())) for p in
                       sorted((REPO / "tests/data/kineto/gloo2").glob("rank-*.json.gz"))]
        self.chakra = sorted((REPO / "tests/data/chakra/gloo4").glob("ALL_REDUCE.*.et"))
        self.sweeps = _sweep_specs(self)
        self.sweep_table = root / "sweep-table"
        _write_sweep_table(self.sweep_table)


def _sweep_specs(ws: Workspace) -> list[dict[str, Any]]:
    """Seed sweep specs: a generator with a grid, a profile with a zip, the general axes form."""
    plat = str(ws.small_platform)
    return [
        {"sweep": 1, "name": "ring", "platform": plat, "generator": {"name": "ring_allreduce", "gpus": 4, "nbytes": 4096},
         "set": {"fabric.latency": "200ns", "gpus.workgroups": 2}, "grid": {"seed": [1, 2], "generator.mode": ["poll"]},
         "metrics": ["kernel_time_ns", "busbw_GBps"], "timeout": "2s"},
        {"sweep": 1, "platform": plat, "profile": str(ws.small_profile),
         "zip": {"fabric.latency": ["100ns", "200ns"], "gpus.memory.latency": ["300ns", "400ns"]},
         "metrics": ["kernel_time_ns", "flag_reads"], "timeout": "2s", "trace": False},
        {"sweep": 1, "platform": plat, "generator": {"name": "gemv_allreduce", "gpus": 4, "workgroups": 2,
                                                     "vector_bytes": 8192},
         "axes": [{"grid": {"generator.name": ["gemv_allreduce"], "fabric.latency": {"start": 100, "stop": 200,
                                                                                      "step": 100}}},
                  {"zip": {"seed": [1, 2]}}],
         "metrics": ["kernel_time_ns", "slowest_gpu"], "timeout": "2s"},
    ]


def _write_sweep_table(folder: Path) -> None:
    """A finished sweep's table, as `eidola sweep` writes it, for `eidola sweep plot` cases."""
    import pandas

    folder.mkdir()
    pandas.DataFrame({"point": [0, 1, 2], "seed": [1, 2, 3], "kernel_time_ns": [10.0, 12.0, 11.0],
                      "status": ["ok", "ok", "timeout"], "exit_status": [0, 0, 3], "error": ["", "", "killed"],
                      "hash": ["a" * 64, "b" * 64, "c" * 64], "folder": ["points/a", "points/b", "points/c"]}
                     ).to_parquet(folder / "sweep.parquet", index=False)


def _ping() -> Any:
    b = ProfileBuilder(gpus=2, workgroups=1, name="ping")
    b.flag("ready")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).compute(ns=1000).write(dst=1, buffer="data", offset=0, nbytes=4096) \
        .signal(dst=1, flag="ready", op="add", value=1)
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1, mode="poll", interval_ns=100)
    b.jitter(dist="lognormal", mu=0, sigma=0.1)
    return b.build()


_PLATFORM_KEYS = ["eidola", "name", "gpus", "count", "fabric", "model", "latency", "limits", "wall", "profile", "seed",
                  "topology", "dims", "link", "switch", "plugins", "address_map", "stride", "base", "memory",
                  "workgroups", "check_protocol", "components", "connections", "custom", "edges"]
_PROFILE_KEYS = ["gpus", "workgroups", "flags", "buffers", "programs", "variability", "skew", "jitter", "delays", "ns",
                 "dst", "nbytes", "offset", "value", "interval_ns", "cycles", "mode", "wake"]


def case_platform(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """A platform file mutated in structure or text, through `eidola validate` (a third of them `eidola run`)."""
    path = d / "platform.yaml"
    doc = r.choice(ws.platforms)
    kind = r.randrange(10)
    command = ["run", "--timeout", "10s", "--out", str(d / "out")] if r.random() < 0.3 else ["validate"]
    if kind < 6:
        path.write_text(yaml.safe_dump(_mutate_doc(r, doc, _PLATFORM_KEYS), allow_unicode=r.random() < 0.5))
    elif kind < 9:
        path.write_bytes(_mutate_text(r, yaml.safe_dump(doc)))
    else:
        special = r.randrange(5)
        target = {0: "/dev/zero", 1: "/dev/urandom", 2: str(d), 3: "/dev/null", 4: str(d / "missing.yaml")}[special]
        return [*command, target]
    return [*command, str(path)]


def case_profile(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """A profile file mutated in structure or text, through `eidola validate` on a 4-GPU platform."""
    path = d / "profile.yaml"
    kind = r.randrange(10)
    i = r.randrange(len(ws.profiles))
    if kind < 5:
        path.write_text(yaml.safe_dump(_mutate_doc(r, ws.profiles[i], _PROFILE_KEYS)))
    elif kind < 9:
        path.write_bytes(_mutate_text(r, ws.profile_texts[i]))
    else:
        return ["validate", str(ws.small_platform), "--profile", r.choice(["/dev/zero", "/dev/urandom", str(d)])]
    return ["validate", str(ws.small_platform), "--profile", str(path)]


def case_csv(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """A timestamps CSV with cells, rows or bytes changed, through `eidola import timestamps`."""
    path = d / "run.csv"
    lines = ws.csv.splitlines()
    kind = r.randrange(6)
    if kind <= 2:
        rows = [line.split(",") for line in lines]
        for _ in range(r.randrange(1, 4)):
            row = r.choice(rows[1:] if kind else rows)
            j = r.randrange(len(row))
            row[j] = str(_scalar(r)).replace(",", ";").replace("\n", " ")[:300]
        path.write_text("\n".join(",".join(x) for x in rows) + "\n")
    elif kind == 3:
        body = lines[1:]
        r.shuffle(body)
        path.write_text("\n".join([lines[0]] + body[:r.randrange(len(body) + 1)] * r.randrange(1, 3)) + "\n")
    else:
        path.write_bytes(_mutate_text(r, ws.csv))
    return ["import", "timestamps", str(path), "-o", str(d / "out.yaml")]


def case_cli(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """Random command lines: commands, options and values, including runs with limits."""
    command = r.choice(["run", "run", "validate", "describe", "plot", "import", "bogus", "--help"])
    argv = [command]
    if command in ("run", "validate"):
        argv.append(r.choice([str(ws.small_platform), str(ws.small_platform), str(d), "/dev/null", "nope.yaml"]))
        for _ in range(r.randrange(0, 4)):
            opt = r.choice(["--set", "--set", "--profile", "--out", "--timeout", "--json", "--trace-limit", "--weird"])
            if command == "validate" and opt in ("--out", "--json", "--trace-limit", "--timeout"):
                continue
            if opt == "--set":
                key = r.choice(["fabric.latency", "gpus.count", "gpus.workgroups", "name", "seed", "fabric.model",
                                "limits.wall", "gpus.memory.latency", "fabric", "x.y.z", "", "gpus.max_payload"])
                argv += [opt, f"{key}={_scalar(r)}" if r.random() < 0.9 else key]
            elif opt == "--profile":
                argv += [opt, r.choice([str(ws.small_profile), "/dev/zero", str(d)])]
            elif opt == "--out":
                argv += [opt, r.choice([str(d / "o"), str(d / "o" / ".." / "p"), "/proc/nope", str(ws.small_profile)])]
            elif opt == "--timeout":
                argv += [opt, r.choice(["2s", "0s", "-1s", "1e400s", "abc", "10ms", "60", "3600s", "1us"])]
            elif opt == "--trace-limit":
                argv += [opt, r.choice(["0", "-5", "x", str(2**70)])]
            else:
                argv.append(opt)
    elif command == "describe":
        argv += r.choice([[], ["EidolonGpu"], ["eidola.PacketFabric"], ["Nope"], ["\x00"]])
    elif command == "plot":
        argv.append(r.choice([str(d), "/dev/null", "/nonexistent"]))
    elif command == "import":
        argv += r.choice([["timestamps"], ["timestamps", str(d)], ["timestamps", "/dev/zero", "-o", str(d / "x.yaml")],
                          ["timestamps", str(ws.small_profile), "-o", str(d / "x.yaml")], ["other"]])
    return argv


def case_netsweep(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """`eidola netsweep` with random rates, cycles, durations, packets, patterns and timeouts (short runs)."""
    argv = ["netsweep", str(ws.small_platform), "--out", str(d / "ns"), "--duration", "200ns", "--warmup", "50ns",
            "--timeout", "5s"]
    for _ in range(r.randrange(1, 4)):
        opt = r.choice(["--rates", "--rates", "--cycle", "--packet", "--pattern", "--timeout", "--seed", "--hotspots",
                        "--duration", "--set"])
        value = r.choice({
            "--rates": ["0.1:inf:1", "1e-9:1:1e-9", "0.05", "0.1,0.2", "nan", "-1", "0:1:0", "1:0.1:0.1", "0.1:0.2",
                        ",".join(["0.1"] * 1001), "1e308:1e309:1", "0.01:0.02:0.01"],
            "--cycle": ["1fs", "1ps", "0.5ps", "1ns", "0ns", "1e20s", "x", "-1ns"],
            "--packet": ["0B", "1B", "256B", "4KiB", "2GiB", "1.5B", "x"],
            "--pattern": ["uniform", "transpose", "hotspot", "bit_reverse", "nope", ""],
            "--timeout": ["0s", "2s", "1e400s", "x", "-1s"],
            "--seed": ["0", "-1", str(2**70), "x"],
            "--hotspots": ["0", "0,0", "9", "a", ""],
            "--duration": ["0ns", "1e30s", "100ns", "x"],
            "--set": ["gpus.count=1", "fabric.latency=1ps", "limits.memory=1MB", "limits.memory=x"],
        }[opt])
        argv += [opt, str(value)]
    if "--rates" not in argv:
        argv += ["--rates", "0.05"]
    return argv


def case_rundir(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """A finished run's folder with a file removed, truncated, replaced or bit-flipped, through `eidola plot`
    (or `eidola compare` against a non-trace)."""
    run = d / "run"
    run.mkdir(exist_ok=True)
    for name, data in ws.run_files.items():
        (run / name).write_bytes(data)
    name = r.choice(sorted(ws.run_files))
    kind = r.randrange(5)
    if kind == 0:
        (run / name).unlink()
    elif kind == 1:
        data = ws.run_files[name]
        (run / name).write_bytes(data[:r.randrange(len(data) + 1)])
    elif kind == 2:
        (run / name).write_bytes(_mutate_text(r, ws.run_files[name].decode(errors="replace")))
    elif kind == 3 and name.endswith(".json"):
        doc = json.loads(ws.run_files[name])
        (run / name).write_text(json.dumps(_mutate_doc(r, doc, ["gpus", "kernel_time_ns", "name", "links", "events"]),
                                           default=str))
    else:
        (run / name).unlink()
        os.symlink(r.choice(["/dev/zero", "/dev/urandom"]), run / name)
    if r.random() < 0.2:
        return ["compare", str(run), str(run / name)]
    return ["plot", str(run)]


def case_memory(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """Platforms that would need much memory: big buffers, many GPUs, dense topologies, tight limits.memory."""
    doc = copy.deepcopy(r.choice(ws.platforms))
    if not isinstance(doc.get("fabric"), dict) or "components" in doc:
        doc = copy.deepcopy(ws.platforms[0])
    fabric = doc["fabric"]
    if r.random() < 0.7:
        fabric.update({"model": "packet", "topology": r.choice(["fully_connected", "switch", "ring", "mesh2d",
                                                                "torus2d", "hierarchical"])})
        fabric.pop("plugin", None)
        fabric.pop("latency", None)
        fabric["switch"] = {"buffer": r.choice([1, 64, 2**20, 2**31, "16B", "64KiB", "1GiB", "1TiB", "1PiB"]),
                            "vcs": r.choice([1, 2, 8, 64])}
    doc["gpus"]["count"] = r.choice([2, 4, 16, 64, 1000, 4096, 16384])
    doc["gpus"]["workgroups"] = r.choice([1, 304, 2**16, 2**20])
    run = r.random() < 0.2
    if run:  # a run may really allocate what its limit allows: keep it small on a shared machine
        doc["limits"] = {"memory": r.choice(["1MiB", "100MB", "1GB"])}
    elif r.random() < 0.5:
        doc["limits"] = {"memory": r.choice(["1MiB", "100MB", "2GB", "1PB", "0B", "x", 5])}
    path = d / "memory.yaml"
    path.write_text(yaml.safe_dump(doc))
    command = ["run", "--timeout", "10s", "--out", str(d / "out")] if run else ["validate"]
    return [*command, str(path)]


#: Knobs of the flow fabric and the packet knobs it reads or ignores, with edge values of each (case_flow).
_FLOW_KNOBS: dict[str, list[Any]] = {
    "fabric.flow.issue": ["gates", "queue"], "fabric.flow.responses": ["first", "fair"],
    "fabric.flow.incast": ["queue", "share"], "fabric.flow.injection": ["blocking", "free"],
    "fabric.switch.buffer": [1, 2, 16, 192, "16B", "64KiB", 2**20],
    "fabric.switch.vcs": [0, 1, 2], "fabric.switch.flow_control": ["cut_through", "wormhole", "store_and_forward"],
    "fabric.switch.injection": ["voq", "fifo"], "fabric.switch.injection_order": ["arrival", "round_robin"],
    "fabric.switch.arbitration": ["bytes", "packets", "responses_first"], "fabric.switch.ejection": ["unlimited", "link"],
    "fabric.link.count": [1, 2, 64], "fabric.link.ack": ["0B", "1B", "64B"], "fabric.link.header": ["0B", "16B", "4KiB"],
    "fabric.link.latency": ["0ns", "1ps", "10us"], "fabric.link.bandwidth": ["1B/s", "1GB/s", "1PB/s"],
    "fabric.routing.spread": [True, False], "fabric.stats.bin": ["1ps", "1ns", "1ms"],
    "fabric.stats.max_bins": [1, 64, 2**20],
    "gpus.max_outstanding": [1, 2, 64, 2**20], "gpus.max_payload": ["8B", "64B", "256B", "4KiB", "1MiB"],
    "gpus.flow": ["0B", "8B", "256B", "64KiB", "1GiB"], "gpus.train": [1, 16],
    "gpus.memory.latency": ["0ns", "1ps", "1ms"], "gpus.workgroups": [1, 2, 304],
}


def case_flow(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """A shipped packet platform switched to `fabric.model: flow`, with a few of the flow fabric's knobs and the packet
    knobs it reads or ignores set to edge values (and sometimes one key mutated as in case_platform), run on the small
    profile or on writes of 1 byte to 1 MiB both ways, through `eidola run` (5 s). Why: no shipped platform is a flow
    one, so the platform campaign reaches the flow fabric only when a mutation happens to write `flow`. Sizes stop at 1
    MiB: a 64 MiB write through a one-flit buffer simulates for seconds, which costs the case its time, not a finding.
    Bins go down to 1 ps, with budgets of 1 bin up: fabric.stats.max_bins bounds what they cost."""
    doc = copy.deepcopy(r.choice(ws.packet_platforms))
    doc["fabric"]["model"] = "flow"
    for key in r.sample(sorted(_FLOW_KNOBS), r.randrange(1, 5)):
        *parents, leaf = key.split(".")
        node = doc
        for name in parents:  # a platform may leave a group out: made here, as its author would write it
            node = node.setdefault(name, {})
        node[leaf] = r.choice(_FLOW_KNOBS[key])
    if r.random() < 0.2:
        doc = _mutate_doc(r, doc, _PLATFORM_KEYS)
    if r.random() < 0.5:
        b = ProfileBuilder(gpus=2, workgroups=2, name="flow")
        b.flag("done")
        b.buffer("data", nbytes=(1 << 20) + 1)
        for wg in range(2):
            nbytes = r.choice([1, 8, 256, 257, 4096, (1 << 20) + 1])
            b.program(gpu=0, wg=wg).write(dst=1, buffer="data", offset=0, nbytes=nbytes) \
                .signal(dst=1, flag="done", op="add", value=1)
            b.program(gpu=1, wg=wg).write(dst=0, buffer="data", offset=0, nbytes=nbytes)
        b.program(gpu=1, wg=0).wait(flag="done", cond=">=", value=2, mode=r.choice(["poll", "syncmon"]), interval_ns=100)
        b.build().save(d / "profile.yaml")
        doc["profile"] = str(d / "profile.yaml")
    path = d / "platform.yaml"
    path.write_text(yaml.safe_dump(doc))
    return ["run", "--timeout", "5s", "--out", str(d / "out"), str(path)]


_SWEEP_KEYS = ["sweep", "name", "platform", "profile", "generator", "set", "grid", "zip", "axes", "metrics", "timeout",
               "trace", "start", "stop", "step", "fabric.latency", "fabric.latncy", "seed", "gpus.count",
               "gpus.memory.latency", "generator.name", "generator.mode", "generator.chunkz", "name", "mode"]
SWEEP_POINTS = 8  #: EIDOLA_MAX_SWEEP_POINTS in sweep cases: with a 2 s timeout and 2 workers, a case ends in 8 s


def _no_generator_values(path: tuple[Any, ...]) -> bool:
    # A generator's parameter values are left alone (its name and keys are fuzzed): a ring of 2^31
    # chunks is a legitimately huge workload, not a finding, and would only time the case out.
    return not (len(path) >= 2 and path[0] == "generator" and path[1] != "name")


def _mutate_sweep(r: random.Random, doc: dict[str, Any]) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(r.randrange(1, 4)):
        paths = [p for p in _paths(doc) if p and _no_generator_values(p)]
        path = r.choice(paths)
        action = r.randrange(4)
        if action <= 1:
            _set(doc, path, _scalar(r))
        elif action == 2:
            _pop(doc, path, lists=False)
        else:
            node = doc
            for p in path:
                node = node[p]
            if isinstance(node, dict):
                key = r.choice(_SWEEP_KEYS)
                node[key if r.random() < 0.8 else r.choice([1, None, True, 2.5])] = _scalar(r)
    if isinstance(doc, dict) and "timeout" not in doc:
        doc["timeout"] = "2s"  # every case stays bounded; timeout values themselves are still fuzzed above
    return doc


def case_sweep(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """A sweep spec mutated in structure or text, odd options, a tampered output folder, or `sweep plot`."""
    path = d / "spec.yaml"
    base = r.choice(ws.sweeps)
    kind = r.randrange(12)
    out = d / "out"
    argv = ["sweep", str(path), "--out", str(out), "--workers", "2"]
    if kind < 6:
        path.write_text(yaml.safe_dump(_mutate_sweep(r, base), allow_unicode=r.random() < 0.5))
    elif kind < 8:
        path.write_bytes(_mutate_text(r, yaml.safe_dump(base)))
    elif kind == 8:
        special = r.randrange(4)
        if special == 0:
            os.mkfifo(path)
        target = {0: str(path), 1: "/dev/zero", 2: str(d), 3: str(d / "missing.yaml")}[special]
        return ["sweep", target, "--out", str(out)]
    elif kind == 9:
        path.write_text(yaml.safe_dump(base))
        option = r.choice([["--dask", r.choice(["junk", "local:0", "local:x", "tcp://", "tcp://h:99999", "\x00"])],
                           ["--workers", r.choice(["0", "-1", "100000", "x"])], ["--out", str(path)],
                           ["--out", str(path / "below")], ["--resume", "--overwrite"]])
        return ["sweep", str(path), *option]
    elif kind == 10:
        # A finished folder, then tampered with: rows, folders and the table.
        path.write_text(yaml.safe_dump(base))
        out.mkdir()
        (out / "sweep.parquet").write_bytes(_mutate_text(r, "PAR1" + "x" * 200))
        points = out / "points"
        if r.random() < 0.2:
            points.write_text("not a folder")
        else:
            points.mkdir()
            for i in range(r.randrange(1, 4)):
                folder = points / r.choice([f"{i:016x}", "x", ".."])
                folder.mkdir(exist_ok=True)
                row = {"hash": "0" * 64, "status": r.choice(["ok", "timeout", "bogus"]), "exit_status": _scalar(r),
                       "error": _scalar(r), "kernel_time_ns": _scalar(r), "timeout_s": _scalar(r)}
                target = folder / "row.json"
                if target.exists():
                    continue  # maybe a FIFO made just before: writing it here would block the campaign
                choice = r.randrange(4)
                if choice == 0:
                    os.mkfifo(target)
                elif choice == 1:
                    target.write_bytes(_mutate_text(r, json.dumps(row, default=str)))
                else:
                    target.write_text(json.dumps(row, default=str))
        argv.append(r.choice(["--resume", "--resume", "--overwrite", "--workers"]))
        if argv[-1] == "--workers":
            argv.append("1")
    else:
        table = d / "table"
        shutil.copytree(ws.sweep_table, table)
        data = (table / "sweep.parquet").read_bytes()
        how = r.randrange(4)
        if how == 0:
            (table / "sweep.parquet").write_bytes(data[:r.randrange(len(data))])
        elif how == 1:
            b = bytearray(data)
            for _ in range(r.randrange(1, 8)):
                b[r.randrange(len(b))] = r.randrange(256)
            (table / "sweep.parquet").write_bytes(bytes(b))
        elif how == 2:
            (table / "sweep.parquet").unlink()
            os.mkfifo(table / "sweep.parquet")
        x, y = r.choice([("seed", "kernel_time_ns"), ("seed", "nope"), ("status", "kernel_time_ns"), ("", "")])
        return ["sweep", "plot", str(table), "--x", x, "--y", y, "-o", str(d / "fig")]
    return argv


_KINETO_KEYS = ["ts", "dur", "args", "name", "cat", "tid", "pid", "ph", "In msg nelems", "Out msg nelems", "dtype",
                "Group size", "Process Group Ranks", "world_size", "rank", "traceEvents", "distributedInfo"]


def _kineto_event_mutation(r: random.Random, doc: dict[str, Any]) -> dict[str, Any]:
    """One to three events of a Kineto trace changed in structure (the rest left whole, so the trace
    still parses far enough for the change to matter)."""
    doc = copy.deepcopy(doc)
    events = doc.get("traceEvents")
    if not isinstance(events, list) or not events:
        return doc
    for _ in range(r.randrange(1, 4)):
        i = r.randrange(len(events))
        events[i] = _mutate_doc(r, events[i], _KINETO_KEYS)
    return doc


def case_import(r: random.Random, ws: Workspace, d: Path) -> list[str]:
    """A Kineto trace (gloo, two ranks) or a Chakra ET mutated in structure, text or compression, through
    `eidola import kineto|chakra` with random options (--ranks, --workgroups, --algorithm)."""
    out = ["-o", str(d / "out.yaml")]
    options: list[str] = []
    for _ in range(r.randrange(0, 3)):
        opt = r.choice(["--ranks", "--workgroups", "--algorithm", "--wait"])
        options += [opt, r.choice({"--ranks": ["2", "4", "1", "0", "-1", "x", str(2**40)],
                                   "--workgroups": ["1", "8", "0", "-2", "x", str(2**31)],
                                   "--algorithm": ["ring", "direct", "tree"],
                                   "--wait": ["poll", "syncmon", "spin"]}[opt])]
    if r.random() < 0.2:
        path = d / "trace.et"
        path.write_bytes(_mutate_text(r, r.choice(ws.chakra).read_bytes().decode("latin-1")))
        return ["import", "chakra", str(path), *options, *out]
    docs = [copy.deepcopy(x) for x in ws.kineto]
    which = r.randrange(len(docs))
    kind = r.randrange(6)
    paths = [d / f"rank-{i}.json.gz" for i in range(len(docs))]
    for i, (doc, path) in enumerate(zip(docs, paths)):
        data = json.dumps(doc).encode()
        if i == which:
            if kind <= 2:
                data = json.dumps(_kineto_event_mutation(r, doc), default=str).encode()
            elif kind == 3:
                data = json.dumps(_mutate_doc(r, {k: v for k, v in doc.items() if k != "traceEvents"},
                                              _KINETO_KEYS) | {"traceEvents": doc["traceEvents"]}, default=str).encode()
            elif kind == 4:
                data = _mutate_text(r, data.decode())
        packed = gzip.compress(data, compresslevel=1, mtime=0)
        if i == which and kind == 5:  # the compression itself: truncated, flipped bytes, trailing garbage
            b = bytearray(packed)
            how = r.randrange(3)
            if how == 0:
                b = b[:r.randrange(len(b))]
            elif how == 1:
                for _ in range(r.randrange(1, 8)):
                    b[r.randrange(len(b))] = r.randrange(256)
            else:
                b += bytes(r.randrange(256) for _ in range(r.randrange(1, 64)))
            packed = bytes(b)
        path.write_bytes(packed)
    files = [str(p) for p in paths] if r.random() < 0.7 else [str(paths[which])]
    return ["import", "kineto", *files, "--compute", "host", *options, *out]


#: Campaigns whose cases cost seconds (figures are drawn) run this fraction of --cases, so the test
#: command's bounded run stays within its time budget.
SHARE = {"rundir": 0.1, "netsweep": 0.5, "flow": 0.5}

CASES: dict[str, Callable[[random.Random, Workspace, Path], list[str]]] = {
    "platform": case_platform, "profile": case_profile, "csv": case_csv, "cli": case_cli,
    "sweep": case_sweep, "import": case_import, "netsweep": case_netsweep, "rundir": case_rundir, "memory": case_memory,
    "flow": case_flow}


# ---------------------------------------------------------------- running

def run_case(argv: list[str], cwd: Path, limit_s: float) -> tuple[str, str]:
    """Runs the CLI in a forked child; returns (outcome, its output). Outcome: exit-N, signal-NAME or hang."""
    out = cwd / "output.txt"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(cwd)
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            try:
                code = cli.main(argv)
            except SystemExit as e:  # argparse's usage errors and --help
                code = e.code if isinstance(e.code, int) else 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    deadline = time.monotonic() + limit_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hang", out.read_text(errors="replace") if out.exists() else ""
        time.sleep(0.002)
    text = out.read_text(errors="replace") if out.exists() else ""
    if os.WIFSIGNALED(status):
        return f"signal-{signal.Signals(os.WTERMSIG(status)).name}", text
    return f"exit-{os.WEXITSTATUS(status)}", text


def _special_files(folder: str, names: list[str]) -> list[str]:
    """The FIFOs and devices among `names`: copying one would read it, and a FIFO blocks."""
    return [n for n in names if not (os.path.isdir(os.path.join(folder, n)) or os.path.isfile(os.path.join(folder, n)))]


def main() -> int:
    """Runs the campaigns; exit status 0 when every case ended in 0, 2 or 3."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100, help="cases per campaign")
    ap.add_argument("--campaign", choices=(*CAMPAIGNS, "all"), default="all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=float, default=20.0, help="wall seconds a case may take")
    ap.add_argument("--keep", type=Path, default=REPO / "build" / "fuzz-findings", help="where findings are kept")
    ap.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = ap.parse_args()
    from eidola.run import sysc

    sysc.load()  # once, so every forked case starts with the models loaded
    # Sweep cases stay small: a mutated range of a million points is refused rather than run.
    os.environ["EIDOLA_MAX_SWEEP_POINTS"] = str(SWEEP_POINTS)
    campaigns = CAMPAIGNS if args.campaign == "all" else (args.campaign,)
    counts: dict[str, Counter[str]] = {}
    findings = 0
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="eidola-fuzz-") as tmp:
        ws = Workspace(Path(tmp))
        for campaign in campaigns:
            counts[campaign] = Counter()
            for i in range(max(1, round(args.cases * SHARE.get(campaign, 1.0)))):
                r = random.Random(f"{campaign}-{args.seed}-{i}")
                d = Path(tmp) / "case"
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir()
                argv = CASES[campaign](r, ws, d)
                outcome, text = run_case(argv, d, args.limit)
                if outcome == "exit-3" and UNCAUGHT in text:
                    outcome = "exit-3-uncaught"
                counts[campaign][outcome] += 1
                if outcome not in {f"exit-{c}" for c in GOOD}:
                    findings += 1
                    keep = args.keep / f"{campaign}-{args.seed}-{i}"
                    shutil.rmtree(keep, ignore_errors=True)
                    shutil.copytree(d, keep, ignore=_special_files)
                    (keep / "argv.json").write_text(json.dumps(argv))
                    print(f"FINDING {campaign} #{i}: {outcome}: {argv}\n  {text.strip().splitlines()[-1:]}",
                          file=sys.stderr)
    total = sum(sum(c.values()) for c in counts.values())
    summary = {"cases": total, "findings": findings, "seconds": round(time.monotonic() - start, 1),
               "by_campaign": {k: dict(sorted(v.items())) for k, v in counts.items()}}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for k, v in counts.items():
            print(f"{k:9s} " + ", ".join(f"{o}: {n}" for o, n in sorted(v.items())))
        print(f"{total} cases, {findings} findings, {summary['seconds']} s")
    return 0 if findings == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
