"""MLCommons Chakra execution traces -> a profile: ``eidola import chakra ET0 ET1 ... -o PROFILE.yaml``.

Reads one ET per rank (in rank order) through the `mlc-chakra` package: its protobuf schema
(``chakra.schema.protobuf.et_def_pb2``) and its length-delimited reader (``protolib``). A rank has
two lanes, as ASTRA-sim runs a rank's compute one node at a time while its communication proceeds
beside it: "compute" (COMP nodes, compute phases of ``duration_micros``) and "comm" (COMM_COLL
nodes, collectives of their ``comm_type`` and ``comm_size``; COMM_SEND / COMM_RECV, a write plus a
flag from ``comm_src`` to ``comm_dst``). Each lane's items follow one topological order of the DAG
(ready nodes by smallest id). An ET has no timestamps: compute items run back to back and comm
items take no traced time, so all ordering between the lanes comes from `Item.after`: a node waits
for its last parent on the other lane (following parents through nodes that become no item:
memory and metadata nodes, collectives without a schedule). A COMM_COLL spans every rank given,
or with a communicator group file (``--comm-groups``, ASTRA-sim's ``--comm-group-configuration``:
``{"<pg_name>": [ranks...]}``) the ranks of its ``pg_name``. With ``--ranks N`` one ET is
replicated as N symmetric ranks (`timeline.replicate`). Files are read through the safe reader (a
regular file, size-capped; gzip decompressed with a cap).
"""

from __future__ import annotations

import heapq
import io
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ProfileError
from ...inputs import read_input, read_input_gz
from ..profile import Profile
from .timeline import Coll, Item, Lane, Report, build_profile, check_ranks, check_workgroups, replicate

if TYPE_CHECKING:
    from ..nccl.system import System

__all__ = ["import_chakra", "warnings_of"]

#: Chakra CollectiveCommType name -> collective kind
_COLL = {"ALL_REDUCE": "all_reduce", "ALL_GATHER": "all_gather", "REDUCE_SCATTER": "reduce_scatter",
         "REDUCE_SCATTER_BLOCK": "reduce_scatter", "ALL_TO_ALL": "all_to_all", "BROADCAST": "broadcast",
         "BARRIER": "barrier"}
#: the lanes of a rank, by node type (other node types become no item)
_COMPUTE, _COMM = 0, 1
_LANE = {"COMP_NODE": _COMPUTE, "COMM_COLL_NODE": _COMM, "COMM_SEND_NODE": _COMM, "COMM_RECV_NODE": _COMM}
#: pg_name values that ASTRA-sim takes as the default group of every rank (Workload::extract_comm_group)
_DEFAULT_PG = ("", "0")
#: how the report's warnings begin (`warnings_of` finds them there)
WARNING = "warning: "


def _schema() -> tuple[Any, Any]:
    try:
        from chakra.schema.protobuf import et_def_pb2 as et
        from chakra.src.third_party.utils import protolib
    except ImportError:
        raise ProfileError("import chakra: the mlc-chakra package is not installed; pip install "
                           "'eidola[import]'") from None
    return et, protolib


def _read(path: Path) -> dict[int, Any]:
    """The ET's nodes by id; a ProfileError for a node type the schema does not know or an id given twice."""
    et, protolib = _schema()
    raw = read_input_gz(path, "Chakra execution trace", ProfileError)  # names a FIFO, a directory, a bomb
    nodes: dict[int, Any] = {}
    try:
        with io.BytesIO(raw) as f:
            meta = et.GlobalMetadata()
            if not protolib.decodeMessage(f, meta):
                raise ProfileError(f"{path}: empty; expected a Chakra ET (GlobalMetadata then Nodes)")
            while True:
                n = et.Node()
                if not protolib.decodeMessage(f, n):
                    break
                if n.id in nodes:
                    raise ProfileError(f"{path}: node id {n.id} is given twice ({nodes[n.id].name!r} and "
                                       f"{n.name!r}); expected one node per id (dependencies name nodes by id)")
                if n.type not in et.NodeType.values():
                    raise ProfileError(f"{path}: node {n.id} ({n.name}): node type {n.type} is not a Chakra "
                                       f"NodeType; expected one of {', '.join(et.NodeType.keys())}")
                nodes[n.id] = n
    except ProfileError:
        raise
    except Exception as e:  # protobuf's DecodeError and truncated varints
        raise ProfileError(f"{path}: not a Chakra execution trace ({type(e).__name__}: {e}); expected the "
                           "length-delimited protobuf that chakra_converter writes") from None
    return nodes


