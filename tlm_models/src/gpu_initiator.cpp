#include "eidola/gpu_initiator.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "eidola/traffic_generator.h"
#include "eidola/workgroup_engine.h"

namespace eidola {

GpuInitiator::GpuInitiator(GpuCore& core, WorkgroupEngine& engine, tlm::tlm_initiator_socket<>& socket,
                           const InitiatorConfig& config)
    : m_max_outstanding(config.max_outstanding),
      m_train(config.train),
      m_flow(config.flow),
      m_turnaround_ps(config.turnaround_ps),
      m_max_payload(config.max_payload),
      m_core(core),
      m_engine(engine),
      m_pool(std::max<std::uint64_t>(config.max_payload * config.train, config.flow)),
      m_socket(socket),
      m_workgroups(config.workgroups) {}

void GpuInitiator::hold_workgroups(std::uint32_t count) {
    if (count <= m_transfers.size()) return;
    m_transfers.resize(count);
    if (!m_put_ids.empty()) m_put_ids.resize(count);
    if (!m_posts.empty()) m_posts.resize(count);
}

void GpuInitiator::start(std::uint32_t w, const Op& op) {
    Transfer& t = m_transfers[w];
    const OpKind kind = static_cast<OpKind>(op.kind);
    t.op = &op;
    t.kind = kind;
    // A multimem access is addressed to the issuer's own window (multimem_extension.h) and counted as
    // traffic to itself: a fence or a workgroup-scope release waits for its acknowledgement.
    const bool multimem = kind == OpKind::Multicast || kind == OpKind::ReduceLoad;
    t.peer = multimem ? std::int32_t(m_core.index) : op.peer;
    t.nbytes = op.nbytes;
    t.address = m_core.map.global(std::uint32_t(t.peer), op.offset);
    t.left = kind == OpKind::Signal ? 8 : op.nbytes;
    t.in_flight = 0;
    t.blocking = kind == OpKind::Read || kind == OpKind::ReduceLoad ||
                 (kind == OpKind::Write && static_cast<WriteMode>(op.mode) == WriteMode::Blocking);
    if (kind == OpKind::Put) {  // numbered here: every transaction of this put names it at the target
        if (m_put_ids.empty()) m_put_ids.resize(m_transfers.size());
        m_put_ids[w] = m_puts_started++;
    }
    m_issue_queue.push_back(w);
}

std::uint32_t GpuInitiator::unacked_to(std::uint32_t w, std::int32_t peer) const {
    const Transfer& t = m_transfers[w];
    return peer == t.counted_peer ? t.unacked_to_counted : m_unacked_peers.get(w, peer);
}

void GpuInitiator::count_issued(std::uint32_t w, std::int32_t peer, std::uint32_t packets) {
    Transfer& t = m_transfers[w];
    t.unacked += packets;
    if (peer != t.counted_peer) {  // the workgroup moved on to another peer: swap the counts
        if (t.unacked_to_counted) m_unacked_peers.increment(w, t.counted_peer, t.unacked_to_counted);
        t.counted_peer = peer;
        t.unacked_to_counted = m_unacked_peers.take(w, peer);
    }
    t.unacked_to_counted += packets;
}

bool GpuInitiator::count_acknowledged(std::uint32_t w, std::int32_t peer, std::uint32_t packets) {
    Transfer& t = m_transfers[w];
    t.unacked -= packets;
    if (peer != t.counted_peer) return m_unacked_peers.decrement(w, peer, packets);
    t.unacked_to_counted -= packets;
    return t.unacked_to_counted == 0;
}

void GpuInitiator::reclaim(std::uint64_t now) {
    for (std::size_t i = 0; i < m_releases.size();) {
        SlotRelease& r = m_releases[i];
        const std::uint32_t due = r.due_by(now);
        m_outstanding -= due - r.freed;
        r.freed = due;
        if (r.freed == r.packets) {
            r = m_releases.back();
            m_releases.pop_back();
        } else {
            ++i;
        }
    }
}

bool GpuInitiator::slots_for(std::uint32_t wanted, std::uint64_t now) {
    if (m_max_outstanding - m_outstanding >= wanted) return true;
    if (m_releases.empty()) return false;  // a response will call again
    // Wake when the trains' acknowledgements, together, will have freed enough: the first time
    // by which `missing` more are due, found by bisection (the count due grows with time).
    const std::uint64_t missing = wanted - (m_max_outstanding - m_outstanding);
    auto due_by = [&](std::uint64_t t) {
        std::uint64_t n = 0;
        for (const SlotRelease& r : m_releases) n += r.due_by(t) - r.freed;  // t >= now: freed counts no later ones
        return n;
    };
    std::uint64_t lo = now, hi = now;
    for (const SlotRelease& r : m_releases) hi = std::max(hi, r.start + (r.packets - 1) * r.spacing);
    if (due_by(hi) < missing) return false;  // not even all of them: a later response calls again
    while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (due_by(mid) >= missing) hi = mid;
        else lo = mid + 1;
    }
    m_core.actions.push(std::max(hi, now + 1), {GpuActionKind::Issue, 0});
    return false;
}

