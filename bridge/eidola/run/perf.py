"""``eidola perf``: simulated collectives per message size, as nccl-tests measures them.

Each size is built as the library runs it (`perf_source.build_collective`) in the steady state of
nccl-tests' timed loop of calls on one stream (`eidola.workload.nccl.harness.host_floor`: the
host's cost per call, ``collectives.host_call``, overlaps the kernel before, and a kernel starts a
launch gap, ``gpus.launch``, after the previous one), and simulated on the platform (`simulate`):
every reported time is a simulation, the run's kernel time max(host cost, gap + kernel). The fabric
model of each size:

- ``--fabric packet`` or ``flow`` switches the platform's ``fabric.model`` for every size;
- ``--fabric auto`` runs the packet fabric while the collective writes at most
  `AUTO_PACKET_BYTES` in all (every byte its GPUs send: data or LL lines, step counters,
  credits) and the flow fabric above. Why that line: the packet fabric costs 9 to 32 ms of wall
  time per MiB written on the 8- and 16-GPU platforms (bench/RESULTS.md: 0.13 to 0.45 s per MiB
  of an 8-GPU all-reduce's message, which writes 14 times its message), so 64 MiB is 0.6 to 2 s
  a point; the flow fabric agrees with it within a few per cent from a few MiB up
  (docs/fabrics.md) at a small fraction of the cost. An 8-GPU all-reduce goes to the flow fabric
  from 8 MiB up on mi300x-8gpu (Simple, 14 times its size written); forced to LL, whose lines
  double the data, from 4 MiB.
- a platform whose fabric is ideal stays ideal, and a plugin fabric stays the plugin (cycle-level,
  like the packet fabric; ``--fabric flow`` on it is refused); a platform written in the general
  (components) form keeps its fabric.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, SimulationError
from ..platform import load_platform, memory
from ..platform.model import Platform
from ..workload.nccl.harness import STEADY_WORKGROUPS
from ..workload.ops import MULTIMEM_KINDS, Op
from ..workload.pages import small_pages
from ..workload.profile import Profile
from . import nccl_tests
from .build_memory import building_within
from .perf_source import ALGOS, OPS, PROTOS, Plan, build_collective

if TYPE_CHECKING:
    from .simulate import Progress

__all__ = ["AUTO_PACKET_BYTES", "SIGNAL_BYTES", "FABRICS", "PerfRow", "Fabrics", "check_choices", "fabric_name",
           "with_host_workgroup", "written_bytes", "run_sizes"]

SIGNAL_BYTES = 8  #: bytes a signal writes: one flag word (an 8-byte atomic)
STATS_BIN = "1ms"  #: fabric.stats.bin of perf's runs unless --set gives it: utilisation bins perf does not read
AUTO_PACKET_BYTES = 64 * 2**20  #: --fabric auto: the packet fabric up to this many bytes written in all, flow above
#: --set keys only the flow fabric reads (the loader refuses them on any other): perf gives them to its flow sizes alone.
FLOW_ONLY_KEYS = ("gpus.flow",)
FABRICS = ("auto", "packet", "flow")  #: what --fabric may say
_MODEL_NAMES = {"IdealFabric": "ideal", "PacketFabric": "packet", "FlowFabric": "flow"}


@dataclass(frozen=True)
class PerfRow:
    """One size's result: what nccl-tests prints for it, and how it was run."""

    size: int          #: bytes: nccl-tests' size column, the size simulated
    count: int         #: elements (float): nccl-tests' count column
    time_us: float     #: the simulated time
    plan: Plan         #: algorithm, protocol and channels
    fabric: str        #: packet | flow | ideal | plugin
    busbw_factor: float  #: busbw / algbw for this collective and GPU count
    wall_s: float = 0.0  #: what the simulation cost
    root: int = -1       #: nccl-tests' root column: the root of a rooted collective, -1 for the others
    events: int = 0      #: the simulation's kernel events
    notes: tuple[str, ...] = ()  #: the run summary's notes on what limited the fabric (run.fabric_notes)

    @property
    def algbw(self) -> float:
        """GB/s: size / time."""
        return nccl_tests.algbw(self.size, self.time_us)

    @property
    def busbw(self) -> float:
        """GB/s: algbw x the collective's bus factor."""
        return self.algbw * self.busbw_factor


