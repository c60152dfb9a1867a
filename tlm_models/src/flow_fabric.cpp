#include "eidola/flow_fabric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "eidola/flow_extension.h"
#include "eidola/packet_pool.h"
#include "eidola/registry.h"
#include "eidola/round_ps.h"
#include "eidola/train_extension.h"
#include "eidola/free_list.h"

namespace eidola {

namespace {

constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

// The payload of each packet of a transaction but the last, and the number of packets: a train's
// as its train extension says (a flow in packets carries one too), else one packet of the whole length.
void packets_of(const tlm::tlm_generic_payload& t, std::uint64_t bytes, std::uint32_t& packets,
                std::uint32_t& packet_bytes) {
    packets = 1;
    packet_bytes = std::uint32_t(std::min<std::uint64_t>(bytes, 0xFFFFFFFFu));
    if (const TrainExtension* train = t.get_extension<TrainExtension>(); train && train->packets > 1) {
        packets = train->packets;
        packet_bytes = train->packet_bytes;
    }
}

}  // namespace

FlowFabric::FlowFabric(sc_core::sc_module_name name, const ParamSet& given)
    : FlowFabric(name, Configured<Params>(given, static_cast<const char*>(name))) {}

FlowFabric::FlowFabric(sc_core::sc_module_name name, const Params& p)
    : FabricShell(name, std::uint32_t(p.ports.get())),
      m_topology(p.make_topology(static_cast<const char*>(name))),
      m_switch_latency_ps(p.router.latency.get().value()),
      m_store_and_forward(p.router.flow_control.get() == "store_and_forward"),
      m_flit(std::uint32_t(p.link.flit.get())),
      m_ack_bytes(std::uint32_t(p.link.ack.get())),
      m_spread(p.spread.get()),
      m_bin_budget(p.stats_bin.get().value(), std::uint64_t(p.stats_max_bins.get())),
      m_header(std::uint32_t(p.link.header.get())),
      m_mtu(m_topology->mtu()),
      m_message_ps(m_mtu ? p.rail.message_overhead.get().value() : 0),
      m_credit_bytes(p.router.buffer.in_bytes()),
      m_credits(0),
      m_credit_base(0),
      m_issue_gates(p.flow_issue.get() == "gates"),
      m_responses_first(p.flow_responses.get() == "first"),
      m_injection_blocking(p.flow_injection.get() == "blocking"),
      m_actions(this, [](void* f) { static_cast<FlowFabric*>(f)->on_event(); }) {
    const Topology& topo = *m_topology;
    const std::uint32_t n = ports();
    // Link resources first, in link order, so a resource index below links().size() is that link.
    m_links.resize(topo.links().size());
    m_busy.resize(topo.links().size());
    for (std::size_t l = 0; l < topo.links().size(); ++l) {
        const TopoLink& link = topo.links()[l];
        m_solver.add_resource(link.bytes_per_s * link.lanes);
        m_links[l].s.src = std::int32_t(link.src);
        m_links[l].s.dst = std::int32_t(link.dst);
        m_links[l].s.lanes = link.lanes;
        m_busy[l].bytes_per_s = link.bytes_per_s;
        m_busy[l].bin_capacity = float(double(link.lanes) * double(m_bin_budget.width_ps()));
        m_busy[l].flag_lanes = std::uint32_t(m_flag_free.size());
        m_flag_free.resize(m_flag_free.size() + std::max<std::uint32_t>(1, link.lanes), 0);
    }
    // Every link's receiving buffer, per message class: a sender needs credits for a packet, and
    // gets them back one credit round trip later, so a channel carries at most its credits per
    // round trip (the packet fabric's limit when buffers do not cover the round trip).
    std::uint64_t amount;
    try {
        amount = p.router.buffer.amount();
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string(static_cast<const char*>(name)) + ": " + e.what());
    }
    m_credits = buffer_credits(amount, m_credit_bytes, m_flit);
    m_credit_base = m_solver.resources();
    // Each lane brings its own buffer (as in the packet fabric). With vcs N a link's flows share its N channels'
    // credits; with vcs 0 each output of the receiving router has a channel of its own (pace_credits), and
    // these pools serve only the NVLS unit's flows.
    m_voq_credits = p.router.vcs.get() == 0;
    const double channels = double(std::max<std::int64_t>(1, p.router.vcs.get()));
    // On a ring or torus each class's channels come twice, once per side of the dateline, as in the packet
    // fabric's routers: a packet that crossed the wrap link of its dimension takes the other half's.
    const int halves = topo.needs_dateline() ? 2 : 1;
    for (int half = 0; half < halves; ++half)
        for (std::size_t l = 0; l < topo.links().size(); ++l)
            for (int cls = 0; cls < 2; ++cls)
                m_solver.add_resource(double(m_credits) * double(topo.links()[l].lanes) * channels);
    // The GPU ports: a fifo injection port sends one packet at a time per class, and a link-rate
    // ejection port takes one at a time per class, at link.bandwidth; the defaults limit neither.
    m_inject.assign(2 * std::size_t(n), -1);
    m_eject.assign(2 * std::size_t(n), -1);
    const double port_rate = p.link.bandwidth.get();
    for (std::uint32_t g = 0; g < n; ++g)
        for (std::uint32_t cls = 0; cls < 2; ++cls) {
            if (p.router.injection.get() == "fifo") m_inject[2 * g + cls] = m_solver.add_resource(port_rate);
            if (p.router.ejection.get() == "link") m_eject[2 * g + cls] = m_solver.add_resource(port_rate);
        }
    m_window.assign(n, -1);
    m_issuers.resize(n);
    m_inject_units.assign(n, 0);
    // The packet fabric's injection buffer per class, in its credits (packets, or flits where the
    // buffer is a size).
    const bool fifo = p.router.injection.get() == "fifo";
    for (std::uint32_t g = 0; g < n; ++g)
        m_inject_units[g] = double(m_credits) * double(injection_queues(fifo, topo.out_links(g).size()));
    m_route_index.assign(std::size_t(n) * n, -1);
    std::uint64_t hop_ps = 0;
    for (const TopoLink& l : topo.links()) hop_ps = std::max(hop_ps, l.latency_ps + m_switch_latency_ps);
    m_actions.set_horizon(4 * hop_ps);  // deliveries and responses fall a route's latency ahead
    setup_nvls(p);
    setup_incast(p);
}

FlowFabric::~FlowFabric() = default;

// ---- TLM entry points -------------------------------------------------------------------------

