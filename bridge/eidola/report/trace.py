"""The simulated run as a Chrome/Perfetto trace (trace.json), opened in ui.perfetto.dev or chrome://tracing.

Layout: a process per GPU with a thread per workgroup carrying compute, write, read, signal and
wait slices (waits labelled with flag, condition and mode); flow arrows from each signal to the
wait it releases; a counter of SyncMon occupancy per GPU (from 0 at the start, so a GPU whose
workgroups never armed the monitor shows a flat track rather than none); and in a "fabric"
process a counter per link over time: busy time per bin on a fabric with link timing (packet),
payload bytes per bin per GPU pair on the ideal fabric. Everything comes from buffers the C++
models filled (the op records, occupancy changes and link bins); this module only arranges and
writes them.

Size is bounded: when the run has more op slices than `limit`, only every n-th workgroup of each
GPU is kept, and the trace's metadata says so.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..run.result import Result

__all__ = ["build_trace", "write_trace", "DEFAULT_LIMIT"]

DEFAULT_LIMIT = 500_000  #: op slices kept at most (about 100 bytes each in the file)


def _us(ns: float) -> float:
    return round(float(ns) / 1000.0, 6)


def _end_us(r: Any) -> float:
    """Where op `r`'s slice ends as a viewer reads it, ts + dur as written: a flow arrow bound to the slice must
    not fall an ulp outside it (_us of the end itself did, for 4 of 96 arrows of the default run)."""
    return _us(r["begin_ns"]) + _us(r["end_ns"] - r["begin_ns"])


def build_trace(result: Result | SimpleNamespace, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """The trace as a dict in the Trace Event Format (``traceEvents`` plus metadata)."""
    ops = result.ops_table()
    if ops is None:
        raise ValueError("the run was not traced: simulate(..., trace=True) or `eidola run --trace`")
    workgroups = max(1, int(ops["wg"].max()) + 1) if len(ops) else 1
    kept, wg_stride, gpu_stride = _sample(ops, limit)
    events = []
    for g in np.unique(result.gpus["gpu"]):
        events.append({"ph": "M", "name": "process_name", "pid": int(g), "tid": 0, "args": {"name": f"GPU {g}"}})
    for g, w in sorted({(int(r["gpu"]), int(r["wg"])) for r in kept}):
        events.append({"ph": "M", "name": "thread_name", "pid": g, "tid": w, "args": {"name": f"workgroup {w}"}})
    for r in kept:
        args: dict[str, Any] = {"op": int(r["op"])}
        if r["detail"]:
            args["detail"] = str(r["detail"])
        name = str(r["kind"]) if r["kind"] != "wait" else f"wait {r['detail']}"
        events.append({"ph": "X", "name": name, "cat": str(r["kind"]), "pid": int(r["gpu"]), "tid": int(r["wg"]),
                       "ts": _us(r["begin_ns"]), "dur": _us(r["end_ns"] - r["begin_ns"]), "args": args})
    events += _flows(kept)
    # Counters share the limit: half for SyncMon when there are link counters too.
    has_links = result.link_bins is not None and len(result.link_bins) > 0
    syncmon = _syncmon_counters(result, limit // 2 if has_links else limit)
    links, link_note = _link_counters(result, max(0, limit - len(syncmon)))
    events += syncmon + links
    meta = {"simulation": result.name, "profile": result.profile_name, "kernel_time_ns": result.kernel_time_ns,
            "op_slices_total": len(ops), "op_slices_written": len(kept),
            "workgroups_per_gpu": workgroups,
            "sampling": _sampling_note(kept, wg_stride, gpu_stride, len(ops), limit),
            **({"link_counters": link_note} if link_note else {})}
    return {"traceEvents": events, "displayTimeUnit": "ns", "metadata": meta}


def _syncmon_counters(result: Result | SimpleNamespace, limit: int) -> list[dict[str, Any]]:
    """SyncMon occupancy per GPU: 0 at the start, then after each change (thinned to `limit` events)."""
    gpus = [int(g) for g in result.gpus["gpu"]]
    counters = result.syncmon_trace
    budget = max(1, limit - min(len(gpus), limit))
    if counters is not None and len(counters) > budget:  # thinned like the slices: the file stays bounded
        counters = counters[:: -(-len(counters) // budget)]
    events = [{"ph": "C", "name": "SyncMon occupancy", "pid": g, "ts": 0.0, "args": {"addresses": 0}}
              for g in gpus[:limit]]
    for r in counters if counters is not None else ():
        events.append({"ph": "C", "name": "SyncMon occupancy", "pid": int(r["gpu"]), "ts": _us(r["time_ns"]),
                       "args": {"addresses": int(r["occupancy"])}})
    return events


def _link_counters(result: Result | SimpleNamespace, limit: int) -> tuple[list[dict[str, Any]], str]:
    """A counter per link in a "fabric" process: busy ns per bin where links have timing, payload
    bytes per bin per GPU pair on the ideal fabric. A bin followed by an idle one is closed by a 0,
    since a counter holds its value until the next sample. Past `limit` events, whole links are
    left out (1 in n kept, each kept one complete); returns (events, a note saying so or "")."""
    bins = result.link_bins
    if bins is None or not len(bins):
        return [], ""
    timed = bool(np.any(bins["busy_ns"] > 0))
    nonzero = bins["bin"] > 0
    width = float(np.median(bins["start_ns"][nonzero] / bins["bin"][nonzero])) if nonzero.any() else 1000.0
    pid = int(result.gpus["gpu"].max()) + 1 if len(result.gpus) else 0
    events: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                                     "args": {"name": "fabric"}}]
    key, what = ("busy_ns", "link") if timed else ("bytes", "pair")
    per_link: dict[int, list[dict[str, Any]]] = {}
    order = np.lexsort((bins["bin"], bins["link"]))
    for n, i in enumerate(order):
        r = bins[i]
        link = result.links[int(r["link"])]
        name = f"{what} {link['src']}->{link['dst']}"
        value = round(float(r["busy_ns"]), 3) if timed else int(r["bytes"])
        track = per_link.setdefault(int(r["link"]), [])
        track.append({"ph": "C", "name": name, "pid": pid, "ts": _us(r["start_ns"]), "args": {key: value}})
        following = bins[order[n + 1]] if n + 1 < len(order) else None
        if following is None or following["link"] != r["link"] or following["bin"] != r["bin"] + 1:
            track.append({"ph": "C", "name": name, "pid": pid, "ts": _us((int(r["bin"]) + 1) * width),
                          "args": {key: 0}})
    total = sum(len(t) for t in per_link.values())
    stride = 1
    while sum(len(t) for k, t in enumerate(per_link.values()) if k % stride == 0) > max(0, limit - 1):
        stride += 1
        if stride > len(per_link):
            return [], f"no {what} counters: {total} counter events would pass the limit of {limit}"
    for k, track in enumerate(per_link.values()):
        if k % stride == 0:
            events += track
    note = (f"1 {what} in {stride} of {len(per_link)} has a counter ({total} counter events would pass the "
            f"limit of {limit})" if stride > 1 else "")
    return events, note


def _sample(ops: np.ndarray[Any, np.dtype[Any]], limit: int) -> tuple[np.ndarray[Any, np.dtype[Any]], int, int]:
    """The op slices of 1 workgroup in `wg_stride` (of 1 GPU in `gpu_stride` when even that is too many),
    the fewest left out that keeps at most `limit` slices; returns (kept, wg_stride, gpu_stride)."""
    if len(ops) <= limit:
        return ops, 1, 1
    wgs = int(ops["wg"].max()) + 1
    for wg_stride in range(max(1, len(ops) // max(1, limit)), wgs + 1):
        kept = ops[ops["wg"] % wg_stride == 0]
        if len(kept) <= limit:
            return kept, wg_stride, 1
    first = ops[ops["wg"] == 0]  # one workgroup per GPU is still too many: sample the GPUs too
    gpus = int(ops["gpu"].max()) + 1
    for gpu_stride in range(2, gpus + 1):
        kept = first[first["gpu"] % gpu_stride == 0]
        if len(kept) <= limit:
            return kept, wgs, gpu_stride
    return first[:0], wgs, gpus


def _sampling_note(kept: np.ndarray[Any, np.dtype[Any]], wg_stride: int, gpu_stride: int, total: int,
                   limit: int) -> str:
    """Which workgroups the trace shows, named from what was kept (never a workgroup that does not exist)."""
    if wg_stride == 1 and gpu_stride == 1:
        return "all workgroups"
    wgs = sorted({int(w) for w in kept["wg"]})
    gpus = sorted({int(g) for g in kept["gpu"]})
    shown = ", ".join(map(str, wgs[:4])) + (", ..." if len(wgs) > 4 else "")
    text = f"1 workgroup in {wg_stride} per GPU (workgroups {shown})"
    if gpu_stride > 1:
        text += f" on 1 GPU in {gpu_stride} ({len(gpus)} GPUs)"
    return f"{text}: the run had {total} op slices, the limit is {limit}; {len(kept)} are shown"


def _flows(ops: np.ndarray[Any, np.dtype[Any]]) -> list[Any]:
    """An arrow from each signal to the wait it releases: the last signal to that GPU's flag
    issued before the wait ended (a signal's slice ends when it is issued, its release done)."""
    signals: dict[tuple[int, str], list[Any]] = {}
    for r in ops:
        if r["kind"] == "signal":
            signals.setdefault((int(r["peer"]), str(r["flag"])), []).append(r)
    starts = {}
    for key in signals:
        signals[key].sort(key=lambda r: float(r["end_ns"]))
        starts[key] = [float(r["end_ns"]) for r in signals[key]]  # issued when its release was done
    out, next_id = [], 1
    for r in ops:
        if r["kind"] != "wait" or r["end_ns"] <= r["begin_ns"]:
            continue  # a wait that never waited was released by nothing in particular
        key = (int(r["gpu"]), str(r["flag"]))
        n = bisect.bisect_right(starts.get(key, []), float(r["end_ns"]))
        if n == 0:
            continue
        s = signals[key][n - 1]
        out.append({"ph": "s", "id": next_id, "name": "release", "cat": "flag", "pid": int(s["gpu"]),
                    "tid": int(s["wg"]), "ts": _end_us(s)})
        out.append({"ph": "f", "bp": "e", "id": next_id, "name": "release", "cat": "flag", "pid": int(r["gpu"]),
                    "tid": int(r["wg"]), "ts": _end_us(r)})
        next_id += 1
    return out


def write_trace(result: Result | SimpleNamespace, path: str | Path, limit: int = DEFAULT_LIMIT) -> Path:
    """Writes trace.json for a traced run; returns its path."""
    path = Path(path)
    path.write_text(json.dumps(build_trace(result, limit), separators=(",", ":")))
    return path