// Round robin one packet (or train) per queued workgroup, while the socket is free (END_REQ seen)
// and the outstanding limit allows. A train waits until slots for all of it are free: its
// packets would otherwise leave one by one as acknowledgements trickle in, each as a train of one.
void GpuInitiator::try_issue() {
    const std::uint64_t now = now_ps();
    if (!m_releases.empty()) reclaim(now);
    if (m_window_full_since != kNoFullWindow) {
        m_window_full_ps += now - m_window_full_since;
        m_window_full_since = kNoFullWindow;
    }
    while (!m_request_pending && m_outstanding < m_max_outstanding && !m_issue_queue.empty()) {
        // The workgroup leaves the queue only once its packet is sent: a train that must wait for
        // slots, or is refused, keeps its turn.
        const std::uint32_t w = m_issue_queue.front();
        if (w == kTrafficTurn) {
            m_issue_queue.pop_front();
            issue_traffic();
            continue;
        }
        if (w & kPostTurn) {
            m_issue_queue.pop_front();
            issue_post(w & ~kPostTurn);
            continue;
        }
        Transfer& t = m_transfers[w];
        const OpKind kind = t.kind;
        // A train takes as many whole packets as are left, up to the train length; a signal is
        // always one packet. Why the caps: a train is resolved as a unit (other flows wait for
        // all of it, and it waits for slots for all of it), so it is kept to a small share of its
        // transfer and of the outstanding window, where the error stays within 1% (docs/fabrics.md).
        std::uint32_t packets = 1;
        // A multimem access goes packet by packet (the switch replicates or reduces each one),
        // except as a flow: the flow fabric's switch replicates or reduces a whole flow.
        const bool single = kind == OpKind::Signal || kind == OpKind::Multicast || kind == OpKind::ReduceLoad;
        if (m_flow && kind != OpKind::Signal) {
            // Flow mode: as much of the transfer as one flow may carry, in one transaction and one
            // outstanding slot; the flow fabric paces its packets by the window (FlowExtension).
            packets = std::uint32_t((std::min(t.left, m_flow) + m_max_payload - 1) / m_max_payload);
        } else if (m_train > 1 && !single && !trains_refused(t.peer)) {
            const std::uint64_t whole = (t.left + m_max_payload - 1) / m_max_payload;
            const std::uint64_t share = (t.nbytes + m_max_payload - 1) / m_max_payload / kTrainShareOfTransfer;
            packets = std::uint32_t(std::max<std::uint64_t>(
                1, std::min<std::uint64_t>({whole, m_train, share, m_max_outstanding / kTrainShareOfWindow})));
            if (!slots_for(packets, now)) {
                m_window_full_since = now;  // a train waits for slots for all of its packets
                return;
            }
        }
        const std::uint64_t n = std::min(t.left, packets * m_max_payload);

        Packet* p = m_pool.allocate();
        p->wg = w;
        p->packets = packets;
        p->seq = t.packets_issued;
        if (packets > 1) {
            p->train.packets = packets;
            p->train.packet_bytes = std::uint32_t(m_max_payload);
            p->train.spacing_ps = 0;  // the fabric sets it on delivery; only a train's is read back
            p->set_extension(&p->train);
        }
        p->slots = m_flow ? 1 : packets;
        if (m_flow) {
            attach_flow(p, w, kind == OpKind::Signal);
            p->flow.window = m_max_outstanding;
            p->flow.packet_bytes = std::uint32_t(m_max_payload);
            p->flow.turnaround_ps = m_turnaround_ps;
        }
        p->peer = t.peer;
        p->resumes = t.blocking;
        const bool read = kind == OpKind::Read || kind == OpKind::ReduceLoad;
        p->set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        p->set_address(t.address);
        p->set_data_ptr(kind == OpKind::Signal ? p->word : m_pool.scratch());
        p->set_data_length(unsigned(n));
        p->set_streaming_width(unsigned(n));
        p->set_byte_enable_ptr(nullptr);
        p->set_dmi_allowed(false);
        p->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        if (kind == OpKind::Signal) {
            const Op& op = *t.op;
            p->atomic.op = static_cast<AtomicOp>(op.sub);
            p->atomic.operand = op.value;
            p->atomic.compare = op.compare;
            std::memcpy(p->word, &op.value, 8);  // a target ignoring the extension sees a write of the operand
            p->set_extension(&p->atomic);
            p->atomic_attached = true;
        } else if (kind == OpKind::Put) {
            const Op& op = *t.op;
            p->landing.flag_address = m_core.map.global(std::uint32_t(op.peer), std::uint64_t(op.compare));
            p->landing.op = static_cast<AtomicOp>(op.sub);
            p->landing.value = op.value;
            p->landing.initiator = m_core.index;
            p->landing.put_id = m_put_ids[w];
            p->landing.total_bytes = t.nbytes;
            p->set_extension(&p->landing);
            p->landing_attached = true;
        } else if (kind == OpKind::Multicast || kind == OpKind::ReduceLoad) {
            const std::vector<std::uint32_t>& members = m_core.multicast_groups[std::size_t(t.op->compare)];
            p->multimem.kind = kind == OpKind::Multicast ? MultimemKind::Store : MultimemKind::LoadReduce;
            p->multimem.group = std::uint32_t(t.op->compare);
            p->multimem.members = members.data();
            p->multimem.member_count = std::uint32_t(members.size());
            p->multimem.initiator = m_core.index;
            p->multimem.offset = m_core.map.local(t.address);
            p->set_extension(&p->multimem);
            p->multimem_attached = true;
        }
        if (n < t.nbytes) {  // part of a longer message: a NIC frames the message, not the part
            p->message.offset = t.nbytes - t.left;
            p->message.bytes = t.nbytes;
            p->set_extension(&p->message);
            p->message_attached = true;
        }
        // A posted write's last flow: its workgroup goes on once the fabric says its last packet is
        // issued (FLOW_SENT), as the packet GPU's goes on once that packet is in the injection buffer,
        // if the fabric says it will (will_tell); else at once.
        const bool tell = p->flow_attached && kind != OpKind::Signal && !p->multimem_attached && !t.blocking &&
                          n == t.left;
        p->flow.tell_sent = tell;
        if (!send(p)) {  // a fabric that cannot carry trains to this peer: packet by packet from now on
            if (m_no_trains.size() <= std::size_t(t.peer)) m_no_trains.resize(std::size_t(t.peer) + 1, false);
            m_no_trains[std::size_t(t.peer)] = true;
            p->release();
            continue;
        }
        m_issue_queue.pop_front();
        if (!read) m_bytes_sent += n;
        t.address += n;
        t.left -= n;
        if (t.blocking) ++t.in_flight;
        if (!read) count_issued(w, t.peer, packets);
        t.packets_issued += packets;
        const bool issued_all = t.left == 0;
        if (!issued_all) m_issue_queue.push_back(w);
        // Posted: issued is done. The workgroup goes on at once rather than through an action: this
        // runs inside the GPU's own process, and its next op may queue more packets for this loop.
        if (issued_all && !t.blocking && !(tell && p->flow.will_tell)) m_engine.resume(w);
    }
    if (m_outstanding >= m_max_outstanding && !m_issue_queue.empty()) m_window_full_since = now;
}

