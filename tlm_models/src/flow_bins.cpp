// The flow fabric's links over time (res.link_bins): each link's busy time per stats.bin, and its payload bytes.
//
// Most flows' bytes cross their links at their max-min rates, so a link's bins integrate the solver's load
// there between changes (account_busy), and a flag timed alone adds its wire time where it starts (add_busy).
// A queued write (flow_issue.cpp, flow.issue: gates) does not: its flow holds its share until its place in its
// GPU's output queue comes, which may be long after its bytes are out (the gates issue them slower than that
// share) or before its share would have carried them (the queue ends it first). Its links' bins instead spread
// its wire bytes evenly from its start to its end (SentWrite), and the solver tags its flow, so that the
// integrated load leaves it out. Either way a link's bins add up to its busy time: its wire bytes at its rate.
//
// The bytes per bin are the link's payload bytes in proportion to its busy time per bin, rounded so that they
// add up to its bytes: a fluid has no packets to count where each starts, as the packet fabric does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "eidola/flow_fabric.h"

namespace eidola {

namespace {
// Calls `add(bin, ps)` for each bin of `width` ps that [from, to) covers, with the ps of it covered.
template <class Add>
void for_each_bin(std::uint64_t from, std::uint64_t to, std::uint64_t width, Add&& add) {
    for (std::uint64_t t = from; t < to;) {
        const std::uint64_t bin = t / width, end = std::min(to, (bin + 1) * width);
        add(bin, double(end - t));
        t = end;
    }
}
}  // namespace

// The busy time a link's load since its last change adds, spread over the bins it covers.
void FlowFabric::account_busy(std::uint32_t link, std::uint64_t now) {
    LinkBusy& b = m_busy[link];
    if (b.load > 0 && now > b.since)
        for_each_bin(b.since, now, m_bin_budget.width_ps(), [&](std::uint64_t bin, double ps) {
            open_bin(link, bin);
            b.busy += float(b.load * ps / b.bytes_per_s);  // lane-ps busy
        });
    b.since = now;
    if (m_bins_over) coarsen_bins();
}

// Adds `wire_ps` (wire bytes x 1e12) of busy time to link `link`'s bin of `now` (account_busy has
// run up to now).
void FlowFabric::add_busy(std::uint32_t link, std::uint64_t now, double wire_ps) {
    open_bin(link, now / m_bin_budget.width_ps());
    m_busy[link].busy += float(wire_ps / m_busy[link].bytes_per_s);  // lane-ps busy
    if (m_bins_over) coarsen_bins();
}

// Link `link`'s open bin becomes `bin`. Bins only move on, so the one it had is complete. Past stats.max_bins
// it marks the bins for coarsening, which account_busy and add_busy do once their bins of the old width are in.
void FlowFabric::open_bin(std::uint32_t link, std::uint64_t bin) {
    LinkBusy& b = m_busy[link];
    if (b.bin == bin) return;
    std::vector<std::pair<std::uint64_t, float>>& bins = m_links[link].s.busy_bins;
    const std::size_t held = bins.size();
    b.busy = b.bin == kNoBin ? 0.0f : spill_bins(bins, b.bin, b.busy, b.bin_capacity, bin);
    b.bin = bin;
    if (m_bin_budget.add(bins.size() - held)) m_bins_over = true;
}

// Every link's bins merged into ones twice as wide (bin_budget.h), its open bin and a bin's capacity with them.
void FlowFabric::coarsen_bins() {
    m_bins_over = false;
    m_bin_budget.coarsen(now_ps(), [this](std::uint64_t width) {
        std::size_t held = 0;
        for (std::size_t l = 0; l < m_links.size(); ++l) {
            halve_bins(m_links[l].s.busy_bins);
            held += m_links[l].s.busy_bins.size();
            LinkBusy& b = m_busy[l];
            if (b.bin != kNoBin) b.bin /= 2;
            b.bin_capacity = float(double(m_links[l].s.lanes) * double(width));
        }
        return held;
    });
}

// Appends bin `from`'s `busy` lane-ps to `bins`, at most `capacity` a bin, what it cannot hold going
// on into the bins after it, up to bin `until`; returns what reaches `until`. Why: a flag timed
// alone adds its wire time where it starts, on top of the solver's full load (and float sums round
// up), so a bin could read above 100%; the link is instead busy that much longer, and the bins still
// add up to its busy time. A bin already last in `bins` (the open bin merged into it by coarsen_bins)
// takes what its room allows.
float FlowFabric::spill_bins(std::vector<std::pair<std::uint64_t, float>>& bins, std::uint64_t from, float busy,
                             float capacity, std::uint64_t until) {
    for (std::uint64_t bin = from; bin < until && busy > 0.0f; ++bin) {
        if (!bins.empty() && bins.back().first == bin) {
            const float held = std::min(busy, std::max(0.0f, capacity - bins.back().second));
            bins.back().second += held;
            busy -= held;
            continue;
        }
        const float held = std::min(busy, capacity);
        bins.emplace_back(bin, held);
        busy -= held;
    }
    return busy;
}

// Queued write `f` has ended (account_flow): its links' bins get its bytes, spread over its time, at the end.
void FlowFabric::log_sent_write(const Flow& f) {
    if (f.src == f.dst) return;
    m_sent_writes.push_back(SentWrite{f.start_ps, now_ps(), f.bytes, f.route, f.back, f.packets, f.framing});
}

namespace {
// Per-link bins being summed, dense from the first bin that has any.
struct DenseBins {
    std::uint64_t first = std::numeric_limits<std::uint64_t>::max();
    std::vector<double> busy;
    void add(std::uint64_t bin, double x) {
        if (busy.empty()) first = bin;
        if (bin < first) {  // at least doubled towards 0, so that writes starting ever earlier cost no more than appends
            const std::uint64_t grown = std::min(bin, first - std::min<std::uint64_t>(first, busy.size()));
            busy.insert(busy.begin(), std::size_t(first - grown), 0.0);
            first = grown;
        }
        if (bin - first >= busy.size()) busy.resize(std::size_t(bin - first) + 1, 0.0);
        busy[std::size_t(bin - first)] += x;
    }
    // `amount` spread evenly over [from, to) ps in bins of `width` ps (all in the bin of `from` if to <= from).
    void spread(std::uint64_t from, std::uint64_t to, double amount, std::uint64_t width) {
        if (to <= from) {
            add(from / width, amount);
            return;
        }
        const double per_ps = amount / double(to - from);
        for_each_bin(from, to, width, [&](std::uint64_t bin, double ps) { add(bin, per_ps * ps); });
    }
};
}  // namespace

// Calls `visit(link, from_ps, to_ps, lane_ps)` for the busy time binned at the end: each queued write's wire bytes
// on each link of its route there and back (as count_links counts them, its queue's link left to its incast
// queue, which bins what comes through it), evenly over its time; and the late busy time (m_late_busy), at an
// instant (from_ps == to_ps).
template <class Visit>
void FlowFabric::visit_late_busy(Visit&& visit) const {
    const auto& links = m_topology->links();
    for (const SentWrite& w : m_sent_writes) {
        const Route& out = m_routes[w.route];
        const std::uint32_t incast_link = out.incast >= 0 ? m_incasts[std::size_t(out.incast)].link : ~0u;
        const double n = double(w.packets);
        for (const auto& [link, share] : out.links) {
            if (link == incast_link) continue;
            const TopoLink& l = links[link];
            const double headers = link_headers(w.framing, false, n, l, true);
            double ps = share * (double(w.bytes) + headers) * 1e12 / l.bytes_per_s;
            if (l.nic_out && w.framing.first) ps += share * double(m_message_ps);
            visit(link, w.start_ps, w.end_ps, ps);
        }
        for (const auto& [link, share] : m_routes[w.back].links) {
            const TopoLink& l = links[link];
            const double headers = link_headers(w.framing, false, n, l, false);
            visit(link, w.start_ps, w.end_ps, share * headers * 1e12 / l.bytes_per_s);
        }
    }
    for (const LateBusy& b : m_late_busy) visit(b.link, b.at_ps, b.at_ps, b.lane_ps);
}

// How many times the bins must double again at the end for the late busy time's bins, dense per link from its
// first to its last, to stay within stats.max_bins with the bins held. Why: a write's bins are only made at the
// end, and at 1 ns bins a second of queued writes would be 10^9 a link.
std::uint32_t FlowFabric::late_doublings(std::size_t held) const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> span(m_links.size(), {~std::uint64_t(0), 0});
    visit_late_busy([&](std::uint32_t link, std::uint64_t from, std::uint64_t to, double) {
        span[link].first = std::min(span[link].first, from);
        span[link].second = std::max(span[link].second, to);
    });
    std::uint64_t width = m_bin_budget.width_ps();
    std::uint32_t doublings = 0;
    for (;;) {
        std::size_t dense = held;
        for (const auto& [first, last] : span)
            if (first <= last) dense += std::size_t(last / width - first / width + 1);
        if (!m_bin_budget.over_at_end(dense, width, now_ps())) return doublings;
        width *= 2;
        ++doublings;
    }
}

