"""PyTorch-profiler (Kineto) traces -> a profile: ``eidola import kineto RANK0.json RANK1.json ...``.

Per trace (one per rank; plain or gzipped JSON with ``traceEvents``):
- rank: ``distributedInfo.rank``, else the file's position in the list;
- compute (`compute="device"`): GPU kernels (cat ``kernel``) other than NCCL/RCCL ones, one lane
  per stream; (`compute="host"`, a CPU-only trace): the outermost CPU ops of each thread;
- collectives: ops named ``c10d::*`` (the enqueue), ``nccl:*`` / ``gloo:*`` / ``rccl:*`` (the
  backend) and ``record_param_comms`` (sizes). Ops nested in one another on a thread are one
  collective, and a backend op on another thread (gloo's workers) is merged into the oldest
  unmatched enqueue of its kind, so each collective counts once. Its size is ``In/Out msg
  nelems`` × dtype, else the elements of ``Input Dims`` × ``Input type``; its group is
  ``Process Group Ranks``, else the default group of ``distributedInfo``, else every rank.
- placement: in device mode a collective runs on the stream of the NCCL kernel it launched (same
  thread, launched inside it, linked by correlation id), else on a lane of its own thread; in host
  mode on the thread that called it, or on an extra lane when it overlaps the previous item
  there (asynchronous collectives on two threads run on separate workgroup sets).
- symmetric ranks (``--ranks N``, one trace): the traced rank is replicated as N ranks that run
  the same program (SPMD), so every collective becomes a simulated collective among the N.

Every file goes through the safe reader (`inputs.read_input_gz`: a regular file, size-capped,
gzip decompressed with a cap), and every event field the importer uses is type-checked first
(`_events`), so a malformed trace is one error naming the file, the event and the field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ProfileError, cut
from ...inputs import read_input_gz
from ..profile import Profile
from .timeline import Coll, Item, Lane, Report, build_profile, check_ranks, check_workgroups, replicate

if TYPE_CHECKING:
    from ..nccl.system import System

__all__ = ["import_kineto", "DTYPE_BYTES"]

#: element sizes by the dtype spellings Kineto uses ("Input type" and record_param_comms' dtype)
DTYPE_BYTES = {"float": 4, "Float": 4, "float32": 4, "double": 8, "Double": 8, "c10::Half": 2, "Half": 2,
               "half": 2, "c10::BFloat16": 2, "BFloat16": 2, "int": 4, "Int": 4, "long int": 8, "long": 8,
               "Long": 8, "short": 2, "Short": 2, "unsigned char": 1, "Byte": 1, "signed char": 1, "Char": 1,
               "bool": 1, "Bool": 1, "int8_t": 1, "uint8_t": 1}
_KIND = [(re.compile(p), k) for p, k in (
    (r"all_?reduce", "all_reduce"), (r"all_?gather|allgather", "all_gather"),
    (r"reduce_?scatter", "reduce_scatter"), (r"all_?to_?all", "all_to_all"), (r"broadcast", "broadcast"),
    (r"barrier", "barrier"), (r"^send$", "send"), (r"^recv", "recv"))]
_BACKEND = ("nccl:", "gloo:", "rccl:")
#: "Input type" entries that are not a dtype: the argument is a list, a scalar, or not a tensor
_NOT_DTYPE = {"TensorList", "Tensor", "Scalar", "ScalarList", "GenericList", "String", "Device", "Layout",
              "None"}
_DEVICE_COMM = re.compile(r"^(nccl|rccl|ncclDev)", re.I)


def _kind(name: str) -> str | None:
    base = name.split("::", 1)[-1].split(":", 1)[-1].strip("_").lower()
    return next((k for p, k in _KIND if p.search(base)), None)


#: |ts| and dur bounds in microseconds: their ns must fit the profile's int64 times (9.2e18 ns)
_MAX_TS_US = 4e15
_MAX_DUR_US = 1e12


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _load(path: Path) -> dict[str, Any]:
    raw = read_input_gz(path, "Kineto trace", ProfileError)
    if not raw.strip():
        raise ProfileError(f"{path}: the file is empty; expected a Kineto trace (the JSON file "
                           "torch.profiler's export_chrome_trace writes)")
    try:
        data = json.loads(raw, parse_constant=_no_constant)  # NaN and Infinity are not JSON
    except RecursionError:
        raise ProfileError(f"{path}: not a Kineto trace: the JSON is nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, bad UTF-8
        raise ProfileError(f"{path}: not a Kineto trace: the JSON is invalid or truncated ({e}); expected the "
                           f"file torch.profiler's export_chrome_trace writes") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ProfileError(f"{path}: not a Kineto trace: expected a JSON object with a 'traceEvents' list")
    info = data.get("distributedInfo")
    if info is None:
        data["distributedInfo"] = {}
    elif not isinstance(info, dict):
        raise ProfileError(f"{path}: distributedInfo is {_short(info)}; expected an object")
    else:
        for key, lo in (("rank", 0), ("world_size", 1)):
            v = info.get(key)
            if v is not None and (type(v) is not int or v < lo):
                raise ProfileError(f"{path}: distributedInfo.{key} is {_short(v)}; expected an integer >= {lo}")
        if "rank" in info and "world_size" in info and info["rank"] >= info["world_size"]:
            raise ProfileError(f"{path}: distributedInfo.rank {info['rank']} is not below world_size "
                               f"{info['world_size']}")
        pgs = info.get("pg_config")
        if pgs is not None and (not isinstance(pgs, list) or not all(isinstance(p, dict) for p in pgs)):
            raise ProfileError(f"{path}: distributedInfo.pg_config is {_short(pgs)}; expected a list of objects")
    data["traceEvents"] = _events(path, data["traceEvents"])
    return data


def _short(v: Any) -> str:
    """A value of the trace for a message, as JSON writes it, cut short (a field may hold a whole list)."""
    return cut(json.dumps(v) if not isinstance(v, float) else repr(v), 40)


#: args the importer reads -> (check, what is expected)
_ARGS: dict[str, tuple[Any, str]] = {
    "correlation": (lambda v: type(v) in (int, str), "an integer or string"),
    "In msg nelems": (lambda v: type(v) is int and v >= 0, "an integer >= 0"),
    "Out msg nelems": (lambda v: type(v) is int and v >= 0, "an integer >= 0"),
    "dtype": (lambda v: isinstance(v, str), "a string"),
    "Input Dims": (lambda v: isinstance(v, list), "a list"),
    "Input type": (lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v), "a list of strings"),
    "Process Group Ranks": (lambda v: isinstance(v, str), "a string such as '[0, 1]'"),
    "Collective name": (lambda v: isinstance(v, str), "a string"),
    "Concrete Inputs": (lambda v: isinstance(v, list), "a list"),
}


def _number(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _events(path: Path, events: list[Any]) -> list[dict[str, Any]]:
    """The complete ("X") events, each checked: name, cat, ts, dur, tid and the args the importer reads.

    Other phases (instant, flow, metadata) are not used and not checked. A bad field is a ProfileError
    naming the file, the event's index and name, the field and what was expected."""
    out = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        name = e.get("name")
        where = f"{path}: traceEvents[{i}]" + (f" ({name[:60]})" if isinstance(name, str) else "")

        def bad(field: str, v: Any, expected: str, where: str = where) -> ProfileError:
            return ProfileError(f"{where}: {field} is {_short(v) if v is not None else 'missing'}; expected {expected}")

        if not isinstance(name, str):
            raise bad("name", name, "a string")
        if "cat" in e and not isinstance(e["cat"], str):
            raise bad("cat", e["cat"], "a string")
        if not _number(e.get("ts")) or abs(e["ts"]) > _MAX_TS_US:
            raise bad("ts", e.get("ts"), f"a finite number of microseconds (|ts| <= {_MAX_TS_US:g})")
        if not _number(e.get("dur")) or not 0 <= e["dur"] <= _MAX_DUR_US:
            raise bad("dur", e.get("dur"), f"a number of microseconds in [0, {_MAX_DUR_US:g}]")
        if type(e.get("tid")) not in (int, str):
            raise bad("tid", e.get("tid"), "an integer or string (the thread or stream)")
        e["tid"] = str(e["tid"])  # one type, so threads sort and compare whether a trace spells them 7 or "7"
        args = e.setdefault("args", {})
        if not isinstance(args, dict):
            raise bad("args", args, "an object")
        for key, (ok, expected) in _ARGS.items():
            if key in args and not ok(args[key]):
                raise bad(f"args[{key!r}]", args[key], expected)
        out.append(e)
    return out


