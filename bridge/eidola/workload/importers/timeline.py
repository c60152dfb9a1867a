"""Per-rank timelines of compute and collectives -> a profile; shared by the Kineto and Chakra importers.

An importer turns each rank's trace into `Lane`s (a stream or thread: compute phases and
collectives in time order, in ns). `build_profile` then matches collectives across ranks, aligns
the ranks' clocks, gives every lane of a rank its own set of W workgroups and replays each lane:
the time from one item's end to the next one's start (idle, launch overhead, waits on other lanes)
and a compute phase's duration become compute(ns=...); a collective becomes
``ProfileBuilder.collective`` on the matched ranks' lanes, so its time is simulated, not replayed.
With W > 1 workgroups a lane ends every simulated collective with a kernel boundary: each of its
workgroups adds 1 to the lane's local flag and waits until all W have, as a GPU starts the next
kernel of a stream only once the previous one has finished on all its workgroups. (Compute phases
are the same delay on every workgroup, so they keep them in step; only a collective, whose shares
finish at different times, can spread them.) The flag is the GPU's own memory: a local atomic and
polls of it, no fabric traffic.
A `Report` collects what was imported, merged, ignored and assumed.
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from ...errors import ProfileError
from ..builder import ProfileBuilder
from ..collectives import KINDS
from ..nccl.system import System
from ..profile import Profile
from . import nccl_calls

__all__ = ["Coll", "Item", "Lane", "Report", "build_profile", "check_ranks", "check_workgroups", "replicate", "BOUNDARY_FLAG",
           "STREAM_FLAG"]

#: the flag of lane i's kernel boundaries (format with lane=i); no ``c<n>.`` prefix, so no call claims it
BOUNDARY_FLAG = "kernel_end.lane{lane}"
#: the flag on which lane i counts its items that another lane waits for (`Item.after`)
STREAM_FLAG = "stream_done.lane{lane}"
#: the most symmetric ranks --ranks may ask for (the platforms' GPU counts are far below)
MAX_RANKS = 4096


def check_workgroups(what: str, workgroups: object) -> None:
    """A ProfileError naming --workgroups unless it is an int >= 1."""
    if type(workgroups) is not int or workgroups < 1:
        raise ProfileError(f"{what}: --workgroups {workgroups!r}: expected a number of workgroups per stream or "
                           "thread >= 1")


def check_ranks(what: str, ranks: object, paths: list[str]) -> None:
    """A ProfileError naming --ranks unless it is an int in 2..MAX_RANKS and one trace is given."""
    if type(ranks) is not int or not 2 <= ranks <= MAX_RANKS:
        raise ProfileError(f"{what}: --ranks {ranks!r}: expected a number of symmetric ranks in 2..{MAX_RANKS}")
    if len(paths) != 1:
        raise ProfileError(f"{what}: --ranks replicates one traced rank, but {len(paths)} traces were given "
                           f"({', '.join(map(str, paths))}); give one trace, or leave --ranks out to import each "
                           "rank's own trace")


@dataclass
class Coll:
    """A collective seen on one rank: kind, bytes (as `collective` takes them), group of global ranks."""

    kind: str  #: a key of collectives.KINDS (send and recv are both "send" once matched)
    nbytes: int  #: see collectives.collective for what S means per kind
    group: tuple[int, ...]  #: global ranks taking part (send/recv: this rank and its peer, if known)
    name: str  #: the trace's op name, for messages
    recv: bool = False  #: the receiving side of a send/recv
    root: int = 0  #: broadcast root (a global rank)
    #: ranks in the communicator as traced (0: len(group)): where `replicate` replaced the group, or where an
    #: all_gather's tensors show a communicator other than the recorded group
    traced_size: int = 0
    #: this rank replays its own trace; False for the replicas `replicate` adds in other ranks' places
    own: bool = True


@dataclass(eq=False)  # items are keyed by identity (a dependency names the item, not its fields)
class Item:
    """A compute phase (coll None) or a collective on a lane, from `start` to `end` ns."""

    start: int
    end: int
    coll: Coll | None = None
    #: items on other lanes of the same rank that must have ended before this one starts (a stream waiting on
    #: another's event): replayed as a wait on a flag those items' lanes signal, after the traced gap
    after: list[Item] = field(default_factory=list)


@dataclass
class Lane:
    """One stream or thread of a rank: its items in time order."""

    name: str
    items: list[Item] = field(default_factory=list)


@dataclass
class Report:
    """What an import did: counts of what was imported, merged, ignored, and the assumptions made."""

    imported: Counter[str] = field(default_factory=Counter)
    merged: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    assumed: list[str] = field(default_factory=list)
    #: one row per collective replayed: (name prefix of its flags, kind, bytes, {gpu: traced ns})
    calls: list[tuple[str, str, int, dict[int, int]]] = field(default_factory=list)
    #: per call of `calls` (its prefix): ranks in its communicator as traced (before groups were cut to the
    #: traced ranks or replicated), and the GPUs whose traced time is their own: every member, except with
    #: `replicate`, where only the replica in the traced rank's place has it
    groups: dict[str, tuple[int, list[int]]] = field(default_factory=dict)
    #: one row per item replayed as its traced time, a compute phase or a collective with no traced
    #: peer: (gpu, first workgroup of its lane, op index there, start ns, end ns, "compute" or the
    #: collective's kind); times on the aligned traced clock, from the first traced item (= replay 0)
    phases: list[tuple[int, int, int, int, int, str]] = field(default_factory=list)

    def assume(self, text: str) -> None:
        """Record an assumption once."""
        if text not in self.assumed:
            self.assumed.append(text)

    def text(self) -> str:
        """The report as a table: one line per (section, what, count) and the assumptions."""
        lines = [f"{'section':9s} {'count':>7s}  what"]
        for section, counts in (("imported", self.imported), ("merged", self.merged), ("ignored", self.ignored)):
            lines += [f"{section:9s} {n:7d}  {what}" for what, n in sorted(counts.items())]
        lines += [f"{'assumed':9s} {'':7s}  {a}" for a in self.assumed]
        return "\n".join(lines) + "\n"


def replicate(lanes: list[Lane], n: int, who: str, report: Report,
              scale_all_gather: bool = False, rank: int = 0) -> dict[int, list[Lane]]:
    """The lanes of one traced rank as `n` symmetric ranks (SPMD): rank r gets a copy of every lane.

    who: the traced rank, for the report. Every collective then spans the n ranks. Sizes as
    `collective` takes them stay per-rank, except an all_gather's, the gathered total: with
    `scale_all_gather` (the trace recorded the total over the traced group) it scales to n ranks.
    A send/recv keeps its traced time: one rank's trace does not say which replica its peer is.
    rank: the traced rank; per collective, the replica at its place in the traced group (the last
    replica if that place is n or more) is marked as replaying its own trace (`Coll.own`).
    """
    groups = sorted({it.coll.traced_size or len(it.coll.group) for lane in lanes for it in lane.items
                     if it.coll and it.coll.kind != "send"})
    out: dict[int, list[Lane]] = {}
    for r in range(n):
        copies = _copy_lanes(lanes)  # distinct items per rank: the timeline keys items by identity
        for lane in copies:
            for it in lane.items:
                c = it.coll
                if c is None:
                    continue
                if c.kind == "send":
                    c.group = (r,)
                    report.assume("send/recv with --ranks keep their traced time (the peer replica is not known)")
                    continue
                traced = sorted(c.group)
                at = traced.index(rank) if rank in traced else 0
                # Ranks stand in for one another only by their place in the group: the root and the
                # ring order follow the sorted ranks, in the trace's job as in the replicated one.
                c.own, c.traced_size = r == min(at, n - 1), c.traced_size or len(traced)
                if c.kind == "all_gather" and scale_all_gather:  # the gathered total, over the traced communicator
                    c.nbytes = c.nbytes // max(c.traced_size, 1) * n
                c.group = tuple(range(n))
                c.root = c.root if c.root < n else 0
        out[r] = copies
    report.assume(f"SPMD (--ranks {n}): {who} is replicated as {n} symmetric ranks running the same program; "
                  f"every collective spans the {n} ranks (traced groups of {', '.join(map(str, groups)) or '-'} "
                  f"ranks)" + (f"; all_gather totals scale to {n} ranks" if scale_all_gather else ""))
    return out


def _copy_lanes(lanes: list[Lane]) -> list[Lane]:
    """A copy of `lanes` with new items whose `after` names the copies. Not copy.deepcopy: it follows `after` from
    item to item recursively, and a long chain of waits between streams passed Python's recursion limit."""
    new = {id(it): Item(it.start, it.end, copy.copy(it.coll)) for lane in lanes for it in lane.items}
    for lane in lanes:
        for it in lane.items:
            new[id(it)].after = [new[id(d)] for d in it.after]
    return [Lane(lane.name, [new[id(it)] for it in lane.items]) for lane in lanes]


