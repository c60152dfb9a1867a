#include "eidola/packet_fabric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "eidola/registry.h"

namespace eidola {

namespace {
constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
constexpr std::size_t kHistBuckets = 8 * 64 + 1;  // eighth-octave buckets of a wait in ps

std::size_t bucket_of(double ps) { return ps < 1 ? 0 : std::min<std::size_t>(kHistBuckets - 1, 1 + std::size_t(8 * std::log2(ps))); }
double bucket_value(std::size_t b) { return b == 0 ? 0 : std::exp2((double(b - 1) + 0.5) / 8); }
}  // namespace

/// A packet in the fabric: one TLM transaction's request or response.
struct PacketFabric::Packet {
    tlm::tlm_generic_payload* trans = nullptr;
    std::uint32_t src_gpu = 0, dst_gpu = 0;  // where it came from and where it goes
    std::uint32_t payload = 0;               // data bytes it carries
    std::uint32_t out = 0;                   // chosen output at its current router
    std::uint8_t cls = 0;                    // 0 request, 1 response
    std::int8_t dim = -1;                    // dimension of its last hop (dateline VCs)
    std::uint8_t crossed = 0;                // it crossed the dateline in that dimension
    bool ack = false;                        // a write's response
    std::uint64_t ready_ps = 0;              // eligible for output arbitration at its current router
    std::uint64_t injected_ps = 0;
};

/// One virtual channel of an input buffer: a ring of packet indices.
struct PacketFabric::Queue {
    std::vector<std::uint32_t> slots;
    std::uint32_t head = 0, size = 0;
    std::uint32_t reserved = 0;  // size + packets on the link towards it (the credits in use)
    std::uint32_t front() const { return slots[head]; }
    void push(std::uint32_t p) {
        if (size == slots.size()) grow();
        slots[(head + size++) % slots.size()] = p;
    }
    void grow() {  // only injection queues grow: link queues are bounded by their credits
        std::vector<std::uint32_t> bigger(std::max<std::size_t>(4, 2 * slots.size()));
        for (std::uint32_t i = 0; i < size; ++i) bigger[i] = slots[(head + i) % slots.size()];
        slots.swap(bigger);
        head = 0;
    }
    std::uint32_t pop() {
        if (size == 0) throw std::logic_error("packet fabric: pop from an empty queue");
        std::uint32_t p = slots[head];
        head = std::uint32_t((head + 1) % slots.size());
        --size;
        --reserved;
        return p;
    }
};

/// A router input: the injection port or the receiving end of a link. A link input has a queue per
/// virtual channel (class x dateline); the injection port has one per class and output (virtual
/// output queues), as a GPU's fabric interface steers each request straight to its port, so a
/// busy link never holds up traffic for an idle one.
struct PacketFabric::Input {
    std::uint32_t node;
    std::int64_t link;  // -1: injection from the node's GPU
    std::vector<Queue> vcs;
    std::uint32_t per_class;  // queues per traffic class
    std::uint32_t occupancy = 0;
    std::uint32_t class_held[2] = {0, 0};  // injection: packets held per class (the queues share the space)
};

/// A router output: ejection to the GPU (requests or responses), or the sending end of a link.
struct PacketFabric::Output {
    std::uint32_t node;
    std::int64_t link;                                        // -1: request ejection, -2: response ejection
    std::deque<std::pair<std::uint32_t, std::uint32_t>> requests;  // (input, vc) whose head wants this output
    std::vector<std::uint64_t> lane_free;                     // links: when each lane is free
    bool busy = false;                                        // ejection: awaiting the END phase
    std::uint64_t arb_at = kNever;                            // pending arbitration time
};

/// Counters of one link.
struct PacketFabric::LinkCounters {
    LinkStats s;
    double queue_sum = 0;
    std::vector<std::uint64_t> hist = std::vector<std::uint64_t>(kHistBuckets, 0);
};

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
    spec.gpus_per_node = std::uint32_t(hierarchical.gpus_per_node.get());
    spec.intra = hierarchical.intra.get();
    spec.spines = std::uint32_t(hierarchical.spines.get());
    spec.nic = LinkParams{hierarchical.nic_bandwidth.get(), hierarchical.nic_latency.get().value(), spec.link.header,
                          1};
    spec.network = LinkParams{hierarchical.network_bandwidth.get(), hierarchical.network_latency.get().value(),
                              spec.link.header, 1};
    spec.switches = std::uint32_t(custom.switches.get());
    spec.edges = custom.edges.get();
    return spec;
}

