// What every Eidola fabric offers beyond its sockets: the address map it routes by and its
// link statistics. Third-party interconnects need not implement it; their links are then
// simply not reported.
#pragma once

#include <cstdint>
#include <vector>

#include "eidola/address_map.h"

namespace eidola {

/// Traffic over one fabric link (for the ideal fabric: one source/destination GPU pair).
struct LinkStats {
    std::int32_t src;          ///< source node (GPU index for GPU ports)
    std::int32_t dst;          ///< destination node
    std::uint64_t bytes = 0;   ///< payload bytes carried, requests and read responses
    std::uint64_t packets = 0; ///< transactions carried
    std::uint64_t busy_ps = 0; ///< time the link was transmitting
};

/// A fabric model of this project.
class Fabric {
public:
    virtual ~Fabric() = default;
    /// Sets the map that routes a global address to GPU port i (before simulation).
    virtual void set_address_map(const AddressMap& map) = 0;
    /// Per-link statistics, in a deterministic order.
    virtual std::vector<LinkStats> link_stats() const = 0;
    /// Actions processed (the fabric's share of the event count).
    virtual std::uint64_t events() const = 0;
};

}  // namespace eidola