def check_choices(op: str, algo: str, proto: str, fabric: str, channels: int) -> None:
    """Each named choice is one the command knows; ConfigError naming the option otherwise."""
    for option, value, allowed in (("--op", op, OPS), ("--algo", algo, ALGOS), ("--proto", proto, PROTOS),
                                   ("--fabric", fabric, FABRICS)):
        if value not in allowed:
            raise ConfigError(f"{option} {value!r}: expected one of {', '.join(allowed)}")
    if channels < 0:
        raise ConfigError(f"--channels {channels}: expected a number of channels >= 1 (or 0 to let the tuner choose)")


@small_pages
def written_bytes(profile: Profile) -> int:
    """Bytes the fabric writes into or reads out of GPU memories for the profile, all GPUs together.

    A write, put or read of n bytes counts n. A signal is an 8-byte atomic store (Simple's step
    counter after every slice): a packet like a credit's 8-byte put, so it counts as the GPU counts it
    in ``bytes_sent``. A multimem op counts a copy per member, as the switch does the work: a multicast
    of n bytes to a group of k writes k x n (n cross the issuer's link to the switch, k x n the
    switch's links to the members), a reduce_load of n bytes reads k x n from the members (and answers
    with n, not counted again, as a read's answer is not).
    """
    table = profile.table
    if not len(table):
        return 0
    # Summed in place under the mask, and signals counted from the uses of each template: a 512-GPU
    # profile has ten million rows, and copying out the masked column cost more than the sums.
    mask = table.kind_mask("write", "read", "put")
    uses = np.bincount(table.rows[:, 0], minlength=len(table.templates))
    signals = int(uses[table.template_mask("signal")].sum())
    total = int(np.add.reduce(table.rows[:, 3], where=mask)) + SIGNAL_BYTES * signals
    sizes = dict(profile.multicast_groups)
    for ref, t in enumerate(table.templates):
        if isinstance(t, Op) and t.kind in MULTIMEM_KINDS and uses[ref]:
            total += int(uses[ref]) * int(t["nbytes"]) * len(sizes[t["group"]])
    return total


