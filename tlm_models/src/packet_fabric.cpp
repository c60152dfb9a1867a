#include "packet_fabric_parts.h"
#include "eidola/stream_extension.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <map>

#include "eidola/message_extension.h"
#include "eidola/multimem_extension.h"
#include "eidola/packet_pool.h"
#include "eidola/registry.h"
#include "eidola/free_list.h"

namespace eidola {

namespace {
std::size_t bucket_of(double ps) { return ps < 1 ? 0 : std::min<std::size_t>(kHistBuckets - 1, 1 + std::size_t(8 * std::log2(ps))); }
double bucket_value(std::size_t b) { return b == 0 ? 0 : std::exp2((double(b - 1) + 0.5) / 8); }
}  // namespace

std::unique_ptr<Topology> PacketFabricParams::make_topology(const char* owner) const {
    try {
        return std::make_unique<Topology>(topology_spec());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string(owner) + ": " + e.what());
    }
}

TopologySpec PacketFabricParams::topology_spec() const {
    TopologySpec spec;
    spec.kind = topology.get();
    spec.gpus = std::uint32_t(ports.get());
    spec.dims = grid.dims.values();
    spec.bidirectional = ring.bidirectional.get();
    spec.link.bytes_per_s = link.bandwidth.get();
    spec.link.latency_ps = link.latency.get().value();
    spec.link.header = std::uint32_t(link.header.get());
    spec.link.lanes = std::uint32_t(link.count.get());
    const bool is_rail = spec.kind == "rail";
    spec.gpus_per_node = std::uint32_t(is_rail ? rail.gpus_per_node.get() : hierarchical.gpus_per_node.get());
    spec.intra = is_rail ? rail.intra.get() : hierarchical.intra.get();
    spec.spines = std::uint32_t(is_rail ? rail.spines.get() : hierarchical.spines.get());
    spec.pxn = is_rail && rail.pxn.get();
    // A rail's NIC and network links carry the NIC's headers per network packet; hierarchical's
    // carry the GPU's per packet.
    const std::uint32_t network_header = is_rail ? std::uint32_t(rail.header.get()) : spec.link.header;
    spec.nic = LinkParams{hierarchical.nic_bandwidth.get(), hierarchical.nic_latency.get().value(), network_header, 1};
    spec.network = LinkParams{hierarchical.network_bandwidth.get(), hierarchical.network_latency.get().value(),
                              network_header, 1};
    spec.nics = std::uint32_t(rail.nics.get());
    const std::uint64_t pcie_header = rail.pcie_header.get();
    spec.pcie = LinkParams{rail.pcie_bandwidth.get(), rail.pcie_latency.get().value(),
                           pcie_header ? std::uint32_t(pcie_header) : spec.link.header, 1};
    spec.nic_mtu = is_rail ? std::uint32_t(rail.mtu.get()) : 0;
    spec.switches = std::uint32_t(custom.switches.get());
    spec.edges = custom.edges.get();
    return spec;
}

namespace {

PacketFabric::FlowControl flow_control_of(const std::string& name) {
    if (name == "wormhole") return PacketFabric::FlowControl::Wormhole;
    if (name == "store_and_forward") return PacketFabric::FlowControl::StoreAndForward;
    return PacketFabric::FlowControl::CutThrough;
}

}  // namespace

PacketFabric::PacketFabric(sc_core::sc_module_name name, const ParamSet& given)
    : PacketFabric(name, Configured<Params>(given, static_cast<const char*>(name))) {}

