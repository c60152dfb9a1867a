// A slot of a pooled vector: models keep records (buckets, holds, NVLS operations, memory accesses)
// in a vector and reuse the indices of finished ones, so a long run allocates no more than its
// peak; the index, not a pointer, names the record, since the vector may grow.
#pragma once

#include <cstdint>
#include <vector>

namespace eidola {

/// The index of a free record of `items`: the last index put back on `free` if there is one, else a
/// new default-constructed record at the end. The caller fills the record in.
template <class T>
inline std::uint32_t take_slot(std::vector<T>& items, std::vector<std::uint32_t>& free) {
    if (free.empty()) {
        items.emplace_back();
        return std::uint32_t(items.size() - 1);
    }
    const std::uint32_t index = free.back();
    free.pop_back();
    return index;
}

}  // namespace eidola
