// Flow control of the packet fabric: how a packet's flits cross a hop, and the credits that
// stop a sender from overrunning a buffer.
//
// The fabric moves packets, not flits, but times them as flits would move (the event count per
// packet-hop stays that of a packet model). A hop started at `start` on a link of bandwidth b:
//   - store_and_forward: the next router has the head when the whole packet is in, start + L/b + lat;
//   - cut_through and wormhole: it has the head after one flit, start + f/b + lat, and may send it
//     on after the router latency; the output then stays busy until the tail has followed,
//     end = max(start + L/b, tail in + router latency + last flit / b).
// So a cut-through packet pays its serialisation once and each hop its head flit, wire and router:
// zero-load latency over H hops = L/b + H (lat + router) + (H - 1) f/b.
//
// A train (train_extension.h) of n packets crosses a hop as its packets back to back would: it
// pays n headers, its first packet leads (under store-and-forward it moves on once that packet is
// in), and it needs the credits of all n packets; one longer than the buffer takes those of as
// many as fit and is paced at that many packets per credit round trip. What a train cannot do is
// let another flow's packet in between its own: contention is resolved per train.
//
// Credits: a sender may start a packet only if the next buffer has room for all of it
// (cut_through, store_and_forward) or for one flit (wormhole, which may use buffers smaller than a
// packet). A packet's credits come back when its tail leaves that buffer, one link latency later.
// With a buffer of C credits a link carries at most C per credit round trip
// (L/b + 2 lat + router latency for a packet at zero load).
#include "packet_fabric_parts.h"