def _who(r: int, sources: dict[int, str]) -> str:
    return f"rank {r} ({sources[r]})" if r in sources else f"rank {r}"


def _unpairable(what: str, sources: dict[int, str]) -> ProfileError:
    # Sampled traces of a large job may come from different iterations: say so, and what still works.
    files = ", ".join(sources[r] for r in sorted(sources)) if sources else "the traces"
    return ProfileError(f"{files}: cannot be replayed together: {what}; the ranks' collective sequences diverge "
                        "there (were they traced at different iterations or windows?); expected the traces of "
                        "the same steps on every rank, or import each trace alone")


def _collectives_in_time(lanes: list[Lane]) -> list[Item]:
    """A rank's items that are collectives, in start-time order."""
    return sorted((it for lane in lanes for it in lane.items if it.coll), key=lambda it: it.start)


def _diverge(ranks: list[int], lanes: dict[int, list[Lane]], sources: dict[int, str]) -> str:
    """Where the time-ordered collective kinds of two ranks first differ, for an error message."""
    # `if it.coll` again only narrows the type: every item here has one.
    seqs = {r: [it.coll for it in _collectives_in_time(lanes[r]) if it.coll] for r in ranks}
    for a, b in combinations(ranks, 2):  # ranks are sorted: each pair once, a < b
        for k, (x, y) in enumerate(zip(seqs[a], seqs[b])):
            if x.kind != y.kind:
                return (f"collective #{k} in time order is {x.kind} ({x.name}, {x.nbytes} B) on {_who(a, sources)} "
                        f"but {y.kind} ({y.name}, {y.nbytes} B) on {_who(b, sources)}")
    return "the groups' collectives interleave differently on different ranks"


