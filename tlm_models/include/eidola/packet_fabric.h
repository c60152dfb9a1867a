// The packet fabric: a cycle-approximate interconnect at packet granularity. Every request and
// every response crosses links (raw bandwidth per lane, latency, per-packet header) and routers
// (per-hop latency, finite input buffers per virtual channel, credit flow control, round-robin
// output arbitration). A full buffer stops its upstream link; a full injection buffer withholds
// END_REQ (or END_RESP), so back-pressure reaches the GPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/bin_budget.h"
#include "eidola/fabric.h"
#include "eidola/fabric_ports.h"
#include "eidola/params.h"
#include "eidola/timing_wheel.h"
#include "eidola/topology.h"

namespace eidola {

class PacketPool;
struct InjectionTurns;  // packet_fabric_parts.h

/// The packet fabric's parameters. Those of one topology are grouped in its own section; every
/// section registers into the same list, under the dotted names the YAML uses.
/// A GPU port's injection queues per message class (switch.injection): one (fifo), or one per output
/// of its router, its two ejections and its `links_out` links (voq). The port's buffer holds
/// switch.buffer for each; the flow fabric's model of the GPU's issue takes the same buffer.
inline std::uint32_t injection_queues(bool fifo, std::size_t links_out) {
    return fifo ? 1 : 2 + std::uint32_t(links_out);
}

/// The most credits a buffer counts: past it no buffer fills (a GPU has at most 2^20 packets outstanding), and a
/// 32-bit count holds a channel's worth of lanes of it.
constexpr std::uint32_t kMaxCredits = 1u << 30;
/// The credits of a switch.buffer of `amount` flits of `flit` bytes (`bytes`: it was given as a size), else packets:
/// at least one, at most kMaxCredits. Why the cap: 1 TiB of 16-byte flits is 2^36 credits, which a 32-bit count
/// took as 0, and every packet then waited for room forever (a stall reported as a lost transaction).
inline std::uint32_t buffer_credits(std::uint64_t amount, bool bytes, std::uint32_t flit) {
    return std::uint32_t(std::clamp<std::uint64_t>(bytes ? amount / flit : amount, 1, kMaxCredits));
}

struct PacketFabricParams : ParamGroup {
    /// Graph of GPUs, switches and links.
    ChoiceParam topology{*this, "topology",
                         {"fully_connected", "ring", "mesh2d", "torus2d", "switch", "hierarchical", "rail", "custom"},
                         "graph of GPUs, switches and links"};
    /// Number of GPU ports.
    IntParam ports{*this, "ports", 4, "number of GPU ports (targets[i] and initiators[i])", 1,
                   kMaxFabricPorts};

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
        TimeParam latency{group, "link.latency", 100e-9, "propagation latency of a link (credits take it back too)", 0,
                          1.0};
        /// Per-packet overhead.
        SizeParam header{group, "link.header", 16, "bytes of overhead added to every packet on a link", 0, 1 << 20};
        /// Wire size of a write's response.
        SizeParam ack{group, "link.ack", 0, "wire bytes of a write's response (0B: just the header)", 0, 1 << 20};
        /// Parallel links per connected pair.
        IntParam count{group, "link.count", 1, "parallel links between each connected pair (a packet uses one)", 1,
                       1024};
        /// Flow-control unit.
        SizeParam flit{group, "link.flit", 16,
                       "flit size: the unit a router forwards and counts credits in; a cut-through head is one flit", 1,
                       1 << 20};
    } link{*this};

