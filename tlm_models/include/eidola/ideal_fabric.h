// The ideal fabric: every request and every response takes a fixed latency, and nothing
// contends. It is the paper's setting plus a latency, and the baseline the packet fabric is
// compared against.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/event_heap.h"
#include "eidola/fabric.h"
#include "eidola/fabric_ports.h"
#include "eidola/params.h"
#include "eidola/pointer_map.h"

namespace eidola {

/// Routes by the address map with a fixed one-way latency on requests and on responses.
class IdealFabric : public sc_core::sc_module, public Fabric {
public:
    /// targets[i]: AT/LT target bound to GPU i's initiator.
    sc_core::sc_vector<tlm::tlm_target_socket<>> targets;
    /// initiators[i]: AT initiator bound to GPU i's target (LT callers are forwarded with b_transport).
    sc_core::sc_vector<tlm::tlm_initiator_socket<>> initiators;

    SC_HAS_PROCESS(IdealFabric);
    /// The declared parameters (see ideal_fabric.cpp).
    static const std::vector<ParamSpec>& param_specs();

    IdealFabric(sc_core::sc_module_name name, const ParamSet& params);
    ~IdealFabric() override;

    void set_address_map(const AddressMap& map) override { m_map = map; }
    std::vector<LinkStats> link_stats() const override;
    std::uint64_t events() const override { return m_actions.processed(); }

private:
    friend struct FabricTargetPort<IdealFabric>;
    friend struct FabricInitiatorPort<IdealFabric>;
    enum class ActionKind : std::uint8_t { Deliver, Return, RequestFree, ResponseFree };
    struct Action {
        ActionKind kind;
        std::uint32_t port;
        tlm::tlm_generic_payload* trans;
    };

    tlm::tlm_sync_enum request(std::uint32_t src, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                               sc_core::sc_time& delay);
    tlm::tlm_sync_enum response(std::uint32_t dst, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                sc_core::sc_time& delay);
    void forward_b_transport(std::uint32_t src, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int forward_debug(tlm::tlm_generic_payload& trans);
    void on_event();
    void deliver(std::uint32_t dst, tlm::tlm_generic_payload* trans);
    void give_back(std::uint32_t src, tlm::tlm_generic_payload* trans);
    void count(std::uint32_t src, std::uint32_t dst, const tlm::tlm_generic_payload& trans);

    std::uint64_t m_latency_ps;
    AddressMap m_map;
    std::vector<std::unique_ptr<FabricTargetPort<IdealFabric>>> m_target_ports;
    std::vector<std::unique_ptr<FabricInitiatorPort<IdealFabric>>> m_initiator_ports;
    // Per port: is a BEGIN_REQ (downstream) / BEGIN_RESP (upstream) awaiting its END phase, and the queue behind it.
    std::vector<bool> m_request_busy, m_response_busy;
    std::vector<std::deque<tlm::tlm_generic_payload*>> m_request_queue, m_response_queue;
    PointerMap m_source;  // transaction -> its upstream port
    struct PairCount {
        std::uint64_t bytes = 0, packets = 0;
    };
    std::vector<PairCount> m_pairs;  // src * ports + dst -> its traffic (dense: one add per transaction)
    sc_core::sc_event m_event;
    EventHeap<Action> m_actions;
};

}  // namespace eidola
