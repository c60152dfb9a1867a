// An eidolon GPU: a minimal model that replays a timing profile per workgroup. Compute phases are
// delays; writes, reads, signals and flag waits are real TLM-2.0 transactions, so the fabric's
// timing decides when each workgroup proceeds. The module is a shell around three parts that
// share one event heap: the workgroup engine (workgroup_engine.h), the initiator side
// (gpu_initiator.h) and the target side (gpu_target.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/gpu_core.h"
#include "eidola/gpu_initiator.h"
#include "eidola/gpu_target.h"
#include "eidola/params.h"
#include "eidola/program.h"
#include "eidola/registry.h"
#include "eidola/traffic_generator.h"
#include "eidola/workgroup_engine.h"

namespace eidola {

/// Columns of the "gpus" result table, one row per EidolonGpu (see Simulation::table).
inline const std::vector<std::string> kGpuColumns = {
    "gpu", "finish_ps", "reads", "flag_reads", "writes", "atomics", "bytes_sent", "bytes_received", "packets_sent",
    "memory_bytes_read", "memory_bytes_written", "syncmon_arms", "syncmon_wakeups", "syncmon_spurious",
    "syncmon_fallbacks", "syncmon_peak", "trains_refused", "window_full_ps", "requests", "requests_held"};
/// Columns of the "flags" result table: every flag word of every GPU at the end.
inline const std::vector<std::string> kFlagColumns = {"gpu", "flag", "value"};

/// The GPU's parameters.
struct EidolonGpuParams : ParamGroup {
    /// Window index.
    IntParam id{*this, "id", 0, "index of this GPU in the address map (GPU i owns window i)", 0, 1 << 20};
    /// Core clock.
    FrequencyParam clock{*this, "clock", 2.1e9, "core clock; converts compute(cycles=...) into time", 1e6, 1e12};
    /// Resident workgroups.
    IntParam workgroups{*this, "workgroups", 304, "resident workgroups (one program each)", 1, 1 << 20};
    /// Outstanding limit.
    IntParam max_outstanding{*this, "max_outstanding", 64,
                             "fabric transactions in flight at once, all workgroups together", 1, 1 << 20};
    /// Largest transaction.
    SizeParam max_payload{*this, "max_payload", 256,
                          "largest transaction; writes and reads are split into packets of this size", 8, 1 << 30};
    /// Packets per train.
    IntParam train{*this, "train", 1,
                   "most packets of one write or read issued as a single transaction (a train, timed as its packets; "
                   "docs/fabrics.md): 1 simulates every packet; a train is kept to 1/16 of its transfer and 1/128 "
                   "of max_outstanding; a fabric that cannot carry it whole refuses it (burst error) and that peer "
                   "gets packets",
                   1, 1 << 16};
    /// Flow size for a flow-level fabric.
    SizeParam flow{*this, "flow", 0,
                   "for fabric.model flow (set there by default): a write or read is issued as transactions of up to "
                   "this many bytes, each one flow taking one outstanding slot, and the fabric models what "
                   "max_outstanding does to its packets; 0B: packets (or trains)",
                   0, 1 << 30};
    /// Kernel launch latency.
    TimeParam launch{*this, "launch", 0,
                     "kernel launch latency: every workgroup's program starts this long after time zero, as a kernel "
                     "launched at time zero",
                     0, 1.0};
    /// Memory latency.
    TimeParam memory_latency{*this, "memory.latency", 300e-9, "latency of an access to this GPU's memory", 0, 1.0};
    /// Memory bandwidth.
    BandwidthParam memory_bandwidth{*this, "memory.bandwidth", 5.3e12,
                                    "bandwidth of this GPU's memory (accesses are served in turn)", 1e3, 1e18};
    /// SyncMon capacity.
    IntParam syncmon_entries{*this, "syncmon.entries", 64,
                             "addresses the SyncMon log can watch at once; a waiter that finds it full polls instead",
                             0, 1 << 24};
    /// Where SyncMon conditions are evaluated.
    BoolParam syncmon_check_in_monitor{
        *this, "syncmon.check_in_monitor", true,
        "the monitor evaluates each waiter's condition (true), or wakes on any write and the waiter re-reads (false)"};
    /// Wake-up latency.
    TimeParam syncmon_wake_latency{*this, "syncmon.wake_latency", 0,
                                   "from the satisfying write to the woken workgroup running again", 0, 1.0};
    /// Stall watchdog.
    TimeParam watchdog{*this, "watchdog", 1e-3,
                       "transactions outstanding this long with no response arriving stop the run with a stall report "
                       "(flows: this long per max_outstanding of the packets they stand for, as each is answered once; "
                       "the memory's latency is allowed on top, as no response comes sooner)",
                       1e-9, 1e3};
};

/// A GPU reduced to its traffic. Each workgroup is a state machine driven by one event heap.
class EidolonGpu : public sc_core::sc_module, public ErrorReporter {
public:
    /// initiator: writes, reads and atomics towards the fabric.
    inline static const SocketSpec initiator_spec{
        "initiator", "initiator", "at", "1", "writes, reads and atomics towards the fabric (4-phase base protocol)"};
    /// target: incoming traffic to this GPU's memory.
    inline static const SocketSpec target_spec{
        "target", "target", "at+lt", "1", "incoming traffic to this GPU's memory (nb_transport_fw and b_transport)"};
    /// AT initiator (4-phase base protocol) towards the fabric; carries writes, reads and atomics.
    tlm::tlm_initiator_socket<> initiator{initiator_spec.name.c_str()};
    /// Target for incoming traffic to this GPU's memory; answers nb_transport_fw (AT) and b_transport (LT).
    tlm::tlm_target_socket<> target{target_spec.name.c_str()};

