// Payloads of outgoing transactions come from a pool (tlm_mm_interface): no new/delete per
// transaction once the pool has grown to the GPU's outstanding limit.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <tlm>

#include "eidola/atomic_extension.h"

namespace eidola {

/// A pooled payload with the issuing workgroup and a data buffer of the maximum payload size.
class Packet : public tlm::tlm_generic_payload {
public:
    Packet(tlm::tlm_mm_interface* mm, std::uint64_t max_payload)
        : tlm::tlm_generic_payload(mm), data(max_payload < 8 ? 8 : max_payload) {}
    std::uint32_t wg = 0;                ///< issuing workgroup
    bool is_poll = false;                ///< a local flag read (never leaves the GPU)
    std::vector<unsigned char> data;     ///< payload bytes (contents matter only for flags)
    AtomicExtension atomic;              ///< attached to signals
};

/// Recycles Packets; tlm_mm_interface::free returns them here.
class PacketPool : public tlm::tlm_mm_interface {
public:
    explicit PacketPool(std::uint64_t max_payload) : m_max_payload(max_payload) {}
    ~PacketPool() override;
    /// Sets the data buffer size of packets created from now on.
    void set_max_payload(std::uint64_t max_payload) { m_max_payload = max_payload; }

    /// A packet with reference count 1, its extensions cleared.
    Packet* allocate();
    void free(tlm::tlm_generic_payload* trans) override;
    /// Packets ever created (the pool's high-water mark).
    std::size_t created() const { return m_all.size(); }

private:
    std::uint64_t m_max_payload;
    std::vector<std::unique_ptr<Packet>> m_all;
    std::vector<Packet*> m_free;
};

}  // namespace eidola