namespace {

std::unique_ptr<Topology> build_topology(const PacketFabricParams& p, const char* owner) {
    try {
        return std::make_unique<Topology>(p.topology_spec());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string(owner) + ": " + e.what());
    }
}

}  // namespace

PacketFabric::PacketFabric(sc_core::sc_module_name name, const ParamSet& given)
    : PacketFabric(name, Configured<Params>(given, static_cast<const char*>(name))) {}

PacketFabric::PacketFabric(sc_core::sc_module_name name, const Params& p)
    : FabricShell(name, std::uint32_t(p.ports.get())),
      m_topology(build_topology(p, static_cast<const char*>(name))),
      m_switch_latency_ps(p.router.latency.get().value()),
      m_depth(std::uint32_t(p.router.buffer.get())),
      m_ack_bytes(std::uint32_t(p.link.ack.get())),
      m_spread(p.spread.get()),
      m_bin_ps(p.stats_bin.get().value()),
      m_watchdog_ps(p.watchdog.get().value()),
      m_vcs_per_class(m_topology->needs_dateline() ? 2 : 1),
      m_actions(m_event) {
    const Topology& topo = *m_topology;
    const std::uint32_t vcs = 2 * m_vcs_per_class;
    auto make_input = [&](std::uint32_t node, std::int64_t link) {
        const std::uint32_t per_class = link < 0 ? 2 + std::uint32_t(topo.out_links(node).size()) : m_vcs_per_class;
        Input in{node, link, std::vector<Queue>(link < 0 ? 2 * per_class : vcs), per_class, 0};
        for (Queue& q : in.vcs) q.slots.assign(link < 0 ? 4 : m_depth, 0);
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
        m_outputs.push_back(Output{n, -1, {}, {}, false, kNever});
        m_outputs.push_back(Output{n, -2, {}, {}, false, kNever});
        for (std::uint32_t l : topo.out_links(n)) {
            m_link_output[l] = std::uint32_t(m_outputs.size());
            m_outputs.push_back(Output{n, l, {}, std::vector<std::uint64_t>(topo.links()[l].lanes, 0), false, kNever});
        }
    }
    m_link_counters.resize(topo.links().size());
    for (std::size_t l = 0; l < topo.links().size(); ++l) {
        m_link_counters[l].s.src = std::int32_t(topo.links()[l].src);
        m_link_counters[l].s.dst = std::int32_t(topo.links()[l].dst);
        m_link_counters[l].s.lanes = topo.links()[l].lanes;
    }
    m_spread_counter.assign(topo.nodes(), 0);
    m_blocked_request.assign(ports(), nullptr);
    m_blocked_response.assign(ports(), nullptr);
    SC_METHOD(on_event);
    sensitive << m_event;
    dont_initialize();
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
        m_source.set(&t, gpu);
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
    errors().report(ErrorKind::ModelError,
                    std::string(name()) + ".targets[" + std::to_string(gpu) + "]: illegal phase on the forward path");
    return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum PacketFabric::response(std::uint32_t gpu, tlm::tlm_generic_payload& t, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
    const std::uint32_t eject_req = m_node_first_output[gpu];
    if (phase == tlm::END_REQ) {
        m_actions.push(now_ps() + delay.value(), {ActionKind::EjectFree, eject_req, 0});
        return tlm::TLM_ACCEPTED;
    }
    if (phase == tlm::BEGIN_RESP) {
        if (m_outputs[eject_req].busy) m_actions.push(now_ps() + delay.value(), {ActionKind::EjectFree, eject_req, 0});
        if (inject(gpu, &t, 1)) return tlm::TLM_COMPLETED;
        m_blocked_response[gpu] = &t;  // END_RESP withheld until there is room
        return tlm::TLM_ACCEPTED;
    }
    errors().report(ErrorKind::ModelError, std::string(name()) + ".initiators[" + std::to_string(gpu) +
                                               "]: illegal phase on the backward path");
    return tlm::TLM_COMPLETED;
}

// LT traffic has no phases to hold back, so it crosses the fabric at its zero-load latency.
void PacketFabric::forward_b_transport(std::uint32_t gpu, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    const std::int64_t dst = decode(t.get_address());
    if (dst < 0) {
        t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    auto path_ps = [this](std::uint32_t from, std::uint32_t to, std::uint64_t bytes) {
        std::uint64_t total = 0;
        std::uint32_t node = from, n;
        while (node != to) {
            const TopoLink& l = m_topology->links()[m_topology->next(node, to, n)[0]];
            total += std::uint64_t(std::llround(double(l.header + bytes) * 1e12 / l.bytes_per_s)) + l.latency_ps +
                     m_switch_latency_ps;
            node = l.dst;
        }
        return total;
    };
    const std::uint64_t len = t.get_data_length();
    delay += ps_to_time(path_ps(gpu, std::uint32_t(dst), t.is_write() ? len : 0));
    initiators[std::uint32_t(dst)]->b_transport(t, delay);
    delay += ps_to_time(path_ps(std::uint32_t(dst), gpu, t.is_read() ? len : 0));
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
            case ActionKind::EjectFree:
                m_outputs[a.a].busy = false;
                arbitrate(a.a);
                break;
            case ActionKind::Watchdog: watchdog(); break;
        }
    }
    m_actions.rearm(now);
}

