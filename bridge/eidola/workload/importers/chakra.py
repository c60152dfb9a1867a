"""MLCommons Chakra execution traces -> a profile: ``eidola import chakra ET0 ET1 ... -o PROFILE.yaml``.

Reads one ET per rank (in rank order) through the `mlc-chakra` package: its protobuf schema
(``chakra.schema.protobuf.et_def_pb2``) and its length-delimited reader (``protolib``). Nodes run
in a dependency order: a node starts when all its data and control parents have ended (ties by
id), so each rank is one lane whose items follow that order. COMP nodes become compute phases of
``duration_micros``; COMM_COLL nodes become collectives of their ``comm_type`` and ``comm_size``
among all ranks; COMM_SEND / COMM_RECV nodes (``comm_dst`` / ``comm_src``) become a write plus a
flag from sender to receiver. Memory and metadata nodes take no time here and are counted as ignored.
With ``--ranks N`` one ET is replicated as N symmetric ranks (`timeline.replicate`). Files are read
through the safe reader (a regular file, size-capped; gzip decompressed with a cap).
"""

from __future__ import annotations

import heapq
import io
from pathlib import Path
from typing import Any

from ...errors import ProfileError
from ...inputs import read_input_gz
from ..profile import Profile
from .timeline import Coll, Item, Lane, Report, build_profile, check_ranks, check_workgroups, replicate

__all__ = ["import_chakra"]

#: Chakra CollectiveCommType name -> collective kind
_COLL = {"ALL_REDUCE": "all_reduce", "ALL_GATHER": "all_gather", "REDUCE_SCATTER": "reduce_scatter",
         "REDUCE_SCATTER_BLOCK": "reduce_scatter", "ALL_TO_ALL": "all_to_all", "BROADCAST": "broadcast",
         "BARRIER": "barrier"}


def _read(path: Path) -> list[Any]:
    try:
        from chakra.schema.protobuf import et_def_pb2 as et
        from chakra.src.third_party.utils import protolib
    except ImportError:
        raise ProfileError("import chakra: the mlc-chakra package is not installed; pip install "
                           "'eidola[import]'") from None
    raw = read_input_gz(path, "Chakra execution trace", ProfileError)  # names a FIFO, a directory, a bomb
    nodes = []
    try:
        with io.BytesIO(raw) as f:
            meta = et.GlobalMetadata()
            if not protolib.decodeMessage(f, meta):
                raise ProfileError(f"{path}: empty; expected a Chakra ET (GlobalMetadata then Nodes)")
            while True:
                n = et.Node()
                if not protolib.decodeMessage(f, n):
                    break
                nodes.append(n)
    except ProfileError:
        raise
    except Exception as e:  # protobuf's DecodeError and truncated varints
        raise ProfileError(f"{path}: not a Chakra execution trace ({type(e).__name__}: {e}); expected the "
                           "length-delimited protobuf that chakra_converter writes") from None
    return nodes


def _int_attr(path: Path, n: Any, a: dict[str, Any], key: str, default: int) -> int:
    """Attribute `key` of node `n` as an int; a ProfileError naming the node if it is not one."""
    v = a.get(key, default)
    if type(v) is not int:
        raise ProfileError(f"{path}: node {n.id} ({n.name}): attribute {key} is {v!r}; expected an integer")
    return v


def _attrs(n: Any) -> dict[str, Any]:
    return {a.name: getattr(a, a.WhichOneof("value")) for a in n.attr if a.WhichOneof("value")}


