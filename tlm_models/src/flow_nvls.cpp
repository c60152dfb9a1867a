// NVLink SHARP in the flow fabric (topology switch, fabric.switch.nvls): the switch serves
// multimem accesses (multimem_extension.h) as the packet fabric's NVLS unit does
// (nvls_switch.cpp), at the fidelity of a fluid.
//
// A multimem access of n bytes (P packets) on k members is ONE flow, because the switch forwards
// packet by packet and so every stage runs at the same rate once the pipe is full:
// - a store puts n + P headers on the requester's link to the switch and the same on the
//   switch's link to every member (the copies), and an acknowledgement per packet on every
//   member's link back and on the switch's link to the requester;
// - a load-reduce puts P read headers on the requester's link and on every member's link from the
//   switch, n + P headers on every member's link to the switch (the answers) and on the switch's
//   link to the requester (the sum), and k x n bytes through the reduction engine, a solver
//   resource of capacity fabric.switch.nvls.reduce_bandwidth.
// When its last byte has left the requester, the last packet's stages follow at zero load, as the
// packet fabric times one packet on an idle switch (tests/python/test_nvls.py): a store's copies
// reach the members after the unit's latency and one link each, their memories answer, the last
// member's acknowledgement reaches the unit, and one acknowledgement goes to the requester; a
// load-reduce's reads reach the members, the last answer reaches the unit, which sums the last
// packet (k x its bytes at the engine's rate), waits its latency and sends the sum. A member's
// memory receives its copy (or serves its read) as one transaction of n bytes whose bytes came
// in from the first packet's arrival on (FlowExtension::first_ps).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "eidola/flow_extension.h"
#include "eidola/flow_fabric.h"
#include "eidola/packet_pool.h"
#include "eidola/round_ps.h"
#include "eidola/free_list.h"