bool PacketFabric::inject(std::uint32_t gpu, tlm::tlm_generic_payload* trans, std::uint8_t cls) {
    const std::uint32_t input = m_node_first_input[gpu];
    Packet probe;  // route first: the packet queues for its output
    probe.cls = cls;
    if (cls == 0) probe.dst_gpu = std::uint32_t(m_map.window_of(trans->get_address()));
    else m_source.find(trans, probe.dst_gpu);
    const std::uint32_t out = route(gpu, probe);
    const std::uint32_t queue = cls * m_inputs[input].per_class + (out - m_node_first_output[gpu]);
    Input& in = m_inputs[input];
    Queue& q = in.vcs[queue];
    // The virtual output queues share one buffer of depth x outputs: one slow port cannot stall the
    // GPU's single request channel (END_REQ) while other ports have room.
    if (in.class_held[cls] >= m_depth * in.per_class) return false;
    ++in.class_held[cls];
    std::uint32_t id;
    if (m_free_packets.empty()) {
        id = std::uint32_t(m_packets.size());
        m_packets.emplace_back();
    } else {
        id = m_free_packets.back();
        m_free_packets.pop_back();
    }
    Packet& p = m_packets[id];
    p = Packet{};
    p.trans = trans;
    p.cls = cls;
    const std::uint32_t len = trans->get_data_length();
    if (cls == 0) {
        p.src_gpu = gpu;
        p.dst_gpu = std::uint32_t(m_map.window_of(trans->get_address()));
        p.payload = trans->is_write() ? len : 0;
    } else {
        p.src_gpu = gpu;
        m_source.take(trans, p.dst_gpu);
        p.payload = trans->is_read() ? len : 0;
        p.ack = !trans->is_read();
    }
    p.injected_ps = now_ps();
    p.ready_ps = p.injected_ps;  // the GPU's own router port: no hop latency yet
    p.out = out;
    ++q.reserved;
    q.push(id);
    ++m_inputs[input].occupancy;
    ++m_in_flight;
    if (!m_watching) {
        m_watching = true;
        m_last_progress_ps = now_ps();
        m_actions.push(now_ps() + m_watchdog_ps, {ActionKind::Watchdog, 0, 0});
    }
    if (q.size == 1) m_actions.push(now_ps(), {ActionKind::HeadReady, input, queue});
    return true;
}

void PacketFabric::retry_blocked_injection(std::uint32_t gpu, std::uint8_t cls) {
    tlm::tlm_generic_payload*& blocked = cls == 0 ? m_blocked_request[gpu] : m_blocked_response[gpu];
    if (!blocked || !inject(gpu, blocked, cls)) return;
    tlm::tlm_generic_payload* t = blocked;
    blocked = nullptr;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    if (cls == 0) {
        tlm::tlm_phase phase = tlm::END_REQ;
        targets[gpu]->nb_transport_bw(*t, phase, delay);
    } else {
        tlm::tlm_phase phase = tlm::END_RESP;
        initiators[gpu]->nb_transport_fw(*t, phase, delay);
    }
}

