// A small open-addressing hash map from transaction pointers to 32-bit values. Why: fabrics
// remember each in-flight transaction's source port; std::unordered_map allocates a node per
// insert, which showed up as a tenth of the simulation's time in malloc.
#pragma once

#include <cstdint>
#include <vector>

namespace eidola {

/// Maps non-null pointers to values, without allocating per insert (linear probing, backward-shift delete).
class PointerMap {
public:
    PointerMap() : m_slots(64) {}

    /// Sets the value for `key`. Always inlined: fabrics call it once per request, and whether
    /// compilers inline it otherwise depends on unrelated code in the caller's file.
    [[gnu::always_inline]] inline void set(const void* key, std::uint32_t value) {
        if ((m_size + 1) * 2 > m_slots.size()) grow();
        std::size_t i = index(key);
        while (m_slots[i].key && m_slots[i].key != key) i = (i + 1) & (m_slots.size() - 1);
        if (!m_slots[i].key) ++m_size;
        m_slots[i] = Slot{key, value};
    }

    /// Removes `key` and returns its value through `value`; false if absent.
    bool take(const void* key, std::uint32_t& value) {
        const std::size_t mask = m_slots.size() - 1;
        std::size_t i = index(key);
        while (m_slots[i].key != key) {
            if (!m_slots[i].key) return false;
            i = (i + 1) & mask;
        }
        value = m_slots[i].value;
        // Shift the following entries of the same probe run back, so no tombstones are needed.
        std::size_t j = i;
        for (;;) {
            j = (j + 1) & mask;
            if (!m_slots[j].key) break;
            const std::size_t home = index(m_slots[j].key);
            if (((j - home) & mask) >= ((j - i) & mask)) {
                m_slots[i] = m_slots[j];
                i = j;
            }
        }
        m_slots[i] = Slot{};
        --m_size;
        return true;
    }

    /// The value for `key` if present.
    bool find(const void* key, std::uint32_t& value) const {
        std::size_t i = index(key);
        while (m_slots[i].key) {
            if (m_slots[i].key == key) {
                value = m_slots[i].value;
                return true;
            }
            i = (i + 1) & (m_slots.size() - 1);
        }
        return false;
    }

    std::size_t size() const { return m_size; }

private:
    struct Slot {
        const void* key = nullptr;
        std::uint32_t value = 0;
    };
    std::size_t index(const void* key) const {
        std::uint64_t h = reinterpret_cast<std::uintptr_t>(key);
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;  // a 64-bit finaliser mix: pointers differ only in low bits
        h ^= h >> 33;
        return std::size_t(h) & (m_slots.size() - 1);
    }
    void grow() {
        std::vector<Slot> old(m_slots.size() * 2);
        old.swap(m_slots);
        m_size = 0;
        for (const Slot& s : old)
            if (s.key) set(s.key, s.value);
    }
    std::vector<Slot> m_slots;
    std::size_t m_size = 0;
};

}  // namespace eidola
