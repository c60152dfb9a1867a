// The workgroups of one eidolon GPU as event-driven state machines (not a thread each: 1,024
// GPUs x hundreds of workgroups must fit in memory). It steps each program op by op: compute and
// local phases become delays, transfers are handed to the GPU's initiator side, and flag waits
// poll, spin-yield or sleep in the SyncMon log until a write satisfies them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "eidola/gpu_core.h"
#include "eidola/program.h"
#include "eidola/progress_monitor.h"

namespace eidola {

class GpuInitiator;

/// Statistics of one workgroup.
struct WorkgroupStats {
    std::uint64_t finish_ps = 0;   ///< when its program ended (0 if it had none)
    std::uint64_t wait_ps = 0;     ///< time spent in flag waits
    std::uint64_t polls = 0;       ///< flag reads it issued while waiting
    std::uint64_t packets = 0;     ///< fabric transactions it issued (counted by the GpuInitiator)
};
/// Columns of the "workgroups" result table, filled from WorkgroupStats.
inline const std::vector<std::string> kWorkgroupColumns = {"gpu", "wg", "finish_ps", "wait_ps", "polls", "packets"};

/// When one op of one workgroup ran (recorded when tracing is on).
struct OpRecord {
    std::uint32_t wg;        ///< workgroup
    std::uint32_t op;        ///< op index in its program
    std::uint64_t begin_ps;  ///< when the op started
    std::uint64_t end_ps;    ///< when it completed
};
/// Columns of the "ops" result table, filled from OpRecord.
inline const std::vector<std::string> kOpColumns = {"gpu", "wg", "op", "begin_ps", "end_ps"};
/// Columns of the "syncmon_trace" result table (SyncMon occupancy after each change).
inline const std::vector<std::string> kSyncmonTraceColumns = {"gpu", "time_ps", "occupancy"};

/// Timing knobs of the workgroups, read from the GPU's parameters.
struct EngineConfig {
    std::uint32_t workgroups = 1;       ///< resident workgroups
    double ps_per_cycle = 1;            ///< converts compute(cycles=...) into time
    bool check_in_monitor = true;       ///< SyncMon evaluates conditions (else every write wakes and re-reads)
    std::uint64_t wake_latency_ps = 0;  ///< satisfying write to woken workgroup running
};

/// Runs one GPU's workgroup programs.
class WorkgroupEngine : public StuckWaitSource {
public:
    WorkgroupEngine(GpuCore& core, const EngineConfig& config);
    /// The initiator side that carries this GPU's transfers (set once, before simulation).
    void connect(GpuInitiator& initiator) { m_initiator = &initiator; }

    /// Loads one workgroup's program; `ops` must outlive the simulation.
    void load_program(std::uint32_t wg, const Op* ops, std::uint64_t count);
    /// Starts every loaded workgroup (at time 0).
    void start_all();

    // Actions, dispatched by EidolonGpu::on_event.
    /// The current op completed: go on with the next.
    void resume(std::uint32_t wg);
    /// A hold (wake-up delay) ended: start the op it held back.
    void hold_done(std::uint32_t wg);
    /// A SyncMon arm request reached the memory.
    void arm_done(std::uint32_t wg);
    /// A wait is satisfied.
    void end_wait(std::uint32_t wg);
    /// A woken waiter re-read its flag.
    void recheck_done(std::uint32_t wg);
    /// A poll's read is issued to the memory.
    void issue_poll(std::uint32_t wg);
    /// A poll's read returned.
    void poll_done(std::uint32_t wg);
    /// Checks waits that saw no flag change for a watchdog time (with writers the monitor cannot see).
    void quiet_watch();
    /// A write or atomic changed flag `flag`: wakes the sleepers it concerns.
    void flag_written(std::uint64_t flag);
    /// Workgroup `wg`'s unacknowledged writes (to some peer, or in all) reached zero, or its last held release went.
    void writes_drained(std::uint32_t wg);
    /// Whether workgroup `wg` holds a release, a fence or its end until its writes (or held releases) drain.
    bool awaits_drain(std::uint32_t wg) const {
        const WgState s = m_wgs[wg].state;
        return s == WgState::Releasing || s == WgState::Fencing || s == WgState::Draining || s == WgState::Posting;
    }

    /// Number of resident workgroups.
    std::uint32_t workgroups() const { return m_config.workgroups; }
    /// Statistics of workgroup `wg` (all zero for one that was given no program).
    const WorkgroupStats& stats(std::uint32_t wg) const {
        static const WorkgroupStats idle;
        return wg < m_wgs.size() ? m_wgs[wg].stats : idle;
    }
    /// When the last workgroup finished.
    std::uint64_t finish_ps() const { return m_finish_ps; }
    /// Number of workgroups whose program has not finished.
    std::uint32_t unfinished() const { return m_unfinished; }
    /// Ops completed so far, over all workgroups (how far a long run has got; Simulation::ops_done).
    std::uint64_t ops_done() const { return m_ops_done; }
    /// Ops in all the programs loaded.
    std::uint64_t ops_total() const { return m_ops_total; }
    /// The op workgroup `wg` is at.
    const Op& current_op(std::uint32_t wg) const { return m_wgs[wg].ops[m_wgs[wg].pc]; }

