// The platform's address map: GPU i owns the window [base + i*stride, base + (i+1)*stride).
#pragma once

#include <cstdint>

namespace eidola {

/// Windows of equal size, one per GPU, laid end to end from `base`.
struct AddressMap {
    std::uint64_t base = 0;                        ///< first byte of GPU 0's window
    std::uint64_t stride = std::uint64_t(1) << 40; ///< window size (1 TiB by default)
    std::uint32_t windows = 0;                     ///< number of windows (GPUs)

    /// Global address of `offset` in GPU `gpu`'s window.
    std::uint64_t global(std::uint32_t gpu, std::uint64_t offset) const { return base + gpu * stride + offset; }

    /// Index of the window holding `address`, or -1 outside the map.
    std::int64_t window_of(std::uint64_t address) const {
        if (address < base || stride == 0) return -1;
        std::uint64_t index = (address - base) / stride;
        return index < windows ? std::int64_t(index) : -1;
    }

    /// Offset within its window of a global or window-local address. Targets use it because an
    /// interconnect may hand them either form (many IPs strip the window base).
    std::uint64_t local(std::uint64_t address) const {
        if (address >= base && window_of(address) >= 0) return (address - base) % stride;
        return address % stride;
    }
};

}  // namespace eidola
