"""Results of one simulation: numpy tables read in bulk from C++, a summary, and files on disk."""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .fabric_notes import fabric_notes
from .nccl_tests import bus_factor
from .tables import structured, table_dtype
from .traffic_result import traffic_figures

if TYPE_CHECKING:
    from ..platform.credits import LinkCredits
    from ..workload.profile import Profile

__all__ = ["Result", "Summary", "SYNCMON_DTYPE", "BUS_FACTOR"]

def _factor(op: str) -> Callable[[int], float]:
    """nccl-tests' bus factor of `op` as a function of the ranks."""
    return lambda p: bus_factor(op, p)


#: busbw / algbw per collective kind of `workload.collectives`, after nccl-tests (PERFORMANCE.md): the factor that
#: makes a collective's bus bandwidth comparable with the bandwidth of the links it runs on. One table: nccl-tests'
#: own (`nccl_tests.bus_factor`), under the names its ops have there.
BUS_FACTOR: dict[str, Callable[[int], float]] = {
    kind: _factor(op)
    for kind, op in (("all_reduce", "all_reduce"), ("all_gather", "all_gather"), ("reduce_scatter", "reduce_scatter"),
                     ("all_to_all", "alltoall"), ("broadcast", "broadcast"), ("send", "sendrecv"))
}

#: SyncMon statistics per GPU: a view of the gpus table's syncmon_* columns.
SYNCMON_DTYPE = np.dtype([("gpu", "<i4"), ("arms", "<i8"), ("wakeups", "<i8"), ("spurious", "<i8"),
                          ("fallbacks", "<i8"), ("peak_entries", "<i8")])


class Summary(dict[str, Any]):
    """A run's headline figures: a plain dict, also callable (returning itself).

    Why callable: `Result.summary` was a method before it became a property, and code written
    then calls it; ``res.summary()`` keeps working at the cost of this one method.
    """

    def __call__(self) -> Summary:
        return self


