// The initiator side of an eidolon GPU: splits its workgroups' writes, reads and signals into
// packets of at most max_payload and issues them round robin over the 4-phase base protocol
// within the outstanding limit, counted in packets (a train of n packets, one transaction, takes
// n). A posted write or signal hands its workgroup back as soon as its last packet is issued, as
// a GPU store does; a read or a blocking write once every packet is answered. It counts each
// workgroup's unacknowledged writes, in all and per destination, so the workgroup engine can
// hold a release (signal) or a fence until they drain. An overlapping release (a signal with
// overlap) is held here instead, so its workgroup goes on: it is sent once the writes issued
// before it are acknowledged, after every earlier one of its workgroup (see defer). A watchdog
// reports a stall when responses stop arriving.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <tlm>

#include "eidola/bound_interface.h"
#include "eidola/event_heap.h"
#include "eidola/gpu_core.h"
#include "eidola/peer_counts.h"
#include "eidola/program.h"

namespace eidola {

class WorkgroupEngine;
class TrafficGenerator;

/// Limits of the initiator side, read from the GPU's parameters.
struct InitiatorConfig {
    std::uint32_t workgroups = 1;       ///< resident workgroups (one transfer each at most)
    std::uint32_t max_outstanding = 1;  ///< transactions in flight at once
    std::uint64_t max_payload = 256;    ///< largest packet in bytes
    std::uint32_t train = 1;            ///< packets one transaction may stand for (a train)
    std::uint64_t flow = 0;             ///< bytes one transaction may carry as a flow (0: no flows)
    std::uint64_t turnaround_ps = 0;    ///< a packet's service at a target (told to a flow fabric)
};

/// Drives the GPU's initiator socket; bound as its backward-path interface.
class GpuInitiator : public tlm::tlm_bw_transport_if<> {
public:
    GpuInitiator(GpuCore& core, WorkgroupEngine& engine, tlm::tlm_initiator_socket<>& socket,
                 const InitiatorConfig& config);

    /// Queues workgroup `wg`'s transfer `op` (a remote write, read, put or signal) for packetising. A put goes
    /// as a posted write whose every transaction carries a LandingFlagExtension naming it.
    void start(std::uint32_t wg, const Op& op);
    /// Transactions in flight from this GPU.
    std::uint32_t outstanding() const { return m_outstanding; }
    /// Writes and signals of workgroup `wg` issued and not yet acknowledged.
    std::uint32_t unacked(std::uint32_t wg) const { return m_transfers[wg].unacked; }
    /// Those of them addressed to GPU `peer`.
    std::uint32_t unacked_to(std::uint32_t wg, std::int32_t peer) const;
    /// Holds workgroup `wg`'s signal `op` (overlap) until the writes and signals it covers, those issued
    /// so far (to its peer, or all by scope), are acknowledged and every earlier held one is sent; the
    /// workgroup goes on meanwhile, as a kernel's other warps go on while one warp fences and posts a flag.
    void defer(std::uint32_t wg, const Op& op);
    /// Whether workgroup `wg` has signals held by defer() not yet released (counted as issued).
    bool posts_pending(std::uint32_t wg) const {
        return !m_posts.empty() && m_posts[wg].released < m_posts[wg].q.size();
    }
    /// Whether any held signal of this GPU is not yet sent.
    bool posts_unsent() const { return m_posts_unsent > 0; }
    /// Issues `traffic`'s packets too, taking turns with the workgroups (see traffic_generator.h).
    void attach_traffic(TrafficGenerator* traffic) { m_traffic = traffic; }
    /// The generator's source queue became non-empty: give it a turn in the issue round robin.
    void traffic_queued() { m_issue_queue.push_back(kTrafficTurn); }
    /// Packetises queued transfers while the socket and the outstanding limit allow.
    void try_issue();
    /// The request channel is free again (END_REQ arrived, after its annotated delay).
    void end_request() {
        m_request_pending = nullptr;
        m_request_ending = false;
    }
    /// A response arrived (after its annotated delay). A train's first acknowledgement: the rest
    /// follow at its spacing, freeing a slot each, and train_done runs when the last is due.
    void response_arrived(Packet* packet);
    /// The last acknowledgement of a train is in: it completes as a packet's response would.
    void train_done(Packet* packet);
    /// Checks that responses still arrive while transactions are outstanding.
    void watchdog();