def _match(ranks: list[int], lanes: dict[int, list[Lane]], report: Report,
           sources: dict[int, str]) -> dict[int, list[tuple[Item, int]]]:
    """Number each collective: {call id: [(item, rank)]}; the k-th call of a group on every member is one call."""
    calls: dict[int, list[tuple[Item, int]]] = {}
    seq: dict[tuple[int, ...], list[list[tuple[Item, int]]]] = defaultdict(list)
    present = set(ranks)
    for r in ranks:
        per_group: Counter[tuple[int, ...]] = Counter()
        for it in _collectives_in_time(lanes[r]):
            assert it.coll is not None
            group = tuple(sorted(present.intersection(it.coll.group) | {r}))
            # The k-th collective of a kind in a group is one call: traces that do not record process
            # groups may interleave kinds that ran on different communicators.
            key = (*group, -1 - list(KINDS).index(it.coll.kind))
            k = per_group[key]
            per_group[key] += 1
            rows = seq[key]
            while len(rows) <= k:
                rows.append([])
            rows[k].append((it, r))
    for key, rows in seq.items():
        members = [x for x in key if x >= 0]
        for k, row in enumerate(rows):
            got = sorted(r for _, r in row)
            first = row[0][0].coll
            assert first is not None
            sizes = {it.coll.nbytes for it, _ in row if it.coll}
            if len(sizes) > 1 and first.kind not in ("all_to_all", "barrier"):
                (a, ra), (b, rb) = (min(row, key=lambda x: x[1]),
                                    next(x for x in row if x[0].coll and first.nbytes != x[0].coll.nbytes))
                assert a.coll is not None and b.coll is not None
                raise _unpairable(f"{first.kind} #{k} of ranks {members} is {a.coll.nbytes} B on {_who(ra, sources)} "
                                  f"but {b.coll.nbytes} B on {_who(rb, sources)}", sources)
            if len(sizes) > 1:  # uneven all_to_all splits: the largest
                for it, _ in row:
                    if it.coll:
                        it.coll.nbytes = max(sizes)
                report.merged["collectives whose size differs between ranks (the largest used)"] += 1
            if got != members and len(members) > 1:
                lost = [_who(r, sources) for r in members if r not in got]
                raise _unpairable(f"{first.kind} #{k} of ranks {members} ({first.name}, {first.nbytes} B) is on "
                                  f"{', '.join(_who(r, sources) for r in got)} but not on {', '.join(lost)}", sources)
            if got != members or any((c.kind, c.nbytes) != (first.kind, first.nbytes)
                                     for c in (it.coll for it, _ in row) if c):
                desc = ", ".join(f"rank {r}: {it.coll.name if it.coll else '?'} "
                                 f"{it.coll.nbytes if it.coll else 0} B" for it, r in row)
                raise ProfileError(f"mismatched ranks: collective #{k} of group {members} is not on every member "
                                   f"alike ({desc}); expected the same collectives in the same order on ranks "
                                   f"{members}")
            calls[len(calls)] = row
    return calls


