// Unacknowledged writes per (workgroup, destination GPU) of one GPU, as a small open-addressing
// hash map. Why: a per-workgroup list of (peer, count) was scanned on every packet issued and
// every acknowledgement; in an all-to-all each workgroup has writes in flight to dozens of peers,
// and the scans cost more than the rest of the initiator's bookkeeping. A dense table would need
// workgroups x GPUs entries per GPU (300,000 at 1,024 GPUs x 304 workgroups).
#pragma once

#include <cstdint>
#include <vector>

namespace eidola {

/// Counts per (workgroup, peer); an entry exists only while its count is not zero.
class PeerCounts {
public:
    PeerCounts() : m_slots(64) {}

    /// The count of (wg, peer), 0 when absent.
    std::uint32_t get(std::uint32_t wg, std::int32_t peer) const {
        const std::uint64_t key = make_key(wg, peer);
        for (std::size_t i = index(key);; i = (i + 1) & mask()) {
            if (m_slots[i].key == key) return m_slots[i].count;
            if (m_slots[i].key == kEmpty) return 0;
        }
    }

    /// Adds `n` to (wg, peer).
    void increment(std::uint32_t wg, std::int32_t peer, std::uint32_t n = 1) {
        if ((m_size + 1) * 2 > m_slots.size()) grow();
        const std::uint64_t key = make_key(wg, peer);
        std::size_t i = index(key);
        while (m_slots[i].key != key && m_slots[i].key != kEmpty) i = (i + 1) & mask();
        if (m_slots[i].key == kEmpty) {
            m_slots[i].key = key;
            m_slots[i].count = 0;
            ++m_size;
        }
        m_slots[i].count += n;
    }

    /// Removes (wg, peer) and returns its count (0 when absent).
    std::uint32_t take(std::uint32_t wg, std::int32_t peer) {
        const std::uint64_t key = make_key(wg, peer);
        std::size_t i = index(key);
        while (m_slots[i].key != key) {
            if (m_slots[i].key == kEmpty) return 0;
            i = (i + 1) & mask();
        }
        const std::uint32_t count = m_slots[i].count;
        erase(i);
        return count;
    }

    /// Takes `n` from (wg, peer); returns whether it reached zero (false when it was absent).
    bool decrement(std::uint32_t wg, std::int32_t peer, std::uint32_t n = 1) {
        const std::uint64_t key = make_key(wg, peer);
        std::size_t i = index(key);
        while (m_slots[i].key != key) {
            if (m_slots[i].key == kEmpty) return false;
            i = (i + 1) & mask();
        }
        if ((m_slots[i].count -= n) > 0) return false;
        erase(i);
        return true;
    }

private:
    static constexpr std::uint64_t kEmpty = ~std::uint64_t(0);  // no (wg, peer) has it: wg < 2^32 - 1
    struct Slot {
        std::uint64_t key = kEmpty;
        std::uint32_t count = 0;
    };
    static std::uint64_t make_key(std::uint32_t wg, std::int32_t peer) {
        return (std::uint64_t(wg) << 32) | std::uint32_t(peer);
    }
    std::size_t mask() const { return m_slots.size() - 1; }
    std::size_t index(std::uint64_t key) const {
        key ^= key >> 29;
        key *= 0xbf58476d1ce4e5b9ULL;  // a 64-bit mix: keys differ in a few low bits of each half
        key ^= key >> 32;
        return std::size_t(key) & mask();
    }
    // Backward-shift deletion: the following entries of the probe run move back, so no tombstones.
    void erase(std::size_t i) {
        for (std::size_t j = (i + 1) & mask(); m_slots[j].key != kEmpty; j = (j + 1) & mask()) {
            const std::size_t home = index(m_slots[j].key);
            if (((j - home) & mask()) >= ((j - i) & mask())) {
                m_slots[i] = m_slots[j];
                i = j;
            }
        }
        m_slots[i] = Slot{};
        --m_size;
    }
    void grow() {
        std::vector<Slot> old(m_slots.size() * 2);
        old.swap(m_slots);
        m_size = 0;
        for (const Slot& s : old) {
            if (s.key == kEmpty) continue;
            std::size_t i = index(s.key);
            while (m_slots[i].key != kEmpty) i = (i + 1) & mask();
            m_slots[i] = s;
            ++m_size;
        }
    }
    std::vector<Slot> m_slots;
    std::size_t m_size = 0;
};

}  // namespace eidola
