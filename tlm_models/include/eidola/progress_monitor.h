// Detects a simulation that cannot finish. Flags change only through writes and atomics that
// some running workgroup issued and is blocked on, so when no workgroup is running (all are
// finished or waiting) and no waiter's condition holds, nothing can ever wake them: a deadlock.
// Why not a timeout: polling waiters generate events forever, so "no more events" never comes.
// The check walks every waiter, so it runs at most once per check window of simulated time,
// from a waiter that polls in vain; a run whose waiters all sleep (SyncMon) simply runs out of
// events and is checked after sc_start returns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eidola/errors.h"

namespace eidola {

/// One workgroup stuck in a wait, for the deadlock report.
struct StuckWait {
    std::int32_t gpu;         ///< GPU index
    std::int32_t wg;          ///< workgroup index
    std::int64_t op;          ///< op index in its program
    std::uint64_t flag;       ///< flag index
    std::uint8_t cond;        ///< Cond
    std::uint8_t mode;        ///< WaitMode
    std::int64_t value;       ///< value waited for
    std::int64_t flag_value;  ///< the flag's value at the end
    std::uint64_t since_ps;   ///< when the wait began
};
/// Columns of the "stuck" result table, filled from StuckWait.
inline const std::vector<std::string> kStuckColumns = {"gpu",   "wg",    "op",         "flag",    "cond",
                                                       "mode",  "value", "flag_value", "since_ps"};

/// Whatever holds waiting workgroups (a GPU's workgroup engine): the monitor asks it for its waits.
class StuckWaitSource {
public:
    virtual ~StuckWaitSource() = default;
    /// Appends the unsatisfied waiters; returns false if any waiter's condition already holds.
    virtual bool collect_stuck(std::vector<StuckWait>& out) const = 0;
};

/// Counts running workgroups across all GPUs and reports a deadlock (which stops the kernel).
class ProgressMonitor {
public:
    /// Registers a source of waiters examined on a deadlock check.
    void attach(const StuckWaitSource* source) { m_sources.push_back(source); }
    /// Where a deadlock is reported (the Simulation's collector); none: it only stops the kernel.
    void set_error_sink(ErrorSink* sink) { m_errors = sink; }
    /// Models other than eidolons can write flags (a user's GPU model): "nobody running" then proves
    /// nothing, and GPUs instead report waits that saw no flag write for their watchdog time.
    void set_external_writers(bool present) { m_external = present; }
    bool external_writers() const { return m_external; }
    /// Stops the run as deadlocked if no waiter's condition holds (used with external writers).
    void declare_deadlock_if_stuck() { check(true); }

    void workgroup_started() { ++m_running; }
    void workgroup_finished() { --m_running; }
    void wait_began() { --m_running; }
    void wait_ended() { ++m_running; }
    /// Called by a waiter that found its condition false: checks for a deadlock, at most once per window.
    void maybe_check(std::uint64_t now_ps) {
        if (m_running == 0 && now_ps >= m_next_check_ps) {
            m_next_check_ps = now_ps + m_window_ps;
            check();
        }
    }
    /// Checks now (after the kernel ran out of events).
    void final_check() {
        if (m_running == 0) check(true);  // with a workgroup still running it is a stall, not a deadlock
    }

    /// Whether a deadlock stopped the simulation.
    bool deadlocked() const { return m_deadlocked; }
    /// The stuck waits found when the deadlock was detected.
    const std::vector<StuckWait>& stuck() const { return m_stuck; }
    /// When the deadlock was detected.
    std::uint64_t detected_at_ps() const { return m_detected_at_ps; }

private:
    void check(bool forced = false);
    std::vector<const StuckWaitSource*> m_sources;
    ErrorSink* m_errors = nullptr;
    std::int64_t m_running = 0;
    bool m_external = false;
    std::uint64_t m_next_check_ps = 0;
    std::uint64_t m_window_ps = 1000000;  // 1 us of simulated time
    bool m_deadlocked = false;
    std::vector<StuckWait> m_stuck;
    std::uint64_t m_detected_at_ps = 0;
};

}  // namespace eidola
