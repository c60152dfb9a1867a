// Rounding a non-negative duration in picoseconds to an integer, as std::llround does.
// Why: llround is an out-of-line libm call, and durations are rounded on every memory access
// and several times per packet-hop.
#pragma once

#include <cstdint>

namespace eidola {

/// std::llround(x) for 0 <= x < 2^63: truncation is floor for non-negative x, and x minus its
/// floor is exact (both lie within a factor of two, or the floor is 0), so the half-way test
/// is exact too; halves round up, away from zero, like llround.
inline std::uint64_t round_ps(double x) {
    const std::uint64_t whole = std::uint64_t(x);
    return whole + (x - double(whole) >= 0.5 ? 1 : 0);
}

/// Picoseconds to send `bytes` at `bytes_per_s` (the packet and flow fabrics' serialisation).
inline std::uint64_t ser_ps(double bytes, double bytes_per_s) {
    return round_ps(bytes * 1e12 / bytes_per_s);
}

}  // namespace eidola
