// The flow fabric's incast queues (fabric.flow.incast: queue): where a switch's input buffers are
// deep, the writes of several senders to one GPU meet at the switch's link into it and wait there
// first in, first out. A fluid without such a queue shares that link max-min among them, so every
// sender slows to its share at once and spends the rest of its NIC on its other writes; the packet
// fabric's senders instead push at their own rates into the leaf's buffers, which the link drains
// in the order the bytes came (hierarchical-16gpu: every sender's NIC runs flat out through a
// direct all-reduce's reduce-scatter while the leaves hold what the busiest GPUs' links have not
// yet sent; docs/fabrics.md, "Incast queues").
//
// So a route that ends in such a link leaves it (and the destination's ejection port behind it) out
// of its flows' max-min uses. The queue's arrivals are its flows' rates times their wire bytes there;
// its backlog is piecewise linear between changes and drains at what the link has left beside the
// flows the solver still puts on it (acknowledgements, read data); every delivery behind it (writes,
// flags, releases) waits backlog / drain rate. What a GPU has waiting in such queues counts in its
// window (unanswered), and a burst's room comes back a queue's wait after its end.
//
// Back-pressure: the queue's flows share a gate of their own in the solver, open (never their
// bottleneck) until the backlog fills the buffers that feed the link, then closed at the drain rate of
// that moment, so that they share the link max-min as credits hold the packet fabric's senders, until
// the backlog has drained to half of them. Without it the backlog grew to 13.5 MB behind 2 MiB of
// buffers on hierarchical-16gpu's 1 GiB direct all-reduce (256 MiB: +3.4% against the packet fabric,
// +0.8% with it).
//
// A queued write (flow_issue.cpp) keeps its flow's share after its bytes are out, until its place in
// its output queue comes; it stops arriving when its bytes are out (`drains`), not then. Without
// that, its share went on into the queue: phantom bytes that held a busy GPU's NIC backlog 10 us
// longer than the packet fabric's (+26% on the 1 MiB direct all-reduce).
#include <algorithm>
#include <cmath>

#include "eidola/flow_fabric.h"

