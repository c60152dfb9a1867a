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

/// The packet fabric's parameters. Those of one topology are grouped in its own section; every
/// section registers into the same list, under the dotted names the YAML uses.
struct PacketFabricParams : ParamGroup {
    /// Graph of GPUs, switches and links.
    ChoiceParam topology{*this, "topology",
                         {"fully_connected", "ring", "mesh2d", "torus2d", "switch", "hierarchical", "custom"},
                         "graph of GPUs, switches and links"};
    /// Number of GPU ports.
    IntParam ports{*this, "ports", 4, "number of GPU ports (targets[i] and initiators[i])", 1, 1 << 20};

    /// mesh2d and torus2d.
    struct Grid {
        ParamGroup& group;
        /// Sizes [x, y].
        IntsParam dims{group, "dims", "mesh2d/torus2d sizes [x, y] (empty: the squarest that fits)"};
    } grid{*this};

    /// ring.
    struct Ring {
        ParamGroup& group;
        /// Links both ways round.
        BoolParam bidirectional{group, "bidirectional", true, "ring: links in both directions (false: one way round)"};
    } ring{*this};

    /// Links of every topology (the GPU-GPU and GPU-switch links; hierarchical overrides some).
    struct Link {
        ParamGroup& group;
        /// Raw bandwidth per lane and direction.
        BandwidthParam bandwidth{group, "link.bandwidth", 64e9, "raw bandwidth of one link lane, per direction", 1e3,
                                 1e18};
        /// Propagation latency.
        TimeParam latency{group, "link.latency", 100e-9, "propagation latency of a link", 0, 1.0};
        /// Per-packet overhead.
        SizeParam header{group, "link.header", 16, "bytes of overhead added to every packet on a link", 0, 1 << 20};
        /// Wire size of a write's response.
        SizeParam ack{group, "link.ack", 0, "wire bytes of a write's response (0: just the header)", 0, 1 << 20};
        /// Parallel links per connected pair.
        IntParam count{group, "link.count", 1, "parallel links between each connected pair (a packet uses one)", 1,
                       1024};
    } link{*this};

    /// Routers of every topology.
    struct Switch {
        ParamGroup& group;
        /// Per-hop router latency.
        TimeParam latency{group, "switch.latency", 50e-9,
                          "per-hop router latency, charged as a packet enters a router", 0, 1.0};
        /// Input buffer depth per virtual channel.
        IntParam buffer{group, "switch.buffer", 64,
                        "input buffer depth in packets, per virtual channel; a link runs at full rate only if it "
                        "covers (link latency + switch latency) x bandwidth, since a slot stays reserved while its "
                        "packet flies",
                        1, 1 << 20};
    } router{*this};

    /// Equal-cost spreading.
    BoolParam spread{*this, "routing.spread", false, "spread packets round robin over equal-cost next hops"};

    /// hierarchical: nodes of GPUs under leaf switches, leaves under spines.
    struct Hierarchical {
        ParamGroup& group;
        /// GPUs per node.
        IntParam gpus_per_node{group, "hierarchical.gpus_per_node", 8, "hierarchical: GPUs in one node", 1, 1 << 20};
        /// Inside a node.
        ChoiceParam intra{group, "hierarchical.intra", {"fully_connected", "switch"}, "hierarchical: inside a node"};
        /// Spine switches.
        IntParam spines{group, "hierarchical.spines", 1, "hierarchical: spine switches above the nodes' leaf switches",
                        1, 1 << 16};
        /// GPU NIC to leaf switch.
        BandwidthParam nic_bandwidth{group, "nic.bandwidth", 50e9, "hierarchical: GPU NIC to leaf switch bandwidth",
                                     1e3, 1e18};
        /// GPU NIC to leaf switch.
        TimeParam nic_latency{group, "nic.latency", 500e-9, "hierarchical: GPU NIC to leaf switch latency", 0, 1.0};
        /// Leaf to spine.
        BandwidthParam network_bandwidth{group, "network.bandwidth", 400e9,
                                         "hierarchical: leaf to spine link bandwidth", 1e3, 1e18};
        /// Leaf to spine.
        TimeParam network_latency{group, "network.latency", 500e-9, "hierarchical: leaf to spine link latency", 0,
                                  1.0};
    } hierarchical{*this};

    /// custom: a graph given edge by edge.
    struct Custom {
        ParamGroup& group;
        /// Switch nodes.
        IntParam switches{group, "custom.switches", 0, "custom: switch nodes, named s0, s1, ... in edges", 0, 1 << 20};
        /// The links.
        EdgesParam edges{group, "custom.edges",
                         "custom: links {src, dst, bandwidth, latency, header, count, bidirectional}"};
    } custom{*this};

    /// Utilisation-over-time bins.
    TimeParam stats_bin{*this, "stats.bin", 1e-6, "width of the link utilisation-over-time bins", 1e-12, 1.0};
    /// Deadlock watchdog.
    TimeParam watchdog{*this, "watchdog", 1e-3,
                       "packets held this long with none moving is reported as a fabric deadlock", 1e-9, 1e3};

    /// The topology these values describe.
    TopologySpec topology_spec() const;
};

/// A packet-switched TLM-2.0 fabric over a Topology, with the same sockets as IdealFabric
/// (b_transport on targets[i] is forwarded at zero-load latency).
class PacketFabric : public FabricShell<PacketFabric> {
public:
    using Params = PacketFabricParams;
    SC_HAS_PROCESS(PacketFabric);

    PacketFabric(sc_core::sc_module_name name, const ParamSet& params);
    ~PacketFabric() override;

    std::vector<LinkStats> link_stats() const override;
    std::vector<PairStats> pair_stats() const override;
    std::uint64_t events() const override { return m_actions.processed(); }
    std::uint64_t bin_ps() const override { return m_bin_ps; }
    const Topology& topology() const { return *m_topology; }

private:
    friend struct FabricTargetPort<PacketFabric>;
    friend struct FabricInitiatorPort<PacketFabric>;
    PacketFabric(sc_core::sc_module_name name, const Params& params);
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

    std::unique_ptr<Topology> m_topology;
    std::uint64_t m_switch_latency_ps;
    std::uint32_t m_depth;          // packets per virtual channel per input buffer
    std::uint32_t m_ack_bytes;      // wire bytes of a write's response
    bool m_spread;
    std::uint64_t m_bin_ps;
    std::uint64_t m_watchdog_ps;
    std::uint32_t m_vcs_per_class;  // 2 with dateline virtual channels, else 1

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

    sc_core::sc_event m_event;
    EventHeap<Action> m_actions;
};

}  // namespace eidola
