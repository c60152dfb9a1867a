// acme::Crossbar: a vendor-style TLM-2.0 interconnect, written the way much third-party IP is.
//  - Its sockets are arrays of pointers, created in the constructor.
//  - Its address decoder is empty until memmap() is called for each port after construction.
//  - The header is not self-contained: it expects <map>, the tlm_utils socket headers and the
//    ACME_MAX_PORTS macro to come before it (eidola's plugin.prelude and plugin.defines do that).
// It is loosely timed: b_transport adds the crossbar latency on the way there and back.
#pragma once

#include <systemc>
#include <tlm>

namespace acme {

class Crossbar : public sc_core::sc_module {
public:
    typedef tlm_utils::simple_target_socket_tagged<Crossbar> target_socket_t;
    typedef tlm_utils::simple_initiator_socket_tagged<Crossbar> initiator_socket_t;

    target_socket_t* t_sk[ACME_MAX_PORTS];
    initiator_socket_t* i_sk[ACME_MAX_PORTS];

    Crossbar(sc_core::sc_module_name name, int ports, double latency_ns)
        : sc_module(name), m_ports(ports), m_latency(latency_ns, sc_core::SC_NS) {
        if (ports < 1 || ports > ACME_MAX_PORTS) SC_REPORT_FATAL("acme::Crossbar", "port count out of range");
        for (int i = 0; i < ACME_MAX_PORTS; ++i) {
            t_sk[i] = nullptr;
            i_sk[i] = nullptr;
        }
        for (int i = 0; i < ports; ++i) {
            t_sk[i] = new target_socket_t(sc_core::sc_gen_unique_name("t_sk"));
            t_sk[i]->register_b_transport(this, &Crossbar::b_transport, i);
            t_sk[i]->register_transport_dbg(this, &Crossbar::transport_dbg, i);
            i_sk[i] = new initiator_socket_t(sc_core::sc_gen_unique_name("i_sk"));
        }
    }

    /// Maps [base, last] to `port`; the target sees addresses relative to base.
    void memmap(int port, sc_dt::uint64 base, sc_dt::uint64 last) { m_map[base] = Range{last, port}; }

private:
    struct Range {
        sc_dt::uint64 last;
        int port;
    };

    int decode(sc_dt::uint64& address) const {
        auto it = m_map.upper_bound(address);
        if (it == m_map.begin()) return -1;
        --it;
        if (address > it->second.last) return -1;
        address -= it->first;
        return it->second.port;
    }

    void b_transport(int, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
        const sc_dt::uint64 original = trans.get_address();
        sc_dt::uint64 local = original;
        const int to = decode(local);
        if (to < 0) {
            std::cout << "DECODE ERROR!" << std::endl;  // what vendor IP typically does
            trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        trans.set_address(local);
        delay += m_latency;
        (*i_sk[to])->b_transport(trans, delay);
        delay += m_latency;
        trans.set_address(original);
    }

    unsigned int transport_dbg(int, tlm::tlm_generic_payload& trans) {
        sc_dt::uint64 local = trans.get_address();
        const int to = decode(local);
        if (to < 0) return 0;
        trans.set_address(local);
        return (*i_sk[to])->transport_dbg(trans);
    }

    int m_ports;
    sc_core::sc_time m_latency;
    std::map<sc_dt::uint64, Range> m_map;
};

}  // namespace acme