std::uint32_t PacketFabric::route(std::uint32_t node, const Packet& p) {
    if (node == p.dst_gpu) return m_node_first_output[node] + p.cls;  // eject to this GPU
    std::uint32_t n;
    const std::uint32_t* candidates = m_topology->next(node, p.dst_gpu, n);
    if (n == 0) {
        errors().report(ErrorKind::ModelError, std::string(name()) + ": no route from " +
                                                   m_topology->node_name(node) + " to gpu" + std::to_string(p.dst_gpu));
        return m_node_first_output[node] + p.cls;
    }
    const std::uint32_t pick = m_spread && n > 1 ? candidates[m_spread_counter[node]++ % n] : candidates[0];
    return m_link_output[pick];
}

void PacketFabric::arrive(std::uint32_t id, std::uint32_t input, std::uint32_t vc) {
    Packet& p = m_packets[id];
    Queue& q = m_inputs[input].vcs[vc];
    q.push(id);
    Input& in = m_inputs[input];
    ++in.occupancy;
    LinkCounters& lc = m_link_counters[std::size_t(in.link)];
    lc.s.peak_occupancy = std::max(lc.s.peak_occupancy, in.occupancy);
    p.ready_ps = now_ps() + m_switch_latency_ps;
    p.out = route(in.node, p);
    if (q.size == 1) m_actions.push(p.ready_ps, {ActionKind::HeadReady, input, vc});
}

void PacketFabric::head_ready(std::uint32_t input, std::uint32_t vc) {
    const Queue& q = m_inputs[input].vcs[vc];
    if (q.size == 0) return;
    const std::uint32_t out = m_packets[q.front()].out;
    m_outputs[out].requests.emplace_back(input, vc);
    schedule_arbitration(out, now_ps());
}

void PacketFabric::schedule_arbitration(std::uint32_t output, std::uint64_t at) {
    Output& o = m_outputs[output];
    if (o.arb_at <= at) return;  // one already pending, no later than this
    o.arb_at = at;
    m_actions.push(at, {ActionKind::Arbitrate, output, 0});
}

void PacketFabric::arbitrate(std::uint32_t output) {
    if (m_outputs[output].link < 0) arbitrate_ejection(output);
    else arbitrate_link(output);
}

// Takes a packet off the head of an input queue: its buffer slot is a credit back to the sender.
std::uint32_t PacketFabric::pop_head(std::uint32_t input, std::uint32_t vc) {
    Input& in = m_inputs[input];
    Queue& q = in.vcs[vc];
    const std::uint32_t id = q.pop();
    --in.occupancy;
    const std::uint64_t now = now_ps();
    // The new head asks for its output first: a retried injection below may refill an empty queue,
    // and then it is inject() that announces the head (once).
    if (q.size > 0)
        m_actions.push(std::max(now, m_packets[q.front()].ready_ps), {ActionKind::HeadReady, input, vc});
    if (in.link >= 0) {
        const std::uint32_t upstream = m_link_output[std::size_t(in.link)];
        if (!m_outputs[upstream].requests.empty()) schedule_arbitration(upstream, now);
    } else {
        --in.class_held[vc / in.per_class];
        retry_blocked_injection(in.node, std::uint8_t(vc / in.per_class));
    }
    return id;
}

