#include "eidola/syncmon.h"

#include <algorithm>

namespace eidola {

bool SyncMon::arm(std::uint64_t flag, std::uint32_t wg) {
    auto it = m_entries.find(flag);
    if (it == m_entries.end()) {
        if (m_entries.size() >= m_capacity) {
            ++m_stats.fallbacks;
            return false;
        }
        it = m_entries.emplace(flag, std::vector<std::uint32_t>{}).first;
        m_stats.peak_entries = std::max<std::uint64_t>(m_stats.peak_entries, m_entries.size());
    }
    it->second.push_back(wg);
    return true;
}

void SyncMon::disarm(std::uint64_t flag, std::uint32_t wg) {
    auto it = m_entries.find(flag);
    if (it == m_entries.end()) return;
    auto& list = it->second;
    list.erase(std::remove(list.begin(), list.end(), wg), list.end());
    if (list.empty()) m_entries.erase(it);
}

}  // namespace eidola