@dataclass
class Fabrics:
    """The platform as given, and its packet and flow variants, each loaded once when first asked for."""

    path: str                      #: the platform file
    overrides: dict[str, Any]      #: --set KEY=VALUE
    choice: str = "auto"           #: --fabric
    base: Platform = field(init=False)   #: the platform as given (with --set)
    native: str = field(init=False)      #: its fabric: ideal | packet | flow | plugin | a model's name
    switchable: bool = field(init=False)  #: whether sizes may run on the packet or the flow fabric
    _variants: dict[str, Platform] = field(default_factory=dict, init=False)
    #: --set keys of FLOW_ONLY_KEYS, given to the platforms that run the flow fabric only. Why: `--fabric flow --set
    #: gpus.flow=1MiB` on a packet platform file was refused, as the file as given (packet) was loaded with them.
    _flow_only: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._flow_only = {k: v for k, v in self.overrides.items() if k in FLOW_ONLY_KEYS}
        self.overrides = {k: v for k, v in self.overrides.items() if k not in FLOW_ONLY_KEYS}
        self.base = load_platform(self.path, self.overrides)
        self.native = fabric_name(self.base)
        reload = bool(self._own(self.native))
        if self.native in ("packet", "flow") and self.base.shorthand is not None and \
                "fabric.stats.bin" not in self.overrides:
            # perf reads only kernel times; a link's 1 us utilisation bins over a long run of hundreds of
            # GPUs need gigabytes (10-20 GB for a 1 GiB all-reduce on 512), so coarse bins unless asked.
            self.overrides = {**self.overrides, "fabric.stats.bin": STATS_BIN}
            reload = True
        if reload:  # once, with perf's bins and, where the file's own fabric is the flow fabric, the flow-only keys
            self.base = load_platform(self.path, {**self.overrides, **self._own(self.native)})
        fixed = "fabric.model" in self.overrides
        self.switchable = self.native in ("packet", "flow") and self.base.shorthand is not None and not fixed
        if fixed and self.choice != "auto":
            raise ConfigError(f"--fabric {self.choice} and --set fabric.model={self.overrides['fabric.model']}: "
                              "give the fabric once")
        if self.choice == "flow" and self.native == "plugin":
            raise ConfigError(f"--fabric flow: {self.path} has a plugin fabric, which runs as it is (cycle-level, like "
                              "the packet fabric); the flow fabric replaces only the packet fabric")
        if self.choice != "auto" and not self.switchable and self.choice != self.native:
            why = ("its fabric is given in the components form" if self.base.shorthand is None
                   else f"its fabric is {self.native}")
            raise ConfigError(f"--fabric {self.choice}: {self.path} cannot switch to the {self.choice} fabric ({why}); "
                              "use --fabric auto")
        runs_flow = self.choice == "flow" or (self.choice == "auto" and (self.switchable or self.native == "flow"))
        if self._flow_only and not runs_flow:
            keys = ", ".join(self._flow_only)
            raise ConfigError(f"--set {keys}: only the flow fabric reads it, and this run has none "
                              f"({'--fabric ' + self.choice if self.choice != 'auto' else 'its fabric is ' + self.native})")
        if self._flow_only:
            self.platform("flow")  # a bad value is named now, before any size has printed

    def _own(self, fabric: str) -> dict[str, Any]:
        """The flow-only --set keys where `fabric` is the flow fabric, else none."""
        return self._flow_only if fabric == "flow" else {}

    def rule(self) -> str:
        """How this run chooses each size's fabric, for the printed header."""
        if self.choice != "auto":
            return f"{self.choice} for every size (--fabric {self.choice}){self._issue(self.choice)}"
        if not self.switchable:
            return f"{self.native} for every size (the platform's own fabric){self._issue(self.native)}"
        return (f"auto: packet while the collective writes at most {AUTO_PACKET_BYTES // 2**20} MiB in all GPUs "
                f"together, flow above{self._issue('flow')}")

    def _issue(self, fabric: str) -> str:
        """Where the flow fabric runs: how it times the GPUs' issue (fabric.flow.issue, docs/fabrics.md), and
        fabric.flow.responses, fabric.flow.incast and fabric.flow.injection when they are not the defaults."""
        if fabric != "flow":
            return ""
        component = self.base.components.get("fabric")
        resolved = component.resolved() if component is not None else {}
        issue = resolved.get("flow.issue")
        if issue is None:
            return ""
        why = ("writes go at their links' rates, the GPUs' issue gates left out"
               if issue == "queue" else "the GPUs' issue held by their gates, as on the packet fabric")
        # Only the choice that is not the default: every header would otherwise grow a clause nobody set.
        fair = ("; flow.responses: fair (acknowledgements share links fairly)"
                if resolved.get("flow.responses") == "fair" else "")
        shared = ("; flow.incast: share (deep-buffered switches' links into the GPUs shared max-min, no queue)"
                  if resolved.get("flow.incast") == "share" else "")
        free = ("; flow.injection: free (a GPU's writes through one link each at its own rate, no head-of-line "
                "blocking)" if resolved.get("flow.injection") == "free" else "")
        return f"; flow.issue: {issue} ({why}){fair}{shared}{free}"

    def choose(self, written: int) -> str:
        """The fabric a collective that writes `written` bytes in all runs on."""
        if self.choice != "auto":
            return self.choice
        if not self.switchable:
            return self.native
        return "packet" if written <= AUTO_PACKET_BYTES else "flow"

    def platform(self, fabric: str) -> Platform:
        """The platform with `fabric` as its fabric model (the base one where that is its own)."""
        if not self.switchable or fabric == self.native:
            return self.base
        if fabric not in self._variants:
            self._variants[fabric] = load_platform(self.path,
                                                   {**self.overrides, **self._own(fabric), "fabric.model": fabric})
        return self._variants[fabric]

    def harnessed(self, fabric: str) -> Platform:
        """`platform(fabric)` with room for the harness's host (`harness.host_floor`) beside the GPU's
        workgroups: it stands for the host thread, not for a workgroup of the GPU, so the collective keeps
        every workgroup the GPU has (the tuner reads those from `base`)."""
        key = f"harnessed-{fabric}"
        if key not in self._variants:
            self._variants[key] = with_host_workgroup(self.platform(fabric))
        return self._variants[key]