    /// Routers of every topology.
    struct Switch {
        ParamGroup& group;
        /// Per-hop router latency.
        TimeParam latency{group, "switch.latency", 50e-9,
                          "per-hop router latency, charged as a packet's head enters each router or GPU port, "
                          "so once per link crossed: a path through one switch pays it twice each way (a switch "
                          "datasheet's port-to-port latency is the two hops' sum: set half of it here)",
                          0, 1.0};
        /// Input buffer depth per virtual channel.
        BufferParam buffer{group, "switch.buffer", "64",
                           "input buffer per virtual channel: a size (128B, counted in flit credits) or a bare number "
                           "of packets (any packet takes one slot); a link runs at full rate only if it covers the "
                           "credit round trip (serialisation + 2 x link latency + switch latency) x bandwidth; more "
                           "than 2^30 credits count as 2^30, which no run fills"};
        /// How a packet crosses a router.
        ChoiceParam flow_control{group, "switch.flow_control", {"cut_through", "wormhole", "store_and_forward"},
                                 "cut_through: a packet moves on once its head is in and the next buffer has room for "
                                 "all of it; wormhole: room for one flit will do (buffers may be smaller than a "
                                 "packet); store_and_forward: it waits for its tail at every hop"};
        /// Virtual channels per message class.
        IntParam vcs{group, "switch.vcs", 0,
                     "virtual channels per message class at every router input (requests and responses never "
                     "share one). 0: one per output of the router, and a packet joins its next output's (virtual "
                     "output queues: no head-of-line blocking; routers of more than 64 outputs get 64, allocated "
                     "as below). N: N channels; a packet joins one holding packets for its own next output, else "
                     "an idle one, else the roomiest (1: each input is a FIFO with head-of-line blocking)",
                     0, 64};
        /// The GPU port's injection queues.
        ChoiceParam injection{group, "switch.injection", {"voq", "fifo"},
                              "voq: a queue per output port at the GPU's router, no limit on how many leave at once; "
                              "fifo: one queue per message class sending one flit per cycle, as a NIC port"};
        /// The order in which a GPU port's injection queue sends its workgroups' packets.
        ChoiceParam injection_order{group, "switch.injection_order", {"arrival", "round_robin"},
                                    "arrival: each injection queue sends in the order the GPU issued (a workgroup "
                                    "whose write fits in the buffer is queued whole, ahead of the next one's); "
                                    "round_robin: each injection queue takes its workgroups' packets in turn, one "
                                    "packet each, as a GPU's link port arbitrates among its SMs' stores (the flow "
                                    "fabric has no counterpart yet: docs/fabrics.md, \"When to trust which model\")"};
        /// What a turn is when a router output takes the heads asking for it in round robin.
        ChoiceParam arbitration{group, "switch.arbitration", {"bytes", "packets", "responses_first"},
                                "bytes: a channel's turn is up to the largest packet's bytes (deficit round robin: a "
                                "channel of acknowledgements sends several where a data channel sends one); "
                                "packets: a packet a turn (a link loaded to capacity by writes one way and their "
                                "acknowledgements the other then never drains an acknowledgement backlog, and its "
                                "time hangs on how the GPUs started: docs/router.md); responses_first: responses "
                                "before any request, a packet a turn"};
        /// Delivery into the GPU.
        ChoiceParam ejection{group, "switch.ejection", {"unlimited", "link"},
                             "unlimited: every input delivers into its GPU at once; link: one flit per cycle at "
                             "one lane's link.bandwidth (not the lanes of fabric.link.count together), packets "
                             "delivered one after another"};
        /// NVLink SHARP: the switch's reduction engine.
        BandwidthParam nvls_reduce_bandwidth{
            group, "switch.nvls.reduce_bandwidth", 0,
            "NVLink SHARP (topology switch only): bytes of member data the switch's one reduction engine sums per "
            "second (a reduce_load of n bytes on k members is k x n bytes of work); 0: the switch has no NVLS and "
            "refuses multicast and reduce_load",
            0, 1e18};
        /// NVLink SHARP: the switch's multimem latency.
        TimeParam nvls_latency{group, "switch.nvls.latency", 0,
                               "NVLink SHARP: latency of the switch's multimem unit, charged once per access: before "
                               "a multicast's copies leave, and after a reduce_load's sum is done",
                               0, 1.0};
    } router{*this};