def build_profile(name: str, lanes: dict[int, list[Lane]], workgroups: int | None, algorithm: str, mode: str,
                  report: Report, sources: dict[int, str] | None = None, align: bool = True,
                  library: System | None = None) -> Profile:
    """Build the profile: rank order is GPU order, lane i of a rank runs on workgroups [i*W, (i+1)*W).

    sources: the file of each rank, for messages. align: align the ranks' clocks on their first common
    collective (traces of real clocks); False where every rank's times count from one zero (Chakra).
    library: with algorithm "nccl", the platform's collectives library (`nccl.System`), which then builds each
    collective it can as it runs it (`nccl_calls`). workgroups: per lane; None: 1, or with "nccl" as
    `nccl_calls.lane_workgroups` chooses.
    """
    if algorithm == "nccl":
        if library is None:
            raise ProfileError("import: --algorithm nccl needs --platform: the library's collectives depend on the "
                               "platform (channels, protocols, nodes)")
        if not library.configured:
            report.assume("the --platform has no collectives: section: the collectives run NCCL's defaults "
                          "(docs/collectives.md, \"The platform's collectives: section\")")
        if len(lanes) > library.gpus:
            raise ProfileError(f"import: {len(lanes)} ranks but the --platform has {library.gpus} GPUs; expected a "
                               "platform with a GPU per rank (--set gpus.count=N)")
    ranks = sorted(lanes)
    gpu = {r: i for i, r in enumerate(ranks)}
    calls = _match(ranks, lanes, report, sources or {})
    multi = [row for row in calls.values() if len(row) > 1]
    if algorithm == "nccl" and not multi:
        report.assume("--algorithm nccl: no collective has a traced peer, so none runs as the library runs it "
                      "(each replays its traced time); to simulate one traced rank's collectives, replicate it "
                      "with --ranks N")
    # Clocks: the first collective every rank takes part in ends at the same time everywhere.
    shift = dict.fromkeys(ranks, 0)
    common = next((row for row in multi if len(row) == len(ranks)), None)
    if common and len(ranks) > 1 and align:
        ref = common[0][0].end
        for it, r in common:
            shift[r] = ref - it.end
        report.assume("clocks aligned on the end of the first collective of all ranks; shifts ns: "
                      + ", ".join(f"rank {r} {shift[r]:+d}" for r in ranks))
    elif len(ranks) > 1 and align:
        report.assume("no collective spans all ranks: clocks are taken as they are")
    t0 = min((it.start + shift[r] for r in ranks for lane in lanes[r] for it in lane.items), default=0)
    nlanes = max(len(v) for v in lanes.values())
    if library is not None and algorithm == "nccl":
        workgroups = nccl_calls.lane_workgroups(workgroups, library, nlanes, multi)
    elif workgroups is None:
        workgroups = 1
    b = ProfileBuilder(gpus=len(ranks), workgroups=nlanes * workgroups, name=name)
    cursor: dict[tuple[int, int], int] = {}  # (rank, lane) -> replayed time so far
    pos: dict[tuple[int, int], int] = {}  # (rank, lane) -> next item
    where: dict[int, tuple[int, int]] = {}  # id(item) -> (rank, lane index)
    for r in ranks:
        for li, lane in enumerate(lanes[r]):
            cursor[r, li], pos[r, li] = t0, 0
            for it in lane.items:
                where[id(it)] = (r, li)
    call_of = {id(it): c for c, row in calls.items() for it, _ in row}
    boundaries: Counter[tuple[int, int]] = Counter()  # (rank, lane) -> kernel boundaries so far
    # Items another lane waits for: each one's place among its lane's such items (the count its flag reaches).
    awaited: dict[int, int] = {}
    signalling: set[int] = set()  # lane indices with such items on some rank: their flags are declared once
    for r in ranks:
        targets = {id(d) for ln in lanes[r] for x in ln.items for d in x.after}
        for li, lane in enumerate(lanes[r]):
            n = 0
            for it in lane.items:
                if id(it) in targets:
                    n += 1
                    awaited[id(it)] = n
                    signalling.add(li)
    for li in sorted(signalling):
        b.flag(STREAM_FLAG.format(lane=li))
    if awaited:
        report.assume("waits between streams: a stream's item starts after its traced gap and once the items it "
                      "waits for on other streams have ended (a local flag they signal and it polls)")

    def done(r: int, li: int, it: Item) -> None:
        """`it` has ended on lane li: count it on the lane's flag if another lane waits for it."""
        if id(it) in awaited:
            for w in range(li * workgroups, (li + 1) * workgroups):
                b.program_at(gpu[r], w).signal(dst=gpu[r], flag=STREAM_FLAG.format(lane=li), op="add", value=1,
                                               scope="peer")

    def wait_for(r: int, li: int, it: Item) -> None:
        """Before `it` on lane li: wait until the items it waits for on other lanes have ended."""
        for d in it.after:
            if id(d) not in where:
                raise ProfileError(f"rank {r}: an item of lane {lanes[r][li].name} waits for an item that is on no "
                                   "lane; expected an item of another lane of the same rank")
            dr, dl = where[id(d)]
            if dr != r or dl == li:
                raise ProfileError(f"rank {r}: an item of lane {lanes[r][li].name} waits for one of "
                                   f"{'rank ' + str(dr) if dr != r else 'its own lane'}; expected another lane "
                                   "of the same rank")
            need = awaited[id(d)] * workgroups
            for w in range(li * workgroups, (li + 1) * workgroups):
                b.program_at(gpu[r], w).wait(flag=STREAM_FLAG.format(lane=dl), cond=">=", value=need, mode="poll",
                                             interval_ns=50)
        if it.after:
            report.imported["waits between streams"] += len(it.after)

    def boundary(r: int, li: int) -> None:
        """The lane's next kernel starts when the collective it just ran has ended on all its workgroups.

        One workgroup too: a kernel has ended only when its releases have gone (a ring's last signals
        overlap the workgroup's next ops), and the boundary's plain signal waits for them.
        """
        flag = BOUNDARY_FLAG.format(lane=li)
        if not boundaries:
            report.assume("kernel boundaries: each simulated collective ends when all of the lane's workgroups "
                          "have finished it, its releases included (a local flag they signal and wait for), "
                          "before the lane's next kernel")
        if not any(k[1] == li for k in boundaries):
            b.flag(flag)
        boundaries[r, li] += 1
        for w in range(li * workgroups, (li + 1) * workgroups):
            # scope "peer" with the GPU itself as the peer: the signal waits for no fabric acknowledgement,
            # so the boundary costs local memory accesses only (the atomic, then polls of the local flag).
            # Polling every 50 ns releases all W within about one poll of each other, as a kernel's
            # workgroups are dispatched together; a monitor's wake-ups would spread them over a memory
            # latency and count that spread into the next collective.
            b.program_at(gpu[r], w).signal(dst=gpu[r], flag=flag, op="add", value=1, scope="peer").wait(
                flag=flag, cond=">=", value=boundaries[r, li] * workgroups, mode="poll", interval_ns=50)

    def advance(r: int, li: int, until: int) -> None:
        if until > cursor[r, li]:
            for w in range(li * workgroups, (li + 1) * workgroups):
                b.program_at(gpu[r], w).compute(ns=until - cursor[r, li])
            cursor[r, li] = until

    def at_front(o: Item, orank: int) -> bool:
        oli = where[id(o)][1]
        items = lanes[orank][oli].items
        return pos[orank, oli] < len(items) and items[pos[orank, oli]] is o

    # Each lane replays its items in order; a collective is emitted once every member lane has
    # reached it, so calls land in every program in a consistent order.
    progress = True
    while progress:
        progress = False
        for (r, li), i in list(pos.items()):
            items = lanes[r][li].items
            while i < len(items):
                it = items[i]
                row = calls[call_of[id(it)]] if it.coll else None  # the call's members, for a collective
                if row is None or len(row) == 1:
                    # The gap before an item (idle, host overhead, waits on other lanes) and the item
                    # itself are separate compute ops, so each traced phase is one op of the replay.
                    advance(r, li, it.start + shift[r])
                    wait_for(r, li, it)
                    w0 = li * workgroups
                    if it.end + shift[r] > cursor[r, li]:
                        report.phases.append((gpu[r], w0, b.program_at(gpu[r], w0).op_count(), cursor[r, li] - t0,
                                              it.end + shift[r] - t0, it.coll.kind if it.coll else "compute"))
                    advance(r, li, it.end + shift[r])
                    done(r, li, it)
                    if it.coll is None:
                        report.imported["compute phases"] += 1
                    else:  # no peer in the traces: keep its traced time
                        report.ignored[f"{it.coll.kind} with no traced peer (replayed as its traced time)"] += 1
                elif all(at_front(o, orank) for o, orank in row):
                    for o, orank in row:  # every member reaches its traced start, then the collective begins
                        advance(orank, where[id(o)][1], o.start + shift[orank])
                        wait_for(orank, where[id(o)][1], o)
                    for order in _transfers(row, report):
                        nbytes = nccl_calls.append(b, order, where, gpu, workgroups, library, report) \
                            if library is not None and algorithm == "nccl" else None
                        if nbytes is not None:
                            _record(report, b.last_prefix(), order, nbytes, gpu)
                            continue
                        for one in _directions(order):  # the textbook schedule runs an exchange as two sends
                            nbytes = _emit(b, one, where, gpu, workgroups,
                                           "ring" if algorithm == "nccl" else algorithm, mode, report)
                            _record(report, b.last_prefix(), one, nbytes, gpu)
                    for o, orank in row:
                        oli = where[id(o)][1]
                        boundary(orank, oli)
                        done(orank, oli, o)
                        cursor[orank, oli] = max(cursor[orank, oli], o.end + shift[orank])
                        if (orank, oli) != (r, li):
                            pos[orank, oli] += 1
                else:
                    break
                i += 1
                pos[r, li] = i
                progress = True
    stuck = [f"rank {r} {lanes[r][li].name}" for (r, li), i in pos.items() if i < len(lanes[r][li].items)]
    if stuck:
        raise _unpairable(f"{_diverge(ranks, lanes, sources or {})}, so no order of the collectives fits "
                          f"every rank (stuck: {', '.join(stuck[:4])})", sources or {})
    return b.build()


