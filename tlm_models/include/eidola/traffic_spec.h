// A synthetic traffic source as Python hands it to eidola::Simulation (set_traffic). Free of
// SystemC headers, like simulation.h, so cppyy can fill it without parsing SystemC. The pattern
// itself (who sends to whom) is resolved in Python into per-GPU destination lists; C++ only draws
// from them, so every pattern costs the same per packet.
#pragma once

#include <cstdint>

namespace eidola {

/// The figures of a Bernoulli injection process, the same for every generating GPU.
struct TrafficSpec {
    double probability = 0;           ///< chance of creating a packet in each cycle (rate x cycle), in (0, 1]
    std::uint64_t cycle_ps = 1000;    ///< the injection process's cycle
    std::uint64_t packet_bytes = 256; ///< payload of each write
    std::uint64_t offset = 0;         ///< where in the destination's window the writes land (past the profile's data)
    std::uint64_t warmup_ps = 0;      ///< statistics cover packets created from here ...
    std::uint64_t duration_ps = 0;    ///< ... for this long; creation stops at warmup + duration
    std::uint64_t seed = 1;           ///< with the GPU index, seeds each GPU's random stream
    bool uniform = false;             ///< destinations: every other GPU alike (true), or each GPU's own list
};

}  // namespace eidola
