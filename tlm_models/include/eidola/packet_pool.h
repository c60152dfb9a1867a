// Payloads of outgoing transactions come from a pool (tlm_mm_interface): no new/delete per
// transaction once the pool has grown to the GPU's outstanding limit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <memory>
#include <vector>

#include <tlm>

#include "eidola/atomic_extension.h"
#include "eidola/flow_extension.h"
#include "eidola/landing_flag_extension.h"
#include "eidola/message_extension.h"
#include "eidola/multimem_extension.h"
#include "eidola/stream_extension.h"
#include "eidola/train_extension.h"

namespace eidola {

/// A pooled payload with the issuing workgroup. Bulk data has no meaning in an eidolon, so
/// writes and reads of buffers share one scratch area (one per process); only a signal's 8-byte operand
/// is the packet's own. Why: it keeps a GPU's pool small enough to stay in cache with 1,024 GPUs.
class Packet : public tlm::tlm_generic_payload {
public:
    explicit Packet(tlm::tlm_mm_interface* mm) : tlm::tlm_generic_payload(mm) {}
    std::uint32_t wg = 0;                ///< issuing workgroup
    std::int32_t peer = 0;               ///< destination GPU (for per-peer release accounting)
    bool resumes = false;                ///< its response may complete a blocking transfer (read, blocking write)
    bool awaiting = false;               ///< sent and not yet answered (a second BEGIN_RESP is refused)
    bool atomic_attached = false;        ///< `atomic` is set as its extension (a signal)
    std::uint32_t packets = 1;           ///< packets it stands for (a train when above 1)
    std::uint64_t seq = 0;               ///< its first packet's number among its workgroup's (what a release covers)
    std::uint32_t slots = 1;             ///< outstanding slots it takes (its packets; one for a flow)
    bool flow_attached = false;          ///< `flow` is set as its extension (flow mode)
    bool landing_attached = false;       ///< `landing` is set as its extension (a put)
    bool multimem_attached = false;      ///< `multimem` is set as its extension (a multicast or reduce_load)
    bool message_attached = false;       ///< `message` is set as its extension (part of a longer message)
    unsigned char word[8] = {};          ///< a signal's operand
    AtomicExtension atomic;              ///< attached to signals
    TrainExtension train;                ///< attached to trains
    FlowExtension flow;                  ///< attached to flows (flow mode)
    LandingFlagExtension landing;        ///< attached to every transaction of a put
    MultimemExtension multimem;          ///< attached to every transaction of a multimem op
    MessageExtension message;            ///< attached to transactions that are part of a longer message
    StreamExtension stream;              ///< attached to every transaction: its workgroup (stays attached)
};

/// Recycles Packets; tlm_mm_interface::free returns them here.
class PacketPool : public tlm::tlm_mm_interface {
public:
    explicit PacketPool(std::uint64_t max_payload) { set_max_payload(max_payload); }
    ~PacketPool() override;
    /// Makes the shared data area at least `max_payload` bytes (the largest transaction). One area
    /// serves every pool of the process: its bytes mean nothing, and a flow's (gpus.flow, 64 MiB
    /// by default) per GPU would take 64 GiB of address space on 1,024 GPUs. Zeroed by calloc, so
    /// a large area costs memory only where a read touches it. Pools are sized while the platform
    /// is built, before any transaction points into the area.
    void set_max_payload(std::uint64_t max_payload) {
        Area& area = shared_area();
        const std::uint64_t size = std::max<std::uint64_t>(max_payload, 1);
        if (area.size >= size) return;
        area.data.reset(static_cast<unsigned char*>(std::calloc(size, 1)));
        if (!area.data) throw std::bad_alloc();
        area.size = size;
    }
    /// The data area that bulk writes and reads point into.
    unsigned char* scratch() { return shared_area().data.get(); }

    /// A packet with reference count 1, its extensions cleared.
    Packet* allocate();
    void free(tlm::tlm_generic_payload* trans) override;
    /// Packets ever created (the pool's high-water mark).
    std::size_t created() const { return m_all.size(); }

private:
    struct Free {
        void operator()(unsigned char* p) const { std::free(p); }
    };
    struct Area {
        std::unique_ptr<unsigned char, Free> data;
        std::uint64_t size = 0;
    };
    static Area& shared_area() {
        static Area area;
        return area;
    }
    std::vector<std::unique_ptr<Packet>> m_all;
    std::vector<Packet*> m_free;
};

}  // namespace eidola
