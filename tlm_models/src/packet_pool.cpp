#include "eidola/packet_pool.h"

namespace eidola {

PacketPool::~PacketPool() {
    // The atomic extension is a member of its packet: detach it so the payload's destructor
    // does not try to free it.
    for (auto& p : m_all) {
        p->clear_extension<AtomicExtension>();
        p->clear_extension<TrainExtension>();
    }
}

Packet* PacketPool::allocate() {
    Packet* p;
    if (m_free.empty()) {
        m_all.push_back(std::make_unique<Packet>(this));
        p = m_all.back().get();
    } else {
        p = m_free.back();
        m_free.pop_back();
    }
    p->acquire();
    return p;
}

void PacketPool::free(tlm::tlm_generic_payload* trans) {
    Packet* p = static_cast<Packet*>(trans);
    p->clear_extension<AtomicExtension>();
    p->clear_extension<TrainExtension>();
    p->packets = 1;
    p->reset();
    m_free.push_back(p);
}

}  // namespace eidola