def with_host_workgroup(platform: Platform) -> Platform:
    """A copy of `platform` whose GPUs each have one workgroup more, for the steady-state harness's host
    (`harness.host_floor`), so that a collective built with `steady=True` keeps every workgroup the tuner counted."""
    plat = copy.deepcopy(platform)
    for gpu in plat.eidolons():
        gpu.params["workgroups"] = int(gpu.resolved()["workgroups"]) + STEADY_WORKGROUPS
    return plat


def fabric_name(platform: Platform) -> str:
    """The fabric `platform` runs on: ideal, packet, flow, plugin, another model's name, or none."""
    fabric = next((c for c in platform.components.values() if c.role == "fabric"), None)
    if fabric is None:
        return "none"
    if fabric.spec.plugin:
        return "plugin"
    return _MODEL_NAMES.get(fabric.model, fabric.model)


def run_sizes(fabrics: Fabrics, op: str, points: Iterable[tuple[int, int]], gpus: int, algo: str = "auto",
              proto: str = "auto", channels: int = 0, done: Callable[[PerfRow], None] | None = None,
              progress: Callable[[str], Progress | None] | None = None, root: int = 0) -> list[PerfRow]:
    """Simulates collective `op` at each (size, count) of `points` (nccl-tests' size and count columns) on `gpus` GPUs.

    Sizes of 0 bytes are left out (nothing moves). `done` is called with each row as it is
    finished, so a long sweep prints as it goes; `progress` makes each size's progress reporter
    (simulate's `progress`) from its label, ``"SIZE B, FABRIC fabric"``. `root`: a rooted collective's root
    (nccl-tests' -r). A simulation that fails
    raises its SimulationError (exit status 3) naming the size.
    """
    from .simulate import simulate  # loads cppyy only when a simulation is asked for

    rows = []
    factor = nccl_tests.bus_factor(op, gpus)
    for size, count in points:
        if size <= 0:
            continue
        with building_within(memory.limit_of(fabrics.base.limits), f"size {size} B ({op} on {gpus} GPUs)"):
            profile, plan = build_collective(fabrics.base, op, size, gpus, algo, proto, channels, steady=True,
                                             root=root)
        fabric = fabrics.choose(written_bytes(profile))
        start = time.perf_counter()
        try:
            result = simulate(fabrics.harnessed(fabric), profile,
                              progress=None if progress is None else progress(f"{size} B, {fabric} fabric"))
        except SimulationError as e:
            raise type(e)(f"size {size} B ({op}, {fabric} fabric): {e}", e.report) from None
        if result.partial:
            raise SimulationError(f"size {size} B ({op}, {fabric} fabric): stopped at limits.sim_time with workgroups "
                                  "unfinished; raise or remove limits.sim_time")
        row = PerfRow(size, count, result.kernel_time_ns / 1000, plan, fabric, factor,
                      time.perf_counter() - start, nccl_tests.root(op, root), result.events,
                      tuple(result.notes))
        rows.append(row)
        if done is not None:
            done(row)
    return rows
