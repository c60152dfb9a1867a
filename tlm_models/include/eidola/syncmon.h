// SyncMon: the monitor log beside a GPU's memory. A workgroup that waits in syncmon mode arms a
// watch on its flag's address and sleeps; a write or atomic that hits a watched address is
// checked against each waiter's condition, and the waiters it satisfies are woken. No polling
// reads are issued while asleep. The log holds a finite number of addresses; a waiter that finds
// it full falls back to polling.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace eidola {

/// Counters of one SyncMon.
struct SyncMonStats {
    std::uint64_t arms = 0;        ///< monitor requests (one per syncmon wait, and one per re-arm)
    std::uint64_t wakeups = 0;     ///< waiters woken by a write
    std::uint64_t spurious = 0;    ///< wake-ups whose re-check found the condition false
    std::uint64_t fallbacks = 0;   ///< waits that found the log full and polled instead
    std::uint64_t peak_entries = 0;///< most addresses watched at once
};

/// The log: watched flag addresses, each with its sleeping workgroups in arrival order.
class SyncMon {
public:
    /// `entries`: how many distinct addresses can be watched at once.
    explicit SyncMon(std::uint64_t entries = 64) : m_capacity(entries) {}
    void set_capacity(std::uint64_t entries) { m_capacity = entries; }

    /// Adds `wg` as a waiter on `flag`; false (and a fallback counted) when the address is new and the log is full.
    bool arm(std::uint64_t flag, std::uint32_t wg);
    /// Removes `wg` from `flag`'s waiters; frees the entry when it has none left.
    void disarm(std::uint64_t flag, std::uint32_t wg);
    /// The sleeping waiters of `flag` (in arrival order), or nullptr when the address is not watched.
    const std::vector<std::uint32_t>* waiters(std::uint64_t flag) const {
        auto it = m_entries.find(flag);
        return it == m_entries.end() ? nullptr : &it->second;
    }
    /// Addresses watched now.
    std::uint64_t occupancy() const { return m_entries.size(); }

    SyncMonStats& stats() { return m_stats; }
    const SyncMonStats& stats() const { return m_stats; }

private:
    std::uint64_t m_capacity;
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> m_entries;
    SyncMonStats m_stats;
};

}  // namespace eidola