namespace eidola {

void FlowFabric::setup_nvls(const Params& p) {
    m_reduce_bytes_per_s = p.router.nvls_reduce_bandwidth.get();
    m_nvls_latency_ps = p.router.nvls_latency.get().value();
    if (m_reduce_bytes_per_s <= 0) return;
    // One crossbar every GPU reaches in one link, as in the packet fabric (packet_fabric.cpp).
    if (p.topology.get() != "switch")
        throw std::invalid_argument(std::string(name()) + ": fabric.switch.nvls needs topology: switch (one crossbar); "
                                                          "this fabric is " + p.topology.get());
    const Topology& topo = *m_topology;
    const std::uint32_t sw = topo.gpus();
    constexpr std::uint32_t none = ~std::uint32_t(0);
    m_uplink.assign(ports(), none);
    m_downlink.assign(ports(), none);
    for (std::uint32_t l = 0; l < topo.links().size(); ++l) {
        const TopoLink& link = topo.links()[l];
        if (link.dst == sw && link.src < ports()) m_uplink[link.src] = l;
        if (link.src == sw && link.dst < ports()) m_downlink[link.dst] = l;
    }
    for (std::uint32_t g = 0; g < ports(); ++g)
        if (m_uplink[g] == none || m_downlink[g] == none)
            throw std::logic_error(std::string(name()) + ": gpu" + std::to_string(g) + " has no link to the switch");
    m_reduce_resource = m_solver.add_resource(m_reduce_bytes_per_s);
    m_nvls_pool = std::make_unique<PacketPool>(1);  // copies point into the requester's data: no area of their own
    m_nvls_counters.enabled = true;
}

// One packet of `payload` bytes (an acknowledgement when `ack`) over one link into the router at
// its end, taken whole: serialisation, the link's latency and the router's (as zero_load_ps).
std::uint64_t FlowFabric::link_ps(std::uint32_t link, std::uint64_t payload, bool ack) const {
    const TopoLink& l = m_topology->links()[link];
    return ser_ps(double(payload + (ack ? ack_wire(l) : l.header)), l.bytes_per_s) + l.latency_ps +
           m_switch_latency_ps;
}

// A multimem flow's weights (m_uses) and windows (m_paced), and a packet's round trip.
void FlowFabric::nvls_uses(Flow& f, std::uint64_t& round_trip) {
    const MultimemExtension& m = *f.multimem;
    const double n = double(f.packets), data = double(f.bytes), payload = double(std::max<std::uint64_t>(f.bytes, 1));
    const std::uint64_t packet = std::min<std::uint64_t>(f.packet_bytes ? f.packet_bytes : f.bytes, f.bytes);
    const bool store = !f.read;
    // `bytes` on `link` per flow, in message class `cls` (0 requests, 1 responses), `wire` a packet.
    auto on = [&](std::uint32_t link, double bytes, std::uint32_t cls, std::uint64_t wire) {
        const TopoLink& l = m_topology->links()[link];
        const double credits = double(m_credit_bytes ? std::max<std::uint64_t>(1, (wire + m_flit - 1) / m_flit) : 1);
        add_use(link, bytes / payload);
        add_pace(m_credit_base + 2 * link + cls, n * credit_seconds(l, wire) / payload, credits);
    };
    auto port = [&](const std::vector<std::int64_t>& ports, std::uint32_t index, double bytes) {
        if (ports[index] >= 0) add_use(std::uint32_t(ports[index]), bytes / payload);
    };
    const std::uint32_t up = m_uplink[f.src], down = m_downlink[f.src];
    const std::uint32_t h = m_topology->links()[up].header, hd = m_topology->links()[down].header;
    const std::uint32_t ack_down = ack_wire(m_topology->links()[down]);
    const double port_ack = double(port_ack_wire());
    const std::uint64_t turnaround = [&] {
        const FlowExtension* ext = f.trans->get_extension<FlowExtension>();
        return ext ? ext->turnaround_ps : 0;
    }();
    std::uint64_t slowest_member = 0;  // the member leg of a packet's round trip, the slowest member's
    if (store) {
        on(up, data + n * h, 0, packet + h);
        on(down, n * ack_down, 1, ack_down);
        port(m_inject, 2 * f.src, data + n * m_header);
        port(m_eject, 2 * f.src + 1, n * port_ack);
    } else {
        on(up, n * h, 0, h);
        on(down, data + n * hd, 1, packet + hd);
        add_use(m_reduce_resource, double(m.member_count));  // k bytes of member data per byte of the sum
        port(m_inject, 2 * f.src, n * m_header);
        port(m_eject, 2 * f.src + 1, data + n * m_header);
    }
    for (std::uint32_t k = 0; k < m.member_count; ++k) {
        const std::uint32_t g = m.members[k], to = m_downlink[g], from = m_uplink[g];
        const std::uint32_t ht = m_topology->links()[to].header, hf = m_topology->links()[from].header;
        const std::uint32_t ack_up = ack_wire(m_topology->links()[from]);
        if (store) {
            on(to, data + n * ht, 0, packet + ht);
            on(from, n * ack_up, 1, ack_up);
            port(m_eject, 2 * g, data + n * m_header);
            port(m_inject, 2 * g + 1, n * port_ack);
            slowest_member = std::max(slowest_member, link_ps(to, packet, false) + turnaround + link_ps(from, 0, true));
        } else {
            on(to, n * ht, 0, ht);
            on(from, data + n * hf, 1, packet + hf);
            port(m_eject, 2 * g, n * m_header);
            port(m_inject, 2 * g + 1, data + n * m_header);
            slowest_member = std::max(slowest_member, link_ps(to, 0, false) + turnaround + link_ps(from, packet, false));
        }
    }
    round_trip = store ? link_ps(up, packet, false) + m_nvls_latency_ps + slowest_member + link_ps(down, 0, true)
                       : link_ps(up, 0, false) + slowest_member +
                             ser_ps(double(m.member_count) * double(packet), m_reduce_bytes_per_s) +
                             m_nvls_latency_ps + link_ps(down, packet, false);
    if (const FlowExtension* ext = f.trans->get_extension<FlowExtension>(); ext && ext->window > 0) {
        // The requester's window: packets in flight, rate / packet x round trip, at most `window`.
        add_pace(window_resource(f.src, ext->window), n * double(round_trip) * 1e-12 / payload, 1.0);
    }
}

// A multimem flow's last byte left the requester at `last_starts`: the unit sends its copies or
// reads to the members as their last packets arrive.
void FlowFabric::nvls_sent(Flow& f, std::uint64_t last_starts) {
    const MultimemExtension& m = *f.multimem;
    nvls_count_links(f);
    const std::uint32_t op = take_slot(m_nvls_ops, m_free_nvls);
    NvlsOp& o = m_nvls_ops[op];
    o.parent = f.trans;
    o.requester = f.src;
    o.pending = m.member_count;
    o.members = m.member_count;
    o.reduce = f.read;
    o.last = f.bytes - std::uint64_t(f.packets - 1) * f.packet_bytes;
    o.late = 0;
    const std::uint64_t now = now_ps();
    const std::uint64_t packet = f.packets > 1 ? f.packet_bytes : f.bytes;
    const std::uint64_t k = m.member_count;
    if (o.reduce) {
        m_nvls_counters.load_reduces += f.packets;
        m_nvls_counters.member_reads += k * f.packets;
        m_nvls_counters.reduced_bytes += k * f.bytes;
        // Per packet, as the packet fabric's engine sums one packet's k answers at a time.
        m_nvls_counters.reduce_busy_ps += std::uint64_t(f.packets - 1) * ser_ps(double(k * packet), m_reduce_bytes_per_s) +
                                          ser_ps(double(k * o.last), m_reduce_bytes_per_s);
    } else {
        m_nvls_counters.stores += f.packets;
        m_nvls_counters.copies += k * f.packets;
        m_nvls_counters.copy_bytes += k * f.bytes;
    }
    const std::uint32_t up = m_uplink[f.src];
    const std::uint64_t unit = o.reduce ? 0 : m_nvls_latency_ps;  // a store's copies wait the unit's latency
    const std::uint64_t leaves = last_starts + link_ps(up, o.reduce ? 0 : o.last, false) + unit;
    const std::uint64_t first_leaves = f.start_ps + link_ps(up, o.reduce ? 0 : packet, false) + unit;
    const std::uint64_t offset = m_map.local(f.trans->get_address());
    for (std::uint32_t i = 0; i < m.member_count; ++i) {
        const std::uint32_t g = m.members[i], to = m_downlink[g];
        Packet* c = m_nvls_pool->allocate();
        c->wg = op;
        c->set_command(o.reduce ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        c->set_address(m_map.global(g, offset));
        c->set_data_ptr(f.trans->get_data_ptr());
        c->set_data_length(f.trans->get_data_length());
        c->set_streaming_width(f.trans->get_data_length());
        c->set_byte_enable_ptr(nullptr);
        c->set_dmi_allowed(false);
        c->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        if (f.packets > 1) {  // the member's memory takes the bytes as they come in
            c->packets = f.packets;
            c->train.packets = f.packets;
            c->train.packet_bytes = f.packet_bytes;
            c->train.spacing_ps = 0;
            c->set_extension(&c->train);
            c->flow.window = 0;
            c->flow.packet_bytes = f.packet_bytes;
            c->flow.turnaround_ps = 0;
            c->flow.first_ps = first_leaves + link_ps(to, o.reduce ? 0 : packet, false);
            c->set_extension(&c->flow);
            c->flow_attached = true;
        }
        // The source port `ports()` marks the unit's own accesses: their answers come back to it.
        // A delivery due before now (a load-reduce's reads: the fluid spent the flow's time on the
        // data before they go out) goes now, and the answer to the requester makes up for it.
        const std::uint64_t due = leaves + link_ps(to, o.reduce ? 0 : o.last, false);
        o.late = std::max(o.late, due < now ? now - due : 0);
        m_actions.push(std::max(due, now), {ActionKind::Deliver, g, ports(), c});
    }
}

// Member `member` answered the unit's copy or read `child` at `at`: its last packet's answer
// crosses the member's link to the unit.
void FlowFabric::nvls_answered(std::uint32_t member, tlm::tlm_generic_payload* child, std::uint64_t at) {
    auto* c = static_cast<Packet*>(child);
    const std::uint32_t op = c->wg;
    const bool ok = c->is_response_ok();
    c->release();
    if (!ok) {
        errors().report(ErrorKind::ModelError, std::string(name()) + ": a member GPU refused the NVLS unit's access");
        return;
    }
    const NvlsOp& o = m_nvls_ops[op];
    m_actions.push(at + link_ps(m_uplink[member], o.reduce ? o.last : 0, !o.reduce), {ActionKind::NvlsIn, op, 0, nullptr});
}

// A member's answer is in the unit; after the last one, the requester gets its acknowledgement
// (a store) or, once the last packet is summed and the unit's latency has passed, its sum.
void FlowFabric::nvls_in(std::uint32_t op) {
    NvlsOp& o = m_nvls_ops[op];
    if (--o.pending) return;
    std::uint64_t at = now_ps();
    if (o.reduce) at += ser_ps(double(o.members) * double(o.last), m_reduce_bytes_per_s) + m_nvls_latency_ps;
    at += link_ps(m_downlink[o.requester], o.reduce ? o.last : 0, !o.reduce);
    at = std::max(now_ps(), at - std::min(at, o.late));
    o.parent->set_response_status(tlm::TLM_OK_RESPONSE);
    m_actions.push(at, {ActionKind::Return, o.requester, 0, o.parent});
    m_free_nvls.push_back(op);
}

// Per-link counts of a multimem flow, exactly the packet fabric's (nvls_switch.cpp): its P packets
// on the requester's links and on every member's, data where the data goes, headers or
// acknowledgements the other way.
void FlowFabric::nvls_count_links(const Flow& f) {
    const MultimemExtension& m = *f.multimem;
    const bool store = !f.read;
    auto count = [&](std::uint32_t link, bool data, bool ack) {
        const TopoLink& l = m_topology->links()[link];
        LinkStats& s = m_links[link].s;
        s.packets += f.packets;
        if (data) {
            s.bytes += f.bytes;
            s.wire_bytes += f.bytes + std::uint64_t(f.packets) * l.header;
        } else {
            s.wire_bytes += std::uint64_t(f.packets) * (ack ? ack_wire(l) : l.header);
        }
    };
    count(m_uplink[f.src], store, false);         // the store's data, or the read requests
    count(m_downlink[f.src], !store, store);      // the sum, or the acknowledgements
    for (std::uint32_t k = 0; k < m.member_count; ++k) {
        count(m_downlink[m.members[k]], store, false);  // the copies, or the reads
        count(m_uplink[m.members[k]], !store, store);   // the answers, or the acknowledgements
    }
}

}  // namespace eidola