    /// How the flow fabric models a GPU's issue of its posted writes (the packet fabric ignores it).
    ChoiceParam flow_issue{*this, "flow.issue", {"gates", "queue"},
                           "fabric.model flow only (the packet fabric ignores it, so that one platform serves both): "
                           "gates: a GPU issues its posted writes through its injection buffer (switch.buffer per "
                           "output) and max_outstanding, as the packet GPU does, and a workgroup goes on when its "
                           "write is issued; queue: the writes go at once, first come first served behind those to "
                           "the same GPU on that link (those to other GPUs share it), so the gates never hold the "
                           "link below its rate (the real-system platforms: docs/fabrics.md, \"The GPU's issue "
                           "gates\")"};

    /// How the flow fabric shares a link between flows' data and other flows' responses (the packet fabric ignores it).
    ChoiceParam flow_responses{*this, "flow.responses", {"first", "fair"},
                               "fabric.model flow only (the packet fabric ignores it): first: the direction of a flow "
                               "that carries no payload (a write's acknowledgements, a read's requests) takes its load "
                               "before the fair shares of the links and ports it crosses and never holds its flow "
                               "back, as the packet fabric's routers let those small packets through in turns of "
                               "bytes; fair: every use of a link shares it max-min alike, so a write is held at the "
                               "fair rate of the link its acknowledgements cross (the real-system platforms, which "
                               "were calibrated so; docs/fabrics.md, \"Responses served first\")"};

    /// Whether the flow fabric queues incast at deep-buffered switches' links into the GPUs (the packet fabric ignores it).
    ChoiceParam flow_incast{*this, "flow.incast", {"queue", "share"},
                            "fabric.model flow only (the packet fabric ignores it): queue: where a switch's input "
                            "buffers hold at least 8 credit round trips of its link into a GPU, the senders to that "
                            "GPU push at their own rates and the link drains their bytes first in, first out, every "
                            "delivery waiting behind the backlog, as the packet fabric's leaves hold an incast, until "
                            "the backlog fills the buffers feeding the link and the senders share it max-min; "
                            "share: that link is shared max-min like any other, so the senders slow to their shares "
                            "at once (docs/fabrics.md, \"Incast queues\")"};