    /// "N packets in flight, M bytes not yet sent" of workgroup `wg`'s transfer (for stall reports).
    std::string describe_transfer(std::uint32_t wg) const;
    std::uint64_t bytes_sent() const { return m_bytes_sent; }
    /// Packets workgroup `wg` has issued (a train counts its packets).
    std::uint64_t packets_issued(std::uint32_t wg) const {
        return wg < m_transfers.size() ? m_transfers[wg].packets_issued : 0;
    }
    /// Makes room for workgroups 0 to `count` - 1 (the engine's, as programs are loaded).
    void hold_workgroups(std::uint32_t count);
    std::uint64_t packets_sent() const { return m_packets_sent; }
    /// Peers the fabric has refused a train to (see m_no_trains).
    std::uint64_t trains_refused() const {
        return std::uint64_t(std::count(m_no_trains.begin(), m_no_trains.end(), true));
    }
    /// Transactions sent (BEGIN_REQ).
    std::uint64_t requests() const { return m_requests; }
    /// Transactions whose END_REQ came only with their BEGIN_RESP: the base protocol's request exclusion then held
    /// the GPU's next request for the whole transaction (a b_transport-only IP declared `at` does it to every one).
    std::uint64_t requests_held() const { return m_requests_held; }
    /// Bytes read from peers.
    std::uint64_t bytes_read() const { return m_bytes_read; }
    /// Time its window (`max_outstanding`) was full while it had packets waiting to go: what a window
    /// sized below the round trip under load costs it.
    std::uint64_t window_full_ps() const { return m_window_full_ps; }
    /// Whether it issues flows (gpus.flow, on fabric.model: flow), whose window the fabric paces, not this.
    bool issues_flows() const { return m_flow != 0; }

    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) override;
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}