tlm::tlm_sync_enum FlowFabric::request(std::uint32_t src, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) {
    if (phase == tlm::BEGIN_REQ) {
        const std::int64_t dst = decode(trans.get_address());
        if (dst < 0) {
            trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return tlm::TLM_COMPLETED;
        }
        if (trans.get_extension<MultimemExtension>() && !multimem_accepted(src, trans, m_reduce_bytes_per_s, ~std::uint32_t(0))) return tlm::TLM_COMPLETED;
        // flow.issue: gates times the GPU's issue of its posted writes (flow_issue.cpp) and tells it
        // when each is issued; queue leaves that to the GPU (at once) and queues writes per link.
        if (FlowExtension* e = trans.get_extension<FlowExtension>(); e && e->tell_sent) {
            e->tell_sent = m_issue_gates;
            e->will_tell = m_issue_gates;
        }
        if (delay != sc_core::SC_ZERO_TIME) {
            // The request begins when its annotation says (a phase takes effect that long after the call),
            // and a flow starts when its first byte may leave: the flow and its END_REQ wait till then.
            m_actions.push(now_ps() + delay.value(), {ActionKind::Begin, src, std::uint32_t(dst), &trans});
            return tlm::TLM_ACCEPTED;
        }
        start_flow(src, std::uint32_t(dst), trans);
        phase = tlm::END_REQ;  // a flow enters at once; its rate says how fast it leaves
        return tlm::TLM_UPDATED;
    }
    if (phase == tlm::END_RESP) {
        m_turns.response_ended(*this, src, trans, now_ps() + delay.value());
        return tlm::TLM_COMPLETED;
    }
    errors().report(ErrorKind::ModelError, std::string(name()) + ".targets: illegal phase on the forward path");
    return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum FlowFabric::response(std::uint32_t dst, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                        sc_core::sc_time& delay) {
    return m_turns.backward(*this, dst, trans, phase, delay);
}

// A target's answer at `at`: its last packet's response crosses the reverse route at zero load
// (a read's carries the data of its last packet; the bandwidth of the rest was the flow's).
void FlowFabric::answered(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src, std::uint64_t at) {
    if (src == ports()) {  // a member answered the switch's NVLS unit
        nvls_answered(dst, trans, at);
        return;
    }
    // Only a read's data may have waited for its first answer: a write's extension is not looked up (a cold line
    // at 1,024 GPUs).
    if (FlowExtension* ext = trans->is_read() ? trans->get_extension<FlowExtension>() : nullptr; ext && ext->streamed) {
        read_half_in(dst, trans, *ext, src, at);
        return;
    }
    book_return(dst, trans, src, at);
}

void FlowFabric::book_return(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src, std::uint64_t at) {
    const std::uint64_t bytes = trans->get_data_length();
    std::uint32_t packets, packet_bytes;
    packets_of(*trans, bytes, packets, packet_bytes);
    const std::uint64_t last = bytes - std::uint64_t(packets - 1) * packet_bytes;
    const bool read = trans->is_read();
    // A read's data waits in its requester's incast queue, if it has one, as a write's does at its target.
    const std::uint64_t wait = read ? queue_wait_ps(m_routes[route_index(dst, src)].incast) : 0;
    const std::uint64_t back = at + zero_load_ps(dst, src, read ? last : 0, !read) + wait;
    m_actions.push(std::max(back, now_ps()), {ActionKind::Return, src, 0, trans});
}

// A read of more than one packet from an eidolon GPU (which tells its memory's turnaround): its first request
// reaches the target at the route's zero-load latency, the target has the whole read then (its memory streams the
// bytes out at its bandwidth, beside its other accesses: FlowExtension::streamed), and the data's flow starts a
// turnaround later, when the first answer would leave. Why: as one flow from its start, its data shared the links
// back from the moment it was asked for, and its request's trip and the memory's time came after the flow, in
// series: a write into the same GPU lost the link to data not yet read (a 1 MiB read and write into one GPU of
// switch-8gpu, +13.2%). Alone it takes as long either way: the latency moves from after the flow to before it.
void FlowFabric::read_after_first_answer(std::uint32_t id) {
    Flow& f = m_flows[id];
    const std::uint64_t there = now_ps() + zero_load_of(f, 0, false);
    f.ext->streamed = true;  // the target reads this, not first_ps (finish does not set that for such a read)
    f.ext->fabric_half_ps = kNoHalf;
    m_actions.push(there, {ActionKind::Deliver, f.dst, f.src, f.trans});
    m_actions.push(there + f.ext->turnaround_ps, {ActionKind::ReadData, id, 0, nullptr});
}

// One of a streamed read's two ends, at `at`: its target's answer, or its data's last packet leaving the target
// (finish). The later of the two books its return.
void FlowFabric::read_half_in(std::uint32_t dst, tlm::tlm_generic_payload* trans, FlowExtension& ext, std::uint32_t src,
                              std::uint64_t at) {
    if (ext.fabric_half_ps == kNoHalf) {
        ext.fabric_half_ps = at;
        return;
    }
    book_return(dst, trans, src, std::max(at, ext.fabric_half_ps));
}

void FlowFabric::forward_b_transport(std::uint32_t src, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    if (trans.get_extension<MultimemExtension>()) {  // the NVLS unit serves the AT path only (an eidolon GPU is AT)
        report_port_error("targets", src, "a multimem access over b_transport (LT); NVLS needs AT");
        trans.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
        return;
    }
    const std::int64_t dst = decode(trans.get_address());
    if (dst < 0) {
        trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    const std::uint64_t len = trans.get_data_length();
    // A transaction of its own is a message: the sending NIC's processing, as on the AT path.
    delay += ps_to_time(zero_load_ps(src, std::uint32_t(dst), trans.is_write() ? len : 0, false, true));
    initiators[std::uint32_t(dst)]->b_transport(trans, delay);
    delay += ps_to_time(zero_load_ps(std::uint32_t(dst), src, trans.is_read() ? len : 0, trans.is_write()));
}

unsigned int FlowFabric::forward_debug(tlm::tlm_generic_payload& trans) {
    const std::int64_t dst = decode(trans.get_address());
    return dst < 0 ? 0 : initiators[std::uint32_t(dst)]->transport_dbg(trans);
}

// ---- flows ------------------------------------------------------------------------------------

// A new flow: its weight on every resource it uses, per payload byte.
//   - a write puts (payload + a header per packet) on each forward link and an acknowledgement
//     per packet on each reverse link; a read a header per packet forward and (payload + headers)
//     back; with routing.spread, each link gets its share of the packets;
//   - the GPU ports, where limited, the same as the first and last links;
//   - the source's window (max_outstanding, when the GPU sends flows): one packet holds a slot
//     for its zero-load round trip, so packets in flight = rate / packet x round trip.
std::uint32_t FlowFabric::new_flow() {
    if (m_free_flows.empty()) {
        m_flows.emplace_back();
        m_next_version.push_back(0);
        return std::uint32_t(m_flows.size() - 1);
    }
    const std::uint32_t id = m_free_flows.back();
    m_free_flows.pop_back();
    return id;
}

void FlowFabric::start_flow(std::uint32_t src, std::uint32_t dst, tlm::tlm_generic_payload& trans) {
    const std::uint32_t id = new_flow();
    Flow& f = m_flows[id];
    f = Flow{};
    f.trans = &trans;
    f.src = src;
    f.dst = dst;
    // Both looked up before anything holds a reference into m_routes: a new route may move it.
    f.route = route_index(src, dst);
    f.back = route_index(dst, src);
    f.bytes = trans.get_data_length();
    f.read = trans.is_read();
    packets_of(trans, f.bytes, f.packets, f.packet_bytes);
    f.arrived_ps = now_ps();
    f.multimem = trans.get_extension<MultimemExtension>();
    f.ext = trans.get_extension<FlowExtension>();
    if (f.ext) {
        f.window = f.ext->window;
        f.workgroup = f.ext->workgroup;
    }
    f.sends = f.window > 0 && !f.read && !f.multimem;
    if (f.ext && f.ext->tell_sent) {
        // A copy within the GPU, or a flag-sized write (timed alone, outside the send rates): issued once
        // its flow has run (finish).
        if (src != dst && !(f.bytes <= kFlagBytes && f.packets == 1)) issue_write(id);
        else f.telling = true;
    }
    if (m_mtu) f.framing = message_framing(trans, m_mtu);
    // A write waits behind the writes its GPU issued before on that link. A multimem access does
    // not: its GPU issues it packet by packet, round robin with its other workgroups' packets.
    if (f.telling) {  // its GPU's issue and output queue are modelled (flow_issue.cpp): it goes at once
        if (f.queued && park(id)) return;  // behind its workgroup's write on its output (flow_issue.cpp)
        activate(id);
        return;
    }
    if (f.read && f.ext && f.packets > 1 && src != dst && !f.multimem) {
        read_after_first_answer(id);
        return;
    }
    if (f.ext && f.ext->signal && f.packets == 1 && src != dst && m_issuers[src].used) {
        // A signal of such a GPU: one more packet in its round robin, behind what its gates hold.
        m_actions.push(f.arrived_ps, {ActionKind::Slip, id, 0, nullptr});
        return;
    }
    if (!f.read && src != dst && !f.multimem) {
        // The queue is the source's to this destination on its first link (Injection); the pair's
        // route remembers it, so the map is looked up once per pair, not per write.
        const std::uint32_t r = f.route;
        if (m_routes[r].injection < 0) {
            const std::uint64_t link = std::uint64_t(src) * m_topology->links().size() + m_routes[r].path[0];
            auto [it, fresh] = m_injection_index.try_emplace(link * ports() + dst, std::uint32_t(m_injection.size()));
            if (fresh) {
                m_injection.emplace_back().first_link = m_routes[r].path[0];
                if (m_injection_of_gpu.size() <= src) m_injection_of_gpu.resize(std::size_t(src) + 1);
                m_injection_of_gpu[src].push_back(it->second);
            }
            m_routes[r].injection = std::int32_t(it->second);
        }
        f.queue = m_routes[r].injection;
        Injection& q = m_injection[std::size_t(f.queue)];
        if (q.active && (q.active_since != f.arrived_ps || !q.waiting.empty())) {
            const FlowExtension* ext = f.ext;
            if (ext && ext->signal && f.packets == 1 && own_backlog(q, f.workgroup)) {
                // A signal behind its own workgroup's flows: it slips in behind their backlog,
                // outside the queue (slip_at). When, is worked out once the flows ahead have
                // their rates, after this time step's solve (booked before this action, so it
                // runs first).
                f.behind = f.queue;
                f.queue = -1;
                m_actions.push(f.arrived_ps, {ActionKind::Slip, id, 0, nullptr});
                return;
            }
            if (!shares_window_turns(f)) {
                q.waiting.push_back(id);
                return;
            }
            // The window binds: each workgroup's first write waiting here goes now, beside the earlier ones, and
            // this one if its workgroup has none sending here; the rest follow their workgroup's (take_turns).
            take_turns(q);
            if (!has_turn(q, id)) {
                q.waiting.push_back(id);
                return;
            }
        }
        ++q.active;
        q.active_ids.push_back(id);
        q.active_since = f.arrived_ps;
    }
    activate(id);
}

// The writes waiting in queue `q` whose workgroup has none sending there go now, in their order. Why per
// workgroup: the packet GPU's round robin gives its workgroups, not their writes, a turn each, and a workgroup
// issues its writes one after another. Every waiting write going at once gave a workgroup with many writes to
// one GPU a share for each: on 24 dgx-h100-rail GPUs (flow.issue: queue, rail.pxn) a ring's writes to the next
// GPU of node 2, up to eight per channel, took the NVLink from the few channels forwarded through it to
// node 0, whose NIC then idled: a 64 MiB all-reduce read 434.3 us against the packet fabric's 408.6 (+6.3%;
// +15% at 128 MiB).
void FlowFabric::take_turns(Injection& q) {
    for (std::size_t k = 0; k < q.waiting.size();) {
        const std::uint32_t w = q.waiting[k];
        if (!has_turn(q, w)) {
            ++k;
            continue;
        }
        activate_waiting(q, k);
    }
}

// Whether write `id` of queue `q` may send beside the active writes: none of them is its workgroup's (a write
// without a GPU's flow extension has no workgroup, and always may).
bool FlowFabric::has_turn(const Injection& q, std::uint32_t id) const {
    const Flow& f = m_flows[id];
    if (!f.ext) return true;
    return std::none_of(q.active_ids.begin(), q.active_ids.end(), [&](std::uint32_t a) {
        const Flow& g = m_flows[a];
        return g.ext && g.workgroup == f.workgroup;
    });
}

// Whether write `f`, issued to a GPU that its GPU is already writing to on that link, goes beside the earlier
// writes there rather than behind them (flow.issue: queue). The packet GPU issues a write's packets at once as far
// as its window (max_outstanding packets) lets it, so a write issued after another to the same GPU sits behind it
// in the injection queue: first come, first served. Once the window binds, though, its slots come back one at a
// time and its round robin hands them to its workgroups in turn, so the later write takes its turns beside the
// earlier one, and two workgroups writing to one GPU get two turns where a workgroup writing elsewhere gets one.
// Served first come, first served, that GPU's bytes got one share of the link until the earlier write ended and
// then went alone at the end: an all-to-all over two rail nodes whose workgroups 0-3 start 1 ns late took +20% on
// dgx-h100-rail and mi300x-rail, -3.2% and -1.9% so (test_flow_validation.py, ..._over_two_nodes_as_shipped).
// Only where the GPU also writes to another GPU through the same link (a write of more than one packet): a GPU
// whose writes all go to one GPU on that link moves the same bytes over the same links either way, and there the
// calibrated rings reach their measured plateaus only first come, first served (the channels' writes served
// together run in step and their fences idle the link together: "A queue per destination" in docs/fabrics.md).
bool FlowFabric::shares_window_turns(const Flow& f, bool waiting) const {
    // A signal (one packet) stays behind: the writes it follows in the queue stand for the round robin that made its
    // own write end late with theirs (the Injection bullet of docs/fabrics.md).
    if (f.window == 0 || !f.ext || f.packets < 2 || f.src >= m_injection_of_gpu.size()) return false;
    const std::uint64_t now = now_ps();
    const double window = double(f.window) * double(f.ext->packet_bytes);
    const std::uint32_t link = m_injection[std::size_t(f.queue)].first_link;
    double held = waiting ? 0.0 : double(f.bytes);  // issued and not yet answered, this write's included (a
                                                    // waiting one is among the waiting writes counted below)
    bool elsewhere = false;         // a write to another GPU through the same link
    for (std::uint32_t qi : m_injection_of_gpu[f.src]) {
        const Injection& q = m_injection[qi];
        for (std::uint32_t a : q.active_ids) {
            const Flow& g = m_flows[a];
            const Outstanding o = outstanding(g, now);
            held += o.unsent + o.unanswered;
            elsewhere = elsewhere || (std::int64_t(qi) != f.queue && q.first_link == link && g.packets > 1);
        }
        for (std::uint32_t w : q.waiting) held += double(m_flows[w].bytes);
        if (elsewhere && held > window) return true;
    }
    return false;
}

// Active write `g`'s bytes at `now` that its GPU has issued and not had answered: those still to send (in its
// injection queue), and those sent and not yet answered (its rate times its round trip, at most what it has sent).
FlowFabric::Outstanding FlowFabric::outstanding(const Flow& g, std::uint64_t now) const {
    if (g.rate == FlowSolver::kUnlimited) return {};
    const double unsent = g.unsent_at(now);
    return {unsent, std::min(g.rate * double(g.round_trip_ps) * 1e-12, std::max(0.0, double(g.bytes) - unsent))};
}

// Whether all the flows in queue `q` come from workgroup `wg` and have a window (FlowExtension).
// Why only then does a signal slip past them: a workgroup's writes go out one after another
// whole in the packet fabric too, so its signal is behind them only as far as the window lets
// them be issued. Other workgroups' writes the packet fabric's GPU issues round robin with the
// signal's own write, which so ends late, with them; the flow fabric sends writes first come
// first served, the signal's own write early, and keeps its signal behind the others instead.
bool FlowFabric::own_backlog(const Injection& q, std::uint32_t wg) const {
    auto own = [&](std::uint32_t id) {
        const Flow& g = m_flows[id];
        return g.trans && g.window > 0 && g.workgroup == wg;
    };
    return std::all_of(q.active_ids.begin(), q.active_ids.end(), own) && std::all_of(q.waiting.begin(), q.waiting.end(), own);
}

// Signal `id`, issued behind an injection queue's flows, goes once the backlog ahead of it is sent.
void FlowFabric::slip(std::uint32_t id) {
    Flow& f = m_flows[id];
    const std::uint64_t now = now_ps();
    if (f.slip_ps == 0) {
        if (m_solve_at == now && !f.slip_waited) {  // the flows ahead have no rates yet: after the solve
            // Once: the solve booked then runs before it, and any solve booked later is for flows that
            // came after it (other signals going now). Waiting again for each of those would take the
            // signals of a time step one solve each, every one re-rating every flow (a 64 KiB direct
            // all-reduce on torus2d-16gpu: 11 million events and nearly ten minutes).
            f.slip_waited = true;
            m_actions.push(now, {ActionKind::Slip, id, 0, nullptr});
            return;
        }
        if (m_issuers[f.src].used) {  // behind what its output queue holds (flow_issue.cpp)
            if (queue_signal(id)) return;
            f.slip_ps = now;
        } else {
            f.slip_ps = std::max<std::uint64_t>(now, slip_at(m_injection[std::size_t(f.behind)]));
        }
        if (f.slip_ps > now) {
            m_actions.push(f.slip_ps, {ActionKind::Slip, id, 0, nullptr});
            return;
        }
    }
    activate(id);
}

// When a signal issued now behind queue `q`'s flows leaves. The packet fabric's GPU issues a
// signal (a release held for its acknowledgements, or a flag) as one packet in its round robin,
// between a write's packets; it then waits in the injection queue behind the packets issued
// before it: what is left of the writes issued before it on that link (the active flows and those
// waiting behind them), but at most the GPU's window (max_outstanding packets of max_payload) less
// what is further on, sent and not yet answered: per flow its rate times its round trip, at most
// what it has sent. That backlog drains at the active flows' rates.
std::uint64_t FlowFabric::slip_at(const Injection& q) const {
    const std::uint64_t now = now_ps();
    double ahead = 0, rate = 0, beyond = 0, window = 0;
    for (std::uint32_t a : q.active_ids) {
        const Flow& g = m_flows[a];
        if (g.rate == FlowSolver::kUnlimited) continue;
        const Outstanding o = outstanding(g, now);
        ahead += o.unsent;
        beyond += o.unanswered;
        rate += g.rate;
        if (g.window > 0) window = std::max(window, double(g.window) * double(g.ext->packet_bytes));
    }
    for (std::uint32_t w : q.waiting) ahead += double(m_flows[w].bytes);  // issued too, as far as the window goes
    if (!(rate > 0)) return now;
    const double backlog = std::min(ahead, std::max(0.0, window - beyond));
    return now + std::uint64_t(std::ceil(backlog * 1e12 / rate));
}

// A write that left its injection queue: the writes issued next start when none is left before them.
void FlowFabric::sent(std::uint32_t id) {
    const Flow& f = m_flows[id];
    if (f.queue < 0) return;
    Injection& q = m_injection[std::size_t(f.queue)];
    q.active_ids.erase(std::find(q.active_ids.begin(), q.active_ids.end(), id));
    if (--q.active && !q.waiting.empty() && f.ext) {
        // Its workgroup's next write here takes its turn beside the others while the window binds.
        for (std::size_t k = 0; k < q.waiting.size(); ++k) {
            const std::uint32_t w = q.waiting[k];
            const Flow& g = m_flows[w];
            if (!g.ext || g.workgroup != f.workgroup) continue;
            if (shares_window_turns(g, true)) activate_waiting(q, k);
            break;
        }
    }
    if (q.active || q.waiting.empty()) return;
    q.active_since = m_flows[q.waiting.front()].arrived_ps;
    while (!q.waiting.empty() && m_flows[q.waiting.front()].arrived_ps == q.active_since) activate_waiting(q);
}

// The `k`-th write waiting in queue `q` (the first by default) becomes one of its active writes and starts sending.
void FlowFabric::activate_waiting(Injection& q, std::size_t k) {
    const std::uint32_t next = q.waiting[k];
    if (k == 0) q.waiting.pop_front();
    else q.waiting.erase(q.waiting.begin() + k);
    ++q.active;
    q.active_ids.push_back(next);
    activate(next);
}

// Flow `id` starts sending: its weights on the links, ports and windows it uses.
void FlowFabric::activate(std::uint32_t id) {
    Flow& f = m_flows[id];
    const std::uint32_t src = f.src, dst = f.dst;
    f.start_ps = f.anchor_ps = now_ps();
    const double payload = double(std::max<std::uint64_t>(f.bytes, 1));
    f.remaining = payload;

    m_uses.clear();
    m_paced.clear();
    auto use = [&](std::uint32_t resource, double weight, bool response = false) {
        add_use(resource, weight, response && m_responses_first);
    };
    auto pace = [&](std::uint32_t resource, double weight, double per_packet) { add_pace(resource, weight, per_packet); };
    if (f.multimem) {
        std::uint64_t round_trip = 0;
        nvls_uses(f, round_trip);
        launch(id, round_trip);
        return;
    }
    const double n = double(f.packets), data = double(f.bytes);
    std::uint64_t round_trip = 0;
    if (src != dst) {
        const std::uint32_t window = f.window;
        const std::uint64_t turnaround = window ? f.ext->turnaround_ps : 0;
        const std::uint32_t ri = f.route;
        if (m_activations.size() < 2 * std::size_t(m_routes.size())) m_activations.resize(2 * m_routes.size());
        // The queue its payload meets, if any: a write's at its target, a read's data at its requester. Why the
        // read's: its data into a GPU whose link also feeds a queue took the link max-min while the queue drained
        // at what was left, 0.1% of it: a 64 KiB write behind a 64 KiB read on hierarchical-16gpu took 1.75 ms.
        f.incast = f.read ? m_routes[f.back].incast : m_routes[ri].incast;
        Activation* const pair = &m_activations[2 * std::size_t(ri)];
        for (std::uint8_t k = 0; k < 2; ++k)
            if (const Activation& memo = pair[k]; memo.same(f, window, turnaround)) {
                pair[0].newer = k;
                m_uses = memo.uses;
                m_paced = memo.paced;
                f.incast_weight = memo.incast_weight;
                launch(id, memo.round_trip);
                return;
            }
        const std::uint32_t incast_link = f.incast >= 0 ? m_incasts[std::size_t(f.incast)].link : ~0u;
        double incast_weight = 0;
        const std::uint64_t packet = std::min<std::uint64_t>(f.packet_bytes ? f.packet_bytes : f.bytes, f.bytes);
        auto credits = [&](std::uint64_t wire) {
            return double(m_credit_bytes ? std::max<std::uint64_t>(1, (wire + m_flit - 1) / m_flit) : 1);
        };
        // The payload-free direction is served first (flow.responses: first): a read's requests, and a write's
        // acknowledgements while they are smaller than its packets. Why the bound: served first stands for the
        // routers' turns in bytes letting a short packet past a long one; an acknowledgement as long as the packet
        // it answers gets no such precedence, and served first would then have no one answer (two writes crossing,
        // each one's acknowledgements taking all of the link the other's data needs: one flow starved, or none
        // moving). tests/python/test_flow_validation.py, ..._acknowledgements_as_long_as_the_packets.
        const bool acks_first = !f.read && port_ack_wire() < packet + m_header;
        // A framed link (rail NICs and network) carries the NIC's headers per network packet of
        // the message rather than a header per GPU packet; its packets' wire size is their mean.
        const Route& there = m_routes[ri];
        for (std::size_t k = 0; k < there.links.size(); ++k) {  // no route is built in this loop: the reference holds
            const auto [link, share] = there.links[k];
            const TopoLink& l = m_topology->links()[link];
            const double headers = link_headers(f.framing, f.read, n, l, true);
            const std::uint64_t wire = (f.read ? 0 : packet) + std::uint64_t(std::ceil(headers / n));
            // rail: the sending NIC's processing time of a message holds its link to the rail switch.
            const double overhead = l.nic_out && f.framing.first ? double(m_message_ps) * 1e-12 * l.bytes_per_s : 0;
            if (link == incast_link) {  // its queue's arrivals, through its gate, not the link (flow_incast.cpp)
                incast_weight = share * ((f.read ? 0 : data) + headers + overhead) / payload;
                use(m_incasts[std::size_t(f.incast)].gate, incast_weight);
                continue;
            }
            use(link, share * ((f.read ? 0 : data) + headers + overhead) / payload, f.read);
            // A read's requests are served first on the channels of their route, as on the links: a credit each but no
            // payload, the routers' turns in bytes let them past the writes' packets. Served first, nothing holds them
            // back there, so only where the buffer covers a credit round trip at the link's rate in answer packets: a
            // read's requests go at its answers' rate, which the links back bound. Why: a write into a GPU that a
            // read empties (switch-8gpu, 1 MiB each way) lost the link into that GPU to the read's requests for
            // 2.5 us on the packet fabric, -24.9% against it while both flows left that channel out (decide_bursts);
            // a 64 KiB read and write on mesh2d-16gpu whose requests and data share a channel on the way, -21.8%
            // with requests first only into their target (scripts/compare_fabrics.py --seed 9 --case 32). Not the
            // acknowledgements, which no answer bounds: on a ring's links two writes' acknowledgements, each served
            // first, overran the 64 credits they share and both ran at the full link (seed 9 case 49, -1.2% ->
            // -30.4%), and served first only on the channel into their writer they put seed 13 case 89 from -8.8% to
            // -47%. The solver would need flows served first to share a resource once they alone fill it.
            pace_credits(link, 0, there.half(k), dst, share, n * credit_seconds(l, wire) / payload, credits(wire),
                         f.read && credits_cover(l, wire, packet + l.header));
        }
        const Route& back = m_routes[f.back];
        for (std::size_t k = 0; k < back.links.size(); ++k) {
            const auto [link, share] = back.links[k];
            const TopoLink& l = m_topology->links()[link];
            const double headers = link_headers(f.framing, f.read, n, l, false);
            const std::uint64_t wire = (f.read ? packet : 0) + std::uint64_t(std::ceil(headers / n));
            if (link == incast_link) {  // a read's data, through its requester's queue
                incast_weight = share * (data + headers) / payload;
                use(m_incasts[std::size_t(f.incast)].gate, incast_weight);
                continue;
            }
            use(link, share * ((f.read ? data : 0) + headers) / payload, acks_first);
            pace_credits(link, 1, back.half(k), src, share, n * credit_seconds(l, wire) / payload, credits(wire), false);
        }
        const double req = ((f.read ? 0 : data) + n * m_header) / payload;
        const double resp = (f.read ? data + n * m_header : n * port_ack_wire()) / payload;
        if (m_inject[2 * src] >= 0) use(std::uint32_t(m_inject[2 * src]), req, f.read);
        if (m_inject[2 * dst + 1] >= 0) use(std::uint32_t(m_inject[2 * dst + 1]), resp, acks_first);
        if (m_eject[2 * dst] >= 0 && (f.read || f.incast < 0)) use(std::uint32_t(m_eject[2 * dst]), req, f.read);
        if (m_eject[2 * src + 1] >= 0 && !(f.read && f.incast >= 0)) use(std::uint32_t(m_eject[2 * src + 1]), resp, acks_first);
        round_trip = zero_load_on(f.route, f.read ? 0 : packet, false) + zero_load_on(f.back, f.read ? packet : 0, !f.read);
        if (window) {
            // The GPU's window: packets in flight, rate / packet x round trip, at most `window`.
            round_trip += turnaround;
            pace(window_resource(src, window), n * double(round_trip) * 1e-12 / payload, 1.0);
        }
        const std::uint8_t older = std::uint8_t(1 - pair[0].newer);  // the pair's least recently used answer
        pair[0].newer = older;
        Activation& memo = pair[older];
        memo.bytes = f.bytes;
        memo.packet_bytes = f.packet_bytes;
        memo.turnaround_ps = turnaround;
        memo.packets = f.packets;
        memo.window = window;
        memo.framing = f.framing;
        memo.read = f.read;
        memo.uses = m_uses;
        memo.paced = m_paced;
        memo.round_trip = round_trip;
        memo.incast_weight = f.incast_weight = incast_weight;
    }
    launch(id, round_trip);
}

// The NIC frames a message (message_extension.h): its data in network packets of one MTU, each
// with the NIC's header (l.header on a framed link); a read request, and a write's acknowledgement,
// as one network packet per message (the message's first, respectively last, transaction).
double FlowFabric::framed_header(const MessageFraming& m, bool read, const TopoLink& l, bool forward) const {
    const bool data = forward != read;
    if (data) return double(m.frames) * l.header;
    return (forward ? m.first : m.last) ? double(l.header) : 0.0;
}

// Elsewhere a header per packet carrying data or a request, and an acknowledgement per packet answered.
double FlowFabric::link_headers(const MessageFraming& m, bool read, double packets, const TopoLink& l,
                                bool forward) const {
    if (l.framed) return framed_header(m, read, l, forward);
    return packets * (forward || read ? l.header : ack_wire(l));
}

// Flow `id` into the solver over `uses`, coupled to the writes in its injection queue (injection_key).
void FlowFabric::add_to_solver(std::uint32_t id, const std::vector<FlowSolver::Use>& uses) {
    const Flow& f = m_flows[id];
    m_solver.add_coupled_flow(id, uses, f.queued, injection_key(f));
}

// The key that couples write `f` to the other writes its GPU sends through the same output link (0: none), with
// flow.injection: blocking. The packet GPU has one injection queue per output link (and class), which its round
// robin fills with its writes' packets interleaved, and which sends in order: a head packet held for credits at
// the next switch holds every packet behind it, so once a write's backlog there fills its channel the GPU's
// writes through that link go at its rate. A write no longer than that channel's buffer never fills it and is
// left free. Why: on custom-4gpu, a write across the switches' 32 GB/s link held GPU 1's write to a GPU on its own
// switch to its rate on the packet fabric, where the fluid let that one go at the full link and ended 25% early
// (test_flow_validation.py, ..._held_by_a_slower_link_further_on); over the random mixes of
// scripts/compare_fabrics.py, the flow fabric's errors past -5% went from 45 to 39 of 1,050 cases. Reads are not
// coupled (their data leave the target in its response class): no measured case moved with them.
std::uint64_t FlowFabric::injection_key(const Flow& f) const {
    if (!m_injection_blocking || f.read || f.multimem || f.src == f.dst) return 0;
    const Route& route = m_routes[f.route];
    if (route.path.empty()) return 0;
    const std::uint32_t first = route.path[0];
    const double per_credit = m_credit_bytes ? double(m_flit) : double(f.packet_bytes + m_header);
    if (double(f.bytes) <= double(m_credits) * double(m_topology->links()[first].lanes) * per_credit) return 0;
    // Tagged (queued) writes and the others are apart: a group is one or the other.
    return 1 + ((std::uint64_t(f.src) << 32) | first) * 2 + (f.queued ? 1 : 0);
}

void FlowFabric::add_use(std::uint32_t resource, double weight, bool first) {
    for (FlowSolver::Use& u : m_uses)
        if (u.resource == resource) {
            u.weight += weight;
            u.first = u.first && first;  // served first only if all of it is
            return;
        }
    m_uses.push_back({resource, weight, first});
}

// The credits a flow's packets take on `link` in class `cls` (0: requests, 1: responses) on their way to GPU `to`,
// `share` of them there, each `weight` (credit-seconds per payload byte) and `per_packet` credits. With
// switch.vcs 0 the packet fabric gives every output of the link's receiving router a channel of its own
// (virtual output queues), so the flows bound for different outputs do not share credits: a channel per
// (link, class, next output) here too, made on first use, the share split as the route splits there. Why: one
// pool per link held the flows that fan out to its credits together; on torus2d-16gpu's and mesh2d-16gpu's
// shipped 64-packet buffers, random mixes of writes and reads came out up to +94% against the packet fabric,
// and alike with buffers too deep to bind (test_flow_validation.py, ..._fan_out_...).
void FlowFabric::pace_credits(std::uint32_t link, std::uint32_t cls, std::uint32_t half, std::uint32_t to, double share,
                              double weight, double per_packet, bool first) {
    first = first && m_responses_first;
    if (!m_voq_credits) {
        add_pace(m_credit_base + 2 * (half * std::uint32_t(m_topology->links().size()) + link) + cls, share * weight,
                 share * per_packet, first);
        return;
    }
    const std::uint32_t node = m_topology->links()[link].dst;
    if (node == to) {  // into the GPU: its ejection's channel
        add_pace(credit_channel(link, 2 * half + cls, 0), share * weight, share * per_packet, first);
        return;
    }
    std::uint32_t n = 0;
    const std::uint32_t* choices = m_topology->next(node, to, n);
    const std::uint32_t used = choices_used(n);
    for (std::uint32_t k = 0; k < used; ++k)
        add_pace(credit_channel(link, 2 * half + cls, 1 + choices[k]), share * weight / used,
                 share * per_packet / used, first);
}

// The solver resource of channel `slot` (0: the ejection, 1 + l: towards link l) of `link`'s channel group
// `group` (2 x dateline half + class).
std::uint32_t FlowFabric::credit_channel(std::uint32_t link, std::uint32_t group, std::uint32_t slot) {
    const std::uint64_t key = ((std::uint64_t(link) * 4 + group) << 32) | slot;
    std::uint32_t resource = m_credit_channels.find(key);
    if (resource == FlatIndex::kAbsent) {
        resource = m_solver.add_resource(double(m_credits) * double(m_topology->links()[link].lanes));
        m_credit_channels.insert(key, resource);
    }
    return resource;
}

void FlowFabric::add_pace(std::uint32_t resource, double weight, double per_packet, bool first) {
    for (Paced& p : m_paced)
        if (p.resource == resource) {
            p.weight += weight;
            p.per_packet += per_packet;
            p.first = p.first && first;
            return;
        }
    m_paced.push_back({resource, weight, per_packet, first});
}

// Flow `id` with its uses (m_uses) and windows (m_paced) gathered: the packets there is room for
// in the windows go as a burst, the rest paced; `round_trip` is how long a packet holds its room.
// Which burst, is decided once every flow launched in this instant is known (decide_bursts).
void FlowFabric::launch(std::uint32_t id, std::uint64_t round_trip) {
    Flow& f = m_flows[id];
    f.round_trip_ps = round_trip;
    if (f.incast >= 0 && f.window > 0) stretch_window(f.src, round_trip, incast_wait_ps(f));
    for (std::uint32_t r = std::uint32_t(m_windows.size()); r < m_solver.resources(); ++r)
        m_windows.push_back(Window{0.0, m_solver.capacity(r)});
    // A flag is timed alone (timed_alone) unless a small window it needs is full: a window of
    // kLargeWindow packets or more is filled by data, beside which one flag's slot is nothing
    // (so it is neither waited for nor held), but a small one (a credit-starved buffer) may be
    // filled by flags as much as by data (so a flag waits for room there, and holds it).
    bool alone = f.bytes <= kFlagBytes && f.packets == 1 && !f.multimem && !(m_message_ps && f.framing.first);
    bool small = false;
    for (const Paced& p : m_paced) {
        if (!(p.per_packet > 0)) continue;
        const Window& w = m_windows[p.resource];
        if (p.per_packet * kLargeWindow > w.capacity) {
            small = true;
            if (w.capacity - m_solver.load(p.resource) - w.held < p.per_packet) alone = false;
        }
    }
    if (alone && !small) {  // only large windows: no wait for room, and nothing held
        timed_alone(id);
        return;
    }
    if (alone) {  // a small window had room: the flag holds it for its round trip
        start_burst(id, 1);
        timed_alone(id);
        return;
    }
    if (m_paced.empty()) {  // no window: all at the solver's rate
        add_to_solver(id, m_uses);
        schedule_solve();
        return;
    }
    m_pending.push_back(Pending{id, std::uint32_t(m_pending_uses.size()), std::uint32_t(m_uses.size()),
                                std::uint32_t(m_pending_paced.size()), std::uint32_t(m_paced.size())});
    m_pending_uses.insert(m_pending_uses.end(), m_uses.begin(), m_uses.end());
    m_pending_paced.insert(m_pending_paced.end(), m_paced.begin(), m_paced.end());
    schedule_solve();
}

// The bursts of the flows launched in this instant (m_pending): the windows' room now (what the
// paced flows hold, their load, and earlier bursts hold is taken) is shared among them as the
// packet GPU's round robin shares its free slots among the writes it has ready: each takes an
// equal share, a flow that needs less leaving the rest to the others (the smaller flows go first).
// Why not first come, first served: the first of two writes issued together took the whole room
// as its burst and the second was paced against the window's whole capacity, so for a round trip
// about twice the window was in flight (test_flow_validation.py, the outcast across the NIC).
void FlowFabric::decide_bursts() {
    const std::uint32_t count = std::uint32_t(m_pending.size());
    auto paced_of = [&](const Pending& p) {
        const Paced* first = m_pending_paced.data() + p.paced;
        return std::make_pair(first, first + p.n_paced);
    };
    // A buffer's credits whose room comes back faster than the flow's links could use it do not hold a burst back:
    // their share of the room, over the flow's weight there, is at least the rate its links allow it alone. Why: a
    // switch's buffer credits come back within a hop's round trip, while the burst's whole round trip (the GPU's
    // window: memory latency and the route there and back) is far longer. Limited by them, a 1 MiB write on
    // switch-8gpu with 5 us of memory latency burst only the 768 packets of its first hop's credits and sent the
    // rest paced by its GPU's window, a round trip's worth in a round trip: 16.3 us against the packet fabric's
    // 13.4 (+21.5%), which sends the window's 2,048 packets at the link's rate, then as many again as the
    // answers come in.
    m_pending_link_rate.resize(count);
    m_pending_order.resize(count);
    m_sharing.resize(m_windows.size(), 0);
    for (std::uint32_t i = 0; i < count; ++i) {
        m_pending_order[i] = i;
        const Pending& p = m_pending[i];
        double rate = FlowSolver::kUnlimited;
        for (std::uint32_t k = p.uses; k < p.uses + p.n_uses; ++k)
            if (const FlowSolver::Use& u = m_pending_uses[k]; u.weight > 0 && !u.first)
                rate = std::min(rate, m_solver.capacity(u.resource) / u.weight);
        m_pending_link_rate[i] = rate;
        const auto [first, last] = paced_of(p);
        for (const Paced* w = first; w != last; ++w)
            if (w->per_packet > 0) ++m_sharing[w->resource];
    }
    std::sort(m_pending_order.begin(), m_pending_order.end(), [&](std::uint32_t a, std::uint32_t b) {
        const std::uint32_t na = m_flows[m_pending[a].id].packets, nb = m_flows[m_pending[b].id].packets;
        return na != nb ? na < nb : a < b;  // then in launch order: deterministic
    });
    for (std::uint32_t i : m_pending_order) {
        const Pending& p = m_pending[i];
        const Flow& f = m_flows[p.id];
        const auto [first, last] = paced_of(p);
        double burst = double(f.packets);
        m_paced.assign(first, last);
        for (Paced& w : m_paced) {
            if (!(w.per_packet > 0)) continue;
            const Window& win = m_windows[w.resource];
            const double room = std::max(0.0, win.capacity - m_solver.load(w.resource) - win.held) /
                                double(m_sharing[w.resource]);
            --m_sharing[w.resource];
            if (!gpu_window(w.resource) && room >= m_pending_link_rate[i] * w.weight) {
                w.per_packet = 0;  // its share of the room keeps up with the links: it neither limits nor is held
                continue;
            }
            burst = std::min(burst, std::floor(room / w.per_packet + 1e-9));
        }
        m_uses.assign(m_pending_uses.begin() + p.uses, m_pending_uses.begin() + p.uses + p.n_uses);
        // A channel that neither limits the burst nor is held is still shared: it stays a plain use, so that the
        // flows on it together keep within its credits, and a read's requests' credits are served first there (see
        // activate). Why: left out, two flows that each kept up with a channel alone overran it together. A write
        // into a GPU that a read empties (switch-8gpu, 1 MiB each way) kept the whole link into that GPU, where the
        // packet fabric's read requests, a credit each and let past the write's packets by the routers' turns in
        // bytes, take most of its credits until they are through: the write ran at a third of the link for 2.5 us
        // there, -24.9% against it (test_flow_validation.py).
        std::size_t windows = 0;
        for (const Paced& w : m_paced) {
            if (w.per_packet > 0) m_paced[windows++] = w;  // a window that limits the burst (a GPU's always does)
            else add_use(w.resource, w.weight, w.first);
        }
        m_paced.resize(windows);
        start_burst(p.id, std::uint64_t(burst));
        add_to_solver(p.id, m_uses);
    }
    m_pending.clear();
    m_pending_uses.clear();
    m_pending_paced.clear();
}

// Flow `id` (its uses in m_uses, its windows in m_paced) sends `burst_packets` at once, holding
// their room in the windows for a round trip, and the rest paced by the windows.
void FlowFabric::start_burst(std::uint32_t id, std::uint64_t burst_packets) {
    Flow& f = m_flows[id];
    const double n = double(f.packets);
    auto hold = [&](double packets) {
        const std::uint32_t list = take_slot(m_holds, m_free_holds);
        for (const Paced& p : m_paced) {
            m_windows[p.resource].held += p.per_packet * packets;
            m_holds[list].emplace_back(p.resource, p.per_packet * packets);
        }
        f.holds = list;
    };
    if (burst_packets == 0) {  // all paced
        for (const Paced& p : m_paced) add_use(p.resource, p.weight, p.first);
    } else if (burst_packets >= f.packets) {  // all at once
        hold(n);
    } else {  // a burst of the packets there is room for, then the rest paced
        const std::uint64_t burst_bytes = burst_packets * f.packet_bytes;
        f.remaining = double(burst_bytes);
        f.paced_bytes = f.bytes - burst_bytes;
        f.paced = m_uses;
        for (const Paced& p : m_paced) {
            bool merged = false;
            for (FlowSolver::Use& u : f.paced)
                if (u.resource == p.resource) {
                    u.weight += p.weight;
                    u.first = u.first && p.first;
                    merged = true;
                }
            if (!merged) f.paced.push_back({p.resource, p.weight, p.first});
        }
        hold(double(burst_packets));
    }
}

// Flag `id` (a single packet of at most kFlagBytes; its uses in m_uses) ends at the rate its
// route would give it alone, outside the solver. Why: at scale most flows are flags (67% of them
// in NCCL's tree on 64 GPUs: credits, step counters, signals), and each one's start and end
// re-solved the flows sharing its links and rescheduled their finishes twice, for a share of under
// a nanosecond of link time. Its delivery does not depend on its rate (its only packet leaves when
// it starts and arrives a zero-load latency later); what it leaves out is the few wire bytes it
// would take from the others while it lasts, which still count in the links' bytes and busy time.
// launch() sends a flag here only where no small window is full, and keeps in the solver one that
// carries a NIC's message overhead (which holds the NIC's link for a whole message time) or is a
// multimem access (the switch's reduction engine is shared too).
void FlowFabric::timed_alone(std::uint32_t id) {
    Flow& f = m_flows[id];
    const std::uint64_t now = now_ps();
    double rate = FlowSolver::kUnlimited;
    const std::uint32_t links = std::uint32_t(m_links.size());
    for (const FlowSolver::Use& u : m_uses) {
        if (!(u.weight > 0)) continue;
        rate = std::min(rate, m_solver.capacity(u.resource) / u.weight);
        if (u.resource < links) {  // its wire time on the link, as the solver's load would have added
            settle_busy(u.resource, now);
            add_busy(u.resource, now, u.weight * f.remaining * 1e12);
        }
    }
    if (f.incast >= 0) {  // and on the link its incast queue stands in for (not among its uses), binned at the end:
        // settling the queue here would move it on at a time of its own, and the model with it
        const std::uint32_t link = m_incasts[std::size_t(f.incast)].link;
        m_late_busy.push_back({link, now, f.incast_weight * f.remaining * 1e12 / m_busy[link].bytes_per_s});
    }
    f.rate = rate;
    f.alone = true;
    const double left_ps = rate == FlowSolver::kUnlimited ? 0 : f.remaining * 1e12 / rate;
    book_finish(id, flag_start(f, now) + std::uint64_t(std::ceil(left_ps)));
}

// When flag `f`, timed alone from `now`, starts on its first link: once a lane of that link has sent the
// flags put on it before. Why: the packet GPU's flags leave one after another, a packet's wire time apart
// on a lane, so two workgroups' releases that leave the GPU's output queue in one instant reach their peer
// a packet apart, not together; on a SyncMon ring the second one's workgroup, woken a packet early, can
// put its next write ahead of a third one's release (hierarchical-16gpu's 1 MiB ring, 16 workgroups:
// -0.85% without this, +0.10% with it).
std::uint64_t FlowFabric::flag_start(const Flow& f, std::uint64_t now) {
    if (f.src == f.dst) return now;
    const std::uint32_t link = m_routes[f.route].path.front();
    const TopoLink& l = m_topology->links()[link];
    const auto lanes = m_flag_free.begin() + std::ptrdiff_t(m_busy[link].flag_lanes);
    const auto lane = std::min_element(lanes, lanes + std::ptrdiff_t(std::max<std::uint32_t>(1, l.lanes)));
    const std::uint64_t start = std::max(now, *lane);
    *lane = start + ser_ps(double(packet_wire(l, f.read ? 0 : f.bytes, false)), l.bytes_per_s);
    return start;
}

// Books flow `id`'s Finish at `at_ps` (the one standing, if any, no longer counts).
void FlowFabric::book_finish(std::uint32_t id, std::uint64_t at_ps) {
    Flow& f = m_flows[id];
    f.finish_ps = f.booked_ps = at_ps;
    m_actions.push(at_ps, {ActionKind::Finish, id, ++m_next_version[id], nullptr});
}

// Whether a channel of `l`'s credits holds a credit round trip of `small`-byte packets at the rate the link sends
// `big`-byte ones: then packets of one per `big` one sent back (a read's requests) cannot overrun it.
bool FlowFabric::credits_cover(const TopoLink& l, std::uint64_t small, std::uint64_t big) const {
    return double(m_credits) >= l.bytes_per_s * credit_seconds(l, small) / double(big);
}

// Credit-seconds a packet of `wire` bytes holds on link `l`'s receiving buffer: its credits for
// the zero-load credit round trip, serialisation + twice the link latency + the router latency.
double FlowFabric::credit_seconds(const TopoLink& l, std::uint64_t wire) const {
    const std::uint64_t credits = m_credit_bytes ? std::max<std::uint64_t>(1, (wire + m_flit - 1) / m_flit) : 1;
    const std::uint64_t round_trip = ser_ps(double(wire), l.bytes_per_s) + 2 * l.latency_ps + m_switch_latency_ps;
    return double(credits) * double(round_trip) * 1e-12;
}

std::uint32_t FlowFabric::window_resource(std::uint32_t gpu, std::uint32_t window) {
    if (m_window[gpu] < 0) {
        m_window[gpu] = m_solver.add_resource(double(window));
        m_window_gpu.resize(m_solver.resources(), -1);
        m_window_gpu[std::size_t(m_window[gpu])] = std::int32_t(gpu);
        m_window_full.resize(m_window.size());
    }
    return std::uint32_t(m_window[gpu]);
}

// GPU window `resource`'s full time up to `now`, before a solve changes its load.
void FlowFabric::settle_window(std::uint32_t resource, std::uint64_t now) {
    WindowFull& w = m_window_full[std::size_t(m_window_gpu[resource])];
    if (w.since == kNever) return;
    w.ps += now - w.since;
    w.since = kNever;
}

// Whether GPU window `resource` is full from `now`, after a solve changed its load: the flows it paces fill
// its capacity (the solver's load), so it is what holds them back, as the packet GPU's window is full with
// packets waiting to go. Not counted: bursts' held room beside paced flows that links hold back (mi300x-rail's
// 256 MiB reduce-scatter: full that way for 47% of the run, and no faster with the window lifted).
void FlowFabric::mark_window(std::uint32_t resource, std::uint64_t now) {
    const double load = m_solver.load(resource);
    if (load > 0 && load >= m_solver.capacity(resource) * (1 - 1e-6))
        m_window_full[std::size_t(m_window_gpu[resource])].since = now;
}

std::vector<std::uint64_t> FlowFabric::window_full_ps() const {
    std::vector<std::uint64_t> out(m_window.size(), 0);
    const std::uint64_t now = now_ps();
    for (std::size_t g = 0; g < m_window_full.size(); ++g)
        out[g] = m_window_full[g].ps + (m_window_full[g].since == kNever ? 0 : now - m_window_full[g].since);
    return out;
}

// Flows that start or end at the same time are solved once, after all of them.
void FlowFabric::schedule_solve() {
    const std::uint64_t now = now_ps();
    if (m_solve_at == now) return;
    m_solve_at = now;
    m_actions.push(now, {ActionKind::Solve, 0, 0, nullptr});
}

void FlowFabric::solve() {
    const std::uint64_t now = now_ps();
    m_solve_at = kNever;
    if (!m_pending.empty()) decide_bursts();
    if (m_solver.dirty()) solve_rates(now);
    // The GPUs whose send rate changed re-plan their issue (flow_issue.cpp).
    for (std::uint32_t g : m_dirty_issuers) {
        if (!m_issuers[g].dirty) continue;
        m_issuers[g].dirty = false;
        plan_issue(g);
    }
    m_dirty_issuers.clear();
}

void FlowFabric::solve_rates(std::uint64_t now) {
    const std::uint32_t links = std::uint32_t(m_links.size());
    m_solved_links.clear();
    m_solved_windows.clear();
    m_solver.solve([&](std::uint32_t r) {
                       if (r >= links) {
                           if (gpu_window(r)) {
                               settle_window(r, now);
                               m_solved_windows.push_back(r);
                           }
                           return;
                       }
                       settle_busy(r, now);
                       m_solved_links.push_back(r);
                   },
                   [&](std::uint32_t id) {
                       Flow& f = m_flows[id];
                       f.remaining = f.remaining_at(now);
                       f.anchor_ps = now;
                       set_rate(f, m_solver.rate(id));
                       // A queued write's last phase ends when its output queue has sent it (fifo_due), not
                       // at its own share's pace: no Finish to book (and re-book at every change of rate).
                       if (f.queued && !f.due && !f.paced_bytes && f.rate != FlowSolver::kUnlimited) {
                           ++m_next_version[id];
                           f.booked_ps = kNoFinish;
                           return;
                       }
                       const double left_ps = f.rate == FlowSolver::kUnlimited ? 0 : f.remaining * 1e12 / f.rate;
                       const std::uint64_t at = now + std::uint64_t(std::ceil(left_ps));
                       f.finish_ps = at;
                       if (f.booked_ps > at) book_finish(id, at);  // else the standing one re-books (finish)
                   });
    // The new loads of the links just solved: those of the changed components only, so a solve
    // costs what its components hold, not a walk over every link of the fabric.
    for (std::uint32_t r : m_solved_windows) mark_window(r, now);
    for (std::uint32_t l : m_solved_links) {
        if (m_incast_of_link[l] >= 0) reserve_incast(m_incasts[std::size_t(m_incast_of_link[l])], now);  // its load too
        else m_busy[l].load = binned_load(l);
    }
}

// A flow's last byte has left its source: its last packet started P / rate before (at once for a
// single packet) and is in at the target one zero-load latency after that. A burst's end starts
// the flow's paced phase instead.
void FlowFabric::finish(std::uint32_t id, std::uint32_t version) {
    // The rate changed since: a later Finish stands. Told by the dense version array, not the flow's
    // record: most Finish actions at scale are such stale ones (57% at 512 GPUs), and the record is
    // a cache miss each.
    if (m_next_version[id] != version || !m_flows[id].trans) return;
    Flow& f = m_flows[id];
    const std::uint64_t now = now_ps();
    if (f.finish_ps > now) {  // its rate fell since this was booked: on to the finish now due
        f.booked_ps = f.finish_ps;
        m_actions.push(f.finish_ps, {ActionKind::Finish, id, version, nullptr});
        return;
    }
    f.booked_ps = kNoFinish;
    // What its last bytes wait in its incast queue, if it has one: its burst's answers and its delivery come that
    // much later (nothing below moves the queue's backlog in this instant).
    const std::uint64_t queue_wait = incast_wait_ps(f);
    if (f.holds != kNoHolds) {  // the windows have the burst's room again once its packets are answered
        // Its packets' slots come back once they are answered: a round trip, and its queue's wait on the way.
        // Its answer may come in before that estimate (a small packet's memory time is less than a full one's,
        // and its serialisation is in both): its room comes back then, in the instant the GPU frees its slot.
        // Why: with gpus.max_outstanding 1 the GPU's next packet went in the answer's picosecond, found the
        // window still held, and waited a paced round trip (+33% on two 1-byte writes, switch-8gpu).
        m_actions.push(now + f.round_trip_ps + queue_wait, {ActionKind::Refill, f.holds, 0, nullptr});
        if (f.ext) {
            if (m_hold_owner.size() <= f.holds) m_hold_owner.resize(f.holds + 1, nullptr);
            m_hold_owner[f.holds] = f.ext;
            f.ext->fabric_holds = f.holds;
        }
        f.holds = kNoHolds;
    }
    if (!f.alone) {
        m_solver.remove_flow(id);
        schedule_solve();
    }
    if (f.paced_bytes) {
        f.remaining = double(f.paced_bytes);
        f.paced_bytes = 0;
        f.anchor_ps = now;
        set_rate(f, 0);
        add_to_solver(id, f.paced);
        return;
    }
    ++m_next_version[id];  // no Finish of this flow stands any more
    count_rate(f, 0);  // out of its GPU's send rate and its queue's arrivals; its last packet's timing below reads f.rate
    sent(id);
    const std::uint64_t last = f.bytes - std::uint64_t(f.packets - 1) * f.packet_bytes;
    std::uint64_t last_starts = now;
    if (f.rate != FlowSolver::kUnlimited)
        last_starts -= std::min(now - f.start_ps, round_ps(double(std::max<std::uint64_t>(last, 1)) * 1e12 / f.rate));
    if (f.multimem) {
        nvls_sent(f, last_starts);
        f.trans = nullptr;
        f.paced.clear();
        m_free_flows.push_back(id);
        return;
    }
    if (f.telling && !f.queued) tell_sent(f);
    if (f.queued) {  // its end is its place in its GPU's output queue (flow_issue.cpp)
        Issuer& is = m_issuers[f.src];
        if (f.telling) {  // sent before the fluid issue had it issued: it is issued now at the latest
            is.pending.erase(std::find(is.pending.begin(), is.pending.end(), id));
            tell_sent(f);
        }
        f.sent_all = true;
        mark_outpaced(f);
        all_sent(f);
        unpark(f);
        is.dirty = false;
        plan_issue(f.src);  // f's rate left the send rate; its own end may be due now
        if (f.late && f.trans) deliver_queued(f, last, last_starts);  // its place in the queue came first (fifo_due)
        if (f.due && f.trans) account_flow(id);
        return;
    }
    if (f.ext && f.ext->streamed) {  // its request is at its target already (read_after_first_answer)
        read_half_in(f.dst, f.trans, *f.ext, f.src, last_starts);
        account_flow(id);
        return;
    }
    // A single-packet message's NIC processing time is on its way (a longer one's is in its rate);
    // a read's is its request's, as in the packet fabric.
    const bool starts = f.packets == 1 && f.framing.first;
    // A read's queue is on the way back: its answer waits there (answered), not its request.
    const std::uint64_t deliver = last_starts + zero_load_of(f, f.read ? 0 : last, false, starts) + (f.read ? 0 : queue_wait);
    if (f.ext) f.ext->first_ps = f.packets > 1 ? f.start_ps + zero_load_of(f, f.read ? 0 : f.packet_bytes, false) : 0;
    if (f.packets > 1 && !f.ext) {
        // A train from a GPU that paces its own window: its acknowledgements come one packet apart.
        if (TrainExtension* train = f.trans->get_extension<TrainExtension>(); train && f.rate != FlowSolver::kUnlimited)
            train->spacing_ps = round_ps(double(f.packet_bytes) * 1e12 / f.rate);
    }
    m_actions.push(deliver, {ActionKind::Deliver, f.dst, f.src, f.trans});
    account_flow(id);
}

// Flow `id` is sent and delivered: what it carried goes to its links' and its pair's counts, and
// its slot is free.
void FlowFabric::account_flow(std::uint32_t id) {
    Flow& f = m_flows[id];
    const bool starts = f.packets == 1 && f.framing.first;
    count_links(f);
    if (f.queued) log_sent_write(f);
    PairStats& pair = m_route_pairs[f.route];
    pair.src = std::int32_t(f.src);
    pair.dst = std::int32_t(f.dst);
    pair.bytes += f.read ? 0 : f.bytes;
    pair.packets += f.packets;
    // No queueing in a fluid: each packet takes the route's zero-load latency.
    const double packet_latency =
        double(zero_load_of(f, f.read ? 0 : std::min<std::uint64_t>(f.bytes, f.packet_bytes), false, starts));
    pair.latency_sum_ps += f.packets * packet_latency;
    pair.latency_max_ps = std::max(pair.latency_max_ps, packet_latency);
    f.trans = nullptr;
    f.paced.clear();
    m_free_flows.push_back(id);
}

// Per-link counts of a finished flow. Without spreading every packet of the flow crosses every
// link of its route, so the counts are exactly the packet fabric's, and they are kept per route
// (Route::Carried) until link_stats() spreads them over its links; with routing.spread a link
// gets its share of the packets and bytes, summed over the flows and rounded to the nearest whole
// once, in link_stats(): the packet fabric sends each packet one way, turn about, so an
// equal-cost link carries its share of all of them, not of each.
void FlowFabric::count_links(const Flow& f) {
    if (f.src == f.dst) return;
    Route& out = m_routes[f.route];
    Route& back = m_routes[f.back];
    if (out.whole && back.whole) {
        Route::Carried& o = out.out;
        o.packets += f.packets;
        o.headed += f.packets;
        o.messages += f.framing.first ? 1 : 0;
        Route::Carried& b = back.back;
        b.packets += f.packets;
        if (f.read) {
            o.control += f.framing.first ? 1 : 0;
            b.bytes += f.bytes;
            b.headed += f.packets;
            b.frames += f.framing.frames;
        } else {
            o.bytes += f.bytes;
            o.frames += f.framing.frames;
            b.control += f.framing.last ? 1 : 0;
        }
        return;
    }
    for (int way = 0; way < 2; ++way) {
        const bool forward = way == 0;
        const Route& r = forward ? out : back;
        const bool data = forward != f.read;  // the direction carrying the payload
        for (const auto& [link, share] : r.links) {
            const TopoLink& l = m_topology->links()[link];
            LinkCounters& c = m_links[link];
            // A framed link's headers are the message's network packets (framed_header), shared as the packets are.
            c.spread_bytes += data ? share * double(f.bytes) : 0.0;
            c.spread_headers += share * link_headers(f.framing, f.read, double(f.packets), l, forward);
            c.spread_packets += share * double(f.packets);
            if (forward && l.nic_out && f.framing.first) c.spread_overhead_ps += share * double(m_message_ps);
        }
    }
}

// What a whole route's finished flows put on each of its links (count_links), added to `stats`
// and `overhead` (per link).
void FlowFabric::spread_carried(std::vector<LinkStats>& stats, std::vector<std::uint64_t>& overhead) const {
    for (const Route& r : m_routes)
        for (const Route::Carried* c : {&r.out, &r.back}) {
            if (c->packets == 0) continue;
            for (const auto& [link, share] : r.links) {
                const TopoLink& l = m_topology->links()[link];
                LinkStats& s = stats[link];
                const std::uint64_t headers = l.framed ? (c->frames + c->control) * l.header
                                                       : c->headed * l.header + (c->packets - c->headed) * ack_wire(l);
                s.bytes += c->bytes;
                s.wire_bytes += c->bytes + headers;
                s.packets += c->packets;
                if (l.nic_out) overhead[link] += c->messages * m_message_ps;
            }
        }
}

// ---- delivery -----------------------------------------------------------------------------------

// The deliveries due now are gathered and handed over last, in their targets' round-robin order
// (arrival_turns.h); everything else goes in the order it was booked.
void FlowFabric::on_event() {
    const std::uint64_t now = now_ps();
    Action a;
    for (;;) {
        while (m_actions.pop_due(now, a)) {
            switch (a.kind) {
                case ActionKind::Solve: solve(); break;
                case ActionKind::Finish: finish(a.a, a.b); break;
                case ActionKind::Refill:
                    give_room_back(a.a);
                    if (a.a < m_hold_owner.size()) m_hold_owner[a.a] = nullptr;
                    m_free_holds.push_back(a.a);
                    break;
                case ActionKind::Deliver: m_turns.arrive(a.a, a.trans, a.b); break;
                case ActionKind::Begin: begin_annotated(a.a, a.b, *a.trans); break;
                case ActionKind::ReadData: activate(a.a); break;
                case ActionKind::NvlsIn: nvls_in(a.a); break;
                case ActionKind::Slip: slip(a.a); break;
                case ActionKind::Issued: issued(a.a, a.b); break;
                case ActionKind::IncastFull: incast_full(a.a, a.b); break;
                case ActionKind::Return:
                    if (const FlowExtension* ext = a.trans->get_extension<FlowExtension>();
                        ext && ext->fabric_holds != kNoHolds)
                        give_room_back(ext->fabric_holds);
                    m_turns.give_back(*this, a.a, a.trans);
                    break;
                case ActionKind::RequestFree: m_turns.request_freed(*this, a.a); break;
                case ActionKind::ResponseFree: m_turns.response_freed(*this, a.a); break;
            }
        }
        if (!m_turns.deliver_arrived(*this)) break;  // which may book more for now
    }
    m_actions.rearm(now);
}

// Burst `list`'s room in the windows is free again (once: its list is then empty), and its extension no longer
// points at it (the list's number is taken again once its Refill has come).
void FlowFabric::give_room_back(std::uint32_t list) {
    for (const auto& [resource, amount] : m_holds[list]) m_windows[resource].held -= amount;
    m_holds[list].clear();
    if (list < m_hold_owner.size() && m_hold_owner[list] && m_hold_owner[list]->fabric_holds == list)
        m_hold_owner[list]->fabric_holds = kNoHolds;
}

// A request annotated to begin now (request()): its END_REQ, then its flow.
void FlowFabric::begin_annotated(std::uint32_t src, std::uint32_t dst, tlm::tlm_generic_payload& trans) {
    tlm::tlm_phase phase = tlm::END_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    initiator_of(src).nb_transport_bw(trans, phase, delay);
    start_flow(src, dst, trans);
}

// PortTurns' hooks (port_turns.h): the ports' channels freed at `at`.
void FlowFabric::book_request_free(std::uint32_t dst, std::uint64_t at) {
    m_actions.push(at, {ActionKind::RequestFree, dst, 0, nullptr});
}

void FlowFabric::book_response_free(std::uint32_t src, std::uint64_t at) {
    m_actions.push(at, {ActionKind::ResponseFree, src, 0, nullptr});
}

// ---- routes and latency ---------------------------------------------------------------------------

// The links from GPU `src` to GPU `dst` with the share of packets on each: all on the first
// choice at every node, or (routing.spread) split evenly over the equal-cost choices, as the
// packet fabric's round robin does over many packets. Built once per pair, on first use; its
// index in m_routes is returned.
std::uint32_t FlowFabric::route_index(std::uint32_t src, std::uint32_t dst) {
    std::int32_t& index = m_route_index[std::size_t(src) * ports() + dst];
    if (index >= 0) return std::uint32_t(index);
    const Topology& topo = *m_topology;
    Route r;
    std::uint32_t node = src, n = 0;
    while (node != dst) {
        const std::uint32_t* choices = topo.next(node, dst, n);
        if (n == 0) throw std::logic_error(std::string(name()) + ": no route from " + topo.node_name(node) +
                                           " to gpu" + std::to_string(dst));
        r.path.push_back(choices[0]);
        node = topo.links()[choices[0]].dst;
        if (r.path.size() > topo.links().size()) throw std::logic_error(std::string(name()) + ": routing loop");
    }
    // Shares: propagate packet fractions node by node, in order of distance along equal-cost routes.
    // The per-node and per-link scratch lives in the fabric and only the entries this route touched
    // are reset, so a route costs its own length, not the size of the fabric.
    std::vector<double>& at_node = m_route_at_node;
    std::vector<double>& on_link = m_route_on_link;
    if (at_node.size() != topo.nodes()) at_node.assign(topo.nodes(), 0.0);
    if (on_link.size() != topo.links().size()) on_link.assign(topo.links().size(), 0.0);
    std::vector<std::uint32_t>& touched = m_route_touched;
    touched.clear();
    std::vector<std::uint32_t> frontier{src}, next;
    at_node[src] = 1.0;
    for (std::size_t hop = 0; !frontier.empty() && hop <= topo.links().size(); ++hop) {
        next.clear();
        for (std::uint32_t v : frontier) {
            if (v == dst || at_node[v] == 0) continue;
            const std::uint32_t* choices = topo.next(v, dst, n);
            const std::uint32_t used = choices_used(n);
            for (std::uint32_t k = 0; k < used; ++k) {
                const std::uint32_t link = choices[k], to = topo.links()[link].dst;
                if (on_link[link] == 0) touched.push_back(link);
                on_link[link] += at_node[v] / used;
                if (at_node[to] == 0 && to != dst) next.push_back(to);
                at_node[to] += at_node[v] / used;
            }
            at_node[v] = 0;
        }
        std::sort(next.begin(), next.end());
        next.erase(std::unique(next.begin(), next.end()), next.end());
        frontier.swap(next);
    }
    at_node[dst] = 0;  // every other node it reached was cleared when the frontier left it
    for (std::uint32_t v : frontier) at_node[v] = 0;
    std::sort(touched.begin(), touched.end());  // link order, as a walk over all links would give
    for (std::uint32_t l : touched) {
        r.links.emplace_back(l, on_link[l] > 1 - 1e-12 ? 1.0 : on_link[l]);
        r.whole = r.whole && r.links.back().second >= 1.0;
        on_link[l] = 0;
    }
    if (topo.needs_dateline()) {
        // The dateline half each link's packets take, along the first-choice path as the packet fabric's routers
        // set it: the wrap link itself and the links after it in the same dimension. (A spread route's other
        // choices are taken as their own link says: the wrap link or not.)
        r.halves.assign(r.links.size(), 0);
        bool crossed = false;
        std::int8_t dim = -1;
        for (std::uint32_t link : r.path) {
            const TopoLink& l = topo.links()[link];
            crossed = l.wrap || (crossed && l.dim == dim);
            dim = l.dim;
            for (std::size_t k = 0; k < r.links.size(); ++k)
                if (r.links[k].first == link) r.halves[k] = crossed;
        }
        for (std::size_t k = 0; k < r.links.size(); ++k)
            r.halves[k] |= std::uint8_t(topo.links()[r.links[k].first].wrap);
    }
    if (!r.path.empty() && !m_incast_of_link.empty()) {
        const std::uint32_t last = r.path.back();
        for (const auto& [link, share] : r.links)
            if (link == last && share >= 1.0) r.incast = m_incast_of_link[last];
    }
    index = std::int32_t(m_routes.size());
    m_routes.push_back(std::move(r));
    m_route_pairs.emplace_back();
    return std::uint32_t(index);
}

// A packet's zero-load latency from GPU `from` to GPU `to`, from its start at the source until its
// tail is in the destination GPU (docs/router.md): cut-through (and wormhole, alike at zero load)
// pays the serialisation of each link as the head's flit and the tail follows; store and forward
// pays every link's whole serialisation. `ack`: a write's response, whose wire size is link.ack.
std::uint64_t FlowFabric::zero_load_ps(std::uint32_t from, std::uint32_t to, std::uint64_t payload, bool ack,
                                       bool starts_message) {
    if (from == to) return 0;
    return zero_load_on(route_index(from, to), payload, ack, starts_message);
}

std::uint64_t FlowFabric::zero_load_on(std::uint32_t index, std::uint64_t payload, bool ack, bool starts_message) {
    Route& route = m_routes[index];
    const std::uint8_t flags = std::uint8_t((ack ? 1 : 0) | (starts_message ? 2 : 0));
    for (const Route::ZeroLoad& m : route.memo)
        if (m.payload == payload && m.flags == flags) return m.ps;  // a pure function of these
    std::uint64_t head = 0, tail = 0;  // when the head / the tail may leave the current router
    for (std::uint32_t link : route.path) {
        const TopoLink& l = m_topology->links()[link];
        // A framed link: one NIC header per MTU of the packet's data (at least one: a request, an
        // acknowledgement); a message's first packet waits for the NIC's processing first.
        const std::uint64_t wire = packet_wire(l, payload, ack);
        if (starts_message && l.nic_out) {
            head += m_message_ps;
            tail += m_message_ps;
        }
        const std::uint64_t ser = ser_ps(double(wire), l.bytes_per_s);
        if (m_store_and_forward) {
            const std::uint64_t end = head + ser;
            head = tail = end + l.latency_ps + m_switch_latency_ps;
            continue;
        }
        const std::uint64_t flits = std::max<std::uint64_t>(1, (wire + m_flit - 1) / m_flit);
        const std::uint64_t last_flit = ser_ps(double(wire) - double(flits - 1) * m_flit, l.bytes_per_s);
        const std::uint64_t end = std::max(head + ser, tail + last_flit);
        head = head + ser_ps(double(std::min<std::uint64_t>(wire, m_flit)), l.bytes_per_s) + l.latency_ps +
               m_switch_latency_ps;
        tail = end + l.latency_ps + m_switch_latency_ps;
    }
    Route::ZeroLoad& m = route.memo[route.memo_next];
    route.memo_next ^= 1;
    m = Route::ZeroLoad{payload, flags, std::max(head, tail)};
    return m.ps;
}

// ---- statistics -----------------------------------------------------------------------------------

std::vector<LinkStats> FlowFabric::link_stats() const {
    std::vector<LinkStats> out;
    const double unavailable = std::numeric_limits<double>::quiet_NaN();  // a fluid has no queues
    std::vector<LinkStats> carried(m_links.size());
    std::vector<std::uint64_t> overhead(m_links.size(), 0);
    for (std::size_t l = 0; l < m_links.size(); ++l) {
        const LinkCounters& c = m_links[l];  // the spreading routes' shares, rounded once (count_links)
        overhead[l] = std::uint64_t(std::llround(c.spread_overhead_ps));
        const std::uint64_t bytes = std::uint64_t(std::llround(c.spread_bytes));
        carried[l].bytes = bytes;
        carried[l].wire_bytes = bytes + std::uint64_t(std::llround(c.spread_headers));
        carried[l].packets = std::uint64_t(std::llround(c.spread_packets));
    }
    spread_carried(carried, overhead);
    // The bins made here (the open ones, the queued writes') may pass stats.max_bins: they double again as needed.
    std::size_t held = 0;
    for (const LinkCounters& c : m_links) held += c.s.busy_bins.size();
    m_end_doublings = late_doublings(held);
    const std::uint64_t width = bin_ps();
    const std::vector<std::vector<std::pair<std::uint64_t, float>>> sent = sent_write_bins(width);
    held = 0;
    for (std::size_t l = 0; l < m_links.size(); ++l) {
        LinkStats s = m_links[l].s;
        s.bytes += carried[l].bytes;
        s.wire_bytes += carried[l].wire_bytes;
        s.packets += carried[l].packets;
        const LinkBusy& b = m_busy[l];
        if (b.bin != kNoBin) spill_bins(s.busy_bins, b.bin, b.busy, b.bin_capacity, kNoBin);  // the open bin and its carry
        for (std::uint32_t d = 0; d < m_end_doublings; ++d) halve_bins(s.busy_bins);
        merge_bins(s.busy_bins, sent[l], float(double(s.lanes) * double(width)));
        held += s.busy_bins.size();
        out.push_back(std::move(s));
    }
    for (; m_bin_budget.over_at_end(held, bin_ps(), now_ps()); ++m_end_doublings) {
        held = 0;
        for (LinkStats& s : out) {
            halve_bins(s.busy_bins);
            held += s.busy_bins.size();
        }
    }
    for (std::size_t l = 0; l < m_links.size(); ++l) {
        LinkStats& s = out[l];
        spread_bytes(s);
        const TopoLink& link = m_topology->links()[l];
        s.busy_ps = round_ps(double(s.wire_bytes) * 1e12 / link.bytes_per_s) + overhead[l];
        // The fluid shares a link's lanes evenly: its busiest lane is busy its share.
        const std::uint64_t lanes = std::max<std::uint32_t>(1, link.lanes);
        s.lane_busy_max_ps = (s.busy_ps + lanes - 1) / lanes;
        s.queue_mean_ps = s.queue_p50_ps = s.queue_p99_ps = s.queue_max_ps = unavailable;
        s.buffers_modelled = false;
    }
    return out;
}

std::vector<PairStats> FlowFabric::pair_stats() const {
    std::vector<PairStats> out;
    for (const PairStats& p : m_route_pairs)
        if (p.packets) out.push_back(p);  // the pairs that carried a flow (every flow is a packet at least)
    return sorted_pairs(std::move(out));
}

namespace {
const bool registered = register_model(model_info<FlowFabric>(
    "FlowFabric", Role::Fabric,
    "Flow-level fabric on the packet fabric's topologies: each transaction a flow, links shared max-min fairly"));
}  // namespace

}  // namespace eidola