// Returns false, with nothing sent, if a train was refused at once with TLM_BURST_ERROR_RESPONSE.
bool GpuInitiator::send(Packet* p) {
    EventHeap<GpuAction>& actions = m_core.actions;
    if (m_outstanding == 0 && !m_watching) {
        m_watching = true;
        m_last_response_ps = now_ps();
        actions.push(now_ps() + m_core.watchdog_ps, {GpuActionKind::Watchdog, 0});
    }
    // The workgroup names the stream: a port that takes its workgroups' packets in turn reads it.
    p->stream.stream = p->wg == kTrafficTurn ? m_workgroups : p->wg;
    m_outstanding += p->slots;
    m_packets_sent += p->packets;
    if (p->flow_attached) m_flow_packets += p->packets;
    m_request_pending = p;
    p->awaiting = true;
    ++m_requests;
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    const std::uint64_t now = now_ps();
    switch (bound_interface(m_socket, m_fabric).nb_transport_fw(*p, phase, delay)) {
        case tlm::TLM_ACCEPTED: return true;  // END_REQ will come on the backward path
        case tlm::TLM_UPDATED:
            if (phase == tlm::END_REQ) {
                end_request_at(now + delay.value());
                return true;
            }
            if (phase == tlm::BEGIN_RESP) break;
            m_core.fail(m_core.name() + ".initiator: nb_transport_fw returned TLM_UPDATED with an illegal phase");
            return true;
        case tlm::TLM_COMPLETED: break;
    }
    m_request_pending = nullptr;
    p->awaiting = false;
    if (p->packets > 1 && p->get_response_status() == tlm::TLM_BURST_ERROR_RESPONSE) {
        m_outstanding -= p->slots;
        m_packets_sent -= p->packets;
        --m_requests;  // refused whole: its packets go again one by one, each a request of its own
        if (p->flow_attached) m_flow_packets -= p->packets;
        return false;
    }
    // The target answered at once: request and response both done.
    actions.push(now + delay.value(), {GpuActionKind::Response, 0, p});
    return true;
}

