#include "eidola/syncmon.h"

#include <algorithm>
#include <utility>

namespace eidola {

bool SyncMon::arm(std::uint64_t flag, const SyncMonWaiter& waiter) {
    std::uint64_t i = find(flag);
    if (i == m_live) {
        if (m_live >= m_capacity) {
            ++m_stats.fallbacks;
            return false;
        }
        if (m_live == m_flags.size()) {
            m_flags.emplace_back();
            m_lists.emplace_back();
        }
        m_flags[i] = flag;
        ++m_live;
        m_stats.peak_entries = std::max<std::uint64_t>(m_stats.peak_entries, m_live);
    }
    m_lists[i].push_back(waiter);
    return true;
}

void SyncMon::disarm(std::uint64_t flag, std::uint32_t wg) {
    const std::uint64_t i = find(flag);
    if (i == m_live) return;
    auto& list = m_lists[i];
    list.erase(std::remove_if(list.begin(), list.end(), [wg](const SyncMonWaiter& w) { return w.wg == wg; }), list.end());
    if (!list.empty()) return;
    // The last entry takes the freed one's place (the order of entries means nothing); the freed
    // list, swapped to the end, keeps its storage for the next address.
    --m_live;
    m_flags[i] = m_flags[m_live];
    std::swap(m_lists[i], m_lists[m_live]);
}

}  // namespace eidola
