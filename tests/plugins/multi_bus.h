// A loosely timed bus on tlm_utils multi-sockets, for the binding tests: one target multi-socket that
// every GPU's initiator binds to, one initiator multi-socket bound to every GPU's target (in GPU
// order: binding k is GPU k), decoding windows of 2^40 bytes, 100 ns each way inside b_transport.
// Written against the standard SystemC/TLM headers only.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

namespace multi {

class Bus : public sc_core::sc_module {
public:
    tlm_utils::multi_passthrough_target_socket<Bus> targets{"targets"};
    tlm_utils::multi_passthrough_initiator_socket<Bus> initiators{"initiators"};

    explicit Bus(sc_core::sc_module_name name) : sc_module(name) {
        targets.register_b_transport(this, &Bus::b_transport);
    }

private:
    void b_transport(int, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        delay += sc_core::sc_time(100, sc_core::SC_NS);
        initiators[int(t.get_address() >> 40)]->b_transport(t, delay);
        delay += sc_core::sc_time(100, sc_core::SC_NS);
    }
};

}  // namespace multi
