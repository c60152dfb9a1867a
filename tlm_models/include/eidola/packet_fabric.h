// The packet fabric: a cycle-approximate interconnect at packet granularity. Every request and
// every response crosses links (raw bandwidth per lane, latency, per-packet header) and routers
// (per-hop latency, finite input buffers per virtual channel, credit flow control, round-robin
// output arbitration). A full buffer stops its upstream link; a full injection buffer withholds
// END_REQ (or END_RESP), so back-pressure reaches the GPU.
#pragma once

#include <cstdint>
#include <deque>
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
#include "eidola/topology.h"

namespace eidola {

/// A packet-switched TLM-2.0 fabric over a Topology, with the same sockets as IdealFabric.
class PacketFabric : public sc_core::sc_module, public Fabric {
public:
    /// targets[i]: AT target bound to GPU i's initiator (b_transport is forwarded at zero-load latency).
    sc_core::sc_vector<tlm::tlm_target_socket<>> targets;
    /// initiators[i]: AT initiator bound to GPU i's target.
    sc_core::sc_vector<tlm::tlm_initiator_socket<>> initiators;

    SC_HAS_PROCESS(PacketFabric);
    /// The declared parameters (see packet_fabric.cpp).
    static const std::vector<ParamSpec>& param_specs();

    PacketFabric(sc_core::sc_module_name name, const ParamSet& params);
    ~PacketFabric() override;

    void set_address_map(const AddressMap& map) override { m_map = map; }
    std::vector<LinkStats> link_stats() const override;
    std::vector<PairStats> pair_stats() const override;
    std::uint64_t events() const override { return m_actions.processed(); }
    std::uint64_t bin_ps() const override { return m_bin_ps; }
    std::string error() const override { return m_error; }
    const Topology& topology() const { return *m_topology; }

private:
    friend struct FabricTargetPort<PacketFabric>;
    friend struct FabricInitiatorPort<PacketFabric>;
    struct Packet;
    struct Queue;
    struct Input;
    struct Output;
    struct LinkCounters;

    enum class ActionKind : std::uint8_t { Arrive, HeadReady, Arbitrate, EjectFree, Watchdog };
    struct Action {
        ActionKind kind;
        std::uint32_t a;   // packet, input or output index
        std::uint32_t b;   // vc or input
    };

    // TLM entry points
    tlm::tlm_sync_enum request(std::uint32_t gpu, tlm::tlm_generic_payload& t, tlm::tlm_phase& p,
                                  sc_core::sc_time& d);
    tlm::tlm_sync_enum response(std::uint32_t gpu, tlm::tlm_generic_payload& t, tlm::tlm_phase& p,
                                   sc_core::sc_time& d);
    void forward_b_transport(std::uint32_t gpu, tlm::tlm_generic_payload& t, sc_core::sc_time& d);
    unsigned int forward_debug(tlm::tlm_generic_payload& t);

    void on_event();
    bool inject(std::uint32_t gpu, tlm::tlm_generic_payload* trans, std::uint8_t cls);
    void retry_blocked_injection(std::uint32_t gpu, std::uint8_t cls);
    void arrive(std::uint32_t packet, std::uint32_t input, std::uint32_t vc);
    void head_ready(std::uint32_t input, std::uint32_t vc);
    void arbitrate(std::uint32_t output);
    void arbitrate_link(std::uint32_t output);
    void arbitrate_ejection(std::uint32_t output);
    std::uint32_t pop_head(std::uint32_t input, std::uint32_t vc);
    std::uint32_t route(std::uint32_t node, const Packet& p);
    void schedule_arbitration(std::uint32_t output, std::uint64_t at);
    void deliver(std::uint32_t output, std::uint32_t packet);
    void watchdog();
    void fail(const std::string& what);

    std::unique_ptr<Topology> m_topology;
    AddressMap m_map;
    std::uint64_t m_switch_latency_ps;
    std::uint32_t m_depth;          // packets per virtual channel per input buffer
    std::uint32_t m_ack_bytes;      // wire bytes of a write's response
    bool m_spread;
    std::uint64_t m_bin_ps;
    std::uint64_t m_watchdog_ps;
    std::uint32_t m_vcs_per_class;  // 2 with dateline virtual channels, else 1

    std::vector<std::unique_ptr<FabricTargetPort<PacketFabric>>> m_target_ports;
    std::vector<std::unique_ptr<FabricInitiatorPort<PacketFabric>>> m_initiator_ports;
    std::vector<Packet> m_packets;
    std::vector<std::uint32_t> m_free_packets;
    std::vector<Input> m_inputs;     // per node: injection, then one per incoming link
    std::vector<Output> m_outputs;   // per node: request ejection, response ejection, then one per outgoing link
    std::vector<std::uint32_t> m_node_first_input, m_node_first_output;
    std::vector<std::uint32_t> m_link_input, m_link_output;  // link -> its receiving input / sending output
    std::vector<LinkCounters> m_link_counters;
    std::vector<std::uint32_t> m_spread_counter;             // per node, for equal-cost spreading
    PointerMap m_source;  // request -> source GPU
    std::vector<tlm::tlm_generic_payload*> m_blocked_request, m_blocked_response;  // per GPU, awaiting buffer space
    std::unordered_map<std::uint64_t, PairStats> m_pairs;
    std::uint64_t m_in_flight = 0;
    std::uint64_t m_last_progress_ps = 0;
    bool m_watching = false;
    std::string m_error;

    sc_core::sc_event m_event;
    EventHeap<Action> m_actions;
};

}  // namespace eidola