    /// Whether the flow fabric holds a GPU's long writes through one output link to one rate (the packet fabric ignores it).
    ChoiceParam flow_injection{*this, "flow.injection", {"blocking", "free"},
                               "fabric.model flow only (the packet fabric ignores it): blocking: a GPU's writes through "
                               "one output link that are longer than a channel's buffer at the next switch go at one "
                               "rate, as the packet GPU's one injection queue per output sends them interleaved and a "
                               "head packet held for credits holds every packet behind it (head-of-line blocking); "
                               "free: each write at its own max-min rate, as if every destination had a queue of its "
                               "own (docs/fabrics.md, \"Head-of-line blocking in the injection queue\")"};

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
        /// hierarchical: GPU NIC to leaf switch; rail: NIC to rail switch.
        BandwidthParam nic_bandwidth{group, "nic.bandwidth", 50e9,
                                     "hierarchical: GPU NIC to leaf switch bandwidth; rail: NIC to rail switch "
                                     "bandwidth, per direction",
                                     1e3, 1e18};
        /// hierarchical: GPU NIC to leaf switch; rail: NIC to rail switch.
        TimeParam nic_latency{group, "nic.latency", 500e-9,
                              "hierarchical: GPU NIC to leaf switch latency; rail: NIC to rail switch latency", 0, 1.0};
        /// Leaf (rail) to spine.
        BandwidthParam network_bandwidth{group, "network.bandwidth", 400e9,
                                         "hierarchical: leaf to spine link bandwidth; rail: one rail switch to spine "
                                         "link's bandwidth, per direction",
                                         1e3, 1e18};
        /// Leaf (rail) to spine.
        TimeParam network_latency{group, "network.latency", 500e-9,
                                  "hierarchical: leaf to spine link latency; rail: rail switch to spine latency", 0,
                                  1.0};
    } hierarchical{*this};

    /// rail: nodes whose NIC r meets NIC r of every other node at rail switch r; spines above.
    struct Rail {
        ParamGroup& group;
        /// GPUs per node.
        IntParam gpus_per_node{group, "rail.gpus_per_node", 8, "rail: GPUs in one node", 1, 1 << 20};
        /// Inside a node.
        ChoiceParam intra{group, "rail.intra", {"fully_connected", "switch"}, "rail: the GPU links inside a node"};
        /// Spine switches.
        IntParam spines{group, "rail.spines", 1,
                        "rail: spine switches, each linked to every rail switch (0: rails only; cross-rail traffic "
                        "then crosses the source node to the GPU on the destination's rail first)",
                        0, 1 << 16};
        /// PXN routing.
        BoolParam pxn{group, "rail.pxn", false,
                      "rail: cross-rail traffic between nodes crosses the source node to the GPU on the destination's "
                      "rail and leaves through its NIC, as NCCL's PXN sends it (NCCL_PXN_DISABLE=0, its default); "
                      "false: out through the source GPU's own NIC and over a spine (RCCL's default)"};
        /// NICs per node.
        IntParam nics{group, "nic.count", 0,
                      "rail: NICs per node, dividing rail.gpus_per_node; GPU i of a node uses NIC "
                      "floor(i x count / gpus_per_node), NIC r is on rail r (0: one per GPU)",
                      0, 1 << 20};
        /// GPU to NIC.
        BandwidthParam pcie_bandwidth{group, "nic.pcie.bandwidth", 64e9,
                                      "rail: each GPU's own link to its NIC (PCIe), per direction", 1e3, 1e18};
        /// GPU to NIC: bytes added per GPU packet.
        SizeParam pcie_header{group, "nic.pcie.header", 0,
                              "rail: bytes added to each GPU packet on a GPU's link to its NIC: a PCIe memory "
                              "write's TLP header, sequence number, LCRC and framing, 26B for a 64-bit address (0B: "
                              "link.header, the GPU link's; PCIe has no header-free packet)",
                              0, 1 << 20};
        /// GPU to NIC.
        TimeParam pcie_latency{group, "nic.pcie.latency", 0, "rail: latency of a GPU's link to its NIC (PCIe)", 0,
                               1.0};
        /// Network packet payload.
        SizeParam mtu{group, "nic.mtu", 4096,
                      "rail: payload of one network packet; NIC and network links carry nic.header per MTU of a "
                      "message (a transfer to one peer), not per GPU packet",
                      1, 1 << 30};
        /// Network packet overhead.
        SizeParam header{group, "nic.header", 78,
                         "rail: bytes of headers per network packet on NIC and network links (RoCEv2 78, "
                         "InfiniBand 42; docs/fabrics.md)",
                         0, 1 << 20};
        /// Per-message NIC cost.
        TimeParam message_overhead{group, "nic.message_overhead", 0,
                                   "rail: processing time of one message at the sending NIC, taken on its link to "
                                   "the rail switch before the message's first packet (so it caps the message rate)",
                                   0, 1.0};
    } rail{*this};

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
    /// Most over-time bins held (all links), past which they double in width (bin_budget.h).
    IntParam stats_max_bins{*this, "stats.max_bins", 1 << 20,
                            "most link bins held (all links together, 16 bytes each), past which stats.bin doubles "
                            "as often as it takes; the results give the width used",
                            1, 1e12};
    /// Deadlock watchdog.
    TimeParam watchdog{*this, "watchdog", 1e-3,
                       "packets held this long with none moving is reported as a fabric deadlock", 1e-9, 1e3};

    /// The topology these values describe.
    TopologySpec topology_spec() const;
    /// That topology built, for the fabric named `owner` (its name prefixes a topology error).
    std::unique_ptr<Topology> make_topology(const char* owner) const;
};