def _int_attr(path: Path, n: Any, a: dict[str, Any], key: str, why: str) -> int:
    """Attribute `key` of node `n` as an int; a ProfileError naming the node if it is missing or not one."""
    if key not in a:
        raise ProfileError(f"{path}: node {n.id} ({n.name}): {_kind(n)} has no attribute {key}; expected "
                           f"{why}")
    v = a[key]
    if type(v) is not int:
        raise ProfileError(f"{path}: node {n.id} ({n.name}): attribute {key} is {v!r}; expected an integer")
    return v


def _kind(n: Any) -> str:
    """The node's NodeType name (`_read` checked that it has one)."""
    et, _ = _schema()
    return str(et.NodeType.Name(n.type))


def _attrs(n: Any) -> dict[str, Any]:
    return {a.name: getattr(a, a.WhichOneof("value")) for a in n.attr if a.WhichOneof("value")}


def _comm_groups(file: str, ranks: int) -> dict[str, tuple[int, ...]]:
    """The communicator group file: {pg_name: sorted ranks}, each rank one of the `ranks` ETs given."""
    expect = ('expected a JSON object {"<pg_name>": [ranks...], ...}, as ASTRA-sim\'s '
              "--comm-group-configuration takes")

    def pairs(kv: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in kv]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise ProfileError(f"{file}: group {twice[0]!r} is given twice; {expect}")
        return dict(kv)

    try:
        data = json.loads(read_input(file, "communicator group file", ProfileError), object_pairs_hook=pairs)
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise ProfileError(f"{file}: not JSON ({e}); {expect}") from None
    if not isinstance(data, dict) or not data:
        raise ProfileError(f"{file}: {'an empty object' if data == {} else type(data).__name__}; {expect}")
    groups: dict[str, tuple[int, ...]] = {}
    for key, members in data.items():
        if not isinstance(members, list) or not members or any(type(x) is not int for x in members):
            raise ProfileError(f"{file}: group {key!r} is {members!r}; expected a non-empty list of ranks (integers)")
        outside = [x for x in members if not 0 <= x < ranks]
        if outside:
            raise ProfileError(f"{file}: group {key!r} names rank {outside[0]}, but {ranks} ETs were given "
                               f"(ranks 0..{ranks - 1})")
        if len(set(members)) < len(members):
            raise ProfileError(f"{file}: group {key!r} names a rank twice ({members}); expected distinct ranks")
        if key in _DEFAULT_PG and sorted(members) != list(range(ranks)):
            raise ProfileError(f"{file}: group {key!r} is {members}, but pg_name {key!r} is the default group of "
                               f"every rank (as in ASTRA-sim); expected ranks 0..{ranks - 1} or no entry for it")
        groups[key] = tuple(sorted(members))
    return groups