def _transfers(row: list[tuple[Item, int]], report: Report) -> list[list[tuple[Item, int]]]:
    """The calls a matched row runs, each in `_rank_order`: the row itself, except for a send/recv pair matched as
    two sends or two receives. A pair's k-th items are matched in each rank's order, so where both ranks send before
    they receive (a pipeline's steady state, batch_isend_irecv) the row holds the two sends, and a later row the two
    receives: the sends are one exchange (`is_exchange`: the library runs it as nccl-tests' send/recv on the pair,
    the textbook as two sends), and the receives, whose data came with it, run nothing. (Before 2026-12-07 both
    rows ran one way, from the lower rank.)"""
    first = row[0][0].coll
    if first is None or first.kind != "send" or len(row) != 2 or not all(
            it.coll is not None and it.coll.recv == first.recv for it, _ in row):
        return [_rank_order(row)]
    if first.recv:
        report.imported["send/recv pairs whose two receives came with an exchange of sends"] += 1
        return []
    report.imported["send/recv pairs run both ways at once (two ranks sending to each other)"] += 1
    return [sorted(row, key=lambda x: x[1])]


def is_exchange(order: list[tuple[Item, int]]) -> bool:
    """A pair of sends to each other (`_transfers`): both ways at once."""
    first = order[0][0].coll
    return first is not None and first.kind == "send" and len(order) == 2 and not any(
        it.coll is None or it.coll.recv for it, _ in order)