    using Params = EidolonGpuParams;
    /// The sockets, for the registry.
    static std::vector<SocketSpec> socket_specs() { return {initiator_spec, target_spec}; }
    SC_HAS_PROCESS(EidolonGpu);

    EidolonGpu(sc_core::sc_module_name name, const ParamSet& params);

    /// This GPU's index in the address map.
    std::uint32_t index() const { return m_core.index; }
    /// Sets the platform's address map (before simulation).
    void set_address_map(const AddressMap& map) { m_core.map = map; }
    /// Sets the window layout: flag words at offset 0, and the multicast groups multimem ops name.
    void set_layout(const WindowLayout& layout) {
        m_core.memory.set_flag_count(layout.flag_count);
        m_core.multicast_groups = layout.multicast_groups;
    }
    /// Loads one workgroup's program; `ops` must outlive the simulation.
    void load_program(std::uint32_t wg, const Op* ops, std::uint64_t count) { m_engine.load_program(wg, ops, count); }
    /// Reports workgroup progress to `monitor` for deadlock detection.
    void attach(ProgressMonitor* monitor) { m_core.monitor = monitor; }
    /// Adds a synthetic traffic generator sending to `destinations` (see TrafficGenerator), among `gpus` GPUs.
    void set_traffic(const TrafficSpec& spec, std::vector<std::int32_t> destinations, std::uint32_t gpus);
    /// The traffic generator, or null.
    const TrafficGenerator* traffic() const { return m_traffic.get(); }
    /// Synthetic packets that arrived at this GPU.
    std::uint64_t traffic_received() const { return m_target.traffic_received(); }
    /// Records every op's begin and end time (off by default: it costs memory per op).
    void set_tracing(bool on) { m_engine.set_tracing(on); }

    /// The workgroups (statistics, trace, stuck waits).
    const WorkgroupEngine& engine() const { return m_engine; }
    /// The waits the deadlock monitor examines.
    const StuckWaitSource& waits() const { return m_engine; }
    std::uint32_t workgroups() const { return m_engine.workgroups(); }
    /// When the last workgroup finished.
    std::uint64_t finish_ps() const { return m_engine.finish_ps(); }
    WorkgroupStats workgroup_stats(std::uint32_t wg) const {
        WorkgroupStats s = m_engine.stats(wg);
        s.packets = m_initiator.packets_issued(wg);
        return s;
    }
    const GpuMemory& memory() const { return m_core.memory; }
    const SyncMon& syncmon() const { return m_core.syncmon; }
    const std::vector<OpRecord>& trace() const { return m_engine.trace(); }
    /// SyncMon occupancy after each change, (time ps, addresses watched), when tracing.
    const std::vector<std::pair<std::uint64_t, std::uint32_t>>& syncmon_trace() const {
        return m_engine.syncmon_trace();
    }
    std::uint64_t bytes_sent() const { return m_initiator.bytes_sent(); }
    std::uint64_t packets_sent() const { return m_initiator.packets_sent(); }
    /// Peers the fabric refused this GPU's packet trains to (sent packet by packet instead).
    std::uint64_t trains_refused() const { return m_initiator.trains_refused(); }
    /// Transactions the GPU sent (BEGIN_REQ).
    std::uint64_t requests() const { return m_initiator.requests(); }
    /// Of requests(), those whose request phase the fabric ended only with their response (GpuInitiator).
    std::uint64_t requests_held() const { return m_initiator.requests_held(); }
    /// Time its window was full with packets waiting (GpuInitiator::window_full_ps).
    std::uint64_t window_full_ps() const { return m_initiator.window_full_ps(); }
    /// Whether it issues flows for a flow fabric, which paces their window itself.
    bool issues_flows() const { return m_initiator.issues_flows(); }
    /// Bytes read from peers plus bytes peers wrote here.
    std::uint64_t bytes_received() const { return m_initiator.bytes_read() + m_target.bytes_written(); }
    std::uint64_t events() const { return m_core.actions.processed(); }
    /// Number of workgroups whose program has not finished.
    std::uint32_t unfinished() const { return m_engine.unfinished(); }
    /// Whether it still has work: unfinished workgroups, transactions awaiting their response, or synthetic
    /// traffic still to create or to send. Not whether it has events booked: a stall watchdog booked for after
    /// its last response stays booked once everything is done.
    bool has_work() const {
        return m_engine.unfinished() > 0 || m_initiator.outstanding() > 0 ||
               (m_traffic && (m_traffic->generating() || m_traffic->pending()));
    }
    /// Ops its workgroups completed so far, and ops in their programs.
    std::uint64_t ops_done() const { return m_engine.ops_done(); }
    std::uint64_t ops_total() const { return m_engine.ops_total(); }
    /// A one-line description of each unfinished workgroup (for stall reports).
    std::vector<std::string> unfinished_report() const { return m_engine.unfinished_report(); }

private:
    EidolonGpu(sc_core::sc_module_name name, const Params& params);
    void on_event();

    GpuCore m_core;
    WorkgroupEngine m_engine;
    GpuInitiator m_initiator;
    GpuTarget m_target;
    std::unique_ptr<TrafficGenerator> m_traffic;  // after m_initiator: it goes first, detaching its stamps
    std::uint64_t m_launch_ps = 0;                // when the workgroups' programs start (the kernel launch)
};

}  // namespace eidola