/// A packet-switched TLM-2.0 fabric over a Topology, with the same sockets as IdealFabric
/// (b_transport on targets[i] is forwarded at zero-load latency). The router model is split by
/// concern: packet_fabric.cpp (sockets, injection, delivery, statistics), router_allocation.cpp
/// (routing, virtual-channel and switch allocation) and flow_control.cpp (flits, credits, hop timing).
class PacketFabric : public FabricShell<PacketFabric> {
public:
    using Params = PacketFabricParams;
    SC_HAS_PROCESS(PacketFabric);

    PacketFabric(sc_core::sc_module_name name, const ParamSet& params);
    ~PacketFabric() override;

    std::vector<LinkStats> link_stats() const override;
    std::vector<PairStats> pair_stats() const override;
    std::uint64_t events() const override { return m_actions.processed(); }
    std::uint64_t bin_ps() const override { return m_bin_budget.width_ps(); }
    std::uint32_t bin_doublings() const override { return m_bin_budget.doublings(); }
    const Topology& topology() const { return *m_topology; }
    std::vector<std::string> node_names() const override {
        std::vector<std::string> names;
        for (std::uint32_t n = 0; n < m_topology->nodes(); ++n) names.push_back(m_topology->node_name(n));
        return names;
    }
    /// What the switch's NVLS unit did (all zero without fabric.switch.nvls).
    NvlsCounters nvls_counters() const override { return m_nvls_counters; }

    /// How a packet crosses a router (fabric.switch.flow_control).
    enum class FlowControl : std::uint8_t { CutThrough, Wormhole, StoreAndForward };

private:
    friend struct FabricTargetPort<PacketFabric>;
    friend struct FabricInitiatorPort<PacketFabric>;
    PacketFabric(sc_core::sc_module_name name, const Params& params);
    struct Packet;
    struct Queue;
    struct Input;
    struct Output;
    struct LinkCounters;
    struct Hop;

    enum class ActionKind : std::uint8_t { Arrive, HeadReady, Arbitrate, EjectFree, Deliver, Watchdog, NvlsIssue,
                                           NvlsRespond, Annotated };
    struct Action {
        ActionKind kind;
        std::uint32_t a;   // packet, input or output index
        std::uint32_t b;   // vc, input, or packet
    };

    // TLM entry points (packet_fabric.cpp)
    tlm::tlm_sync_enum hold_annotated(std::uint32_t gpu, tlm::tlm_generic_payload& t, std::uint8_t cls,
                                      const sc_core::sc_time& delay);
    void inject_annotated(std::uint32_t gpu, std::uint8_t cls);
    tlm::tlm_sync_enum request(std::uint32_t gpu, tlm::tlm_generic_payload& t, tlm::tlm_phase& p,
                                  sc_core::sc_time& d);
    tlm::tlm_sync_enum response(std::uint32_t gpu, tlm::tlm_generic_payload& t, tlm::tlm_phase& p,
                                   sc_core::sc_time& d);
    void forward_b_transport(std::uint32_t gpu, tlm::tlm_generic_payload& t, sc_core::sc_time& d);
    unsigned int forward_debug(tlm::tlm_generic_payload& t);

    void on_event();
    bool inject(std::uint32_t gpu, tlm::tlm_generic_payload* trans, std::uint8_t cls);
    /// The stream (workgroup) a transaction names (stream_extension.h); 0 without one.
    static std::uint32_t stream_of(const tlm::tlm_generic_payload& trans);
    /// Injection in turns: packet `id` waits behind its stream's others.
    void stage(InjectionTurns& t, std::uint32_t id, std::uint32_t stream);
    /// Injection in turns: the next stream in turn gives its first waiting packet to `q`.
    void unstage(InjectionTurns& t, Queue& q);
    void enqueue(std::uint32_t node, tlm::tlm_generic_payload* trans, std::uint8_t cls, std::uint32_t src,
                 std::uint32_t dst, std::uint32_t payload, bool ack, std::uint32_t packets, std::uint32_t out,
                 std::uint32_t queue);
    void retry_blocked_injection(std::uint32_t gpu, std::uint8_t cls);
    void deliver(std::uint32_t output, std::uint32_t packet);
    void watchdog();
    void count_link(std::uint32_t link, std::uint32_t lane, const Packet& p, std::uint32_t wire, std::uint64_t ser);

