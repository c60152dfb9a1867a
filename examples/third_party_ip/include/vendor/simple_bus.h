// SimpleBus: a small vendor interconnect model, written against the standard SystemC/TLM-2.0
// headers only. N target sockets face the initiators, N initiator sockets face the targets;
// target i owns the address window [i << window_bits, (i + 1) << window_bits). The bus strips
// the window base (targets see window-local addresses), as many real decoders do.
//
// Two variants: LtBus answers b_transport only (loosely timed); AtBus runs the 4-phase base
// protocol (approximately timed) with a payload event queue. Both add `latency_ns` each way.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace vendor {

/// Common decoding and sockets; `Bus` is the derived class that registers the callbacks.
template <class Bus>
class BusBase : public sc_core::sc_module {
public:
    sc_core::sc_vector<tlm_utils::simple_target_socket_tagged<Bus>> target_socket;
    sc_core::sc_vector<tlm_utils::simple_initiator_socket_tagged<Bus>> initiator_socket;

    BusBase(sc_core::sc_module_name name, unsigned ports, unsigned window_bits, double latency_ns)
        : sc_module(name),
          target_socket("target_socket", ports),
          initiator_socket("initiator_socket", ports),
          m_window_bits(window_bits),
          m_latency(latency_ns, sc_core::SC_NS) {}

protected:
    /// Loosely timed forwarding, shared by both variants: decode, latency there and back.
    void b_transport(int, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
        const sc_dt::uint64 original = trans.get_address();
        sc_dt::uint64 local = original;
        const int to = decode(local);
        if (to < 0) {
            trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        trans.set_address(local);
        delay += m_latency;
        initiator_socket[to]->b_transport(trans, delay);
        delay += m_latency;
        trans.set_address(original);
    }

    /// The port owning `address`, or -1; `address` is rewritten to the window-local offset.
    int decode(sc_dt::uint64& address) const {
        const sc_dt::uint64 port = address >> m_window_bits;
        if (port >= target_socket.size()) return -1;
        address &= (sc_dt::uint64(1) << m_window_bits) - 1;
        return int(port);
    }
    unsigned m_window_bits;
    sc_core::sc_time m_latency;
};

/// Loosely timed: b_transport only.
class LtBus : public BusBase<LtBus> {
public:
    LtBus(sc_core::sc_module_name name, unsigned ports, unsigned window_bits, double latency_ns);

private:
    unsigned int transport_dbg(int from, tlm::tlm_generic_payload& trans);
};

/// Approximately timed: the 4-phase base protocol, requests and responses delayed by the latency.
class AtBus : public BusBase<AtBus> {
public:
    AtBus(sc_core::sc_module_name name, unsigned ports, unsigned window_bits, double latency_ns);

private:
    tlm::tlm_sync_enum nb_transport_fw(int from, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay);
    tlm::tlm_sync_enum nb_transport_bw(int to, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay);
    void request_ready(tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase);
    void response_ready(tlm::tlm_generic_payload& trans, const tlm::tlm_phase& phase);
    void send_request(int to, tlm::tlm_generic_payload* trans);
    void send_response(int from, tlm::tlm_generic_payload* trans);

    tlm_utils::peq_with_cb_and_phase<AtBus> m_request_peq, m_response_peq;
    struct Route {
        int from;               // source port
        sc_dt::uint64 global;   // the address as the initiator sent it
        bool returning;         // the response has served its latency back and goes to the initiator next
    };
    std::map<tlm::tlm_generic_payload*, Route> m_route;
    std::vector<bool> m_request_busy, m_response_busy;
    std::vector<std::deque<tlm::tlm_generic_payload*>> m_request_queue, m_response_queue;
};

}  // namespace vendor