PacketFabric::PacketFabric(sc_core::sc_module_name name, const Params& p)
    : FabricShell(name, std::uint32_t(p.ports.get())),
      m_topology(p.make_topology(static_cast<const char*>(name))),
      m_switch_latency_ps(p.router.latency.get().value()),
      m_flow(flow_control_of(p.router.flow_control.get())),
      m_flit(std::uint32_t(p.link.flit.get())),
      m_credit_bytes(p.router.buffer.in_bytes()),
      m_capacity(0),
      m_inject_depth(0),
      m_ack_bytes(std::uint32_t(p.link.ack.get())),
      m_spread(p.spread.get()),
      m_inject_fifo(p.router.injection.get() == "fifo"),
      m_inject_turns(p.router.injection_order.get() == "round_robin"),
      m_arbitration(p.router.arbitration.get() == "packets"           ? Arbitration::Packets
                    : p.router.arbitration.get() == "responses_first" ? Arbitration::ResponsesFirst
                                                                       : Arbitration::Bytes),
      m_eject_link(p.router.ejection.get() == "link"),
      m_eject_bytes_per_s(p.link.bandwidth.get()),
      m_eject_header(std::uint32_t(p.link.header.get())),
      m_bin_budget(p.stats_bin.get().value(), std::uint64_t(p.stats_max_bins.get())),
      m_watchdog_ps(p.watchdog.get().value()),
      m_dateline(m_topology->needs_dateline() ? 2 : 1),
      m_vcs(std::uint32_t(p.router.vcs.get())),
      m_mtu(m_topology->mtu()),
      m_message_ps(m_mtu ? p.rail.message_overhead.get().value() : 0),
      m_actions(this, [](void* f) { static_cast<PacketFabric*>(f)->on_event(); }) {
    std::uint64_t amount;
    try {
        amount = p.router.buffer.amount();
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string(static_cast<const char*>(name)) + ": " + e.what());
    }
    // A size counts flits (a 16-byte acknowledgement takes one flit, a 256-byte write seventeen);
    // a bare number counts packets, whatever their size.
    m_capacity = buffer_credits(amount, m_credit_bytes, m_flit);
    m_inject_depth = m_capacity;
    const Topology& topo = *m_topology;
    auto make_input = [&](std::uint32_t node, std::int64_t link) {
        Input in{node, link, {}, 0};
        std::uint32_t lanes = 1;
        if (link < 0) {
            in.per_class = injection_queues(m_inject_fifo, topo.out_links(node).size());
            in.vcs.resize(2 * in.per_class);
            in.speedup_one = m_inject_fifo;
            in.capacity = m_inject_depth;
            if (m_inject_turns && node < ports()) in.turns.resize(in.per_class);  // the request queues
            for (std::uint32_t l : topo.out_links(node)) lanes = std::max(lanes, topo.links()[l].lanes);
        } else {
            const TopoLink& l = topo.links()[std::size_t(link)];
            // fabric.switch.vcs 0: a channel per output of this router (two ejections, then its
            // links), as long as the channel index fits an action (routers of up to 64 outputs).
            const std::uint32_t outputs = 2 + std::uint32_t(topo.out_links(node).size());
            in.voq = m_vcs == 0 && outputs <= kMaxVcs;
            in.half = m_vcs ? m_vcs : std::min(outputs, kMaxVcs);
            in.per_class = m_dateline * in.half;
            in.vcs.resize(2 * in.per_class);
            in.bytes_per_s = l.bytes_per_s;
            in.credit_latency_ps = l.latency_ps;
            lanes = l.lanes;
            // Each lane brings its own buffer: a channel holds the credits of all its lanes.
            in.capacity = std::uint32_t(std::min<std::uint64_t>(std::uint64_t(m_capacity) * lanes, kMaxCredits));
        }
        // Queues grow as packets come (a link queue never holds more than its credits): a router
        // with a queue per output must not allocate a buffer's worth for every one up front.
        for (Queue& q : in.vcs) q.slots.assign(4, 0);
        if (in.speedup_one && lanes > 1) in.paths.assign(lanes, 0);  // a crossbar path per lane
        m_inputs.push_back(std::move(in));
    };
    m_link_input.assign(topo.links().size(), 0);
    m_link_output.assign(topo.links().size(), 0);
    for (std::uint32_t n = 0; n < topo.nodes(); ++n) {
        m_node_first_input.push_back(std::uint32_t(m_inputs.size()));
        make_input(n, -1);
        for (std::uint32_t l : topo.in_links(n)) {
            m_link_input[l] = std::uint32_t(m_inputs.size());
            make_input(n, l);
        }
        m_node_first_output.push_back(std::uint32_t(m_outputs.size()));
        m_outputs.push_back(Output{n, -1, {}, {0}, false, kNever});
        m_outputs.push_back(Output{n, -2, {}, {0}, false, kNever});
        for (std::uint32_t l : topo.out_links(n)) {
            m_link_output[l] = std::uint32_t(m_outputs.size());
            m_outputs.push_back(Output{n, l, {}, std::vector<std::uint64_t>(topo.links()[l].lanes, 0), false, kNever});
            m_outputs.back().lane_train.resize(topo.links()[l].lanes);
        }
    }
    m_link_counters.resize(topo.links().size());
    for (std::size_t l = 0; l < topo.links().size(); ++l) {
        m_link_counters[l].s.src = std::int32_t(topo.links()[l].src);
        m_link_counters[l].s.dst = std::int32_t(topo.links()[l].dst);
        m_link_counters[l].s.lanes = topo.links()[l].lanes;
        if (topo.links()[l].lanes > 1) m_link_counters[l].lane_busy.assign(topo.links()[l].lanes, 0);
    }
    m_reduce_bytes_per_s = p.router.nvls_reduce_bandwidth.get();
    m_nvls_latency_ps = p.router.nvls_latency.get().value();
    if (m_reduce_bytes_per_s > 0) {
        // NVLS lives in one crossbar that every GPU reaches in one link (topology switch), where a
        // multimem access meets every member's data; a fabric of several switches would need
        // the reduction split over them, which no NVSwitch generation does across nodes either.
        if (p.topology.get() != "switch")
            throw std::invalid_argument(std::string(static_cast<const char*>(name)) +
                                        ": fabric.switch.nvls needs topology: switch (one crossbar); this fabric "
                                        "is " + p.topology.get());
        m_switch_node = topo.gpus();
        m_nvls_pool = std::make_unique<PacketPool>(kNvlsMaxBytes);
        m_nvls_counters.enabled = true;
    }
    m_spread_counter.assign(topo.nodes(), 0);
    m_blocked_request.assign(ports(), nullptr);
    m_blocked_response.assign(ports(), nullptr);
    m_awaiting_end_req.assign(ports(), nullptr);
    for (auto& held : m_annotated) held.assign(ports(), nullptr);
    // Most actions fall within a hop (a link's latency plus a router's) of now: size the wheel's
    // buckets for that; longer ones (serialising a long train, the watchdog) still come in order.
    std::uint64_t hop_ps = 0;
    for (const TopoLink& l : topo.links()) hop_ps = std::max(hop_ps, l.latency_ps + m_switch_latency_ps);
    m_actions.set_horizon(hop_ps);
}