private:
    void end_request_at(std::uint64_t at_ps);
    /// A workgroup's issue state: the transfer it is packetising (one at a time: the workgroup
    /// waits for its issue) and its unacknowledged writes. Why the op's fields are copied here:
    /// with 1,024 GPUs the op's line of the program is out of the cache at every packet, and this
    /// struct is the one line a packet of the workgroup must touch anyway.
    struct alignas(64) Transfer {
        const Op* op = nullptr;       // for a signal's operands
        std::uint64_t address = 0;    // global address of the next byte to packetise
        std::uint64_t left = 0;       // bytes not yet packetised
        std::uint64_t nbytes = 0;     // the op's bytes (a train's share is taken of them)
        std::int32_t peer = 0;        // the op's destination GPU
        std::uint32_t in_flight = 0;  // packets of a blocking transfer sent, response pending
        std::uint32_t unacked = 0;    // writes and signals issued and not yet acknowledged
        // The unacknowledged writes to one peer, the last one written, kept here rather than in
        // m_unacked_peers (which then has no entry for it): a workgroup mostly writes one peer at
        // a time, and its acknowledgements mostly come back while it still does.
        std::int32_t counted_peer = -1;
        std::uint32_t unacked_to_counted = 0;
        OpKind kind = OpKind::Write;
        bool blocking = false;        // completes on its last response (reads, blocking writes), else on issue
        std::uint64_t packets_issued = 0;  // the workgroup's, for its statistics
    };
    static_assert(sizeof(Transfer) == 64, "a workgroup's issue state fits one cache line");
    void count_issued(std::uint32_t wg, std::int32_t peer, std::uint32_t packets);
    /// Returns whether the count of writes to `peer` reached zero.
    bool count_acknowledged(std::uint32_t wg, std::int32_t peer, std::uint32_t packets);
    bool send(Packet* packet);
    /// Whether the fabric has refused a train to `peer` (see m_no_trains).
    bool trains_refused(std::int32_t peer) const {
        return std::size_t(peer) < m_no_trains.size() && m_no_trains[std::size_t(peer)];
    }
    /// Completes a response: acknowledgement counts, blocking transfers, drained releases.
    void acknowledged(Packet* packet);
    /// How long the watchdog waits for a response: its time, per window of the packets outstanding flows stand for.
    std::uint64_t watchdog_allowance() const;
    /// Frees the slots of trains' acknowledgements due by now.
    void reclaim(std::uint64_t now);
    /// Whether `wanted` slots are free; if not, an Issue action is booked for when they will be.
    bool slots_for(std::uint32_t wanted, std::uint64_t now);
    /// Acknowledgements of a train arriving one every `spacing` ps from `start`; `freed` of them counted.
    struct SlotRelease {
        std::uint64_t start, spacing;
        std::uint32_t packets, freed;
        /// Acknowledgements due by `t`, counted or not.
        std::uint32_t due_by(std::uint64_t t) const {
            if (t < start) return 0;
            return spacing ? std::uint32_t(std::min<std::uint64_t>(packets, (t - start) / spacing + 1)) : packets;
        }
    };
    void issue_traffic();
    void traffic_answered(Packet* packet);
    /// A held signal: covers the packets numbered below `before` (to its peer by scope); `left` of
    /// them are unacknowledged; `seq` is its own number once released.
    struct Post {
        const Op* op;
        std::uint64_t before, seq;
        std::uint32_t left;
    };
    /// A workgroup's held signals in program order: q[sent, released) released and waiting for the
    /// issue loop, q[released, end) waiting for acknowledgements.
    struct Posts {
        std::vector<Post> q;
        std::uint32_t sent = 0, released = 0;
    };
    /// Counts an acknowledgement against workgroup `wg`'s held signals and releases those now due, in
    /// order; returns whether the last held one was released (the engine may go on).
    bool settle_posts(std::uint32_t wg, std::uint64_t seq, std::int32_t peer, std::uint32_t packets);
    /// Sends workgroup `wg`'s next released signal.
    void issue_post(std::uint32_t wg);
    /// Attaches the flow fabric's extension to packet `p` of workgroup `wg`, reset (no window).
    void attach_flow(Packet* p, std::uint32_t wg, bool signal);

    /// A train is at most this fraction of its transfer's packets, and of the outstanding limit.
    static constexpr std::uint64_t kTrainShareOfTransfer = 16, kTrainShareOfWindow = 128;
    /// The traffic generator's place in the issue queue, and the `wg` of its packets (no workgroup has it).
    static constexpr std::uint32_t kTrafficTurn = 0xFFFFFFFFu;
    /// Marks a workgroup's turn in the issue queue as that of its next released held signal.
    static constexpr std::uint32_t kPostTurn = 0x80000000u;
    // The fields every packet issued and every response read or write, together in the first two
    // lines (see Transfer for why), then the rest.
    alignas(64) Packet* m_request_pending = nullptr;  // BEGIN_REQ sent, END_REQ not yet in effect
    // Its END_REQ came, annotated: it takes effect at a booked EndReq action, and a BEGIN_RESP for it
    // (which implies END_REQ) must not book another, which would end the next request's phase.
    bool m_request_ending = false;
    tlm::tlm_fw_transport_if<>* m_fabric = nullptr;  // m_socket's interface (see bound_interface.h)
    std::uint32_t m_outstanding = 0;
    std::uint32_t m_max_outstanding;
    std::uint32_t m_train;
    std::uint64_t m_flow;            // flow mode: largest flow in bytes (0: off)
    std::uint64_t m_turnaround_ps;   // told to the fabric with every flow
    bool m_watching = false;
    std::uint64_t m_max_payload;
    EntryRing<std::uint32_t> m_issue_queue;     // workgroups with bytes to packetise, round robin
    std::vector<Transfer> m_transfers;          // per workgroup given a program (see WorkgroupEngine::m_wgs)
    std::vector<SlotRelease> m_releases;        // trains' acknowledgements still to free slots
    std::uint64_t m_last_response_ps = 0;
    std::uint64_t m_flow_packets = 0;           // flow mode: the packets its outstanding flows stand for
    std::uint64_t m_bytes_sent = 0, m_packets_sent = 0;
    std::uint64_t m_requests = 0, m_requests_held = 0;  // see requests(), requests_held()
    PeerCounts m_unacked_peers;                 // per (workgroup, peer): writes not yet acknowledged (but see Transfer)
    GpuCore& m_core;
    WorkgroupEngine& m_engine;
    PacketPool m_pool;

    tlm::tlm_initiator_socket<>& m_socket;
    TrafficGenerator* m_traffic = nullptr;
    std::vector<bool> m_no_trains;              // per peer: the fabric refused a train to it (burst error)
    std::uint64_t m_bytes_read = 0;
    // Per workgroup, made on the first defer(): 1,024 GPUs x 304 workgroups of empty queues
    // would cost memory for nothing when no profile overlaps a release.
    std::vector<Posts> m_posts;
    std::uint32_t m_posts_pending = 0;  // held signals not yet released, all workgroups (0: skip the check)
    std::uint32_t m_posts_unsent = 0;   // held signals not yet sent
    // Per workgroup, the number of the put it is issuing (made on the first put, as m_posts is).
    std::vector<std::uint64_t> m_put_ids;
    std::uint64_t m_puts_started = 0;   // puts this GPU has started: the next put's number
    // Resident workgroups (the traffic generator's stream is the next number). Here, not beside
    // m_transfers: the first two lines are the fields every packet touches (see above).
    std::uint32_t m_workgroups;
    // Since when its window has been full with packets waiting (kNoFullWindow: it is not); try_issue() opens and
    // closes the spells, as it is what the window holds back.
    static constexpr std::uint64_t kNoFullWindow = ~std::uint64_t(0);
    std::uint64_t m_window_full_since = kNoFullWindow;
    std::uint64_t m_window_full_ps = 0;
};

}  // namespace eidola
