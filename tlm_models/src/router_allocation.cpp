// Routing and allocation in the packet fabric's routers.
//
// Routing is table look-up, one hop ahead: when a packet is granted a link, the router also picks
// its output at the next router, so the next router's virtual channel can be chosen for it.
//
// Virtual-channel allocation: with fabric.switch.vcs 0 (the default) every input has, per class
// and dateline half, a channel per output of its router, and a packet joins its next output's:
// virtual output queues, so a packet never waits behind one bound elsewhere. With vcs N it joins,
// in its class (and dateline half), a channel whose last packet goes to the same next output;
// else an idle channel; else the one with most room. With one channel an input is a FIFO.
//
// Switch allocation is separable: every channel's head asks for its output; each output grants
// round robin over the heads asking (in the order they asked), passing over a head whose input
// has no free crossbar path (input speedup 1: one path per lane of its link, each a lane's rate)
// or whose next buffer has no credit. switch.arbitration says what a turn is: up to the largest
// packet's bytes (`bytes`, the default: deficit round robin), a packet (`packets`), or responses
// before requests (`responses_first`). Why not a packet: a link loaded to capacity by writes one
// way and their acknowledgements the other gives acknowledgements, a packet a turn, exactly the
// rate at which they come; a backlog of them, once formed, never drains, the windows fill, and the
// kernel time then hangs on whether the GPUs started in the same picosecond (a shift on
// switch-8gpu: 4.20 us in step, 5.42 us with one GPU 1 ns late; experiments/skew/README.md). Why
// not responses first: a read's or an NVLS load's responses carry the data, and taking them first
// starves the writes beside them (a 16 MiB NVLS all-reduce: +3.4% against round robin; bytes +0.4%).
#include "packet_fabric_parts.h"