PacketFabric::~PacketFabric() = default;

// ---- TLM entry points -------------------------------------------------------------------------

tlm::tlm_sync_enum PacketFabric::request(std::uint32_t gpu, tlm::tlm_generic_payload& t, tlm::tlm_phase& phase,
                                            sc_core::sc_time& delay) {
    if (phase == tlm::BEGIN_REQ) {
        const std::int64_t dst = decode(t.get_address());
        if (dst < 0) {
            t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return tlm::TLM_COMPLETED;
        }
        if (is_multimem(t)) {  // to the switch's NVLS unit, which answers it (nvls_switch.cpp)
            if (!multimem_accepted(gpu, t, m_reduce_bytes_per_s, kNvlsMaxBytes)) return tlm::TLM_COMPLETED;
        } else if (!carries_train(gpu, std::uint32_t(dst), t)) {
            t.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);  // the sender goes packet by packet instead
            return tlm::TLM_COMPLETED;
        }
        if (delay != sc_core::SC_ZERO_TIME) return hold_annotated(gpu, t, 0, delay);
        if (inject(gpu, &t, 0)) {
            phase = tlm::END_REQ;
            return tlm::TLM_UPDATED;
        }
        m_blocked_request[gpu] = &t;  // END_REQ withheld until the injection buffer has room
        return tlm::TLM_ACCEPTED;
    }
    if (phase == tlm::END_RESP) {
        m_actions.push(now_ps() + delay.value(), {ActionKind::EjectFree, m_node_first_output[gpu] + 1, 0});
        return tlm::TLM_COMPLETED;
    }
    report_port_error("targets", gpu, "illegal phase on the forward path");
    return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum PacketFabric::response(std::uint32_t gpu, tlm::tlm_generic_payload& t, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
    const std::uint32_t eject_req = m_node_first_output[gpu];
    if (phase == tlm::END_REQ) {
        if (m_awaiting_end_req[gpu] != &t) {
            report_port_error("initiators", gpu, "END_REQ for a transaction not awaiting it");
            return tlm::TLM_COMPLETED;
        }
        m_awaiting_end_req[gpu] = nullptr;
        m_actions.push(now_ps() + delay.value(), {ActionKind::EjectFree, eject_req, 0});
        return tlm::TLM_ACCEPTED;
    }
    if (phase == tlm::BEGIN_RESP) {
        if (m_awaiting_end_req[gpu] == &t) {  // implies END_REQ
            m_awaiting_end_req[gpu] = nullptr;
            m_actions.push(now_ps() + delay.value(), {ActionKind::EjectFree, eject_req, 0});
        }
        if (delay != sc_core::SC_ZERO_TIME) return hold_annotated(gpu, t, 1, delay);
        if (inject(gpu, &t, 1)) return tlm::TLM_COMPLETED;
        m_blocked_response[gpu] = &t;  // END_RESP withheld until there is room
        return tlm::TLM_ACCEPTED;
    }
    report_port_error("initiators", gpu, "illegal phase on the backward path");
    return tlm::TLM_COMPLETED;
}