def _numel(path: Path, op: dict[str, Any], dims: Any) -> int:
    """Elements of the first tensor in an Input Dims entry, whatever its nesting ([1024] or [[1024]])."""
    depth = 0
    while isinstance(dims, list) and dims and isinstance(dims[0], list) and depth < 8:
        dims, depth = dims[0], depth + 1
    n = 1
    for d in dims if isinstance(dims, list) else []:
        if type(d) is not int or not 0 <= d < 2**40:
            raise ProfileError(f"{path}: {op['name']} at ts {op['ts']} us: Input Dims holds {_short(d)}; expected "
                               "lists of tensor dimensions (integers >= 0)")
        n *= d
    if n >= 2**48:
        raise ProfileError(f"{path}: {op['name']} at ts {op['ts']} us: a tensor of {n} elements; expected at most "
                           f"{2**48} (are its Input Dims right?)")
    return n if isinstance(dims, list) and dims else 0


def _unknown_dtype(path: Path, op: dict[str, Any], dtype: object) -> ProfileError:
    # A guessed element size would silently scale every transfer of the collective: refuse instead.
    return ProfileError(f"{path}: {op['name']} at ts {op['ts']} us: unknown dtype {dtype!r} in its sizes; expected "
                        f"one of {', '.join(sorted(DTYPE_BYTES))}")


