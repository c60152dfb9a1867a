// An eidolon GPU: a minimal model that replays a timing profile per workgroup. Compute phases are
// delays; writes, reads, signals and flag waits are real TLM-2.0 transactions, so the fabric's
// timing decides when each workgroup proceeds.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/address_map.h"
#include "eidola/event_heap.h"
#include "eidola/gpu_memory.h"
#include "eidola/packet_pool.h"
#include "eidola/params.h"
#include "eidola/program.h"
#include "eidola/syncmon.h"

namespace eidola {

class ProgressMonitor;
struct StuckWait;

/// Statistics of one workgroup.
struct WorkgroupStats {
    std::uint64_t finish_ps = 0;   ///< when its program ended (0 if it had none)
    std::uint64_t wait_ps = 0;     ///< time spent in flag waits
    std::uint64_t polls = 0;       ///< flag reads it issued while waiting
    std::uint64_t packets = 0;     ///< fabric transactions it issued
};

/// When one op of one workgroup ran (recorded when tracing is on).
struct OpRecord {
    std::uint32_t wg;        ///< workgroup
    std::uint32_t op;        ///< op index in its program
    std::uint64_t begin_ps;  ///< when the op started
    std::uint64_t end_ps;    ///< when it completed
};

/// A GPU reduced to its traffic. Each workgroup is a state machine driven by one event heap.
class EidolonGpu : public sc_core::sc_module,
                   private tlm::tlm_bw_transport_if<>,
                   private tlm::tlm_fw_transport_if<> {
public:
    /// AT initiator (4-phase base protocol) towards the fabric; carries writes, reads and atomics.
    tlm::tlm_initiator_socket<> initiator;
    /// Target for incoming traffic to this GPU's memory; answers nb_transport_fw (AT) and b_transport (LT).
    tlm::tlm_target_socket<> target;

    SC_HAS_PROCESS(EidolonGpu);
    /// The declared parameters (see eidolon_gpu.cpp).
    static const std::vector<ParamSpec>& param_specs();

    EidolonGpu(sc_core::sc_module_name name, const ParamSet& params);

    /// This GPU's index in the address map.
    std::uint32_t index() const { return m_index; }
    /// Sets the platform's address map (before simulation).
    void set_address_map(const AddressMap& map) { m_map = map; }
    /// Sets the window layout: flag words at offset 0.
    void set_layout(const WindowLayout& layout);
    /// Loads one workgroup's program; `ops` must outlive the simulation.
    void load_program(std::uint32_t wg, const Op* ops, std::uint64_t count);
    /// Reports workgroup progress to `monitor` for deadlock detection.
    void attach(ProgressMonitor* monitor) { m_monitor = monitor; }

    /// Number of resident workgroups.
    std::uint32_t workgroups() const { return std::uint32_t(m_wgs.size()); }
    /// When the last workgroup finished.
    std::uint64_t finish_ps() const { return m_finish_ps; }
    const WorkgroupStats& workgroup_stats(std::uint32_t wg) const { return m_wgs[wg].stats; }
    const GpuMemory& memory() const { return m_memory; }
    const SyncMon& syncmon() const { return m_syncmon; }
    /// Records every op's begin and end time (off by default: it costs memory per op).
    void set_tracing(bool on) { m_tracing = on; }
    const std::vector<OpRecord>& trace() const { return m_trace; }
    /// SyncMon occupancy after each change, (time ps, addresses watched), when tracing.
    const std::vector<std::pair<std::uint64_t, std::uint32_t>>& syncmon_trace() const { return m_syncmon_trace; }
    std::uint64_t bytes_sent() const { return m_bytes_sent; }
    std::uint64_t packets_sent() const { return m_packets_sent; }
    std::uint64_t bytes_received() const { return m_bytes_received; }
    std::uint64_t events() const { return m_actions.processed(); }
    /// Number of workgroups whose program has not finished.
    std::uint32_t unfinished() const { return m_unfinished; }
    /// Appends this GPU's unsatisfied waiters; returns false if any waiter's condition already holds.
    bool collect_stuck(std::vector<StuckWait>& out) const;
    /// A one-line description of each unfinished workgroup (for stall reports).
    std::vector<std::string> unfinished_report() const;
    /// Text of a model error (a failed transaction), empty if none.
    const std::string& error() const { return m_error; }
    /// Text of a stall the watchdog found (responses stopped arriving), empty if none.
    const std::string& stall() const { return m_stall; }

private:
    enum class WgState : std::uint8_t { Idle, Ready, Computing, Transferring, Waiting, Done };
    struct Workgroup {
        const Op* ops = nullptr;
        std::uint64_t count = 0;
        std::uint64_t pc = 0;
        WgState state = WgState::Idle;
        std::uint64_t issue_offset = 0;   // next byte of the current write/read to packetise
        std::uint64_t issue_left = 0;     // bytes of it not yet packetised
        std::uint32_t in_flight = 0;      // packets sent, response pending
        std::uint64_t wait_since_ps = 0;
        std::uint64_t interval_ps = 0;    // current poll interval (spin-yield backs off)
        std::uint64_t op_begin_ps = 0;    // when the current op started (for the trace)
        bool held = false;                // the current op's hold (wake-up delay) has been served
        bool rechecking = false;          // woken by SyncMon, re-reading its flag
        WorkgroupStats stats;
    };
    enum class ActionKind : std::uint8_t {
        Resume, PollIssue, PollDone, Serve, Issue, EndReq, Response, NextResponse, ArmDone, WaitDone, HoldDone, Recheck,
        Watchdog, QuietWatch
    };
    struct Action {
        ActionKind kind;
        std::uint32_t arg;          // workgroup or incoming slot
        Packet* packet = nullptr;   // for Response
    };

    void on_event();
    void run_workgroup(std::uint32_t wg);
    void start_op(std::uint32_t wg);
    void finish_op(std::uint32_t wg);
    void advance(std::uint32_t wg);
    void issue_poll(std::uint32_t wg);
    void poll_done(std::uint32_t wg);
    void arm_done(std::uint32_t wg);
    void recheck_done(std::uint32_t wg);
    void end_wait(std::uint32_t wg);
    void flag_written(std::uint64_t flag);
    void try_issue();
    void send(Packet* packet);
    void request_accepted();
    void response_arrived(Packet* packet);
    void serve_incoming(std::uint32_t slot);
    void send_response(tlm::tlm_generic_payload* trans);
    void fail(const std::string& what);
    void watchdog();
    void quiet_watch();

    // tlm_bw_transport_if (initiator side)
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) override;
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
    // tlm_fw_transport_if (target side)
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) override;
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(tlm::tlm_generic_payload& trans) override;

    std::uint32_t m_index;
    double m_ps_per_cycle;
    std::uint32_t m_max_outstanding;
    std::uint64_t m_max_payload;
    AddressMap m_map;
    GpuMemory m_memory;
    SyncMon m_syncmon;
    bool m_check_in_monitor;
    std::uint64_t m_wake_latency_ps;
    bool m_tracing = false;
    std::vector<OpRecord> m_trace;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> m_syncmon_trace;
    void note_syncmon() {
        if (m_tracing) m_syncmon_trace.emplace_back(now_ps(), std::uint32_t(m_syncmon.occupancy()));
    }
    ProgressMonitor* m_monitor = nullptr;

    std::vector<Workgroup> m_wgs;
    std::uint32_t m_unfinished = 0;
    std::uint64_t m_finish_ps = 0;

    sc_core::sc_event m_event;
    EventHeap<Action> m_actions;

    // initiator side
    PacketPool m_pool;
    std::deque<std::uint32_t> m_issue_queue;  // workgroups with bytes to packetise, round robin
    Packet* m_request_pending = nullptr;      // BEGIN_REQ sent, END_REQ not yet seen
    bool m_started = false;
    std::uint32_t m_outstanding = 0;
    std::uint64_t m_bytes_sent = 0, m_packets_sent = 0;

    // target side
    std::vector<tlm::tlm_generic_payload*> m_incoming;   // slot -> transaction being served
    std::vector<std::uint32_t> m_free_slots;
    std::deque<tlm::tlm_generic_payload*> m_responses;   // waiting for the response channel
    bool m_response_pending = false;                     // BEGIN_RESP sent, END_RESP not yet seen
    std::uint64_t m_bytes_received = 0;

    std::string m_error;
    std::string m_stall;                      // set by the watchdog
    std::uint64_t m_watchdog_ps = 0;
    std::uint64_t m_last_response_ps = 0;
    bool m_watching = false;
    bool m_quiet_watching = false;           // a QuietWatch action is pending
    std::uint64_t m_last_flag_change_ps = 0; // last flag write here, or last wait begun here
    std::uint32_t m_waiting = 0;             // workgroups in a wait
};

}  // namespace eidola
