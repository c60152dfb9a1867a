#include "vendor/simple_bus.h"

namespace vendor {

LtBus::LtBus(sc_core::sc_module_name name, unsigned ports, unsigned window_bits, double latency_ns)
    : BusBase(name, ports, window_bits, latency_ns) {
    for (unsigned i = 0; i < ports; ++i) {
        target_socket[i].register_b_transport(this, &LtBus::b_transport, int(i));
        target_socket[i].register_transport_dbg(this, &LtBus::transport_dbg, int(i));
    }
}

unsigned int LtBus::transport_dbg(int, tlm::tlm_generic_payload& trans) {
    sc_dt::uint64 local = trans.get_address();
    const int to = decode(local);
    if (to < 0) return 0;
    trans.set_address(local);
    return initiator_socket[to]->transport_dbg(trans);
}

AtBus::AtBus(sc_core::sc_module_name name, unsigned ports, unsigned window_bits, double latency_ns)
    : BusBase(name, ports, window_bits, latency_ns),
      m_request_peq(this, &AtBus::request_ready),
      m_response_peq(this, &AtBus::response_ready),
      m_request_busy(ports, false),
      m_response_busy(ports, false),
      m_request_queue(ports),
      m_response_queue(ports) {
    for (unsigned i = 0; i < ports; ++i) {
        target_socket[i].register_nb_transport_fw(this, &AtBus::nb_transport_fw, int(i));
        target_socket[i].register_b_transport(this, &AtBus::b_transport, int(i));
        initiator_socket[i].register_nb_transport_bw(this, &AtBus::nb_transport_bw, int(i));
    }
}

tlm::tlm_sync_enum AtBus::nb_transport_fw(int from, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                          sc_core::sc_time& delay) {
    if (phase == tlm::BEGIN_REQ) {
        sc_dt::uint64 local = trans.get_address();
        const int to = decode(local);
        if (to < 0) {
            trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return tlm::TLM_COMPLETED;
        }
        m_route[&trans] = Route{from, trans.get_address(), false};
        trans.set_address(local);
        m_request_peq.notify(trans, phase, delay + m_latency);
        phase = tlm::END_REQ;
        return tlm::TLM_UPDATED;
    }
    if (phase == tlm::END_RESP) {
        m_response_busy[from] = false;
        if (!m_response_queue[from].empty()) {
            tlm::tlm_generic_payload* next = m_response_queue[from].front();
            m_response_queue[from].pop_front();
            send_response(from, next);
        }
        return tlm::TLM_COMPLETED;
    }
    return tlm::TLM_COMPLETED;
}

void AtBus::request_ready(tlm::tlm_generic_payload& trans, const tlm::tlm_phase&) {
    sc_dt::uint64 global = m_route[&trans].global;
    send_request(decode(global), &trans);
}

void AtBus::send_request(int to, tlm::tlm_generic_payload* trans) {
    if (m_request_busy[to]) {
        m_request_queue[to].push_back(trans);
        return;
    }
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    m_request_busy[to] = true;
    const tlm::tlm_sync_enum status = initiator_socket[to]->nb_transport_fw(*trans, phase, delay);
    if (status == tlm::TLM_ACCEPTED) return;
    m_request_busy[to] = false;
    if (status == tlm::TLM_COMPLETED || phase == tlm::BEGIN_RESP) m_response_peq.notify(*trans, tlm::BEGIN_RESP, delay);
    if (!m_request_queue[to].empty()) {
        tlm::tlm_generic_payload* next = m_request_queue[to].front();
        m_request_queue[to].pop_front();
        send_request(to, next);
    }
}

tlm::tlm_sync_enum AtBus::nb_transport_bw(int to, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                          sc_core::sc_time& delay) {
    if (phase == tlm::END_REQ || phase == tlm::BEGIN_RESP) {
        if (m_request_busy[to]) {
            m_request_busy[to] = false;
            if (!m_request_queue[to].empty()) {
                tlm::tlm_generic_payload* next = m_request_queue[to].front();
                m_request_queue[to].pop_front();
                send_request(to, next);
            }
        }
    }
    if (phase == tlm::BEGIN_RESP) {
        m_response_peq.notify(trans, phase, delay);
        return tlm::TLM_COMPLETED;
    }
    return tlm::TLM_ACCEPTED;
}

void AtBus::response_ready(tlm::tlm_generic_payload& trans, const tlm::tlm_phase&) {
    // The latency back to the initiator is served by a second trip through the queue.
    // (Telling the two trips apart by the address, as this bus once did, fails for GPU 0's window,
    // where the local and the global address are the same: its responses skipped the latency back.)
    auto it = m_route.find(&trans);
    if (!it->second.returning) {
        it->second.returning = true;
        trans.set_address(it->second.global);
        m_response_peq.notify(trans, tlm::BEGIN_RESP, m_latency);
        return;
    }
    const int from = it->second.from;
    m_route.erase(it);
    send_response(from, &trans);
}

void AtBus::send_response(int from, tlm::tlm_generic_payload* trans) {
    if (m_response_busy[from]) {
        m_response_queue[from].push_back(trans);
        return;
    }
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    m_response_busy[from] = true;
    if (target_socket[from]->nb_transport_bw(*trans, phase, delay) == tlm::TLM_ACCEPTED) return;
    m_response_busy[from] = false;
    if (!m_response_queue[from].empty()) {
        tlm::tlm_generic_payload* next = m_response_queue[from].front();
        m_response_queue[from].pop_front();
        send_response(from, next);
    }
}

}  // namespace vendor