@dataclass
class Result:
    """What one simulation produced."""

    name: str                     #: the simulation's name (the platform's)
    kernel_time_ns: float         #: when the last workgroup finished (where it stopped, for a partial run)
    gpus: np.ndarray              #: a row per GPU (see run.tables)
    workgroups: np.ndarray        #: a row per (gpu, wg) (see run.tables)
    #: a row per fabric link, a port of all its lanes (see run.tables): utilization is busy / (lanes x kernel
    #: time), lane_utilization_max its busiest lane's busy / kernel time
    links: np.ndarray
    events: int                   #: actions the models processed
    wall_s: float                 #: wall-clock time of the simulation (child process included)
    pairs: np.ndarray | None = None      #: a row per (source, destination) GPU pair (packet fabric)
    link_bins: np.ndarray | None = None  #: busy time and payload bytes per link per time bin (ideal: per GPU pair)
    flags: dict[tuple[int, str | int], int] | None = None  #: final flag values: {(gpu, flag name): value}
    syncmon_trace: np.ndarray | None = None  #: with trace=True: SyncMon occupancy after each change
    ops: np.ndarray | None = None  #: with trace=True: a row per executed op, by gpu, wg, op
    effective_config: str = ""    #: the platform as YAML with every default filled in
    profile_name: str = ""        #: the profile that was replayed
    meta: dict[str, Any] = field(default_factory=dict)  #: platform and profile facts for the summary
    profile: Profile | None = None  #: the Profile that was replayed (op kinds for traces and plots)
    #: with synthetic traffic: offered, accepted (packets per GPU per ns), latency_mean_ns, latency_p50_ns,
    #: latency_p99_ns, latency_max_ns, measured_packets, sources, window_ns; round_trip_mean_ns when reply=True
    traffic: dict[str, float] | None = None
    traffic_gpus: np.ndarray | None = None  #: with synthetic traffic: a row per generating GPU (see run.tables)
    #: with an NVLS switch (fabric.switch.nvls): a row per such fabric, what its multimem unit did: stores,
    #: load_reduces, copies, copy_bytes, member_reads, reduced_bytes, reduce_busy_ns
    nvls: np.ndarray | None = None
    #: readable names of the nodes that links' src and dst number ("gpu3", "n1.nic3", "rail3", "spine0"), from
    #: the fabric's topology; empty when the fabric gives none
    node_names: tuple[str, ...] = ()
    #: per fabric that bins links over time: (the bins' width in ns, times it doubled from fabric.stats.bin to keep
    #: within fabric.stats.max_bins)
    bin_widths: tuple[tuple[float, int], ...] = ()
    #: each kind of fabric link's figures against its switch buffer (platform.credits), for the notes on credits
    link_credits: tuple[LinkCredits, ...] = ()

    @classmethod
    def from_raw(cls, name: str, raw: dict[str, Any], wall_s: float, **kw: Any) -> Result:
        """Assembles a Result from the child's raw tables."""
        tables = raw["tables"]
        gpus = structured("gpus", tables["gpus"])
        links = structured("links", tables["links"])
        # A run stopped at limits.sim_time has unfinished workgroups: its kernel time is where it stopped.
        kernel = raw["end_ps"] / 1000.0 if raw.get("partial") else float(gpus["finish_ns"].max()) if len(gpus) else 0.0
        if kernel > 0:
            links["utilization"] = links["busy_ns"] / (np.maximum(links["lanes"], 1) * kernel)
            links["lane_utilization_max"] = links["lane_busy_max_ns"] / kernel
        ops = None
        if "ops" in tables:
            ops = np.sort(structured("ops", tables["ops"]), order=("gpu", "wg", "op"))
        names = kw.pop("flag_names", ())
        flag_table = tables.get("flags", {})
        flags = {(int(g), names[int(f)] if int(f) < len(names) else int(f)): int(v)
                 for g, f, v in zip(flag_table.get("gpu", []), flag_table.get("flag", []), flag_table.get("value", []))}
        syncmon_trace = structured("syncmon_trace", tables["syncmon_trace"]) if "syncmon_trace" in tables else None
        profile = kw.get("profile")
        if "nvls" in tables:
            kw["nvls"] = structured("nvls", tables["nvls"])
        kw.setdefault("node_names", tuple(raw.get("node_names", ())))
        kw.setdefault("bin_widths", tuple((int(w) / 1000.0, int(d)) for w, d in map(str.split, raw.get("bin_widths", ()))))
        if "traffic" in tables and profile is not None and profile.traffic is not None:
            kw["traffic"], kw["traffic_gpus"] = traffic_figures(tables, profile.traffic.reply)
        return cls(name, kernel, gpus, structured("workgroups", tables["workgroups"]), links,
                   raw["events"], wall_s, structured("pairs", tables.get("pairs", {})),
                   structured("link_bins", tables.get("link_bins", {})), flags, syncmon_trace, ops, **kw)

    @property
    def syncmon(self) -> np.ndarray:
        """SyncMon statistics, a row per GPU (SYNCMON_DTYPE)."""
        out = np.zeros(len(self.gpus), dtype=SYNCMON_DTYPE)
        out["gpu"] = self.gpus["gpu"]
        for field_name in (SYNCMON_DTYPE.names or ())[1:]:
            source = "syncmon_peak" if field_name == "peak_entries" else f"syncmon_{field_name}"
            out[field_name] = self.gpus[source]
        return out

    def ops_table(self) -> np.ndarray | None:
        """With trace=True: every executed op with its kind, peer and flag (for plots and `eidola plot`)."""
        if self.ops is None:
            return None
        events = table_dtype("ops")
        dtype = np.dtype(events.descr + [("kind", "U8"), ("peer", "<i4"), ("flag", "U32"),
                                                   ("detail", "U48")])
        out = np.zeros(len(self.ops), dtype=dtype)
        for name in events.names or ():
            out[name] = self.ops[name]
        out["peer"] = -1
        if self.profile is not None:
            for i, row in enumerate(self.ops):
                op = self.profile.program(int(row["gpu"]), int(row["wg"]))[int(row["op"])]
                out["kind"][i] = op.kind
                out["peer"][i] = op.get("dst", -1) if op.get("dst") is not None else -1
                out["flag"][i] = op.get("flag") or ""
                if op.kind == "wait":
                    out["detail"][i] = f"{op['flag']} {op['cond']} {op['value']} ({op['mode']})"
                elif op.kind in ("write", "read"):
                    out["detail"][i] = f"{op['nbytes']} B to gpu {op['dst']}"
                elif op.kind in ("multicast", "reduce_load"):
                    out["detail"][i] = f"{op['nbytes']} B, group {op['group']}"
                elif op.kind == "put":
                    out["detail"][i] = f"{op['nbytes']} B to gpu {op['dst']}, {op['op']} {op['value']}"
                elif op.kind == "signal":
                    out["detail"][i] = f"{op['op']} {op['value']} on gpu {op['dst']}"
        return out

    def dataframe(self, table: str) -> Any:
        """A table as a pandas DataFrame (pandas must be installed): gpus, workgroups, links, syncmon, pairs, ops."""
        import pandas

        data: Any = self.ops_table() if table == "ops" else getattr(self, table)
        return pandas.DataFrame.from_records(data)

    def busiest_link(self) -> tuple[int, int, float, int] | None:
        """(src, dst, utilization, bytes) of the most used link (by bytes where links have no timing), or None."""
        if not len(self.links):
            return None
        timed = float(self.links["utilization"].max()) > 0
        i = int(np.argmax(self.links["utilization"] if timed else self.links["bytes"]))
        return (int(self.links["src"][i]), int(self.links["dst"][i]), float(self.links["utilization"][i]),
                int(self.links["bytes"][i]))

    def node_name(self, node: int) -> str:
        """The readable name of link-table node `node` ("n1.nic3"), or its number when the fabric names none."""
        return self.node_names[node] if 0 <= node < len(self.node_names) else str(node)

    def algbw_gbs(self, nbytes: int) -> float:
        """Algorithm bandwidth of a collective of `nbytes` (S) that took the whole kernel: S / t, in GB/s."""
        if self.kernel_time_ns <= 0:
            raise ValueError("the run took no time: no bandwidth to report")
        return nbytes / self.kernel_time_ns  # bytes per ns are GB/s

    def busbw_gbs(self, nbytes: int, collective: str, gpus: int | None = None) -> float:
        """Bus bandwidth: `algbw x BUS_FACTOR[collective](P)`, P the GPUs taking part (default: all).

        all_reduce 2(P-1)/P; all_gather, reduce_scatter and all_to_all (P-1)/P; broadcast and send 1.
        S is per-rank input for all_reduce, reduce_scatter and all_to_all, the gathered total for
        all_gather, as in nccl-tests.
        """
        if collective not in BUS_FACTOR:
            raise ValueError(f"collective {collective!r} is not one of {', '.join(BUS_FACTOR)}")
        return self.algbw_gbs(nbytes) * BUS_FACTOR[collective](len(self.gpus) if gpus is None else gpus)

    @property
    def partial(self) -> bool:
        """Whether the run stopped at the platform's limits.sim_time before every workgroup finished."""
        return bool(self.meta.get("partial"))

    @property
    def critical_gpu(self) -> int:
        """The GPU whose last workgroup finished last."""
        return int(self.gpus["gpu"][int(np.argmax(self.gpus["finish_ns"]))]) if len(self.gpus) else -1

    @functools.cached_property
    def notes(self) -> list[str]:
        """The fabric's notes on what limited it (`fabric_notes`), worked out once: the summary, perf's rows, a sweep
        point's metric and its log all read them."""
        return fabric_notes(self)

    @property
    def summary(self) -> Summary:
        """The headline figures, as saved in summary.json (a dict; ``res.summary()`` also works)."""
        g = self.gpus
        busiest = self.busiest_link()
        return Summary({
            "name": self.name,
            "profile": self.profile_name,
            "kernel_time_ns": self.kernel_time_ns,
            "critical_gpu": self.critical_gpu,
            "gpu_finish_ns": [float(x) for x in g["finish_ns"]],
            "bytes_moved": int(g["bytes_sent"].sum()),
            "packets": int(g["packets_sent"].sum()),
            "reads": int(g["reads"].sum()),
            "flag_reads": int(g["flag_reads"].sum()),
            "writes": int(g["writes"].sum()),
            "atomics": int(g["atomics"].sum()),
            "events": self.events,
            "wall_s": self.wall_s,
            "events_per_s": self.events / self.wall_s if self.wall_s > 0 else None,
            "busiest_link": {**dict(zip(("src", "dst", "utilization", "bytes"), busiest)),
                             "src_name": self.node_name(busiest[0]), "dst_name": self.node_name(busiest[1])}
            if busiest else None,
            "notes": self.notes,
            **self.meta,
            # NaN (no packet measured) becomes null: summary.json stays strict JSON.
            **({"traffic": {k: (None if v != v else v) for k, v in self.traffic.items()}} if self.traffic else {}),
        })

    def save(self, directory: str | Path) -> Path:
        """Writes summary.json, the CSV tables (gpus, workgroups, links, syncmon; pairs, link_bins, ops and
        nodes, the links' node names, when present) and effective.yaml into `directory`."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")
        tables = [(self.gpus, "gpus"), (self.workgroups, "workgroups"), (self.links, "links"),
                  (self.syncmon, "syncmon")]
        ops = self.ops_table()
        if ops is not None:
            tables.append((ops, "ops"))
        if self.pairs is not None and len(self.pairs):
            tables.append((self.pairs, "pairs"))
        if self.link_bins is not None and len(self.link_bins):
            tables.append((self.link_bins, "link_bins"))
        if self.nvls is not None and len(self.nvls):
            tables.append((self.nvls, "nvls"))
        for table, name in tables:
            with open(out / f"{name}.csv", "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(table.dtype.names or ())
                w.writerows(table.tolist())  # one conversion: a row at a time took 24 s for 4 million workgroups
        if self.node_names:
            with open(out / "nodes.csv", "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(("node", "name"))
                w.writerows(enumerate(self.node_names))
        if self.effective_config:
            (out / "effective.yaml").write_text(self.effective_config)
        return out