def _lane(path: Path, rank: int, ranks: int, report: Report) -> Lane:
    """The rank's one lane: its nodes in dependency order; `ranks` bounds the peers of sends and receives."""
    from chakra.schema.protobuf import et_def_pb2 as et

    nodes = {n.id: n for n in _read(path)}
    parents = {i: {p for p in (*n.data_deps, *n.ctrl_deps) if p in nodes} for i, n in nodes.items()}
    missing = sum(1 for n in nodes.values() for p in (*n.data_deps, *n.ctrl_deps) if p not in nodes)
    if missing:
        report.ignored["dependencies on nodes not in the trace"] += missing
    children: dict[int, list[int]] = {i: [] for i in nodes}
    for i, ps in parents.items():
        for p in ps:
            children[p].append(i)
    left = {i: len(ps) for i, ps in parents.items()}
    ready = [i for i, k in left.items() if k == 0]
    heapq.heapify(ready)
    end: dict[int, int] = {}
    lane = Lane(f"rank {rank}")
    t = 0
    while ready:
        i = heapq.heappop(ready)
        n = nodes[i]
        # A node starts after its parents and after the lane's previous node (one lane per rank).
        start = max([t, *(end[p] for p in parents[i])])
        kind = et.NodeType.Name(n.type)
        a = _attrs(n)
        dur = int(n.duration_micros) * 1000 if kind == "COMP_NODE" else 0
        if kind == "COMP_NODE":
            lane.items.append(Item(start, start + dur))
        elif kind == "COMM_COLL_NODE":
            code = _int_attr(path, n, a, "comm_type", 0)
            ctype = et.CollectiveCommType.Name(code) if code in et.CollectiveCommType.values() else f"#{code}"
            if ctype not in _COLL:
                report.ignored[f"COMM_COLL {ctype} (no schedule)"] += 1
            else:
                lane.items.append(Item(start, start, Coll(_COLL[ctype], _int_attr(path, n, a, "comm_size", 0),
                                                          tuple(range(ranks)), n.name)))
        elif kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
            recv = kind == "COMM_RECV_NODE"
            peer = _int_attr(path, n, a, "comm_src" if recv else "comm_dst", -1)
            if not 0 <= peer < ranks:
                raise ProfileError(f"{path}: node {i} ({n.name}): {'comm_src' if recv else 'comm_dst'} {peer} is not "
                                   f"a rank of the {ranks} traces given")
            lane.items.append(Item(start, start, Coll("send", _int_attr(path, n, a, "comm_size", 0),
                                                      (peer, rank) if recv else (rank, peer), n.name, recv=recv)))
        else:
            report.ignored[f"{kind} nodes"] += 1
        end[i] = t = start + dur
        for c in children[i]:
            left[c] -= 1
            if left[c] == 0:
                heapq.heappush(ready, c)
    if any(k for k in left.values()):
        raise ProfileError(f"{path}: the dependencies form a cycle; expected a DAG of data and control deps")
    return lane


def import_chakra(paths: list[str], name: str | None = None, algorithm: str = "ring", workgroups: int = 1,
                  mode: str = "syncmon", ranks: int | None = None) -> tuple[Profile, Report]:
    """Import one Chakra ET per rank (rank = position); return the profile and the report of what was done.

    algorithm: of the collectives (where a kind has it); workgroups: per rank; mode: of every wait;
    ranks: replicate the one ET given as this many symmetric ranks (comm_size is kept as written).
    """
    if not paths:
        raise ProfileError("import chakra: no trace files given; expected one Chakra ET per rank")
    check_workgroups("import chakra", workgroups)
    if ranks is not None:
        check_ranks("import chakra", ranks, paths)
    report = Report()
    if ranks is not None:
        lanes = replicate([_lane(Path(paths[0]), 0, ranks, report)], ranks, f"the ET {paths[0]}", report)
    else:
        lanes = {r: [_lane(Path(p), r, len(paths), report)] for r, p in enumerate(paths)}
    if not any(it.coll for ls in lanes.values() for it in ls[0].items):
        report.assume("no communication nodes: the ranks only compute")
    report.imported["ranks"] = len(lanes)
    if ranks is None:
        report.assume("ranks in file order; a COMM_COLL spans every rank given")
    # Node times come from the dependencies, every rank counting from 0: there is no clock to align.
    report.assume("every rank starts at 0 (the ETs' node times are from their dependencies, not clocks)")
    return (build_profile(name or Path(paths[0]).name.split(".")[0], lanes, workgroups, algorithm, mode, report,
                          dict(enumerate(paths)) if ranks is None else {r: f"{paths[0]} (replica {r})" for r in lanes},
                          align=False), report)
