// Payloads of outgoing transactions come from a pool (tlm_mm_interface): no new/delete per
// transaction once the pool has grown to the GPU's outstanding limit.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <tlm>

#include "eidola/atomic_extension.h"
#include "eidola/train_extension.h"

namespace eidola {

/// A pooled payload with the issuing workgroup. Bulk data has no meaning in an eidolon, so
/// writes and reads of buffers share one scratch area per pool; only a signal's 8-byte operand
/// is the packet's own. Why: it keeps a GPU's pool small enough to stay in cache with 1,024 GPUs.
class Packet : public tlm::tlm_generic_payload {
public:
    explicit Packet(tlm::tlm_mm_interface* mm) : tlm::tlm_generic_payload(mm) {}
    std::uint32_t wg = 0;                ///< issuing workgroup
    std::int32_t peer = 0;               ///< destination GPU (for per-peer release accounting)
    bool resumes = false;                ///< its response may complete a blocking transfer (read, blocking write)
    bool atomic_attached = false;        ///< `atomic` is set as its extension (a signal)
    std::uint32_t packets = 1;           ///< packets it stands for (a train when above 1)
    std::uint64_t seq = 0;               ///< its first packet's number among its workgroup's (what a release covers)
    unsigned char word[8] = {};          ///< a signal's operand
    AtomicExtension atomic;              ///< attached to signals
    TrainExtension train;                ///< attached to trains
};

/// Recycles Packets; tlm_mm_interface::free returns them here.
class PacketPool : public tlm::tlm_mm_interface {
public:
    explicit PacketPool(std::uint64_t max_payload) : m_scratch(max_payload) {}
    ~PacketPool() override;
    /// Sets the size of the shared data area (the largest transaction).
    void set_max_payload(std::uint64_t max_payload) { m_scratch.assign(max_payload, 0); }
    /// The data area that bulk writes and reads point into.
    unsigned char* scratch() { return m_scratch.data(); }

    /// A packet with reference count 1, its extensions cleared.
    Packet* allocate();
    void free(tlm::tlm_generic_payload* trans) override;
    /// Packets ever created (the pool's high-water mark).
    std::size_t created() const { return m_all.size(); }

private:
    std::vector<unsigned char> m_scratch;
    std::vector<std::unique_ptr<Packet>> m_all;
    std::vector<Packet*> m_free;
};

}  // namespace eidola