def _size(path: Path, kind: str, ops: list[dict[str, Any]], world: int, report: Report) -> int:
    """Bytes as collective() takes them, from record_param_comms if present, else Input Dims x dtype."""
    for e in ops:
        a = e.get("args", {})
        if "In msg nelems" in a:
            elt = DTYPE_BYTES.get(str(a.get("dtype")))
            if elt is None:
                raise _unknown_dtype(path, e, a.get("dtype"))
            if kind == "all_gather" and "Out msg nelems" not in a:
                report.assume("all_gather sizes without Out msg nelems: group size x In msg nelems")
                return int(a["In msg nelems"]) * world * elt
            n = a["Out msg nelems"] if kind == "all_gather" else a["In msg nelems"]
            return int(n) * elt
    # Element counts: the largest tensor an op lists; an all_gather's output is the largest of all.
    counts = [[_numel(path, e, d) for d in e.get("args", {}).get("Input Dims") or []] for e in ops]
    if not any(any(c) for c in counts):
        return 0
    # The first known dtype, the backend's ops first.
    first = next((t for e in sorted(ops, key=lambda e: not e["name"].startswith(_BACKEND))
                  for t in e.get("args", {}).get("Input type") or [] if t in DTYPE_BYTES), None)
    if first is None:
        # No known dtype, but one is spelled (not a container or scalar marker): refuse rather than guess.
        odd = next(((e, t) for e in ops for t in e.get("args", {}).get("Input type") or [] if t and t not in _NOT_DTYPE),
                   None)
        if odd is not None:
            raise _unknown_dtype(path, *odd)
        report.assume(f"unknown dtype in {ops[0]['name']}: 4 bytes per element")
    elt = DTYPE_BYTES[first] if first is not None else 4
    n = max(max(c, default=0) for c in counts)
    if kind == "all_gather" and not any(sum(1 for x in c if x) > 1 for c in counts):
        n *= world  # only the input was recorded: the gathered total is group size x input
        report.assume("all_gather sizes without an output tensor: group size x input")
    return n * elt