class _Rank:
    """One rank's ET read into its two lanes; `groups` (or None: every rank) gives each COMM_COLL's ranks."""

    def __init__(self, path: Path, rank: int, ranks: int, report: Report,
                 groups: tuple[str, dict[str, tuple[int, ...]]] | None) -> None:
        self.path, self.rank, self.ranks, self.report, self.groups = path, rank, ranks, report, groups
        self.pg_names: set[str] = set()  # the pg_names its COMM_COLL nodes give
        self.dropped: Counter[str] = Counter()  # COMM_COLL nodes of a kind without a schedule, by comm_type
        self.lanes = [Lane("compute"), Lane("comm")]  # messages name the rank beside the lane

    def read(self) -> list[Lane]:
        """The lanes, each in one topological order of the DAG (ready nodes by smallest id)."""
        nodes = _read(self.path)
        parents = {i: {p for p in (*n.data_deps, *n.ctrl_deps) if p in nodes} for i, n in nodes.items()}
        missing = sum(1 for n in nodes.values() for p in (*n.data_deps, *n.ctrl_deps) if p not in nodes)
        if missing:
            self.report.ignored["dependencies on nodes not in the trace"] += missing
        children: dict[int, list[int]] = {i: [] for i in nodes}
        for i, ps in parents.items():
            for p in ps:
                children[p].append(i)
        left = {i: len(ps) for i, ps in parents.items()}
        ready = [i for i, k in left.items() if k == 0]
        heapq.heapify(ready)
        # reach[i][l]: the index of the last item of lane l that node i's end implies has ended (-1: none):
        # its own item, or for a node that is no item, its parents' (so no ordering through it is lost).
        reach: dict[int, tuple[int, int]] = {}
        waited = [-1, -1]  # per lane: the other lane's last item its items so far have waited for
        t = 0  # the compute lane's time: its items back to back (an ET has no timestamps)
        while ready:
            i = heapq.heappop(ready)
            need = (max((reach[p][0] for p in parents[i]), default=-1),
                    max((reach[p][1] for p in parents[i]), default=-1))
            item = self._item(nodes[i], t)
            if item is None:
                reach[i] = need
            else:
                li = _LANE[_kind(nodes[i])]
                other = 1 - li
                # A lane's items end in order, so the last parent on the other lane is the one to wait for,
                # unless an earlier item of this lane waited for it (or a later one) already.
                if need[other] > waited[li]:
                    item.after.append(self.lanes[other].items[need[other]])
                    waited[li] = need[other]
                self.lanes[li].items.append(item)
                t = max(t, item.end)
                last = len(self.lanes[li].items) - 1
                reach[i] = (last, -1) if li == _COMPUTE else (-1, last)
            for c in children[i]:
                left[c] -= 1
                if left[c] == 0:
                    heapq.heappush(ready, c)
        stuck = sorted(i for i, k in left.items() if k)
        if stuck:
            raise ProfileError(f"{self.path}: the dependencies form a cycle (nodes on or after it: "
                               f"{', '.join(f'{i} ({nodes[i].name})' for i in stuck[:5])}"
                               f"{', ...' if len(stuck) > 5 else ''}); expected a DAG of data and control deps")
        return self.lanes

    def _item(self, n: Any, t: int) -> Item | None:
        """Node `n` as an item (compute from `t`; communication takes no traced time), or None."""
        et, _ = _schema()
        kind = _kind(n)
        a = _attrs(n)
        if kind == "COMP_NODE":
            return Item(t, t + int(n.duration_micros) * 1000)
        if kind == "COMM_COLL_NODE":
            code = _int_attr(self.path, n, a, "comm_type", "a CollectiveCommType (the collective's kind is not "
                             "guessed: it decides the traffic)")
            if code not in et.CollectiveCommType.values():
                raise ProfileError(f"{self.path}: node {n.id} ({n.name}): comm_type {code} is not a Chakra "
                                   f"CollectiveCommType; expected one of {', '.join(et.CollectiveCommType.keys())}")
            ctype = et.CollectiveCommType.Name(code)
            group = self._group(n, a)
            if ctype not in _COLL:
                self.report.ignored[f"COMM_COLL {ctype} (no schedule)"] += 1
                self.dropped[ctype] += 1
                return None
            size = 0 if ctype == "BARRIER" else _int_attr(self.path, n, a, "comm_size", "the collective's bytes")
            return Item(0, 0, Coll(_COLL[ctype], size, group, n.name))
        if kind in ("COMM_SEND_NODE", "COMM_RECV_NODE"):
            recv = kind == "COMM_RECV_NODE"
            key = "comm_src" if recv else "comm_dst"
            peer = _int_attr(self.path, n, a, key, "the peer rank")
            if not 0 <= peer < self.ranks:
                raise ProfileError(f"{self.path}: node {n.id} ({n.name}): {key} {peer} is not a rank of the "
                                   f"{self.ranks} traces given")
            size = _int_attr(self.path, n, a, "comm_size", "the message's bytes")
            return Item(0, 0, Coll("send", size, (peer, self.rank) if recv else (self.rank, peer), n.name,
                                   recv=recv))
        self.report.ignored[f"{kind} nodes"] += 1
        return None

    def _group(self, n: Any, a: dict[str, Any]) -> tuple[int, ...]:
        """The ranks of a COMM_COLL: its pg_name's group in the group file, else every rank given."""
        pg = a.get("pg_name", "")
        if type(pg) is not str:
            raise ProfileError(f"{self.path}: node {n.id} ({n.name}): attribute pg_name is {pg!r}; expected a string")
        if pg:
            self.pg_names.add(pg)
        if self.groups is None or pg in _DEFAULT_PG:
            return tuple(range(self.ranks))
        file, groups = self.groups
        if pg not in groups:
            raise ProfileError(f"{self.path}: node {n.id} ({n.name}): pg_name {pg!r} is not a group of {file} "
                               f"(it has {', '.join(map(repr, groups))}); expected every pg_name of the ETs there")
        if self.rank not in groups[pg]:
            raise ProfileError(f"{self.path}: node {n.id} ({n.name}): pg_name {pg!r} is ranks {list(groups[pg])} "
                               f"in {file}, which leaves out rank {self.rank}, whose ET this is")
        return groups[pg]