namespace eidola {

namespace {
// A buffer is deep when it holds this many of its link's credit round trips: incast backlogs then
// build in it before credits stop the senders. Below it (switch-8gpu's 52 KB per lane against a
// 40 KB round trip) back-pressure binds within a few packets, which max-min with the credit windows
// already models, and a queue without back-pressure let a forwarding GPU's senders run at twice the
// rate its link drains (tests/python/test_flow_responses.py).
constexpr double kDeepRoundTrips = 8.0;
// The least share of its link a queue drains at, however much the solver's flows take of it: a wait
// of backlog / 0 has no meaning.
constexpr double kLeastService = 1e-3;
// An open gate (a queue below its buffers) lets its flows through at this many times the link's rate: never
// their bottleneck.
constexpr double kOpenGate = 1e3;
// A closed gate opens again once the backlog has drained to this share of the buffers.
constexpr double kReopenAt = 0.5;
// A buffer given in packets holds packets of this payload (the GPUs' max_payload on every shipped platform;
// the fabric does not know the GPUs' own).
constexpr std::uint64_t kDefaultPayload = 256;
}  // namespace

// Which links get a queue: a switch's link into a GPU whose input buffers are deep (kDeepRoundTrips).
void FlowFabric::setup_incast(const Params& p) {
    const Topology& topo = *m_topology;
    m_incast_of_link.assign(topo.links().size(), -1);
    if (p.flow_incast.get() != "queue") return;
    // A channel's buffer in bytes.
    const double buffer = m_credit_bytes ? double(m_credits) * double(m_flit)
                                         : double(m_credits) * double(kDefaultPayload + m_header);
    for (std::size_t l = 0; l < topo.links().size(); ++l) {
        const TopoLink& link = topo.links()[l];
        if (link.src < topo.gpus() || link.dst >= topo.gpus()) continue;
        const double round_trip = double(2 * link.latency_ps + m_switch_latency_ps) * 1e-12;
        if (buffer < kDeepRoundTrips * link.bytes_per_s * round_trip) continue;
        Incast q;
        q.link = std::uint32_t(l);
        q.capacity = q.service = link.bytes_per_s * double(link.lanes);
        q.gate = m_solver.add_resource(q.capacity * kOpenGate);
        // The buffers that can hold its backlog: a channel's, per lane, at every input of its switch that
        // traffic for its GPU comes in by (a leaf's spines, not the GPUs whose own links reach that GPU).
        std::uint32_t feeding = 0;
        for (std::uint32_t in : topo.in_links(link.src)) {
            std::uint32_t n = 0;
            const std::uint32_t from = topo.links()[in].src;
            if (from == link.dst) continue;
            const std::uint32_t* next = topo.next(from, link.dst, n);
            feeding += std::uint32_t(std::find(next, next + n, in) != next + n);
        }
        q.buffer = buffer * double(std::max<std::uint32_t>(1, feeding)) * double(link.lanes);
        m_incast_of_link[l] = std::int32_t(m_incasts.size());
        m_incasts.push_back(q);
    }
}

// Queue `q`'s backlog moved on to `t` at its present arrivals and drain rate, and its link's busy time
// with it: full while a backlog lasts, its arrivals after.
void FlowFabric::flow_incast_to(Incast& q, std::uint64_t t) {
    if (t <= q.since) return;
    LinkBusy& b = m_busy[q.link];
    const double others = binned_load(q.link);  // what the solver's flows put on the link (queued writes aside)
    const double dt = double(t - q.since) * 1e-12;
    if (q.backlog > 0 && q.arrivals < q.service) {
        const double empty_s = q.backlog / (q.service - q.arrivals);
        b.load = others + q.service;
        if (empty_s < dt) {  // it empties on the way: full until then, its arrivals after
            account_busy(q.link, q.since + std::uint64_t(std::ceil(empty_s * 1e12)));
            q.backlog = 0;
            b.load = others + std::min(q.arrivals, q.service);
        } else {
            q.backlog -= (q.service - q.arrivals) * dt;
        }
    } else {
        b.load = others + std::min(q.arrivals, q.service);
        q.backlog = std::max(0.0, q.backlog + (q.arrivals - q.service) * dt);
    }
    account_busy(q.link, t);
    q.since = t;
    set_busy_load(q);
}

// Queue `q`'s link's load from now on, for its busy time: the solver's flows there, and the queue sending at
// its drain rate while a backlog lasts, at its arrivals without one.
void FlowFabric::set_busy_load(Incast& q) {
    m_busy[q.link].load = binned_load(q.link) + (q.backlog > 0 ? q.service : std::min(q.arrivals, q.service));
}

// Books queue `q`'s next crossing of its buffers' thresholds (full while open; drained to kReopenAt of them
// while closed) at its present arrivals, unless an earlier booking stands: that one books the next when it
// finds it early (incast_full).
void FlowFabric::book_full(Incast& q) {
    double bytes = 0, rate = 0;
    if (!q.closed && q.arrivals > q.service) {
        bytes = q.buffer - q.backlog;
        rate = q.arrivals - q.service;
    } else if (q.closed && q.arrivals < q.service) {
        bytes = q.backlog - kReopenAt * q.buffer;
        rate = q.service - q.arrivals;
    } else {
        return;
    }
    // A rate within rounding of none crosses nothing (and its time would overflow the picoseconds).
    if (rate <= 1e-9 * q.capacity) return;
    const std::uint64_t at = q.since + std::uint64_t(std::ceil(std::max(0.0, bytes) / rate * 1e12));
    if (at >= q.full_ps) return;
    q.full_ps = at;
    m_actions.push(at, {ActionKind::IncastFull, std::uint32_t(&q - m_incasts.data()), ++q.version, nullptr});
}

// Queue `queue`'s booked threshold is due: a full queue closes its gate at its drain rate (its flows then
// share the link max-min, as credits hold the packet fabric's senders), a drained one opens it.
void FlowFabric::incast_full(std::uint32_t queue, std::uint32_t version) {
    Incast& q = m_incasts[queue];
    if (version != q.version) return;
    q.full_ps = ~std::uint64_t(0);
    advance_incast(q, now_ps());
    const double slack = 1e-9 * q.buffer;
    if (!q.closed && q.backlog >= q.buffer - slack) {
        q.closed = true;
        m_solver.set_capacity(q.gate, q.service);
        schedule_solve();
    } else if (q.closed && q.backlog <= kReopenAt * q.buffer + slack) {
        q.closed = false;
        m_solver.set_capacity(q.gate, q.capacity * kOpenGate);
        schedule_solve();
    }
    book_full(q);
}

// Queue `q` up to `now`, taking out on the way the arrivals of the queued writes whose bytes are out.
void FlowFabric::advance_incast(Incast& q, std::uint64_t now) {
    while (!q.drains.empty() && q.drains.front().at_ps <= now) {
        const Incast::Drain d = q.drains.front();
        std::pop_heap(q.drains.begin(), q.drains.end(), Incast::drains_later);
        q.drains.pop_back();
        Flow& f = m_flows[d.flow];
        if (!f.trans || f.incast_stamp != d.stamp || f.incast_drained) continue;  // re-rated or gone since
        flow_incast_to(q, d.at_ps);
        f.incast_drained = true;
        set_arrival(q, f, 0.0);
    }
    flow_incast_to(q, now);
    book_full(q);
}

// Flow `f`'s arrival rate at queue `q` becomes `r` (payload bytes per second), its GPU's window's count too.
void FlowFabric::set_arrival(Incast& q, Flow& f, double r) {
    q.arrivals += (r - f.incast_rate) * f.incast_weight;
    q.flows += std::int32_t(r > 0) - std::int32_t(f.incast_rate > 0);
    if (q.flows == 0) q.arrivals = 0;  // no rounding left over from the sums
    if (f.sends) {
        Issuer& is = m_issuers[f.src];
        const std::uint32_t qi = std::uint32_t(&q - m_incasts.data());
        auto it = std::find_if(is.incast_rates.begin(), is.incast_rates.end(),
                               [&](const std::pair<std::uint32_t, double>& e) { return e.first == qi; });
        if (it == is.incast_rates.end()) it = is.incast_rates.insert(it, {qi, 0.0});
        it->second = std::max(0.0, it->second + r - f.incast_rate);
        is.unanswered_ps = ~std::uint64_t(0);
    }
    f.incast_rate = r;
}

// Flow `f`'s rate becomes `rate`: so does its arrival rate at its queue, until its bytes are out.
void FlowFabric::count_incast(Flow& f, double rate) {
    Incast& q = m_incasts[std::size_t(f.incast)];
    const std::uint64_t now = now_ps();
    advance_incast(q, now);
    const double r = rate == FlowSolver::kUnlimited || f.incast_drained ? 0.0 : rate;
    set_arrival(q, f, r);
    f.incast_stamp = ++m_incast_stamps;
    if (f.queued && !f.due && !f.paced_bytes && r > 0) {  // its last phase keeps its share after its bytes are out (file comment)
        const double left_ps = std::max(0.0, f.remaining) * 1e12 / r;
        q.drains.push_back({f.anchor_ps + std::uint64_t(std::ceil(left_ps)), f.incast_stamp,
                            std::uint32_t(&f - m_flows.data())});
        std::push_heap(q.drains.begin(), q.drains.end(), Incast::drains_later);
    }
    book_full(q);
}

// The solver's flows on queue `q`'s link changed (the solve just done): it drains at what they leave.
void FlowFabric::reserve_incast(Incast& q, std::uint64_t now) {
    advance_incast(q, now);
    q.service = std::max(q.capacity * kLeastService, q.capacity - m_solver.load(q.link));
    set_busy_load(q);  // with the new drain rate (the busy time up to now went at the old one)
    book_full(q);
}

// Link `link`'s busy time up to `now`, its queue's included.
void FlowFabric::settle_busy(std::uint32_t link, std::uint64_t now) {
    if (m_incast_of_link[link] >= 0) advance_incast(m_incasts[std::size_t(m_incast_of_link[link])], now);
    else account_busy(link, now);
}

// What GPU `is` has waiting in incast queues now: what it pushes into each times the queue's wait. Its
// queues are moved on to now first (their drains taken out), which is why this const read casts: the
// plans ask for the window's room between the queues' own events, and a stale rate there held the windows
// of GPUs whose writes were all out.
double FlowFabric::queued_unanswered(const Issuer& is, std::uint64_t now) const {
    FlowFabric& self = const_cast<FlowFabric&>(*this);
    for (std::size_t k = 0; k < is.incast_rates.size(); ++k) self.advance_incast(self.m_incasts[is.incast_rates[k].first], now);
    double bytes = 0;
    for (const auto& [qi, rate] : is.incast_rates) {
        const Incast& q = m_incasts[qi];
        if (rate > 0) bytes += rate * q.backlog / q.service;
    }
    return bytes;
}

// How long a byte of flow `f` arriving at its queue now waits there (0 without a queue).
std::uint64_t FlowFabric::incast_wait_ps(const Flow& f) { return queue_wait_ps(f.incast); }

// How long a byte arriving now waits in incast queue `incast` (0 for -1: none).
std::uint64_t FlowFabric::queue_wait_ps(std::int32_t incast) {
    if (incast < 0) return 0;
    Incast& q = m_incasts[std::size_t(incast)];
    advance_incast(q, now_ps());
    return std::uint64_t(std::ceil(q.backlog / q.service * 1e12));
}

// The window's pacing in m_paced (a packet holds its slot for `round_trip`) for a round trip `wait`
// longer: a paced flow's packets hold their slots while they wait in the queue.
void FlowFabric::stretch_window(std::uint32_t gpu, std::uint64_t round_trip, std::uint64_t wait) {
    if (wait == 0 || m_window[gpu] < 0 || round_trip == 0) return;
    for (Paced& p : m_paced)
        if (p.resource == std::uint32_t(m_window[gpu])) p.weight *= double(round_trip + wait) / double(round_trip);
}

}  // namespace eidola