def _gather_size(path: Path, ops: list[dict[str, Any]]) -> int:
    """An all_gather's communicator size from its tensors, output / input, where an op records both (0 if none):
    ``c10d::_allgather_base_`` lists the gathered output, then the rank's input."""
    for e in ops:
        counts = sorted({n for n in (_numel(path, e, d) for d in e.get("args", {}).get("Input Dims") or []) if n})
        if len(counts) == 2 and counts[1] % counts[0] == 0:
            return counts[1] // counts[0]
    return 0


def _group(path: Path, ops: list[dict[str, Any]], info: dict[str, Any], world: int) -> tuple[int, ...]:
    for e in ops:
        g = e.get("args", {}).get("Process Group Ranks")
        if isinstance(g, str) and g.strip("[] "):
            items = [x.strip() for x in g.strip("[] ").split(",")]
            if not all(x.isdigit() and int(x) < 2**31 for x in items) or len(set(items)) != len(items):
                raise ProfileError(f"{path}: {e['name']} at ts {e['ts']} us: Process Group Ranks {_short(g)}; "
                                   "expected a list of distinct ranks such as '[0, 1]'")
            return tuple(int(x) for x in items)
    pgs = info.get("pg_config") or []
    default = next((p for p in pgs if p.get("pg_desc") == "default_pg" or p.get("pg_name") == "0"), None)
    ranks = default.get("ranks") if default else None
    if isinstance(ranks, list) and ranks and all(type(x) is int and 0 <= x < 2**31 for x in ranks):
        return tuple(dict.fromkeys(ranks))
    return tuple(range(world))


def _peer(ops: list[dict[str, Any]]) -> int | None:
    """The peer of a send/recv: c10d::send(tensors, group, dst, tag) / recv_(..., src, tag) record it."""
    for e in ops:
        args = e.get("args", {}).get("Concrete Inputs") or []
        if e["name"].startswith("c10d::") and len(args) > 2 and str(args[2]).isdigit() and len(str(args[2])) < 10:
            return int(args[2])
    return None


def ns(us: Any) -> int:
    """Kineto times are microseconds with ns decimals: whole ns keep the import deterministic.

    Whole and fractional microseconds are scaled apart: epoch timestamps (1.7e15 us) times 1000 are
    beyond a double's 2**53, and would be off by up to 256 ns."""
    whole = int(float(us))
    return whole * 1000 + round((float(us) - whole) * 1000)


