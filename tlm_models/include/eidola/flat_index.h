// A map from 64-bit keys to 32-bit values: open addressing, linear probing, one flat array.
//
// Why not std::unordered_map: the calendar (a time's bucket), the flow solver (a set of uses'
// group) and the GPU initiator (a workgroup's unacknowledged writes to a peer, PeerCounts) look
// a key up, add it and drop it again for most events at scale, and the standard map
// pays a heap node per key, a pointer chase per lookup and a 64-bit division per hash. Here a key
// and its index share one 16-byte slot, found by a multiplicative hash and a short scan of
// neighbouring slots; a removal shifts the slots after it back (no tombstones), so lookups stay
// short however many keys come and go.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace eidola {

/// Keys (any 64-bit value) to values (any but kAbsent).
class FlatIndex {
public:
    /// What find() gives for a key that is not in the map; never stored as a value.
    static constexpr std::uint32_t kAbsent = ~std::uint32_t(0);

    FlatIndex() { rehash(16); }

    /// The index stored for `key`, or kAbsent.
    std::uint32_t find(std::uint64_t key) const {
        const std::uint32_t* v = const_cast<FlatIndex*>(this)->value(key);
        return v ? *v : kAbsent;
    }

    /// The value stored for `key`, to read or change in place (never to kAbsent), or nullptr.
    std::uint32_t* value(std::uint64_t key) {
        for (std::size_t i = home(key);; i = (i + 1) & m_mask) {
            Slot& s = m_slots[i];
            if (s.value == kAbsent) return nullptr;
            if (s.key == key) return &s.value;
        }
    }

    /// Stores `value` for `key` unless the key is there already (then it keeps its index); whether it was added.
    bool insert(std::uint64_t key, std::uint32_t value) {
        if (2 * (m_size + 1) > m_slots.size()) rehash(2 * m_slots.size());
        for (std::size_t i = home(key);; i = (i + 1) & m_mask) {
            Slot& s = m_slots[i];
            if (s.value == kAbsent) {
                s = Slot{key, value};
                ++m_size;
                return true;
            }
            if (s.key == key) return false;
        }
    }

    /// Drops `key` (nothing when absent).
    void erase(std::uint64_t key) {
        std::size_t hole = home(key);
        for (;; hole = (hole + 1) & m_mask) {
            if (m_slots[hole].value == kAbsent) return;
            if (m_slots[hole].key == key) break;
        }
        --m_size;
        // Backward shift: a later key of the run moves into the hole unless its home lies
        // cyclically after the hole and at or before its own slot (it would then not be found).
        for (std::size_t next = (hole + 1) & m_mask;; next = (next + 1) & m_mask) {
            Slot& s = m_slots[next];
            if (s.value == kAbsent) break;
            const std::size_t h = home(s.key);
            if (((next - h) & m_mask) < ((next - hole) & m_mask)) continue;  // home between hole and next
            m_slots[hole] = s;
            hole = next;
        }
        m_slots[hole].value = kAbsent;
    }

    /// Keys stored.
    std::size_t size() const { return m_size; }

private:
    struct Slot {
        std::uint64_t key = 0;
        std::uint32_t value = kAbsent;
    };

    std::size_t home(std::uint64_t key) const { return std::size_t((key * 0x9E3779B97F4A7C15ull) >> m_shift); }

    void rehash(std::size_t capacity) {
        std::vector<Slot> old;
        old.swap(m_slots);
        m_slots.assign(capacity, Slot{});
        m_mask = capacity - 1;
        m_shift = 64;
        for (std::size_t c = capacity; c > 1; c >>= 1) --m_shift;
        m_size = 0;
        for (const Slot& s : old)
            if (s.value != kAbsent) insert(s.key, s.value);
    }

    std::vector<Slot> m_slots;
    std::size_t m_mask = 0;
    unsigned m_shift = 64;
    std::size_t m_size = 0;
};

}  // namespace eidola
