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
        for_each_bin(b.since, now, m_bin_ps, [&](std::uint64_t bin, double ps) {
            open_bin(link, bin);
            b.busy += float(b.load * ps / b.bytes_per_s);  // lane-ps busy
        });
    b.since = now;
}

// Adds `wire_ps` (wire bytes x 1e12) of busy time to link `link`'s bin of `now` (account_busy has
// run up to now).
void FlowFabric::add_busy(std::uint32_t link, std::uint64_t now, double wire_ps) {
    open_bin(link, now / m_bin_ps);
    m_busy[link].busy += float(wire_ps / m_busy[link].bytes_per_s);  // lane-ps busy
}

// Link `link`'s open bin becomes `bin`. Bins only move on, so the one it had is complete.
void FlowFabric::open_bin(std::uint32_t link, std::uint64_t bin) {
    LinkBusy& b = m_busy[link];
    if (b.bin == bin) return;
    b.busy = b.bin == kNoBin ? 0.0f : spill_bins(m_links[link].s.busy_bins, b.bin, b.busy, b.bin_capacity, bin);
    b.bin = bin;
}

// Appends bin `from`'s `busy` lane-ps to `bins`, at most `capacity` a bin, what it cannot hold going
// on into the bins after it, up to bin `until`; returns what reaches `until`. Why: a flag timed
// alone adds its wire time where it starts, on top of the solver's full load (and float sums round
// up), so a bin could read above 100%; the link is instead busy that much longer, and the bins still
// add up to its busy time.
float FlowFabric::spill_bins(std::vector<std::pair<std::uint64_t, float>>& bins, std::uint64_t from, float busy,
                             float capacity, std::uint64_t until) {
    for (std::uint64_t bin = from; bin < until && busy > 0.0f; ++bin) {
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

// The queued writes' busy time per link and bin (lane-ps), in bin order: each write's wire bytes on each link
// of its route there and back (as count_links counts them, its queue's link left to its incast queue, which
// bins what comes through it), evenly over its time; and the late busy time (m_late_busy).
std::vector<std::vector<std::pair<std::uint64_t, float>>> FlowFabric::sent_write_bins() const {
    std::vector<DenseBins> dense(m_links.size());
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
            dense[link].spread(w.start_ps, w.end_ps, ps, m_bin_ps);
        }
        for (const auto& [link, share] : m_routes[w.back].links) {
            const TopoLink& l = links[link];
            const double headers = link_headers(w.framing, false, n, l, false);
            dense[link].spread(w.start_ps, w.end_ps, share * headers * 1e12 / l.bytes_per_s, m_bin_ps);
        }
    }
    for (const LateBusy& b : m_late_busy) dense[b.link].add(b.at_ps / m_bin_ps, b.lane_ps);
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