def _rank_lanes(path: Path, data: dict[str, Any], world: int, compute: str, report: Report) -> list[Lane]:
    ev = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e and "dur" in e]
    info = data.get("distributedInfo") or {}
    # Device-side annotations (gpu_user_annotation) repeat the host's ops: the host's are the ones counted.
    comm = [e for e in ev if e.get("cat") not in ("kernel", "cuda_runtime", "cuda_driver")
            and not str(e.get("cat", "")).startswith("gpu_")
            and (e["name"].startswith(("c10d::", *_BACKEND)) or e["name"] == "record_param_comms")]
    waits = [e for e in comm if e.get("args", {}).get("Collective name") == "wait"]
    if waits:
        report.ignored["record_param_comms of work.wait() (not a transfer)"] += len(waits)
        comm = [e for e in comm if e.get("args", {}).get("Collective name") != "wait"]
    # 1. nested collective ops on one thread are one collective
    groups: list[list[dict[str, Any]]] = []
    for e in sorted(comm, key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        g = groups[-1] if groups else None
        if g and g[0]["tid"] == e["tid"] and e["ts"] + e["dur"] <= g[0]["ts"] + g[0]["dur"] + 1e-3:
            g.append(e)
            report.merged["nested collective ops (enqueue, record_param_comms, backend) on one thread"] += 1
        else:
            groups.append([e])
    # 2. a backend op alone on another thread (gloo worker) joins the oldest unmatched enqueue of its kind
    enq = [g for g in groups if g[0]["name"].startswith("c10d::") and not any(x["name"].startswith(_BACKEND) for x in g)]
    colls: list[list[dict[str, Any]]] = []
    for g in sorted(groups, key=lambda g: g[0]["ts"]):
        if g[0]["name"].startswith(_BACKEND) and len(g) == 1:
            gk = _kind(g[0]["name"])
            host = next((h for h in enq if _kind(h[0]["name"]) == gk and h[0]["ts"] <= g[0]["ts"]), None)
            if host is not None:
                enq.remove(host)
                host.append(g[0])
                report.merged["backend ops on worker threads merged into their enqueue op"] += 1
                continue
        colls.append(g)
    # 3. device streams: NCCL kernels linked to the op that launched them
    launch = {e.get("args", {}).get("correlation"): e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    lanes: dict[str, Lane] = {}
    dev_of: dict[int, dict[str, Any]] = {}
    item_of: dict[int, Item] = {}  # id(kernel event) -> its lane item (compute kernels, then collectives)
    for k in kernels:
        if not _DEVICE_COMM.match(k["name"]):
            if compute == "device":
                item_of[id(k)] = Item(ns(k["ts"]), ns(k["ts"] + k["dur"]))
                lanes.setdefault(f"stream {k['tid']}", Lane(f"stream {k['tid']}")).items.append(item_of[id(k)])
            continue
        ln = launch.get(k.get("args", {}).get("correlation"))
        owner = next((i for i, g in enumerate(colls) if ln is not None and g[0]["tid"] == ln["tid"]
                      and g[0]["ts"] <= ln["ts"] <= g[0]["ts"] + g[0]["dur"]), None)
        if owner is None or owner in dev_of:
            report.ignored["NCCL/RCCL kernels with no collective op launching them"] += 1
        else:
            dev_of[owner] = k
            report.merged["NCCL/RCCL kernels merged into the collective that launched them"] += 1
    if compute == "host":
        ops = sorted((e for e in ev if e.get("cat") == "cpu_op"), key=lambda e: (e["tid"], e["ts"], -e["dur"]))
        spans = [(g[0]["tid"], g[0]["ts"], g[0]["ts"] + g[0]["dur"]) for g in colls]
        workers = {g[-1]["tid"] for g in colls if g[-1]["tid"] != g[0]["tid"]}  # gloo's own threads
        top_end: dict[Any, float] = {}
        for e in ops:
            end = e["ts"] + e["dur"]
            if e["tid"] in workers:
                report.ignored["host ops on the backend's worker threads (part of the collectives)"] += 1
                continue
            if e["ts"] < top_end.get(e["tid"], -1.0) or any(t == e["tid"] and a <= e["ts"] < b for t, a, b in spans):
                continue  # nested in a top-level op, or part of a collective
            if e["name"].startswith(("c10d::", *_BACKEND)) or e["name"] == "record_param_comms":
                continue
            top_end[e["tid"]] = end
            lanes.setdefault(f"thread {e['tid']}", Lane(f"thread {e['tid']}")).items.append(Item(ns(e["ts"]), ns(end)))
    elif not lanes:
        raise ProfileError(f"{path}: no GPU kernels on device streams; for a CPU-only trace pass --compute host")
    for i, g in enumerate(colls):
        kind = _kind(g[0]["name"]) or next((_kind(str(x.get("args", {}).get("Collective name", ""))) for x in g), None)
        if kind is None:
            report.ignored[f"communication ops of no known collective ({g[0]['name']})"] += 1
            continue
        group = _group(path, g, info, world)
        recv = kind == "recv"
        c = Coll("send" if recv else kind, _size(path, kind, g, world, report), group, g[0]["name"], recv=recv)
        if kind == "send" or recv:
            me, peer = int(info.get("rank", -1)), _peer(g)
            # c10d::send / recv_ record their peer (a rank of the default group) in Concrete Inputs;
            # without it, the peer is matched by order (_pair_p2p)
            c.group = (me,) if peer is None else (peer, me) if recv else (me, peer)
        recorded = any("Process Group Ranks" in x.get("args", {}) for x in g)
        if kind == "all_gather" and not recorded and (size := _gather_size(path, g)) and size != len(group):
            # The recorded group is the default one (no Process Group Ranks) but the tensors say otherwise: a
            # sub-communicator (the sampled 128-rank job's all-gathers gather 16 MiB into 1 GiB: 64 ranks).
            c.traced_size = size
            report.assume(f"all_gather communicator sizes from output / input where the recorded group differs "
                          f"(e.g. {g[0]['name']}: {size} ranks, not {len(group)})")
        if c.nbytes == 0 and kind != "barrier":
            report.ignored[f"{kind} with no recorded size"] += 1
            continue
        if i in dev_of:
            kern = dev_of[i]
            lane_name, item = f"stream {kern['tid']}", Item(ns(kern["ts"]), ns(kern["ts"] + kern["dur"]), c)
            item_of[id(kern)] = item
        else:
            lane_name = f"thread {g[0]['tid']}" if compute == "host" else f"comm thread {g[0]['tid']}"
            item = Item(ns(min(x["ts"] for x in g)), ns(max(x["ts"] + x["dur"] for x in g)), c)
        lane = lanes.setdefault(lane_name, Lane(lane_name))
        n = 1
        while lane.items and any(it.start < item.end and item.start < it.end and it.coll for it in lane.items):
            lane = lanes.setdefault(f"{lane_name} (overlap {n})", Lane(f"{lane_name} (overlap {n})"))
            n += 1
            report.assume("collectives that overlap on one thread or stream run on separate workgroup sets")
        lane.items.append(item)
    if compute == "device":
        _stream_waits(ev, item_of, report)
    out = [lanes[k] for k in sorted(lanes)]
    for lane in out:
        lane.items.sort(key=lambda it: (it.start, it.end))
        # a compute item overlapping a collective on the same lane is the host blocked in it: clip to keep order
        last = 0
        for it in lane.items:
            it.start = max(it.start, last) if it.coll is None else it.start
            it.end = max(it.end, it.start)
            last = it.end
    return out


#: launches of device work by the CUDA runtime or driver, or HIP's (ROCm traces name their calls hip*)
_LAUNCH = re.compile(r"^(cu(da)?|hip(Ext)?)(Module)?(LaunchKernel|LaunchCooperativeKernel|Memcpy|Memset)")
_RECORD = ("cudaEventRecord", "cuEventRecord", "hipEventRecord")
_WAIT = ("cudaStreamWaitEvent", "cuStreamWaitEvent", "hipStreamWaitEvent")


def _stream_waits(ev: list[dict[str, Any]], item_of: dict[int, Item], report: Report) -> None:
    """The trace's waits of one stream on another's event (`Item.after`), from each host thread's CUDA calls.

    Kineto records ``cudaEventRecord`` and ``cudaStreamWaitEvent`` (HIP's ``hip*`` alike) without their stream or event, so both are
    inferred from the launches around them on the same thread, as PyTorch issues them: a record is taken on the
    stream of the thread's last launch before it; a wait makes the stream of the thread's next launch wait for
    the latest record on another stream (ProcessGroupNCCL: the compute stream's record, then the NCCL stream's
    wait, then the NCCL kernel; after it, the NCCL stream's end record and a wait). The waiting item is the
    next kernel launched on that stream (after a copy or set there, the kernel after it), the awaited one the last
    kernel launched on the record's stream before the record. A wait followed by a launch the trace has no device
    event for is dropped (its stream is unknown). A wait the trace's own times contradict (the waiting kernel
    started before the awaited one ended) is not that dependency: it is dropped and counted (12 in the 2-rank
    NCCL trace, where the next compute kernel ran beside the collective)."""
    kernel_of = {e.get("args", {}).get("correlation"): e for e in ev
                 if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "correlation" in e.get("args", {})}
    calls = sorted((e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")), key=lambda e: (e["tid"], e["ts"]))
    Record = tuple[str, "dict[str, Any] | None"]  # (its stream, the last kernel launched there before it)
    thread = None
    last: dict[str, dict[str, Any]] = {}  # stream -> the thread's last kernel launched there
    stream = ""  # the stream of the thread's last launch
    # The latest record, and the latest on another stream than that one's: together they give, for any waiting
    # stream, the latest record on a stream other than it, without looking back over every record.
    latest: Record | None = None
    other: Record | None = None
    waits: list[tuple[Record | None, Record | None]] = []  # waits since the thread's last launch: (latest, other)
    held: dict[str, list[tuple[Record | None, Record | None]]] = {}  # stream -> waits a copy there passed on

    def place(waiting: str, kernel: dict[str, Any], pending: list[tuple[Record | None, Record | None]]) -> None:
        waiter = item_of.get(id(kernel))
        for top, second in pending:
            rec = top if top is not None and top[0] != waiting else second
            target = item_of.get(id(rec[1])) if rec is not None and rec[1] is not None else None
            if target is None or waiter is None:
                continue
            if target.end <= waiter.start:
                if target not in waiter.after:
                    waiter.after.append(target)
            else:
                report.ignored["waits between streams that the trace's times contradict (the waiting kernel "
                               "started before the awaited one ended)"] += 1

    for e in calls:
        if e["tid"] != thread:
            thread, last, stream, latest, other, waits, held = e["tid"], {}, "", None, None, [], {}
        name = e["name"]
        if _LAUNCH.match(name):
            k = kernel_of.get(e.get("args", {}).get("correlation"))
            if k is None:
                if waits:
                    report.ignored["waits between streams followed by a launch the trace has no device event for"] += (
                        len(waits))
                waits = []
                continue
            stream = str(k["tid"])
            if k.get("cat") != "kernel":  # a copy or set: its stream waits, and so the kernel after it there
                held.setdefault(stream, []).extend(waits)
            else:
                place(stream, k, held.pop(stream, []) + waits)
                last[stream] = k
            waits = []
        elif name.startswith(_RECORD):
            rec: Record = (stream, last.get(stream))
            if latest is not None and latest[0] != stream:
                other = latest
            latest = rec
        elif name.startswith(_WAIT):
            waits.append((latest, other))


def _pair_p2p(lanes: dict[int, list[Lane]], report: Report) -> None:
    """Give each send the receive it feeds: the earliest unmatched recv of the same size on another rank."""
    items = [(it, r) for r, ls in lanes.items() for lane in ls for it in lane.items
             if it.coll and it.coll.kind == "send" and len(it.coll.group) == 1]  # peer not recorded
    recvs = sorted(((it, r) for it, r in items if it.coll and it.coll.recv), key=lambda x: x[0].start)
    for it, r in sorted(((it, r) for it, r in items if it.coll and not it.coll.recv), key=lambda x: x[0].start):
        assert it.coll is not None
        peer = next(((o, q) for o, q in recvs if q != r and o.coll and o.coll.nbytes == it.coll.nbytes), None)
        if peer is None:
            continue  # left alone: replayed as its traced time
        recvs.remove(peer)
        assert peer[0].coll is not None
        it.coll.group = peer[0].coll.group = (r, peer[1])
        report.assume("send/recv peers are not recorded: each send is paired with the earliest receive of its size "
                      "on another rank")


def import_kineto(paths: list[str], name: str | None = None, algorithm: str = "ring", workgroups: int | None = 1,
                  compute: str = "device", mode: str = "syncmon", ranks: int | None = None,
                  library: System | None = None) -> tuple[Profile, Report]:
    """Import one Kineto trace per rank; return the profile and the report of what was done.

    algorithm: of the collectives (where a kind has it; "nccl": as `library`, the platform's collectives library,
    runs them, `nccl_calls`); workgroups: per lane (stream or thread);
    compute: "device" (GPU kernels) or "host" (CPU ops, for CPU-only traces); mode: of every wait;
    ranks: replicate the one trace given as this many symmetric ranks (`replicate`).
    """
    if not paths:
        raise ProfileError("import kineto: no trace files given; expected one Kineto JSON per rank")
    if compute not in ("device", "host"):
        raise ProfileError(f"import kineto: --compute {compute!r} is not one of device, host")
    if workgroups is not None:
        check_workgroups("import kineto", workgroups)
    if ranks is not None:
        check_ranks("import kineto", ranks, paths)
    report = Report()
    datas = [(Path(p), _load(Path(p))) for p in paths]
    infos = [d["distributedInfo"] for _, d in datas]
    rank_of = [i["rank"] if isinstance(i.get("rank"), int) else k for k, i in enumerate(infos)]
    if not all(isinstance(i.get("rank"), int) for i in infos):
        rank_of = list(range(len(datas)))
        report.assume("ranks from file order (a trace has no distributedInfo.rank)")
    worlds = {i["world_size"] for i in infos if isinstance(i.get("world_size"), int)}
    if len(worlds) > 1:
        sizes = ", ".join(f"{p} world_size {i.get('world_size')}" for (p, _), i in zip(datas, infos))
        raise ProfileError(f"mismatched ranks: the traces come from jobs of different sizes ({sizes}); "
                           "expected the traces of one job")
    world = max(worlds | {max(rank_of) + 1})
    if len(set(rank_of)) != len(rank_of):
        dup = next(r for r in rank_of if rank_of.count(r) > 1)
        files = [str(p) for (p, _), r in zip(datas, rank_of) if r == dup]
        raise ProfileError(f"mismatched ranks: rank {dup} appears in more than one trace ({', '.join(files)}); "
                           "expected one trace per rank")
    if len(rank_of) < world and ranks is None:
        report.assume(f"{len(rank_of)} of {world} ranks traced: collective groups are cut to the traced ranks")
    lanes = {r: _rank_lanes(p, d, world, compute, report) for r, (p, d) in zip(rank_of, datas)}
    if not any(it.coll for ls in lanes.values() for lane in ls for it in lane.items):
        raise ProfileError(f"{', '.join(map(str, paths))}: no collectives found; expected c10d::, nccl:, gloo: or "
                           "rccl: ops (record the trace around the communication)")
    sources = {r: str(p) for r, p in zip(rank_of, paths)}
    if ranks is not None:
        lanes = replicate(lanes[rank_of[0]], ranks, f"rank {rank_of[0]} of {world} ({paths[0]})", report,
                          scale_all_gather=True, rank=rank_of[0])
        sources = {r: f"{paths[0]} (replica {r})" for r in range(ranks)}
    else:
        _pair_p2p(lanes, report)
    report.imported["ranks"] = len(lanes)
    if not any(it.after for ls in lanes.values() for lane in ls for it in lane.items):
        report.assume("lanes (streams, threads) are replayed independently: waits between them are kept as traced "
                      "gaps")
    return (build_profile(name or Path(paths[0]).name.split(".")[0], lanes, workgroups, algorithm, mode, report,
                          sources, library=library), report)
