// The packet fabric's inner parts (packets, input virtual channels, outputs), shared by its three
// source files and by nothing else: they are implementation, not interface.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <stdexcept>

#include "eidola/packet_fabric.h"
#include "eidola/round_ps.h"
#include "eidola/train_extension.h"

namespace eidola {

inline constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
inline constexpr std::uint32_t kNoOutput = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::size_t kHistBuckets = 8 * 64 + 1;  // eighth-octave buckets of a wait in ps
// Most channels per class and dateline half: an action names a channel in 8 bits (2 classes x 2
// dateline halves x 64).
inline constexpr std::uint32_t kMaxVcs = 64;


/// A packet in the fabric: one TLM transaction's request or response.
struct PacketFabric::Packet {
    tlm::tlm_generic_payload* trans = nullptr;
    std::uint32_t src_gpu = 0, dst_gpu = 0;  // where it came from and where it goes
    std::uint32_t payload = 0;               // data bytes it carries
    std::uint32_t out = 0;                   // chosen output at its current router
    std::uint32_t next_out = kNoOutput;      // its output at the next router (lookahead routing)
    std::uint32_t units = 0;                 // credits it holds in the buffer it sits in
    std::uint32_t train = 1;                 // packets it stands for (a train, see train_extension.h)
    std::uint8_t cls = 0;                    // 0 request, 1 response
    std::int8_t dim = -1;                    // dimension of its last hop (dateline VCs)
    std::uint8_t crossed = 0;                // it crossed the dateline in that dimension
    bool ack = false;                        // a write's response
    bool starts_message = false;             // a request holding its message's first byte (rail: NIC overhead)
    std::uint32_t frames = 0;                // rail: network packets (NIC headers) it carries on framed links
    std::uint64_t ready_ps = 0;              // its head may leave its current router
    std::uint64_t tail_ps = 0;               // its tail may leave its current router (in, plus router latency)
    std::uint64_t injected_ps = 0;
    std::uint64_t spacing_ps = 0;            // a train: time between its packets (its slowest hop so far)
    std::uint64_t first_in_ps = 0;           // a train: its first packet is whole in the current router
    std::uint32_t next_staged = kNoOutput;   // injection in turns: the next packet of its workgroup waiting there

    /// The wire bytes of one of its packets (the largest), if its `wire` bytes are all of theirs.
    std::uint32_t packet_wire(std::uint32_t wire) const { return (wire + train - 1) / train; }
};

/// One virtual channel of an input buffer: a ring of packet indices, and the credits the sender
/// has used on it. Credits come back one link latency after a packet's tail leaves, so they are
/// kept in a ring of (time, credits) until that time has passed; there is no event per credit.
struct PacketFabric::Queue {
    std::vector<std::uint32_t> slots;
    std::uint32_t head = 0, size = 0;
    std::uint32_t reserved = 0;          // credits in use: held here, on the link towards it, or on the way back
    std::uint64_t hol_blocked_ps = 0;    // a packet ready behind a head bound elsewhere, this long in all
    std::uint32_t tail_out = kNoOutput;  // next output of the last packet allocated to it
    std::uint64_t head_since = 0;        // when its head became its head (head-of-line statistics)
    std::vector<std::pair<std::uint64_t, std::uint32_t>> returning;  // credits on their way back, in time order
    std::uint32_t ret_head = 0, ret_size = 0;