    // routing and allocation (router_allocation.cpp)
    std::uint32_t route(std::uint32_t node, const Packet& p, bool commit = true);
    void arrive(std::uint32_t packet, std::uint32_t input, std::uint32_t vc);
    void head_ready(std::uint32_t input, std::uint32_t vc);
    void schedule_arbitration(std::uint32_t output, std::uint64_t at);
    void arbitrate(std::uint32_t output);
    template <bool kTrains>
    void arbitrate_link(std::uint32_t output);
    bool acknowledgement_waiting(const Output& o) const;
    /// Input speedup 1: whether the head of `in`, `wire` bytes on the wire, may cross the crossbar now; else
    /// lowers `retry_at` to when a path frees.
    bool claim_path(const Input& in, std::uint32_t wire, std::uint64_t& retry_at) const;
    std::uint32_t crossing_bytes(const Input& in, const Packet& p, const TopoLink& link, std::uint32_t wire) const;
    /// Whether a packet from `in` crosses the crossbar at its input's rate, not `link`'s (the two links' rates differ).
    static bool crosses_at_own_rate(const Input& in, const TopoLink& link);
    std::uint32_t new_packet();
    bool own_link(std::uint32_t from, std::uint32_t to, std::uint32_t packet_bytes) const;
    void find_forwarding_gpus();
    bool carries_train(std::uint32_t gpu, std::uint32_t dst, const tlm::tlm_generic_payload& t);
    void arbitrate_ejection(std::uint32_t output);
    std::int64_t allocate_vc(std::uint32_t downstream, std::uint32_t cls, std::uint32_t bit, std::uint32_t next_out,
                             std::uint32_t& units, std::uint64_t& retry_at, std::uint32_t each,
                             std::uint64_t& credits_at, bool& in_flight, bool& backed_up);
    /// What holds a free lane of an output idle while heads wait for it (set_stall).
    enum class Stall : std::uint8_t { None, Credits, BackPressure };
    void set_stall(Output& o, std::uint32_t link, Stall stall);

    // NVLink SHARP at the switch (nvls_switch.cpp)
    struct NvlsOp;
    static constexpr std::uint32_t kNvlsMaxBytes = 1u << 20;  // the longest multimem transaction the unit takes
    bool is_multimem(const tlm::tlm_generic_payload& t) const;
    void nvls_arrived(std::uint32_t packet);
    void nvls_issue(std::uint32_t op);
    void nvls_respond(std::uint32_t op);
    void inject_at_switch(tlm::tlm_generic_payload* trans, std::uint8_t cls, std::uint32_t dst, std::uint32_t payload,
                          bool ack);

    // flow control (flow_control.cpp)
    Hop hop(const Packet& p, std::uint64_t start, std::uint32_t wire, double bytes_per_s,
            std::uint64_t latency_ps, bool into_buffer = true) const;
    std::uint32_t credits_needed(std::uint32_t wire) const;
    std::uint32_t train_credits(const Packet& p, std::uint32_t wire) const;
    std::uint32_t wire_bytes(const Packet& p, std::uint32_t header, bool framed = false) const;
    std::uint32_t pop_head(std::uint32_t input, std::uint32_t vc, std::uint64_t tail_leaves_ps,
                           std::uint64_t spacing_ps = 0);
    std::uint64_t zero_load_ps(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool response) const;

