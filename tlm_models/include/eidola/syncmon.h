// SyncMon: the monitor log beside a GPU's memory. A workgroup that waits in syncmon mode arms a
// watch on its flag's address and sleeps; a write or atomic that hits a watched address is
// checked against each waiter's condition, and the waiters it satisfies are woken. No polling
// reads are issued while asleep. The log holds a finite number of addresses; a waiter that finds
// it full falls back to polling.
#pragma once

#include <cstdint>
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

/// A sleeping workgroup and the condition it waits for, copied from its wait op when it arms.
/// Why a copy: a flag write checks every waiter of its address, and reading each waiter's op from
/// its program (cold at scale: the op array is hundreds of megabytes) was a cache miss per waiter.
struct SyncMonWaiter {
    std::uint32_t wg;      ///< the workgroup
    std::uint8_t cond;     ///< Cond of its wait
    bool wake_all;         ///< a wake-all waiter (else wake-one: at most one per write)
    std::int64_t value;    ///< the value its condition compares the flag with
};

/// The log: watched flag addresses, each with its sleeping workgroups in arrival order.
/// A flat array searched linearly: the log holds a few tens of addresses at most (syncmon.entries),
/// and a scan of them is cheaper than hashing; an entry's waiter list keeps its storage when the
/// entry is freed, so arming and disarming allocate nothing once the log has warmed up.
class SyncMon {
public:
    /// `entries`: how many distinct addresses can be watched at once.
    explicit SyncMon(std::uint64_t entries = 64) : m_capacity(entries) {}
    void set_capacity(std::uint64_t entries) { m_capacity = entries; }

    /// Adds `waiter` on `flag`; false (and a fallback counted) when the address is new and the log is full.
    bool arm(std::uint64_t flag, const SyncMonWaiter& waiter);
    /// Removes workgroup `wg` from `flag`'s waiters; frees the entry when it has none left.
    void disarm(std::uint64_t flag, std::uint32_t wg);
    /// The sleeping waiters of `flag` (in arrival order), or nullptr when the address is not watched.
    const std::vector<SyncMonWaiter>* waiters(std::uint64_t flag) const {
        const std::uint64_t i = find(flag);
        return i == m_live ? nullptr : &m_lists[i];
    }
    /// Addresses watched now.
    std::uint64_t occupancy() const { return m_live; }

    SyncMonStats& stats() { return m_stats; }
    const SyncMonStats& stats() const { return m_stats; }

private:
    /// The entry of `flag`, or m_live when it has none.
    std::uint64_t find(std::uint64_t flag) const {
        std::uint64_t i = 0;
        while (i < m_live && m_flags[i] != flag) ++i;
        return i;
    }

    std::uint64_t m_capacity;
    std::uint64_t m_live = 0;                      ///< entries [0, m_live) are in use
    std::vector<std::uint64_t> m_flags;            ///< each entry's address
    std::vector<std::vector<SyncMonWaiter>> m_lists;  ///< each entry's waiters (freed ones keep their storage)
    SyncMonStats m_stats;
};

}  // namespace eidola