// The pending request's END_REQ takes effect at `at_ps`: now, or at a booked EndReq action, which
// m_request_ending marks as booked so that a BEGIN_RESP for that request books none.
void GpuInitiator::end_request_at(std::uint64_t at_ps) {
    if (at_ps == now_ps()) {
        end_request();
        return;
    }
    m_core.actions.push(at_ps, {GpuActionKind::EndReq, 0});
    m_request_ending = true;
}

tlm::tlm_sync_enum GpuInitiator::nb_transport_bw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                                 sc_core::sc_time& delay) {
    const std::uint64_t at = now_ps() + delay.value();
    Packet* p = static_cast<Packet*>(&trans);
    const bool now = delay == sc_core::SC_ZERO_TIME;
    if (phase == tlm::END_REQ && (m_request_pending != p || m_request_ending)) {
        m_core.fail(m_core.name() + ".initiator: END_REQ for a transaction not awaiting it");
        return tlm::TLM_COMPLETED;
    }
    // BEGIN_RESP implies END_REQ, for the request still awaiting it (not one whose END_REQ came)
    if (phase == tlm::END_REQ || (phase == tlm::BEGIN_RESP && m_request_pending == p && !m_request_ending)) {
        if (phase == tlm::BEGIN_RESP) ++m_requests_held;
        // Now it is handled in place (it only updates state); packetising resumes from the GPU's own process.
        end_request_at(at);
        if (now && !m_issue_queue.empty()) m_core.issue_soon();
        if (phase == tlm::END_REQ) return tlm::TLM_ACCEPTED;
    }
    if (phase == FLOW_SENT) {
        if (p->flow_attached && p->flow.tell_sent) m_core.actions.push(at, {GpuActionKind::Resume, p->wg});
        return tlm::TLM_ACCEPTED;
    }
    if (phase == tlm::BEGIN_RESP) {
        // Why here: a second BEGIN_RESP would free the packet's window slot and its payload twice, and the GPU would
        // count a write acknowledged while it is still in flight (IEEE 1666: one response per transaction).
        if (!p->awaiting) {
            std::ostringstream msg;
            msg << m_core.name() << ".initiator: BEGIN_RESP for a transaction to address 0x" << std::hex
                << p->get_address() << std::dec
                << " that is not awaiting a response (answered already, or never sent): the fabric must send one "
                   "BEGIN_RESP per transaction (check_protocol: true names the socket)";
            m_core.fail(msg.str());
            return tlm::TLM_COMPLETED;
        }
        p->awaiting = false;
        if (now) response_arrived(p);
        else m_core.actions.push(at, {GpuActionKind::Response, 0, p});
        return tlm::TLM_COMPLETED;
    }
    m_core.fail(m_core.name() + ".initiator: unexpected phase on the backward path");
    return tlm::TLM_COMPLETED;
}