    std::unique_ptr<Topology> m_topology;
    std::uint64_t m_switch_latency_ps;
    FlowControl m_flow;
    std::uint32_t m_flit;           // bytes per flit
    bool m_credit_bytes;            // buffer given as a size: credits are flits (else packets)
    std::uint32_t m_capacity;       // credits per virtual channel and lane (flits or packets)
    std::uint32_t m_inject_depth;   // packets per class (and per output with voq) at a GPU's port
    std::uint32_t m_ack_bytes;      // wire bytes of a write's response
    bool m_spread;
    bool m_inject_fifo;             // fabric.switch.injection == fifo
    bool m_inject_turns;            // fabric.switch.injection_order == round_robin
    enum class Arbitration { Bytes, Packets, ResponsesFirst };
    Arbitration m_arbitration;      // fabric.switch.arbitration
    bool m_eject_link;              // fabric.switch.ejection == link
    double m_eject_bytes_per_s;     // ejection rate when m_eject_link
    std::uint32_t m_eject_header;   // wire overhead of a packet entering its GPU
    BinBudget m_bin_budget;  // the over-time bins' width, and their count against stats.max_bins
    std::uint64_t m_watchdog_ps;
    std::uint32_t m_dateline;       // 2 with dateline virtual channels, else 1
    std::uint32_t m_vcs;            // virtual channels per class and dateline half (0: one per output)
    std::uint64_t m_mtu;            // rail: the NICs' MTU (0: no framed links)
    std::uint64_t m_message_ps;     // rail: a message's processing time at its sending NIC

    std::vector<Packet> m_packets;
    std::vector<std::uint32_t> m_free_packets;
    std::vector<Input> m_inputs;     // per node: injection, then one per incoming link
    std::vector<Output> m_outputs;   // per node: request ejection, response ejection, then one per outgoing link
    std::vector<std::uint32_t> m_node_first_input, m_node_first_output;
    std::vector<std::uint32_t> m_link_input, m_link_output;  // link -> its receiving input / sending output
    std::vector<LinkCounters> m_link_counters;
    std::vector<std::uint32_t> m_spread_counter;             // per node, for equal-cost spreading
    std::vector<tlm::tlm_generic_payload*> m_blocked_request, m_blocked_response;  // per GPU, awaiting buffer space
    // Per GPU: the request its target accepted (TLM_ACCEPTED) and has not yet ended. END_REQ, or a BEGIN_RESP
    // for that request (which implies it), frees the ejection port once: a target may send both.
    std::vector<const tlm::tlm_generic_payload*> m_awaiting_end_req;
    // Per GPU and class (0 request, 1 response): a BEGIN_REQ / BEGIN_RESP annotated to take effect later,
    // held (its END phase withheld) until its Annotated action injects it. One at most: the GPU may
    // not begin another before that END phase.
    std::vector<tlm::tlm_generic_payload*> m_annotated[2];
    std::unordered_map<std::uint64_t, PairStats> m_pairs;
    std::uint64_t m_in_flight = 0;
    std::uint64_t m_last_progress_ps = 0;
    bool m_watching = false;
    bool m_reported_buffer = false;  // the too-small-buffer error is reported once
    bool m_trains = false;           // a train (train_extension.h) has been injected
    std::vector<bool> m_forwards;    // per node: some route passes through it (see carries_train)

    // NVLink SHARP (fabric.switch.nvls): off when m_reduce_bytes_per_s is 0.
    double m_reduce_bytes_per_s = 0;       // the reduction engine's rate (bytes of member data per second)
    std::uint64_t m_nvls_latency_ps = 0;   // the multimem unit's latency, once per access
    std::uint32_t m_switch_node = 0;       // the crossbar's node (topology switch)
    std::uint64_t m_reduce_free_ps = 0;    // when the reduction engine is free again
    std::vector<NvlsOp> m_nvls_ops;        // multimem accesses the switch is serving
    std::vector<std::uint32_t> m_free_nvls;
    std::unique_ptr<PacketPool> m_nvls_pool;  // the payloads of the switch's own copies and reads
    NvlsCounters m_nvls_counters;

    TimingWheel<Action> m_actions;  // a wheel, not EventHeap: its actions fall at too many offsets for lanes
};

}  // namespace eidola