// Round robin over the inputs whose head packet wants this link, in the order they asked; a
// request whose downstream virtual channel has no credit is passed over, not dropped.
void PacketFabric::arbitrate_link(std::uint32_t output) {
    Output& o = m_outputs[output];
    const std::uint32_t link_index = std::uint32_t(o.link);
    const TopoLink& link = m_topology->links()[link_index];
    const std::uint32_t downstream = m_link_input[link_index];
    const std::uint64_t now = now_ps();
    while (!o.requests.empty()) {
        auto lane = std::min_element(o.lane_free.begin(), o.lane_free.end());
        if (*lane > now) {
            schedule_arbitration(output, *lane);
            return;
        }
        auto grant = o.requests.end();
        std::uint32_t next_vc = 0;
        for (auto it = o.requests.begin(); it != o.requests.end(); ++it) {
            const Packet& p = m_packets[m_inputs[it->first].vcs[it->second].front()];
            std::uint32_t bit = 0;
            if (m_vcs_per_class == 2) bit = (link.wrap || (p.crossed && link.dim == p.dim)) ? 1 : 0;
            const std::uint32_t vc = p.cls * m_vcs_per_class + bit;
            if (m_inputs[downstream].vcs[vc].reserved < m_depth) {
                grant = it;
                next_vc = vc;
                break;
            }
        }
        if (grant == o.requests.end()) return;  // every candidate waits for a credit
        const auto [input, vc] = *grant;
        o.requests.erase(grant);
        const std::uint32_t id = pop_head(input, vc);
        Packet& p = m_packets[id];
        const std::uint32_t wire = (p.ack && m_ack_bytes ? m_ack_bytes : link.header) + p.payload;
        const std::uint64_t ser = std::uint64_t(std::llround(double(wire) * 1e12 / link.bytes_per_s));
        *lane = now + ser;
        p.dim = link.dim;
        p.crossed = std::uint8_t(next_vc % m_vcs_per_class);
        ++m_inputs[downstream].vcs[next_vc].reserved;
        m_actions.push(now + ser + link.latency_ps, {ActionKind::Arrive, id, (downstream << 8) | next_vc});
        m_last_progress_ps = now;

        LinkCounters& lc = m_link_counters[link_index];
        lc.s.bytes += p.payload;
        lc.s.wire_bytes += wire;
        ++lc.s.packets;
        lc.s.busy_ps += ser;
        const double wait = double(now - std::min(now, p.ready_ps));
        lc.queue_sum += wait;
        lc.s.queue_max_ps = std::max(lc.s.queue_max_ps, wait);
        ++lc.hist[bucket_of(wait)];
        for (std::uint64_t t = now; t < now + ser;) {  // spread the busy time over the bins it covers
            const std::uint64_t bin = t / m_bin_ps, end = std::min(now + ser, (bin + 1) * m_bin_ps);
            if (lc.s.busy_bins.size() <= bin) lc.s.busy_bins.resize(bin + 1, 0.0f);
            lc.s.busy_bins[bin] += float(end - t);
            t = end;
        }
    }
}

void PacketFabric::arbitrate_ejection(std::uint32_t output) {
    Output& o = m_outputs[output];
    if (o.busy || o.requests.empty()) return;
    const auto [input, vc] = o.requests.front();
    o.requests.pop_front();
    deliver(output, pop_head(input, vc));
}

// Hands a packet to its GPU: a request on initiators[gpu], a response on targets[gpu].
void PacketFabric::deliver(std::uint32_t output, std::uint32_t id) {
    Packet p = m_packets[id];
    m_free_packets.push_back(id);
    --m_in_flight;
    m_last_progress_ps = now_ps();
    Output& o = m_outputs[output];
    o.busy = true;
    const std::uint64_t now = now_ps();
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    if (p.cls == 0) {
        PairStats& pair = m_pairs[(std::uint64_t(p.src_gpu) << 32) | p.dst_gpu];
        pair.src = std::int32_t(p.src_gpu);
        pair.dst = std::int32_t(p.dst_gpu);
        pair.bytes += p.payload;
        ++pair.packets;
        pair.latency_sum_ps += double(now - p.injected_ps);
        pair.latency_max_ps = std::max(pair.latency_max_ps, double(now - p.injected_ps));
        tlm::tlm_phase phase = tlm::BEGIN_REQ;
        const tlm::tlm_sync_enum s = initiators[p.dst_gpu]->nb_transport_fw(*p.trans, phase, delay);
        if (s == tlm::TLM_ACCEPTED) return;  // END_REQ comes on the backward path
        m_actions.push(now + delay.value(), {ActionKind::EjectFree, output, 0});
        if (s == tlm::TLM_COMPLETED || phase == tlm::BEGIN_RESP) {
            // The target answered at once: the response starts back from here.
            if (!inject(p.dst_gpu, p.trans, 1))
                errors().report(ErrorKind::ModelError, std::string(name()) + ": no room for an immediate response");
        }
        return;
    }
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    if (targets[p.dst_gpu]->nb_transport_bw(*p.trans, phase, delay) == tlm::TLM_ACCEPTED) return;
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
                if (in.vcs[v].size >= m_depth) {
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
    for (const LinkCounters& lc : m_link_counters) {
        LinkStats s = lc.s;
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
    std::vector<PairStats> out;
    for (const auto& entry : m_pairs) out.push_back(entry.second);
    std::sort(out.begin(), out.end(), [](const PairStats& a, const PairStats& b) {
        return a.src != b.src ? a.src < b.src : a.dst < b.dst;
    });
    return out;
}

namespace {
const bool registered = register_model(model_info<PacketFabric>(
    "PacketFabric", Role::Fabric,
    "Cycle-approximate packet fabric: links, routers with credit-based buffers, topologies and congestion"));
}  // namespace

}  // namespace eidola