def import_chakra(paths: list[str], name: str | None = None, algorithm: str = "ring", workgroups: int | None = 1,
                  mode: str = "syncmon", ranks: int | None = None,
                  comm_groups: str | None = None, library: System | None = None) -> tuple[Profile, Report]:
    """Import one Chakra ET per rank (rank = position); return the profile and the report of what was done.

    algorithm: of the collectives (where a kind has it; "nccl": as `library`, the platform's collectives library,
    runs them, `nccl_calls`); workgroups: per lane; mode: of every wait;
    ranks: replicate the one ET given as this many symmetric ranks (comm_size is kept as written);
    comm_groups: a JSON file {pg_name: [ranks]}; a COMM_COLL then runs among its pg_name's ranks.
    Warnings (also in the report's assumptions) are `warnings_of(report)`.
    """
    if not paths:
        raise ProfileError("import chakra: no trace files given; expected one Chakra ET per rank")
    if workgroups is not None:
        check_workgroups("import chakra", workgroups)
    if ranks is not None:
        check_ranks("import chakra", ranks, paths)
        if comm_groups is not None:
            raise ProfileError(f"import chakra: --comm-groups {comm_groups} with --ranks {ranks}: the replicas of "
                               "one ET have no communicator groups of their own (every collective spans the "
                               "replicas); give one ET per rank to use the groups, or leave --comm-groups out")
    report = Report()
    groups = None if comm_groups is None else (comm_groups, _comm_groups(comm_groups, len(paths)))
    if ranks is not None:
        read = [_Rank(Path(paths[0]), 0, ranks, report, None)]
        lanes = replicate(read[0].read(), ranks, f"the ET {paths[0]}", report)
    else:
        read = [_Rank(Path(p), r, len(paths), report, groups) for r, p in enumerate(paths)]
        lanes = {r.rank: r.read() for r in read}
    if not any(it.coll for ls in lanes.values() for lane in ls for it in lane.items):
        report.assume("no communication nodes: the ranks only compute")
    report.imported["ranks"] = len(lanes)
    if ranks is None:
        report.assume("ranks in file order")
    report.assume("two lanes per rank, as ASTRA-sim runs them: compute (COMP nodes, one at a time) and comm "
                  "(COMM_COLL, COMM_SEND, COMM_RECV, one at a time in dependency order), overlapping where the DAG "
                  "lets them; a node waits for its parents on the other lane")
    pg_names = sorted(set().union(*(r.pg_names for r in read)))
    merged = ""
    if groups is not None:
        report.assume(f"a COMM_COLL spans the ranks of its pg_name's group in {comm_groups}; pg_name '' or '0' "
                      "(ASTRA-sim's default group): every rank")
    else:
        report.assume("a COMM_COLL spans every rank given")
        if len(pg_names) > 1:
            merged = (f"the ETs name {len(pg_names)} communicator groups (pg_name {', '.join(pg_names[:8])}"
                      f"{', ...' if len(pg_names) > 8 else ''}) but no --comm-groups file gives their ranks")
            report.assume(f"{merged}: they are merged, every collective spanning every rank")
    # Node times come from the dependencies, every rank counting from 0: there is no clock to align.
    report.assume("every rank starts at 0 (the ETs' node times are from their dependencies, not clocks)")
    try:
        profile = build_profile(name or Path(paths[0]).name.split(".")[0], lanes, workgroups, algorithm, mode,
                                report, dict(enumerate(paths)) if ranks is None else
                                {r: f"{paths[0]} (replica {r})" for r in lanes}, align=False, library=library)
    except ProfileError as e:
        if not merged:
            raise
        raise ProfileError(f"{e}; note: {merged}, so every collective spans every rank: give the groups with "
                           "--comm-groups FILE.json") from None
    dropped = sum((r.dropped for r in read), Counter[str]())
    if dropped:
        report.assume(f"{WARNING}{dropped.total()} COMM_COLL nodes dropped, of a kind with no schedule here ("
                      f"{', '.join(f'{k} x{v}' for k, v in sorted(dropped.items()))}): their traffic is not "
                      "simulated; the nodes after them wait only for what they waited for")
    if profile.ops_count() == 0:
        report.assume(f"{WARNING}the profile has no ops: no COMP node has a duration and there is no "
                      "communication, so a run of it takes 0 ns (were the ETs converted without chakra_trace_link, "
                      "which gives nodes their durations?)")
    return profile, report


def warnings_of(report: Report) -> list[str]:
    """The warnings among the report's assumptions (without their prefix), for the CLI to say on stderr."""
    return [a.removeprefix(WARNING) for a in report.assumed if a.startswith(WARNING)]