// LT traffic has no phases to hold back, so it crosses the fabric at its zero-load latency.
void PacketFabric::forward_b_transport(std::uint32_t gpu, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    if (is_multimem(t)) {  // the NVLS unit serves the AT path only (an eidolon GPU is AT)
        report_port_error("targets", gpu, "a multimem access over b_transport (LT); NVLS needs AT");
        t.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
        return;
    }
    const std::int64_t dst = decode(t.get_address());
    if (dst < 0) {
        t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    const std::uint64_t len = t.get_data_length();
    delay += ps_to_time(zero_load_ps(gpu, std::uint32_t(dst), t.is_write() ? len : 0, false));
    initiators[std::uint32_t(dst)]->b_transport(t, delay);
    delay += ps_to_time(zero_load_ps(std::uint32_t(dst), gpu, t.is_read() ? len : 0, true));
}

unsigned int PacketFabric::forward_debug(tlm::tlm_generic_payload& t) {
    const std::int64_t dst = decode(t.get_address());
    return dst < 0 ? 0 : initiators[std::uint32_t(dst)]->transport_dbg(t);
}

// ---- the event loop ---------------------------------------------------------------------------

void PacketFabric::on_event() {
    const std::uint64_t now = now_ps();
    Action a;
    while (m_actions.pop_due(now, a)) {
        switch (a.kind) {
            case ActionKind::Arrive: arrive(a.a, a.b >> 8, a.b & 0xff); break;
            case ActionKind::HeadReady: head_ready(a.a, a.b); break;
            case ActionKind::Arbitrate:
                if (m_outputs[a.a].arb_at == now) {
                    m_outputs[a.a].arb_at = kNever;
                    arbitrate(a.a);
                }
                break;
            case ActionKind::Deliver: deliver(a.a, a.b); break;
            case ActionKind::EjectFree:
                m_outputs[a.a].busy = false;
                arbitrate(a.a);
                break;
            case ActionKind::Watchdog: watchdog(); break;
            case ActionKind::NvlsIssue: nvls_issue(a.a); break;
            case ActionKind::NvlsRespond: nvls_respond(a.a); break;
            case ActionKind::Annotated: inject_annotated(a.a, std::uint8_t(a.b)); break;
        }
    }
    m_actions.rearm(now);
}

// Whether a train from `gpu` to `dst` can go whole, and so can its response train back: each way
// is one link that carries nothing but its GPU's own traffic, in a fabric of GPUs alone (as in a
// fully connected node; on rings, meshes and tori GPUs are routers too and transit flows would
// interleave per packet; with switches (hierarchical) trains were measured 15% off even on the
// GPUs' direct links), and a packet fits a buffer. One that cannot is refused with
// TLM_BURST_ERROR_RESPONSE, so its sender sends packets.
bool PacketFabric::carries_train(std::uint32_t gpu, std::uint32_t dst, const tlm::tlm_generic_payload& t) {
    const TrainExtension* train = t.get_extension<TrainExtension>();
    if (!train || train->packets < 2) return true;
    if (m_topology->nodes() != m_topology->gpus()) return false;
    if (m_forwards.empty()) find_forwarding_gpus();
    return own_link(gpu, dst, train->packet_bytes) && own_link(dst, gpu, train->packet_bytes);
}

// Whether the route from GPU `from` to GPU `to` is one link from a GPU that forwards nothing,
// and a packet of `packet_bytes` fits a buffer.
bool PacketFabric::own_link(std::uint32_t from, std::uint32_t to, std::uint32_t packet_bytes) const {
    if (from == to) return true;  // to the GPU itself
    std::uint32_t n = 0;
    const std::uint32_t* choices = m_topology->next(from, to, n);
    if (n != 1 || m_forwards[from]) return false;
    const TopoLink& link = m_topology->links()[choices[0]];
    return link.dst == to && credits_needed(link.header + packet_bytes) <= m_capacity;
}

// Marks every node some route passes through (not starting or ending there), following each
// route's first choice and counting the other equal-cost choices as passed through too. Once, on
// the first train: it walks every GPU pair's route.
void PacketFabric::find_forwarding_gpus() {
    const Topology& topo = *m_topology;
    m_forwards.assign(topo.nodes(), false);
    for (std::uint32_t src = 0; src < topo.gpus(); ++src)
        for (std::uint32_t dst = 0; dst < topo.gpus(); ++dst) {
            std::uint32_t node = src, n = 0;
            while (node != dst) {
                const std::uint32_t* choices = topo.next(node, dst, n);
                if (n == 0) break;
                for (std::uint32_t k = 0; k < n; ++k)
                    if (topo.links()[choices[k]].dst != dst) m_forwards[topo.links()[choices[k]].dst] = true;
                node = topo.links()[choices[0]].dst;
            }
        }
}

std::uint32_t PacketFabric::new_packet() { return take_slot(m_packets, m_free_packets); }

bool PacketFabric::inject(std::uint32_t gpu, tlm::tlm_generic_payload* trans, std::uint8_t cls) {
    const std::uint32_t input = m_node_first_input[gpu];
    Packet probe;  // route first: the packet queues for its output
    probe.cls = cls;
    if (cls == 0) {
        // A multimem access goes to the switch's NVLS unit, whatever its address says.
        probe.dst_gpu = m_reduce_bytes_per_s > 0 && is_multimem(*trans)
                            ? m_switch_node : std::uint32_t(m_map.window_of(trans->get_address()));
    } else if (!m_delivered.find(gpu, trans, probe.dst_gpu)) {
        report_unknown_response(gpu);
        return true;  // nothing to queue; the run stops on the error
    }
    Input& in = m_inputs[input];
    // The virtual output queues share one buffer of depth x outputs: one slow port cannot stall the
    // GPU's single request channel (END_REQ) while other ports have room. A fifo port holds depth
    // packets per class.
    const TrainExtension* train = trans->get_extension<TrainExtension>();
    const std::uint32_t packets = train ? train->packets : 1;  // a train fills the space of its packets
    // In 64 bits: a depth near kMaxCredits times a router's outputs wraps a 32-bit product to nothing.
    if (in.class_held[cls] >= std::uint64_t(m_inject_depth) * in.per_class) return false;
    const std::uint32_t out = route(gpu, probe);
    const std::uint32_t queue = cls * in.per_class + (m_inject_fifo ? 0 : out - m_node_first_output[gpu]);
    if (train) m_trains = true;
    const std::uint32_t len = trans->get_data_length();
    std::uint32_t dst = probe.dst_gpu;
    if (cls == 0) {
        enqueue(gpu, trans, cls, gpu, dst, trans->is_write() ? len : 0, false, packets, out, queue);
    } else {
        m_delivered.answered(gpu, trans, dst);
        enqueue(gpu, trans, cls, gpu, dst, trans->is_read() ? len : 0, !trans->is_read(), packets, out, queue);
    }
    return true;
}

// Queues a packet at `node`'s injection port, in `queue`, bound for `out` (the caller checked for room).
void PacketFabric::enqueue(std::uint32_t node, tlm::tlm_generic_payload* trans, std::uint8_t cls, std::uint32_t src,
                           std::uint32_t dst, std::uint32_t payload, bool ack, std::uint32_t packets,
                           std::uint32_t out, std::uint32_t queue) {
    const std::uint32_t input = m_node_first_input[node];
    Input& in = m_inputs[input];
    Queue& q = in.vcs[queue];
    const std::uint32_t id = new_packet();
    Packet& p = m_packets[id];
    p = Packet{};
    p.trans = trans;
    p.cls = cls;
    p.train = packets;
    p.src_gpu = src;
    p.dst_gpu = dst;
    p.payload = payload;
    p.ack = ack;
    if (m_mtu && trans) {
        // The NIC frames the message: data in MTU-sized network packets counted from the message's
        // first byte, a read request or an acknowledgement as one network packet per message.
        const MessageFraming f = message_framing(*trans, m_mtu);
        const bool carries_data = payload > 0;
        p.frames = carries_data ? f.frames : (cls == 0 ? (f.first ? 1 : 0) : (f.last ? 1 : 0));
        p.starts_message = cls == 0 && f.first;
    }
    p.injected_ps = now_ps();
    p.ready_ps = p.injected_ps;  // the node's own router port: no hop latency yet
    p.tail_ps = p.injected_ps;   // and the whole packet is there
    p.first_in_ps = p.injected_ps;
    // What it holds of the injection buffer: packets, or, where switch.buffer is a size, the
    // flits of its wire bytes on its first link, as a link's buffer counts them.
    p.units = packets;
    if (m_credit_bytes && m_outputs[out].link >= 0) {
        const TopoLink& first = m_topology->links()[std::size_t(m_outputs[out].link)];
        const std::uint32_t wire = wire_bytes(p, first.header, first.framed);
        p.units = packets == 1 ? credits_needed(wire) : packets * credits_needed(p.packet_wire(wire));
    }
    in.class_held[cls] += p.units;
    p.out = out;
    ++q.reserved;
    // In turns: behind a head, a packet waits with its workgroup's (pop_head takes the next in turn).
    const bool staged = cls == 0 && q.size > 0 && !in.turns.empty();
    if (staged) stage(in.turns[queue], id, stream_of(*trans));
    else q.push(id);
    in.occupancy += p.units;
    ++m_in_flight;
    if (!m_watching) {
        m_watching = true;
        m_last_progress_ps = now_ps();
        m_actions.push(now_ps() + m_watchdog_ps, {ActionKind::Watchdog, 0, 0});
    }
    if (q.size == 1 && !staged) m_actions.push(now_ps(), {ActionKind::HeadReady, input, queue});
}

std::uint32_t PacketFabric::stream_of(const tlm::tlm_generic_payload& trans) {
    const StreamExtension* s = trans.get_extension<StreamExtension>();
    return s ? s->stream : 0;
}

void PacketFabric::stage(InjectionTurns& t, std::uint32_t id, std::uint32_t stream) {
    if (t.ends.size() <= stream) t.ends.resize(std::size_t(stream) + 1, {kNoOutput, kNoOutput});
    auto& [first, last] = t.ends[stream];
    m_packets[id].next_staged = kNoOutput;
    if (first == kNoOutput) {
        first = id;
        t.order.push_back(stream);
    } else {
        m_packets[last].next_staged = id;
    }
    last = id;
}

void PacketFabric::unstage(InjectionTurns& t, Queue& q) {
    if (t.order.empty()) return;
    const std::uint32_t stream = t.order.front();
    t.order.pop_front();
    auto& [first, last] = t.ends[stream];
    const std::uint32_t id = first;
    first = m_packets[id].next_staged;
    if (first == kNoOutput) last = kNoOutput;
    else t.order.push_back(stream);  // more to send: its next turn comes after the others'
    q.push(id);
}

// A BEGIN_REQ (cls 0) or BEGIN_RESP (cls 1) from GPU `gpu` annotated `delay` ahead: it takes effect
// then, so it is held and injected by an Annotated action, its END phase withheld until then.
tlm::tlm_sync_enum PacketFabric::hold_annotated(std::uint32_t gpu, tlm::tlm_generic_payload& t, std::uint8_t cls,
                                                const sc_core::sc_time& delay) {
    m_annotated[cls][gpu] = &t;
    m_actions.push(now_ps() + delay.value(), {ActionKind::Annotated, gpu, cls});
    return tlm::TLM_ACCEPTED;
}

// The held annotated request or response of GPU `gpu` takes effect: injected, and its END phase sent,
// now or (its injection buffer full) when there is room, as for any blocked one.
void PacketFabric::inject_annotated(std::uint32_t gpu, std::uint8_t cls) {
    tlm::tlm_generic_payload* t = m_annotated[cls][gpu];
    m_annotated[cls][gpu] = nullptr;
    (cls == 0 ? m_blocked_request : m_blocked_response)[gpu] = t;
    retry_blocked_injection(gpu, cls);
}

void PacketFabric::retry_blocked_injection(std::uint32_t gpu, std::uint8_t cls) {
    if (gpu >= ports()) return;  // the switch's NVLS unit queues without limit: it is never blocked
    tlm::tlm_generic_payload*& blocked = cls == 0 ? m_blocked_request[gpu] : m_blocked_response[gpu];
    if (!blocked || !inject(gpu, blocked, cls)) return;
    tlm::tlm_generic_payload* t = blocked;
    blocked = nullptr;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    if (cls == 0) {
        tlm::tlm_phase phase = tlm::END_REQ;
        initiator_of(gpu).nb_transport_bw(*t, phase, delay);
    } else {
        tlm::tlm_phase phase = tlm::END_RESP;
        target_of(gpu).nb_transport_fw(*t, phase, delay);
    }
}

// The link's counters for a packet sent at now over `ser` ps on lane `lane`.
void PacketFabric::count_link(std::uint32_t link, std::uint32_t lane, const Packet& p, std::uint32_t wire,
                              std::uint64_t ser) {
    const std::uint64_t now = now_ps();
    LinkCounters& lc = m_link_counters[link];
    lc.s.bytes += p.payload;
    lc.s.wire_bytes += wire;
    lc.s.packets += p.train;
    lc.s.busy_ps += ser;
    if (!lc.lane_busy.empty()) lc.lane_busy[lane] += ser;
    const double wait = double(now - std::min(now, p.ready_ps));  // a train's packets count its head's wait
    lc.queue_sum += wait * p.train;
    lc.s.queue_max_ps = std::max(lc.s.queue_max_ps, wait);
    lc.hist[bucket_of(wait)] += p.train;
    auto& bins = lc.s.busy_bins;
    auto& byte_bins = lc.s.byte_bins;  // the payload counts in the bin its transmission starts in
    const std::uint64_t width = m_bin_budget.width_ps();
    const std::size_t held = bins.size() + byte_bins.size();
    if (byte_bins.empty() || byte_bins.back().first < now / width) byte_bins.emplace_back(now / width, 0);
    byte_bins.back().second += p.payload;
    for (std::uint64_t t = now; t < now + ser;) {  // spread the busy time over the bins it covers
        const std::uint64_t bin = t / width, end = std::min(now + ser, (bin + 1) * width);
        // Packets start in time order, but one lane may still be sending into a later bin than
        // another lane starts in (and an acknowledgement sent inside a train is counted after the
        // train): find the bin from the back, where it nearly always is.
        auto it = bins.end();
        while (it != bins.begin() && std::prev(it)->first > bin) --it;
        if (it != bins.begin() && std::prev(it)->first == bin) std::prev(it)->second += float(end - t);
        else bins.insert(it, {bin, float(end - t)});
        t = end;
    }
    if (m_bin_budget.add(bins.size() + byte_bins.size() - held))
        m_bin_budget.coarsen(now, [this](std::uint64_t) {
            std::size_t now_held = 0;
            for (LinkCounters& c : m_link_counters) {
                halve_bins(c.s.busy_bins);
                halve_bins(c.s.byte_bins);
                now_held += c.s.busy_bins.size() + c.s.byte_bins.size();
            }
            return now_held;
        });
}

// Hands a packet to its GPU: a request on initiators[gpu], a response on targets[gpu].
void PacketFabric::deliver(std::uint32_t output, std::uint32_t id) {
    if (m_outputs[output].node >= ports()) {  // into the switch's NVLS unit
        nvls_arrived(id);
        return;
    }
    Packet p = m_packets[id];
    m_free_packets.push_back(id);
    --m_in_flight;
    const std::uint64_t now = now_ps();
    m_last_progress_ps = now;
    if (p.cls == 0 && p.src_gpu < ports()) {  // GPU pairs only: the NVLS unit's copies and reads are not one
        PairStats& pair = m_pairs[(std::uint64_t(p.src_gpu) << 32) | p.dst_gpu];
        pair.src = std::int32_t(p.src_gpu);
        pair.dst = std::int32_t(p.dst_gpu);
        pair.bytes += p.payload;
        pair.packets += p.train;
        // A train is delivered with its first packet; the others follow one spacing apart.
        const double latency = double(now - p.injected_ps), spread = double(p.train - 1) * double(p.spacing_ps);
        pair.latency_sum_ps += p.train * (latency + 0.5 * spread);
        pair.latency_max_ps = std::max(pair.latency_max_ps, latency + spread);
    }
    Output& o = m_outputs[output];
    o.busy = true;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    if (p.train > 1) {  // the receiver spreads the train's packets at its slowest spacing either way
        TrainExtension* train = p.trans->get_extension<TrainExtension>();
        if (train) train->spacing_ps = std::max(train->spacing_ps, p.spacing_ps);
    }
    if (p.cls == 0) {
        tlm::tlm_phase phase = tlm::BEGIN_REQ;
        m_delivered.delivered(p.dst_gpu, p.trans, p.src_gpu);  // before the call: it may answer at once
        const tlm::tlm_sync_enum s = target_of(p.dst_gpu).nb_transport_fw(*p.trans, phase, delay);
        if (s == tlm::TLM_ACCEPTED) {  // END_REQ comes on the backward path
            m_awaiting_end_req[p.dst_gpu] = p.trans;
            return;
        }
        m_actions.push(now + delay.value(), {ActionKind::EjectFree, output, 0});
        if (s == tlm::TLM_COMPLETED || phase == tlm::BEGIN_RESP) {
            // The target answered at once: the response starts back from here.
            if (!inject(p.dst_gpu, p.trans, 1))
                errors().report(ErrorKind::ModelError, std::string(name()) + ": no room for an immediate response");
        }
        return;
    }
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    if (initiator_of(p.dst_gpu).nb_transport_bw(*p.trans, phase, delay) == tlm::TLM_ACCEPTED) return;
    m_actions.push(now + delay.value(), {ActionKind::EjectFree, output, 0});
}

void PacketFabric::watchdog() {
    const std::uint64_t now = now_ps();
    if (m_in_flight == 0) {
        m_watching = false;
        return;
    }
    if (now - m_last_progress_ps >= m_watchdog_ps) {
        std::ostringstream msg;
        msg << name() << ": fabric deadlock: " << m_in_flight << " packet(s) held and none moved for "
            << ps_to_time(now - m_last_progress_ps) << "; full buffers:";
        int shown = 0;
        for (const Input& in : m_inputs)
            for (std::size_t v = 0; v < in.vcs.size() && shown < 8; ++v)
                if (in.link >= 0 && in.vcs[v].reserved >= in.capacity) {
                    msg << " " << m_topology->node_name(in.node) << " input "
                        << (in.link < 0 ? std::string("injection") : "from " + m_topology->node_name(
                                                                             m_topology->links()[in.link].src))
                        << " vc " << v << ";";
                    ++shown;
                }
        errors().report(ErrorKind::FabricDeadlock, msg.str());
        return;
    }
    m_actions.push(m_last_progress_ps + m_watchdog_ps, {ActionKind::Watchdog, 0, 0});
}

std::vector<LinkStats> PacketFabric::link_stats() const {
    std::vector<LinkStats> out;
    for (std::size_t l = 0; l < m_link_counters.size(); ++l) {
        const LinkCounters& lc = m_link_counters[l];
        LinkStats s = lc.s;
        for (const Queue& q : m_inputs[m_link_input[l]].vcs) s.hol_blocked_ps = std::max(s.hol_blocked_ps, q.hol_blocked_ps);
        s.lane_busy_max_ps = lc.lane_busy.empty() ? s.busy_ps
                                                  : *std::max_element(lc.lane_busy.begin(), lc.lane_busy.end());
        if (s.packets) {
            s.queue_mean_ps = lc.queue_sum / double(s.packets);
            auto percentile = [&](double q) {
                const double target = q * double(s.packets);
                double seen = 0;
                for (std::size_t b = 0; b < kHistBuckets; ++b) {
                    seen += double(lc.hist[b]);
                    if (seen >= target) return std::min(bucket_value(b), s.queue_max_ps);
                }
                return s.queue_max_ps;
            };
            s.queue_p50_ps = percentile(0.5);
            s.queue_p99_ps = percentile(0.99);
        }
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<PairStats> PacketFabric::pair_stats() const {
    return sorted_pairs(m_pairs);
}

namespace {
const bool registered = register_model(model_info<PacketFabric>(
    "PacketFabric", Role::Fabric,
    "Cycle-approximate packet fabric: links, routers with credit-based buffers, topologies and congestion"));
}  // namespace

}  // namespace eidola