namespace eidola {

PacketFabric::Hop PacketFabric::hop(const Packet& p, std::uint64_t start, std::uint32_t wire, double bytes_per_s,
                                    std::uint64_t latency_ps, bool into_buffer) const {
    Hop h;
    const std::uint32_t flits = std::max<std::uint32_t>(1, (wire + m_flit - 1) / m_flit);
    h.ser = ser_ps(wire, bytes_per_s);
    h.last_flit = ser_ps(double(wire) - double(flits - 1) * m_flit, bytes_per_s);
    std::uint64_t stream = h.ser;
    if (p.train > 1) {
        // A train is its packets back to back. Its first packet leads as a packet would (under
        // store-and-forward it moves on once that packet is in, not the whole train), and a
        // train longer than the next buffer is paced by the credits its packets get back.
        const std::uint32_t packet_wire = p.packet_wire(wire);
        h.packet_ser = ser_ps(packet_wire, bytes_per_s);
        const std::uint32_t each = credits_needed(packet_wire);
        if (into_buffer && m_flow != FlowControl::Wormhole && std::uint64_t(each) * p.train > m_capacity &&
            each <= m_capacity) {
            const double round_trip = double(h.packet_ser + 2 * latency_ps + m_switch_latency_ps);
            stream = std::max(stream, round_ps(double(p.train) / (m_capacity / each) * round_trip));
        }
        h.spacing = std::max<std::uint64_t>(h.packet_ser, stream / p.train);
        if (m_flow == FlowControl::StoreAndForward) {
            h.end = std::max(start + stream, p.tail_ps + h.packet_ser);
            h.head_arrives = start + h.packet_ser + latency_ps;
            return h;
        }
    }
    if (m_flow == FlowControl::StoreAndForward) {
        h.end = start + h.ser;
        h.head_arrives = h.end + latency_ps;
        return h;
    }
    if (m_flow == FlowControl::Wormhole && m_credit_bytes && flits > m_capacity) {
        // A worm longer than the buffer advances only as credits return: C flits per flit round
        // trip (one flit, the wire both ways and the next router), at best.
        const double round_trip = double(ser_ps(m_flit, bytes_per_s) + 2 * latency_ps + m_switch_latency_ps);
        stream = std::max(stream, round_ps(double(flits) / m_capacity * round_trip));
    }
    h.end = std::max(start + stream, p.tail_ps + h.last_flit);
    h.head_arrives = start + ser_ps(std::min(wire, m_flit), bytes_per_s) + latency_ps;
    return h;
}

// Takes a packet off the head of an input queue once its tail leaves at `tail_leaves_ps`: its
// credits go back to the sender one link latency later. A train's packets leave `spacing_ps`
// apart before its tail, and each one's credits go back as that packet's would.
std::uint32_t PacketFabric::pop_head(std::uint32_t input, std::uint32_t vc, std::uint64_t tail_leaves_ps,
                                     std::uint64_t spacing_ps) {
    Input& in = m_inputs[input];
    Queue& q = in.vcs[vc];
    const std::uint32_t id = q.pop();
    if (in.link < 0 && vc < in.turns.size()) unstage(in.turns[vc], q);  // the next workgroup's turn
    const Packet& p = m_packets[id];
    in.occupancy -= p.units;
    const std::uint64_t now = now_ps();
    if (in.link >= 0 && q.size > 0) {
        // Head-of-line blocking: the packet behind this one, bound for another output, could not
        // ask for its output from when it was ready (and this one was the head) until now.
        const Packet& next = m_packets[q.front()];
        const std::uint64_t since = std::max(next.ready_ps, q.head_since);
        if (next.out != p.out && now > since) q.hol_blocked_ps += now - since;
        q.head_since = now;
    }
    // The new head asks for its output first: a retried injection below may refill an empty queue,
    // and then it is inject() that announces the head (once).
    if (q.size > 0)
        m_actions.push(std::max(now, m_packets[q.front()].ready_ps), {ActionKind::HeadReady, input, vc});
    if (in.link >= 0) {
        const std::uint64_t tail_leaves = std::max(now, tail_leaves_ps);
        std::uint64_t back = tail_leaves + in.credit_latency_ps;  // when the first credits are back
        if (p.train > 1 && spacing_ps) {
            const std::uint64_t n = p.train;
            for (std::uint64_t k = 0; k < n; ++k) {
                const std::uint64_t leaves = tail_leaves - std::min((n - 1 - k) * spacing_ps, tail_leaves - now);
                q.give_back(leaves + in.credit_latency_ps, std::uint32_t(p.units * (k + 1) / n - p.units * k / n));
                if (k == 0) back = leaves + in.credit_latency_ps;
            }
        } else {  // a packet: its tail, all at once (apart: the loop's divisions cost 4% of a torus run)
            q.give_back(back, p.units);
        }
        const std::uint32_t upstream = m_link_output[std::size_t(in.link)];
        if (!m_outputs[upstream].requests.empty()) schedule_arbitration(upstream, back);
    } else {
        --q.reserved;
        in.class_held[vc / in.per_class] -= p.units;
        retry_blocked_injection(in.node, std::uint8_t(vc / in.per_class));
    }
    return id;
}

// The b_transport (LT) path: the same hop timing with nothing else in the fabric. As on the AT
// path, a response (`response`) pays no NIC message processing, and a write's response (no data)
// is link.ack bytes where that is set.
std::uint64_t PacketFabric::zero_load_ps(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, bool response) const {
    Packet p;  // p.tail_ps: when its tail may leave the current router
    p.payload = std::uint32_t(bytes);
    p.ack = response && bytes == 0;  // a write's response: link.ack bytes where that is set
    std::uint64_t head = 0;
    std::uint32_t node = from, n;
    while (node != to) {
        const TopoLink& l = m_topology->links()[m_topology->next(node, to, n)[0]];
        // A framed link: the NIC's headers per MTU of the transaction (a message of its own here).
        const std::uint64_t frames = l.framed ? std::max<std::uint64_t>(1, (bytes + m_mtu - 1) / m_mtu) : 1;
        const std::uint64_t overhead = l.nic_out && !response ? m_message_ps : 0;
        p.frames = std::uint32_t(frames);
        const Hop h = hop(p, head + overhead, wire_bytes(p, l.header, l.framed), l.bytes_per_s, l.latency_ps);
        head = h.head_arrives + m_switch_latency_ps;
        p.tail_ps = h.end + l.latency_ps + m_switch_latency_ps;
        node = l.dst;
    }
    return std::max(head, p.tail_ps);
}

}  // namespace eidola