    bool collect_stuck(std::vector<StuckWait>& out) const override;
    /// A one-line description of each unfinished workgroup (for stall reports).
    std::vector<std::string> unfinished_report() const;

    /// Records every op's begin and end time, and the SyncMon occupancy (off by default: memory per op).
    void set_tracing(bool on) { m_tracing = on; }
    const std::vector<OpRecord>& trace() const { return m_trace; }
    const std::vector<std::pair<std::uint64_t, std::uint32_t>>& syncmon_trace() const { return m_syncmon_trace; }

private:
    // Releasing: a signal waits for earlier writes; Fencing: a fence does; Draining: the program
    // ended and its last writes are in flight (a kernel ends when its stores are visible);
    // Posting: a signal waits until the workgroup's held (overlapping) releases are released.
    enum class WgState : std::uint8_t { Idle, Ready, Computing, Transferring, Waiting, Done, Releasing, Fencing, Draining,
                                        Posting };
    struct Workgroup {
        const Op* ops = nullptr;
        std::uint64_t count = 0;
        std::uint64_t pc = 0;
        WgState state = WgState::Idle;
        bool held = false;                // the current op's hold (wake-up delay) has been served
        bool released = false;            // the current signal's release wait is over (it began before)
        bool rechecking = false;          // woken by SyncMon, re-reading its flag
        // The current op's fields that are read again after it starts (a release's scope, a wait's
        // condition: every check of the condition reads these), copied here when it starts. Why:
        // the op array is cold by then at scale (a cache miss per read), while this record is
        // touched anyway.
        std::uint8_t wait_cond = 0;       // Cond of the current wait
        bool wait_all = false;            // the current wait wakes with all its flag's waiters
        std::int32_t release_peer = -1;   // the peer a Releasing signal waits for, -1 for all its writes
        std::uint64_t wait_flag = 0;      // the current wait's flag (index of its 8-byte word)
        std::int64_t wait_value = 0;      // the value the current wait's condition compares with
        std::uint64_t wait_since_ps = 0;
        std::uint64_t interval_ps = 0;    // current poll interval (spin-yield backs off)
        std::uint64_t op_begin_ps = 0;    // when the current op started (for the trace)
        WorkgroupStats stats;
    };

    void run(std::uint32_t wg);
    /// Whether the signal `op` of workgroup `wg` may go: the earlier writes its scope covers are acknowledged.
    bool released(std::uint32_t wg, const Op& op) const { return released_to(wg, release_scope(op)); }
    /// The peer whose writes a signal `op` waits for, or -1 for all its workgroup's writes.
    static std::int32_t release_scope(const Op& op) {
        return static_cast<ReleaseScope>(op.mode) == ReleaseScope::Peer ? op.peer : -1;
    }
    /// Whether workgroup `wg`'s writes to `peer` (all of them for -1) are acknowledged.
    bool released_to(std::uint32_t wg, std::int32_t peer) const;
    void start_op(std::uint32_t wg);
    void advance(std::uint32_t wg);
    void note_syncmon() {
        if (m_tracing) m_syncmon_trace.emplace_back(now_ps(), std::uint32_t(m_core.syncmon.occupancy()));
    }

    GpuCore& m_core;
    GpuInitiator* m_initiator = nullptr;
    EngineConfig m_config;
    // Workgroups 0 to the highest one given a program; the rest are idle and hold no state. Why:
    // a GPU has hundreds of resident workgroups (304 by default) and a profile mostly uses a few,
    // so a full table would put 30 KB between the lines of one GPU that are in use: at 1,024 GPUs,
    // tens of megabytes of which every event touches a line on a different page.
    std::vector<Workgroup> m_wgs;
    std::uint32_t m_unfinished = 0;
    std::uint64_t m_finish_ps = 0;
    bool m_tracing = false;
    std::uint64_t m_ops_done = 0, m_ops_total = 0;
    std::vector<OpRecord> m_trace;
    std::vector<SyncMonWaiter> m_waking;     // flag_written()'s copy of a waiter list, kept to reuse its storage
    std::vector<std::pair<std::uint64_t, std::uint32_t>> m_syncmon_trace;
    bool m_quiet_watching = false;           // a QuietWatch action is pending
    std::uint64_t m_last_flag_change_ps = 0; // last flag write here, or last wait begun here
    std::uint32_t m_waiting = 0;             // workgroups in a wait
};

}  // namespace eidola