// The late busy time per link and bin of `width` ps (lane-ps), in bin order (visit_late_busy).
std::vector<std::vector<std::pair<std::uint64_t, float>>> FlowFabric::sent_write_bins(std::uint64_t width) const {
    std::vector<DenseBins> dense(m_links.size());
    visit_late_busy([&](std::uint32_t link, std::uint64_t from, std::uint64_t to, double lane_ps) {
        dense[link].spread(from, to, lane_ps, width);
    });
    std::vector<std::vector<std::pair<std::uint64_t, float>>> out(m_links.size());
    for (std::size_t l = 0; l < dense.size(); ++l)
        for (std::size_t i = 0; i < dense[l].busy.size(); ++i)
            if (dense[l].busy[i] > 0) out[l].emplace_back(dense[l].first + i, float(dense[l].busy[i]));
    return out;
}

// `more` added into `bins` (both sparse and in bin order), each bin held to `capacity` lane-ps, what it cannot
// hold going on into the bins after it (as spill_bins does).
void FlowFabric::merge_bins(std::vector<std::pair<std::uint64_t, float>>& bins,
                            const std::vector<std::pair<std::uint64_t, float>>& more, float capacity) {
    if (more.empty()) return;
    std::vector<std::pair<std::uint64_t, float>> merged;
    merged.reserve(bins.size() + more.size());
    auto a = bins.begin();
    auto b = more.begin();
    float carry = 0;
    std::uint64_t next = 0;  // the bin after the last one written
    while (a != bins.end() || b != more.end()) {
        const std::uint64_t bin = b == more.end() || (a != bins.end() && a->first < b->first) ? a->first : b->first;
        float busy = 0;
        if (a != bins.end() && a->first == bin) busy += (a++)->second;
        if (b != more.end() && b->first == bin) busy += (b++)->second;
        carry = spill_bins(merged, next, carry, capacity, bin);  // the carry runs on through the bins between
        carry = spill_bins(merged, bin, busy + carry, capacity, bin + 1);
        next = bin + 1;
    }
    spill_bins(merged, next, carry, capacity, kNoBin);
    bins.swap(merged);
}

// The link's payload bytes over its busy bins, in proportion, rounded so that they add up to its bytes.
void FlowFabric::spread_bytes(LinkStats& s) {
    s.byte_bins.clear();
    double total = 0;
    for (const auto& [bin, busy] : s.busy_bins) total += busy;
    if (s.bytes == 0 || !(total > 0)) return;
    double sum = 0;
    std::uint64_t given = 0;
    for (std::size_t i = 0; i < s.busy_bins.size(); ++i) {
        sum += s.busy_bins[i].second;
        const std::uint64_t upto = i + 1 == s.busy_bins.size()
                                       ? s.bytes
                                       : std::min(s.bytes, std::uint64_t(std::llround(double(s.bytes) * (sum / total))));
        if (upto > given) s.byte_bins.emplace_back(s.busy_bins[i].first, upto - given);
        given = std::max(given, upto);
    }
}

}  // namespace eidola
