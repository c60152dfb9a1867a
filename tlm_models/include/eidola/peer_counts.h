// Unacknowledged writes per (workgroup, destination GPU) of one GPU, in a small open-addressing
// hash map (FlatIndex). Why: a per-workgroup list of (peer, count) was scanned on every packet issued and
// every acknowledgement; in an all-to-all each workgroup has writes in flight to dozens of peers,
// and the scans cost more than the rest of the initiator's bookkeeping. A dense table would need
// workgroups x GPUs entries per GPU (300,000 at 1,024 GPUs x 304 workgroups).
#pragma once

#include <cstdint>

#include "eidola/flat_index.h"

namespace eidola {

/// Counts per (workgroup, peer); an entry exists only while its count is not zero.
class PeerCounts {
public:
    /// The count of (wg, peer), 0 when absent.
    std::uint32_t get(std::uint32_t wg, std::int32_t peer) const {
        const std::uint32_t count = m_counts.find(make_key(wg, peer));
        return count == FlatIndex::kAbsent ? 0 : count;
    }

    /// Adds `n` to (wg, peer).
    void increment(std::uint32_t wg, std::int32_t peer, std::uint32_t n = 1) {
        const std::uint64_t key = make_key(wg, peer);
        if (std::uint32_t* count = m_counts.value(key)) *count += n;
        else m_counts.insert(key, n);
    }

    /// Removes (wg, peer) and returns its count (0 when absent).
    std::uint32_t take(std::uint32_t wg, std::int32_t peer) {
        const std::uint64_t key = make_key(wg, peer);
        const std::uint32_t* count = m_counts.value(key);
        if (!count) return 0;
        const std::uint32_t taken = *count;
        m_counts.erase(key);
        return taken;
    }

    /// Takes `n` from (wg, peer); returns whether it reached zero (false when it was absent).
    bool decrement(std::uint32_t wg, std::int32_t peer, std::uint32_t n = 1) {
        const std::uint64_t key = make_key(wg, peer);
        std::uint32_t* count = m_counts.value(key);
        if (!count) return false;
        if ((*count -= n) > 0) return false;  // never below zero: a write is acknowledged after it is counted
        m_counts.erase(key);
        return true;
    }

private:
    static std::uint64_t make_key(std::uint32_t wg, std::int32_t peer) {
        return (std::uint64_t(wg) << 32) | std::uint32_t(peer);
    }
    FlatIndex m_counts;
};

}  // namespace eidola