    std::uint32_t front() const { return slots[head]; }
    void push(std::uint32_t p) {
        if (size == slots.size()) grow();
        slots[(head + size++) % slots.size()] = p;
    }
    void grow() {  // link queues are bounded by their credits, so only injection queues grow in practice
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
        return p;
    }
    /// Credits that come back at `at` (kept in time order: a later packet's credits never
    /// overtake an earlier one's, which delays them by at most a serialisation).
    void give_back(std::uint64_t at, std::uint32_t credits) {
        if (ret_size == returning.size()) {
            std::vector<std::pair<std::uint64_t, std::uint32_t>> bigger(std::max<std::size_t>(4, 2 * returning.size()));
            for (std::uint32_t i = 0; i < ret_size; ++i) bigger[i] = returning[(ret_head + i) % returning.size()];
            returning.swap(bigger);
            ret_head = 0;
        }
        if (ret_size) at = std::max(at, returning[(ret_head + ret_size - 1) % returning.size()].first);
        returning[(ret_head + ret_size++) % returning.size()] = {at, credits};
    }
    /// When `credits` more will have come back (kNever: not that many are on their way).
    std::uint64_t returned_by(std::uint32_t credits) const {
        std::uint32_t got = 0;
        for (std::uint32_t i = 0; i < ret_size; ++i) {
            const auto& r = returning[(ret_head + i) % returning.size()];
            got += r.second;
            if (got >= credits) return r.first;
        }
        return kNever;
    }
    /// Takes back the credits due by `now`; returns when the next ones are due (kNever: none).
    std::uint64_t collect(std::uint64_t now) {
        while (ret_size) {
            const auto& r = returning[ret_head];
            if (r.first > now) return r.first;
            reserved -= r.second;
            ret_head = std::uint32_t((ret_head + 1) % returning.size());
            --ret_size;
        }
        return kNever;
    }
};

/// A GPU port's injection queue that sends its workgroups' packets in turn
/// (switch.injection_order: round_robin): the queue itself holds the head, which asks for the
/// output; the rest wait here, per workgroup, and the head's successor is the next workgroup's in
/// turn. Linked through Packet::next_staged: no allocation per packet.
struct InjectionTurns {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ends;  // per workgroup: its first and last waiting packet
    std::deque<std::uint32_t> order;                            // workgroups with packets waiting, in turn
};

/// A router input: the injection port or the receiving end of a link. A link input has
/// `per_class` queues per class: `half` per dateline half, either one per output of its router (a
/// packet joins its next output's: virtual output queues) or `fabric.switch.vcs` allocated by
/// next output. The injection port has, per class, one queue per output (voq) or a single one (fifo).
///
/// An input of an N-lane link has N crossbar paths (a packet takes the first free one, at one lane's
/// rate) and N lanes' buffers: each channel has N x `fabric.switch.buffer` credits.
struct PacketFabric::Input {
    std::uint32_t node;
    std::int64_t link;  // -1: injection from the node's GPU
    std::vector<Queue> vcs;
    std::uint32_t per_class;  // queues per traffic class
    std::uint32_t half = 1;   // queues per class and dateline half
    bool voq = false;         // a queue per output of the router: a packet joins its next output's
    std::uint32_t capacity = 0;            // credits per channel: a lane's buffer x lanes
    std::uint32_t occupancy = 0;           // credits held (at injection: its units, as class_held)
    std::uint32_t class_held[2] = {0, 0};  // injection: units (packets, or flits) held per class (the queues share the space)
    std::uint64_t busy_until = 0;          // input speedup 1: the earliest of its paths is busy until then
    std::vector<std::uint64_t> paths;      // more than one lane: when each crossbar path is free
    bool speedup_one = true;               // false for a voq injection port (each queue has its own path)
    double bytes_per_s = 0;                // crossbar rate of one path (its link's lane; 0: the output's)
    std::uint64_t credit_latency_ps = 0;   // credits back to the sender take the link's latency
    std::vector<InjectionTurns> turns;     // a GPU's injection port in turns: one per request queue (else empty)