void GpuInitiator::response_arrived(Packet* p) {
    if (!p->is_response_ok()) {
        std::ostringstream msg;
        msg << m_core.name() << ".initiator: transaction to address 0x" << std::hex << p->get_address() << std::dec
            << " failed: " << p->get_response_string();
        m_core.fail(msg.str());
        return;
    }
    if (p->wg == kTrafficTurn) {
        traffic_answered(p);
        return;
    }
    if (p->is_read()) m_bytes_read += p->get_data_length();
    const std::uint64_t now = now_ps();
    m_last_response_ps = now;
    if (p->packets == 1 || p->flow_attached) {  // a flow is answered once, for all its packets
        m_outstanding -= p->slots;
        if (p->flow_attached) m_flow_packets -= p->packets;
        acknowledged(p);
        return;
    }
    // A train's acknowledgements arrive one per spacing from now: each frees its slot then, and
    // the train completes (releases, blocking transfers) with its last.
    m_releases.push_back({now, p->train.spacing_ps, p->packets, 0});
    const std::uint64_t last = now + (p->packets - 1) * p->train.spacing_ps;
    if (last == now) {
        reclaim(now);
        acknowledged(p);
        return;
    }
    m_core.actions.push(last, {GpuActionKind::TrainDone, 0, p});
    if (!m_issue_queue.empty()) m_core.issue_soon();
}

void GpuInitiator::train_done(Packet* p) {
    m_last_response_ps = now_ps();
    reclaim(now_ps());
    acknowledged(p);
}

[[gnu::always_inline]] inline void GpuInitiator::acknowledged(Packet* p) {
    const std::uint32_t w = p->wg;
    Transfer& t = m_transfers[w];
    const bool read = p->is_read();
    const bool resumes = p->resumes;
    bool drained = !read && (count_acknowledged(w, p->peer, p->packets) || t.unacked == 0);
    if (m_posts_pending && !read && settle_posts(w, p->seq, p->peer, p->packets)) drained = true;
    p->release();
    if (resumes && --t.in_flight == 0 && t.left == 0) m_core.actions.push(now_ps(), {GpuActionKind::Resume, w});
    else if (!m_issue_queue.empty()) m_core.issue_soon();  // a slot freed
    // Acknowledgements can arrive outside the GPU's own process: the engine reacts in an action.
    if (drained && m_engine.awaits_drain(w)) m_core.actions.push(now_ps(), {GpuActionKind::Drained, w});
}

void GpuInitiator::defer(std::uint32_t w, const Op& op) {
    if (m_posts.empty()) m_posts.resize(m_transfers.size());
    const Transfer& t = m_transfers[w];
    const bool peer = static_cast<ReleaseScope>(op.mode) == ReleaseScope::Peer;
    Posts& ps = m_posts[w];
    ps.q.push_back(Post{&op, t.packets_issued, 0, peer ? unacked_to(w, op.peer) : t.unacked});
    ++m_posts_pending;
    ++m_posts_unsent;
    // Nothing to wait for and nothing held before it: released at once (the engine defers only
    // signals that must wait, or that follow held ones).
    if (ps.q.back().left == 0 && ps.released + 1 == ps.q.size()) settle_posts(w, ~std::uint64_t(0), -1, 0);
}

bool GpuInitiator::settle_posts(std::uint32_t w, std::uint64_t seq, std::int32_t peer, std::uint32_t packets) {
    if (m_posts.empty()) return false;
    Posts& ps = m_posts[w];
    if (ps.released == ps.q.size()) return false;
    for (std::size_t i = ps.released; i < ps.q.size(); ++i) {
        Post& e = ps.q[i];
        const bool all = static_cast<ReleaseScope>(e.op->mode) == ReleaseScope::Workgroup;
        if (seq < e.before && (all || peer == e.op->peer)) e.left -= packets;
    }
    bool any = false;
    while (ps.released < ps.q.size() && ps.q[ps.released].left == 0) {
        // Released: counted as issued now, so a later release, fence or the kernel's end waits
        // for its acknowledgement, and numbered now, so what a later one covers includes it.
        Post& e = ps.q[ps.released++];
        Transfer& t = m_transfers[w];
        count_issued(w, e.op->peer, 1);
        e.seq = t.packets_issued++;
        --m_posts_pending;
        m_issue_queue.push_back(kPostTurn | w);
        any = true;
    }
    if (any) m_core.issue_soon();
    return any && ps.released == ps.q.size();
}

// The flow fabric's extension on packet `p` of workgroup `w`, reset (no window), and attached.
void GpuInitiator::attach_flow(Packet* p, std::uint32_t w, bool signal) {
    p->flow = FlowExtension{};
    p->flow.workgroup = w;
    p->flow.signal = signal;
    p->set_extension(&p->flow);
    p->flow_attached = true;
}

