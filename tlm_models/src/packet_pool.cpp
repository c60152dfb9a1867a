#include "eidola/packet_pool.h"

namespace eidola {

PacketPool::~PacketPool() {
    // The atomic extension is a member of its packet: detach it so the payload's destructor
    // does not try to free it.
    for (auto& p : m_all) {
        p->clear_extension<AtomicExtension>();
        p->clear_extension<TrainExtension>();
        p->clear_extension<FlowExtension>();
        p->clear_extension<LandingFlagExtension>();
        p->clear_extension<MultimemExtension>();
        p->clear_extension<MessageExtension>();
        p->clear_extension<StreamExtension>();
    }
}

Packet* PacketPool::allocate() {
    Packet* p;
    if (m_free.empty()) {
        m_all.push_back(std::make_unique<Packet>(this));
        p = m_all.back().get();
        p->set_extension(&p->stream);  // once: a packet always names its stream (reset() keeps it)
    } else {
        p = m_free.back();
        m_free.pop_back();
    }
    p->acquire();
    return p;
}

void PacketPool::free(tlm::tlm_generic_payload* trans) {
    Packet* p = static_cast<Packet*>(trans);
    // Only the extensions the initiator attached (a train's when packets > 1). Why not both always:
    // the payload's extension array is a heap block of its own, and by the time a packet comes
    // back it is a cold line, written on every transaction at 1,024 GPUs.
    if (p->atomic_attached) p->clear_extension<AtomicExtension>();
    if (p->packets > 1) p->clear_extension<TrainExtension>();
    if (p->flow_attached) p->clear_extension<FlowExtension>();
    if (p->landing_attached) p->clear_extension<LandingFlagExtension>();
    if (p->multimem_attached) p->clear_extension<MultimemExtension>();
    if (p->message_attached) p->clear_extension<MessageExtension>();
    p->atomic_attached = false;
    p->flow_attached = false;
    p->landing_attached = false;
    p->multimem_attached = false;
    p->message_attached = false;
    p->awaiting = false;
    p->packets = 1;
    p->slots = 1;
    p->reset();
    m_free.push_back(p);
}

}  // namespace eidola