def _directions(order: list[tuple[Item, int]]) -> list[list[tuple[Item, int]]]:
    """The one-way sends of a call: an exchange's two (the first rank's, then the second's), else the call."""
    return [order, order[::-1]] if is_exchange(order) else [order]


def _rank_order(row: list[tuple[Item, int]]) -> list[tuple[Item, int]]:
    """A matched call's (item, rank) in the order its schedule takes them: rank order; a send/recv, sender first."""
    first = row[0][0].coll
    if first is not None and first.kind == "send":
        return sorted(row, key=lambda x: bool(x[0].coll and x[0].coll.recv))
    return sorted(row, key=lambda x: x[1])


def _record(report: Report, prefix: str, order: list[tuple[Item, int]], nbytes: int, gpu: dict[int, int]) -> None:
    """The call just appended (flags `prefix`, `nbytes` as simulated), for `eidola compare`: its traced time per GPU,
    and its traced communicator and the GPUs whose traced time is their own."""
    first = order[0][0].coll
    assert first is not None
    report.calls.append((prefix, first.kind, nbytes, {gpu[r]: it.end - it.start for it, r in order}))
    report.groups[prefix] = (first.traced_size or len(first.group),
                             [gpu[r] for it, r in order if it.coll is None or it.coll.own])


def _emit(b: ProfileBuilder, order: list[tuple[Item, int]], where: dict[int, tuple[int, int]], gpu: dict[int, int],
          W: int, algorithm: str, mode: str, report: Report) -> int:
    """Append one matched collective (`order`: `_rank_order`'s) as the textbook schedule; return its bytes as
    simulated (rounded up to whole parts). The algorithm falls back to the kind's default where it has none."""
    first = order[0][0].coll
    assert first is not None
    kind = first.kind
    algo = algorithm if algorithm in KINDS[kind] else KINDS[kind][0]
    if algo != algorithm:
        report.assume(f"{kind} has no {algorithm!r} algorithm: {algo!r} used")
    P = len(order)
    parts = W * (1 if kind in ("broadcast", "send") else P)
    nbytes = first.nbytes
    if kind != "barrier" and nbytes % parts:
        nbytes += parts - nbytes % parts
        report.assume(f"sizes rounded up to a multiple of ranks x workgroups where they were not (e.g. {first.name} "
                      f"{first.nbytes} B -> {nbytes} B)")
    members = [r for _, r in order]
    root = members.index(first.root) if first.root in members else 0
    b.collective(kind, max(nbytes, 1), algo, group=[gpu[r] for _, r in order], mode=mode,
                 workgroups=[[w for w in range(where[id(it)][1] * W, (where[id(it)][1] + 1) * W)] for it, _ in order],
                 root=root)
    report.imported[f"{kind} ({algo}, {P} ranks)"] += 1
    return nbytes