    /// A packet crosses on the first free path until `until`.
    void take_path(std::uint64_t until) {
        if (paths.empty()) {
            busy_until = until;
            return;
        }
        auto first = std::min_element(paths.begin(), paths.end());
        *first = until;
        busy_until = *std::min_element(paths.begin(), paths.end());
    }
};

/// A request train on a link lane: responses may be sent between its packets (see arbitrate_link).
struct LaneTrain {
    std::uint64_t start = 0;        // its first packet left (moved on by every response sent inside it)
    std::uint64_t end = 0;          // its last packet has left
    std::uint64_t packet_ser = 0;   // one of its packets on this link
};

/// A router output: ejection to the GPU (requests or responses), or the sending end of a link.
struct PacketFabric::Output {
    std::uint32_t node;
    std::int64_t link;                                        // -1: request ejection, -2: response ejection
    std::deque<std::pair<std::uint32_t, std::uint32_t>> requests;  // (input, vc) whose head wants this output
    std::vector<std::uint64_t> lane_free;                     // when each lane is free (ejection: one lane)
    bool busy = false;                                        // ejection: delivering or awaiting the END phase
    std::uint64_t arb_at = kNever;                            // pending arbitration time
    std::uint64_t credit_stall_since = kNever;                // a free lane idles: its heads lack credits
    std::uint64_t backpressure_since = kNever;                // a free lane idles: the next buffer is backed up
    std::vector<LaneTrain> lane_train = {};                   // per link lane: the request train it sends
    // switch.arbitration bytes: the channel whose turn it is, the bytes its turn has left, and a
    // turn's bytes (the largest packet sent here so far).
    std::pair<std::uint32_t, std::uint32_t> turn = {~0u, ~0u};
    std::uint32_t turn_left = 0;
    std::uint32_t quantum = 0;
};

/// Counters of one link.
struct PacketFabric::LinkCounters {
    LinkStats s;
    double queue_sum = 0;
    std::vector<std::uint64_t> lane_busy;  // busy ps per lane (more than one lane)
    std::vector<std::uint64_t> hist = std::vector<std::uint64_t>(kHistBuckets, 0);
};

/// A multimem access the switch serves (nvls_switch.cpp): its copies or reads out to the members,
/// and the one response it owes the requester once they are all answered.
struct PacketFabric::NvlsOp {
    tlm::tlm_generic_payload* parent = nullptr;  // the requester's transaction, answered last
    std::uint32_t requester = 0;                 // the GPU it came from
    std::uint32_t pending = 0;                   // member copies or reads not yet answered
    std::uint32_t members = 0;                   // k
    bool reduce = false;                         // a load-reduce (else a store)
};

/// One hop's timing (see flow_control.cpp).
struct PacketFabric::Hop {
    std::uint64_t ser = 0;           // serialisation of the whole packet on the link
    std::uint64_t head_arrives = 0;  // its head is in the next router (before the router latency)
    std::uint64_t end = 0;           // its tail has been sent: the output is free again
    std::uint64_t last_flit = 0;     // serialisation of its last flit
    std::uint64_t spacing = 0;       // a train: time between its packets on this hop
    std::uint64_t packet_ser = 0;    // a train: serialisation of one of its packets
};

// Inline: they run for every packet at every hop.
inline std::uint32_t PacketFabric::credits_needed(std::uint32_t wire) const {
    if (!m_credit_bytes) return 1;
    return std::max<std::uint32_t>(1, (wire + m_flit - 1) / m_flit);
}

// A packet's wire bytes on a hop whose per-packet overhead is `header`: a train pays it per packet.
// On a framed link (a rail's NIC and network links) `header` is the NIC's, paid per network packet
// of the message instead (Packet::frames).
inline std::uint32_t PacketFabric::wire_bytes(const Packet& p, std::uint32_t header, bool framed) const {
    if (framed) return p.frames * header + p.payload;
    return p.train * (p.ack && m_ack_bytes ? m_ack_bytes : header) + p.payload;
}

// The credits a packet must find free to start. A train needs those of all its packets, but one
// longer than the buffer streams through it as its packets would, each waiting for room for
// itself: it takes the credits of as many packets as fit, and hop() paces it by their round trip.
inline std::uint32_t PacketFabric::train_credits(const Packet& p, std::uint32_t wire) const {
    if (p.train == 1) return credits_needed(wire);
    const std::uint32_t each = credits_needed(p.packet_wire(wire));
    const std::uint64_t all = std::uint64_t(each) * p.train;
    if (all <= m_capacity || each > m_capacity) return std::uint32_t(std::min<std::uint64_t>(all, 1u << 31));
    return m_capacity / each * each;
}

}  // namespace eidola