namespace eidola {

std::uint32_t PacketFabric::route(std::uint32_t node, const Packet& p, bool commit) {
    if (node == p.dst_gpu) return m_node_first_output[node] + p.cls;  // eject to this GPU (or the NVLS unit)
    // To the switch's NVLS unit (topology switch): a GPU's router has one link, to the switch.
    if (p.dst_gpu >= m_topology->gpus()) return m_link_output[m_topology->out_links(node)[0]];
    std::uint32_t n;
    const std::uint32_t* candidates = m_topology->next(node, p.dst_gpu, n);
    if (n == 0) {
        errors().report(ErrorKind::ModelError, std::string(name()) + ": no route from " +
                                                   m_topology->node_name(node) + " to gpu" + std::to_string(p.dst_gpu));
        return m_node_first_output[node] + p.cls;
    }
    std::uint32_t pick = candidates[0];
    if (m_spread && n > 1) pick = candidates[(commit ? m_spread_counter[node]++ : m_spread_counter[node]) % n];
    return m_link_output[pick];
}

void PacketFabric::arrive(std::uint32_t id, std::uint32_t input, std::uint32_t vc) {
    Packet& p = m_packets[id];
    Input& in = m_inputs[input];
    Queue& q = in.vcs[vc];
    q.push(id);
    in.occupancy += p.units;
    LinkCounters& lc = m_link_counters[std::size_t(in.link)];
    lc.s.peak_occupancy = std::max(lc.s.peak_occupancy, in.occupancy);
    p.out = p.next_out;
    p.ready_ps = now_ps() + m_switch_latency_ps;
    if (q.size == 1) q.head_since = now_ps();
    // A GPU takes a packet whole: without an ejection channel to stream it, it waits for its tail
    // (a train, for its first packet: the rest follow at its spacing).
    // The switch's NVLS unit, too, takes a packet whole (it replicates or answers it as a unit).
    if (m_outputs[p.out].link < 0 && (!m_eject_link || m_outputs[p.out].node >= ports()))
        p.ready_ps = std::max(p.ready_ps, p.train > 1 ? p.first_in_ps : p.tail_ps);
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
    else if (m_trains) arbitrate_link<true>(output);
    else arbitrate_link<false>(output);
}

// `each`: the credits of one of its packets, if it is a train. A train may start with room for its
// first packet only, on a channel whose credits on their way back will have covered the rest by
// `credits_at` (0: it has room now): its packets would go one by one as credits come.
std::int64_t PacketFabric::allocate_vc(std::uint32_t downstream, std::uint32_t cls, std::uint32_t bit,
                                       std::uint32_t next_out, std::uint32_t& units, std::uint64_t& retry_at,
                                       std::uint32_t each, std::uint64_t& credits_at, bool& in_flight,
                                       bool& backed_up) {
    const Input& in = m_inputs[downstream];
    if (units > m_capacity) {  // a packet uses one lane, and that lane's buffer
        if (m_flow == FlowControl::Wormhole) {
            units = m_capacity;  // a worm needs room for part of itself only
        } else {
            if (!m_reported_buffer)
                errors().report(ErrorKind::ModelError,
                                std::string(name()) + ": fabric.switch.buffer holds " + std::to_string(m_capacity) +
                                    " flits but a packet needs " + std::to_string(units) +
                                    "; give a larger buffer or switch.flow_control: wormhole");
            m_reported_buffer = true;
            return -1;
        }
    }
    // The channels it may join: its next output's alone (virtual output queues), or all of its
    // class and dateline half.
    std::uint32_t first = cls * in.per_class + bit * in.half, count = in.half;
    if (in.voq) {
        first += next_out - m_node_first_output[in.node];
        count = 1;
    }
    const std::uint64_t now = now_ps();
    std::int64_t idle = -1, roomiest = -1, coming = -1;
    std::uint32_t most_room = 0;
    credits_at = 0;
    std::uint64_t soonest = kNever;
    for (std::uint32_t k = 0; k < count; ++k) {
        const std::uint32_t v = first + k;
        Queue& q = m_inputs[downstream].vcs[v];
        const std::uint64_t due = q.collect(now);
        const std::uint32_t room = q.reserved >= in.capacity ? 0 : in.capacity - q.reserved;
        if (room < units) {
            // No packet waits in it to leave: it lacks room only because its credits are still on
            // the wire, a buffer shorter than the credit round trip (congestion further on would
            // hold packets there, ready and waiting).
            if (q.size == 0 || m_packets[q.front()].ready_ps > now) in_flight = true;
            else backed_up = true;  // packets ready to leave it fill it: back-pressure
            if (each < units && room >= each) {
                const std::uint64_t at = q.returned_by(units - room);
                if (at < soonest) {
                    soonest = at;
                    coming = v;
                }
            }
            retry_at = std::min(retry_at, due);
            continue;
        }
        if (q.reserved == 0) {
            if (idle < 0) idle = v;
        } else if (q.tail_out == next_out) {
            return v;
        } else if (room > most_room) {
            most_room = room;
            roomiest = v;
        }
    }
    if (idle >= 0) return idle;
    if (roomiest >= 0 || coming < 0) return roomiest;
    credits_at = soonest;
    return coming;
}

// Input speedup 1: the head of `in` may cross only while one of its crossbar paths is free. A packet of no
// bytes on the wire (a read request or an acknowledgement under link.header 0B) crosses in no time: it neither
// waits for a path nor takes one, as it takes no time on the link. Why: the outputs grant each when its own
// lane frees, so a path that a stream of read data takes back to back is free only in the picosecond it is
// taken again, and a zero-byte request waiting for it got it only by the order of same-time actions. GPU 0's
// read requests to GPU 7 on dgx-a100 (one lane, 64-byte payloads) waited out a whole 1 MiB read that way once
// a 1-byte write had shifted its acknowledgements by 120 ps: +52% (scripts/compare_fabrics.py --seed 6 --case
// 102; test_packet_fabric.py).
bool PacketFabric::claim_path(const Input& in, std::uint32_t wire, std::uint64_t& retry_at) const {
    if (!in.speedup_one || wire == 0 || in.busy_until <= now_ps()) return true;
    retry_at = std::min(retry_at, in.busy_until);
    return false;
}

bool PacketFabric::crosses_at_own_rate(const Input& in, const TopoLink& link) {
    return in.bytes_per_s > 0 && in.bytes_per_s != link.bytes_per_s;
}

// The bytes packet `p` crosses input `in`'s crossbar path in, bound for `link` where it is `wire` bytes: the size
// it came in with where the two links' rates differ (a NIC takes in a network packet and sends a PCIe one).
std::uint32_t PacketFabric::crossing_bytes(const Input& in, const Packet& p, const TopoLink& link,
                                           std::uint32_t wire) const {
    if (!crosses_at_own_rate(in, link)) return wire;
    const TopoLink& came = m_topology->links()[std::size_t(in.link)];
    return wire_bytes(p, came.header, came.framed);
}

// kTrains: a train has been injected. Without, the train-only steps compile away: a per-packet
// run pays nothing for them.
template <bool kTrains>
void PacketFabric::arbitrate_link(std::uint32_t output) {
    Output& o = m_outputs[output];
    const std::uint32_t link_index = std::uint32_t(o.link);
    const TopoLink& link = m_topology->links()[link_index];
    const std::uint32_t downstream = m_link_input[link_index];
    const std::uint64_t now = now_ps();
    while (!o.requests.empty()) {
        auto lane = std::min_element(o.lane_free.begin(), o.lane_free.end());
        std::uint64_t start = now;
        // A lane sending a request train takes an acknowledgement between two of its packets, as
        // it would between packets sent one by one: a train must not hold back the responses
        // that free its own sender's outstanding slots.
        LaneTrain* inside = nullptr;
        if (*lane > now) {
            LaneTrain& t = o.lane_train[std::size_t(lane - o.lane_free.begin())];
            if (!kTrains || t.packet_ser == 0) {  // the usual case: a packet, not a train, holds the lane
                schedule_arbitration(output, *lane);
                return;
            }
            if (t.end == *lane) {
                start = now <= t.start ? t.start : t.start + (now - t.start + t.packet_ser - 1) / t.packet_ser * t.packet_ser;
                if (start < t.end) inside = &t;
            }
            if (!inside || !acknowledgement_waiting(o)) {
                schedule_arbitration(output, *lane);
                return;
            }
        }
        std::uint64_t retry_at = kNever;
        auto grant = o.requests.end();
        std::int64_t next_vc = -1;
        std::uint32_t units = 0, wire = 0, bit = 0, each = 0;
        std::uint64_t credits_at = 0;  // a train started before all its credits are back: when they are
        bool lacked_credits = false;   // a head could go but for credits still on their way back
        bool backed_up = false;        // a head could go but for a next buffer full of packets waiting to leave
        // Whether the head of request `it` can go now (its input's path free, room downstream); sets
        // the packet's wire bytes, credits and next channel as it goes.
        auto can_go = [&](auto it) {
            const Input& in = m_inputs[it->first];
            const Packet& p = m_packets[in.vcs[it->second].front()];
            wire = wire_bytes(p, link.header, link.framed);
            if (!claim_path(in, crossing_bytes(in, p, link, wire), retry_at)) return false;
            if (kTrains && inside && !p.ack) return false;
            bit = m_dateline == 2 && (link.wrap || (p.crossed && link.dim == p.dim)) ? 1 : 0;
            units = train_credits(p, wire);
            each = kTrains && p.train > 1 ? credits_needed(p.packet_wire(wire)) : units;
            next_vc = allocate_vc(downstream, p.cls, bit, route(link.dst, p, false), units, retry_at, each,
                                  credits_at, lacked_credits, backed_up);
            return next_vc >= 0;
        };
        // switch.arbitration bytes: the channel whose turn it is goes on while its turn has bytes left.
        bool same_turn = false;
        if (m_arbitration == Arbitration::Bytes && o.turn_left > 0) {
            for (auto it = o.requests.begin(); it != o.requests.end(); ++it) {
                if (*it != o.turn) continue;
                if (can_go(it) && wire <= o.turn_left) {
                    grant = it;
                    same_turn = true;
                }
                break;
            }
        }
        // switch.arbitration responses_first: a first pass over the responses' heads alone.
        for (int pass = m_arbitration == Arbitration::ResponsesFirst ? 0 : 1; pass < 2 && grant == o.requests.end(); ++pass)
            for (auto it = o.requests.begin(); it != o.requests.end(); ++it) {
                if (pass == 0 && m_packets[m_inputs[it->first].vcs[it->second].front()].cls == 0) continue;
                if (can_go(it)) {
                    grant = it;
                    break;
                }
            }
        if (grant == o.requests.end()) {  // every head waits for its input, for credits or for room downstream
            if (inside) retry_at = std::min(retry_at, *lane);
            else
                set_stall(o, link_index,
                          lacked_credits ? Stall::Credits : backed_up ? Stall::BackPressure : Stall::None);
            if (retry_at != kNever) schedule_arbitration(output, retry_at);
            return;
        }
        set_stall(o, link_index, Stall::None);
        if (m_arbitration == Arbitration::Bytes) {
            // A turn is the largest packet this output has sent: equal bytes per turn, so a channel of
            // small packets (acknowledgements) takes several of them where a data channel takes one.
            o.quantum = std::max(o.quantum, wire);
            if (same_turn) {
                o.turn_left -= wire;
            } else {
                o.turn = *grant;
                o.turn_left = o.quantum - wire;
            }
        }
        const auto [input, vc] = *grant;
        // Mostly the oldest request wins: pop_front is far cheaper than deque::erase.
        if (grant == o.requests.begin()) o.requests.pop_front();
        else o.requests.erase(grant);
        Input& in = m_inputs[input];
        const std::uint32_t id = in.vcs[vc].front();
        const std::uint32_t next_out = route(link.dst, m_packets[id], true);
        // rail: a NIC takes a message's processing time on its link to the rail switch, before the
        // message's first packet (serialised: the link sends nothing else meanwhile).
        const std::uint64_t overhead = link.nic_out && m_packets[id].starts_message ? m_message_ps : 0;
        start += overhead;
        Hop h = hop(m_packets[id], start, wire, link.bytes_per_s, link.latency_ps);
        if (kTrains && credits_at > h.end - h.packet_ser) {  // its last packet waits for its credits
            h.end = credits_at + h.packet_ser;
            h.spacing = std::max(h.spacing, (h.end - start) / m_packets[id].train);
        }
        // The packet crosses the crossbar at its input's rate (a faster output than input idles
        // between flits; a slower one is fed from its one-packet staging buffer), in the size it
        // came in with: a NIC takes in a network packet and sends a PCIe one (rail), and charging
        // the output's headers at the input's rate would cap the NIC below both links.
        Hop x = h;
        const std::uint32_t crossing = crossing_bytes(in, m_packets[id], link, wire);
        if (crosses_at_own_rate(in, link)) x = hop(m_packets[id], start, crossing, in.bytes_per_s, 0, false);
        if (in.speedup_one && crossing > 0) in.take_path(x.end);
        const std::uint32_t lane_index = std::uint32_t(lane - o.lane_free.begin());
        if (!kTrains) {
            *lane = h.end;
        } else if (inside) {  // the rest of the train moves back by the acknowledgement
            *lane += h.ser;
            inside->start += h.ser;
            inside->end += h.ser;
        } else {
            *lane = h.end;
            LaneTrain& lane_train = o.lane_train[lane_index];
            if (m_packets[id].train > 1 && m_packets[id].cls == 0) lane_train = LaneTrain{start, h.end, h.packet_ser};
            else if (lane_train.packet_ser) lane_train = LaneTrain{};
        }
        pop_head(input, vc, x.end - x.last_flit, h.spacing);  // may inject a blocked packet: m_packets may move
        Packet& p = m_packets[id];
        p.next_out = next_out;
        p.dim = link.dim;
        p.crossed = std::uint8_t(bit);
        p.units = units;
        p.tail_ps = h.end + link.latency_ps + m_switch_latency_ps;
        if (kTrains && p.train > 1) {
            p.spacing_ps = std::max(p.spacing_ps, h.spacing);
            p.first_in_ps = start + h.packet_ser + link.latency_ps + m_switch_latency_ps;
        }
        Queue& next = m_inputs[downstream].vcs[std::size_t(next_vc)];
        next.reserved += units;
        next.tail_out = p.next_out;
        m_actions.push(h.head_arrives, {ActionKind::Arrive, id, (downstream << 8) | std::uint32_t(next_vc)});
        m_last_progress_ps = now;
        count_link(link_index, lane_index, p, wire, h.ser + overhead);
    }
}

// A free lane of output `o` idles from now for `stall` (credits still on their way back; a next buffer full of
// packets waiting to leave it; None: it does not idle): the stall it was in, if another, is counted on link `link`.
// Credits come first where a head lacks them: a buffer shorter than the round trip is what the user can change.
void PacketFabric::set_stall(Output& o, std::uint32_t link, Stall stall) {
    LinkStats& s = m_link_counters[link].s;
    const std::uint64_t now = now_ps();
    if (stall != Stall::Credits && o.credit_stall_since != kNever) {
        s.credit_stall_ps += now - o.credit_stall_since;
        o.credit_stall_since = kNever;
    }
    if (stall != Stall::BackPressure && o.backpressure_since != kNever) {
        s.backpressure_ps += now - o.backpressure_since;
        o.backpressure_since = kNever;
    }
    if (stall == Stall::Credits && o.credit_stall_since == kNever) o.credit_stall_since = now;
    if (stall == Stall::BackPressure && o.backpressure_since == kNever) o.backpressure_since = now;
}

bool PacketFabric::acknowledgement_waiting(const Output& o) const {
    for (const auto& [input, vc] : o.requests)
        if (m_packets[m_inputs[input].vcs[vc].front()].ack) return true;
    return false;
}

void PacketFabric::arbitrate_ejection(std::uint32_t output) {
    Output& o = m_outputs[output];
    if (o.busy || o.requests.empty()) return;
    const std::uint64_t now = now_ps();
    if (o.node >= ports()) {  // the switch's NVLS unit takes every packet in at once (its own queues)
        while (!o.requests.empty()) {
            const auto [input, vc] = o.requests.front();
            o.requests.pop_front();
            deliver(output, pop_head(input, vc, now));
        }
        return;
    }
    if (!m_eject_link) {
        const auto [input, vc] = o.requests.front();
        o.requests.pop_front();
        const Packet& p = m_packets[m_inputs[input].vcs[vc].front()];  // a train leaves as its packets come in
        const std::uint64_t spacing = p.train > 1 ? p.spacing_ps : 0;
        deliver(output, pop_head(input, vc, now + (p.train - 1) * spacing, spacing));
        return;
    }
    // One flit per cycle into the GPU: packets stream in one after another and are handed over
    // whole when their tail is in.
    if (o.lane_free[0] > now) {
        schedule_arbitration(output, o.lane_free[0]);
        return;
    }
    std::uint64_t retry_at = kNever;
    for (auto it = o.requests.begin(); it != o.requests.end(); ++it) {
        Input& in = m_inputs[it->first];
        const auto [input, vc] = *it;
        const Packet& p = m_packets[in.vcs[vc].front()];
        const std::uint32_t wire = wire_bytes(p, m_eject_header);
        if (!claim_path(in, wire, retry_at)) continue;
        o.requests.erase(it);
        const Hop h = hop(p, now, wire, m_eject_bytes_per_s, 0, false);
        if (in.speedup_one && wire > 0) in.take_path(h.end);
        o.lane_free[0] = h.end;
        o.busy = true;
        const std::uint32_t id = pop_head(input, vc, h.end - h.last_flit, h.spacing);
        std::uint64_t handed = h.end;  // a train is handed over when its first packet is in
        if (m_packets[id].train > 1) {
            m_packets[id].spacing_ps = std::max(m_packets[id].spacing_ps, h.spacing);
            handed = std::min(h.end, now + h.packet_ser);
        }
        if (handed > now) m_actions.push(handed, {ActionKind::Deliver, output, id});
        else deliver(output, id);
        return;
    }
    if (retry_at != kNever) schedule_arbitration(output, retry_at);
}

}  // namespace eidola