void GpuInitiator::issue_post(std::uint32_t w) {
    Posts& ps = m_posts[w];
    const Post e = ps.q[ps.sent++];
    if (ps.sent == ps.q.size()) {  // all sent: reuse the storage
        ps.q.clear();
        ps.sent = ps.released = 0;
    }
    --m_posts_unsent;
    const Op& op = *e.op;
    Packet* p = m_pool.allocate();
    p->wg = w;
    p->packets = 1;
    p->seq = e.seq;
    p->peer = op.peer;
    p->resumes = false;
    p->set_command(tlm::TLM_WRITE_COMMAND);
    p->set_address(m_core.map.global(std::uint32_t(op.peer), op.offset));
    p->set_data_ptr(p->word);
    p->set_data_length(8);
    p->set_streaming_width(8);
    p->set_byte_enable_ptr(nullptr);
    p->set_dmi_allowed(false);
    p->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    p->atomic.op = static_cast<AtomicOp>(op.sub);
    p->atomic.operand = op.value;
    p->atomic.compare = op.compare;
    std::memcpy(p->word, &op.value, 8);
    p->set_extension(&p->atomic);
    p->atomic_attached = true;
    if (m_flow) attach_flow(p, w, true);  // whose signal it is (no window: it is sent as before)
    m_bytes_sent += 8;
    send(p);  // one packet: never refused as a train is
}

// A fabric that loses a transaction leaves its workgroup blocked forever while others may poll
// on: without this, such a run would never end.
void GpuInitiator::watchdog() {
    const std::uint64_t now = now_ps();
    reclaim(now);
    if (m_outstanding == 0) {
        m_watching = false;
        return;
    }
    const std::uint64_t allowed = watchdog_allowance();
    if (now - m_last_response_ps >= allowed) {
        std::ostringstream msg;
        msg << "stall: " << m_core.name() << " has " << m_outstanding
            << " transaction(s) outstanding and no response for " << ps_to_time(now - m_last_response_ps);
        if (m_flow_packets > 0)
            msg << " (flows standing for " << m_flow_packets << " packets, allowed " << ps_to_time(allowed) << ")";
        msg << " (was a transaction lost by the interconnect?)";
        m_core.reporter.errors().report(ErrorKind::Stall, msg.str());
        return;
    }
    m_core.actions.push(m_last_response_ps + allowed, {GpuActionKind::Watchdog, 0});
}

// A flow is answered once, when all the packets it stands for are in, where the packet fabric answers each:
// the watchdog allows its time per window (max_outstanding) of the packets the outstanding flows stand for.
// Why: a 64 MiB flow paced by a window of one packet over a 4 us round trip is a second without a response,
// and the flat allowance reported it as lost (scripts/fuzz.py's flow campaign), where the packet fabric's
// responses kept coming and the run finished.
// It also allows the memory's latency once (every GPU of a platform has the same memory): no access is answered
// sooner. Why: with gpus.memory.latency as long as the watchdog (1 ms on a fuzzed gb200-nvl4) every remote access
// outlived it, and the run stopped with a stall report asking whether a transaction was lost.
std::uint64_t GpuInitiator::watchdog_allowance() const {
    // The booking stays below 2^62 ps (53 days), far from where the kernel's 64-bit time would wrap.
    constexpr std::uint64_t kLatest = std::uint64_t(1) << 62;
    const std::uint64_t windows = std::max<std::uint64_t>(1, (m_flow_packets + m_max_outstanding - 1) / m_max_outstanding);
    const std::uint64_t most = m_last_response_ps < kLatest ? kLatest - m_last_response_ps : 1;
    const std::uint64_t memory = std::min(m_core.memory.latency_ps(), most / 2);
    return windows > (most - memory) / m_core.watchdog_ps ? most : m_core.watchdog_ps * windows + memory;
}

// One packet of the traffic generator's source queue; the generator keeps its turn while it has more.
void GpuInitiator::issue_traffic() {
    Packet* p = m_pool.allocate();
    p->wg = kTrafficTurn;
    m_traffic->fill(*p, m_core.map, m_pool.scratch());
    m_bytes_sent += p->get_data_length();
    if (m_traffic->pending()) m_issue_queue.push_back(kTrafficTurn);
    send(p);
}

void GpuInitiator::traffic_answered(Packet* p) {
    m_last_response_ps = now_ps();
    --m_outstanding;
    m_traffic->answered(*p);
    p->release();
    if (!m_issue_queue.empty()) m_core.actions.push(now_ps(), {GpuActionKind::Issue, 0});  // a slot freed
}

std::string GpuInitiator::describe_transfer(std::uint32_t w) const {
    const Transfer& t = m_transfers[w];
    std::ostringstream out;
    out << t.in_flight << " packets in flight, " << t.left << " bytes not yet sent";
    return out.str();
}

}  // namespace eidola
