// The packet GPU's issue of posted writes and its output queues, as a fluid, for the flow fabric
// (flow_fabric.h; the design and its measurements: docs/fabrics.md, "The GPU's issue gates").
//
// A packet GPU issues its workgroups' packets round robin into its injection buffer while the
// buffer has room and its window (max_outstanding) has a free slot; a posted write's workgroup goes
// on once the write's last packet is issued, and each output queue of the buffer sends its packets
// in the order they were issued. The flow fabric sends each write as one flow, so the GPU
// (FlowExtension::tell_sent) waits for FLOW_SENT instead, and this file times it and the write's end:
//   - what the gates hold issued and not yet sent is at most the buffer, and at most the window
//     less what is in flight beyond it: what the GPU sent over the last round trip, which is
//     answered a round trip after it was sent. Each output keeps its own send rate's history over
//     its own writes' mean round trip: a near peer's answers come back while a far one's (through
//     the NIC) are on their way, and one mean round trip for all, once the near writes were done,
//     held their answered bytes in flight for the far ones' round trip (hierarchical-16gpu's 1 MiB
//     direct all-reduce: its window stalled for 8 us, +3.7% against the packet fabric). So when the send
//     rate falls, the window's room comes back as the answers to the faster sending come in, not at
//     once (with rate x round trip, a write held at its output queue's issue freed at once slots
//     the packet GPU holds until their answers arrive, and the gates issued that room to the other
//     writes in a lump: MI300X's direct all-reduce ran 6.7% fast with responses served first);
//   - the gates' room is issued at once, shared equally among the pending writes (round robin),
//     the smallest done first, and among the workgroups told that their writes are issued that
//     have not come back yet: writes that finish issuing together are told a packet apart (below),
//     and the first workgroup back must not take the room that the round robin gives the others
//     in turn. Their shares are credited to them until they come back with a write, or until the
//     time step after they were told (MI300X's 1 MiB direct all-reduce: each GPU's first
//     workgroup issued all seven of its writes before the others came back, -4.2%);
//   - once full, they take more as fast as they send where the buffer binds, and as fast as the
//     answers come in (the send rate a round trip ago) where the window binds; that rate too is
//     shared equally among the pending writes: a processor-sharing queue, whose next completion is booked
//     as an Issued action and re-planned whenever the send rate or the pending writes change;
//     writes that complete together are told one packet's issue apart, in the round robin's order,
//     and end a packet apart in their output queues (each one's last packet is followed there by
//     the later ones' to the same output); a write the room of the moment issues whole is told at
//     once, as the packet GPU issues its packets in the same instant while there is room;
//   - each output queue (one per first link) is first in, first out: a write's last byte leaves
//     once everything issued into it before has, so its end (delivery, acknowledgement, release)
//     is when the queue's sent bytes reach its issued ones at its issue's end, and a signal leaves
//     when the queue has sent what was issued before it. The writes' flows still carry the bytes,
//     at max-min rates, for the links and the send rates; only the ends come from the queues.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "eidola/flow_extension.h"
#include "eidola/flow_fabric.h"
#include "eidola/round_ps.h"

namespace eidola {

namespace {
constexpr double kIssuedBytes = 1e-6;  // fewer bytes than this count as none (rounding)
// An output queue's backlog below a byte is the fluid's rounding, not bytes to send: it books no re-plan of
// the issue for when it will have been sent (plan_issue). Each interval's issue and sending leave fractions
// of a byte in the queues (0.05-0.7 bytes, traced), and re-planning for each such remnant booked an Issued
// action a few picoseconds ahead, again and again: on hierarchical-16gpu NCCL's ring all-reduce did 1.3
// million such re-plans at 16 MiB (89% of the fabric's actions), and took 43 s of wall time at 1 GiB and
// 153 s at 256 MiB (LL128).
constexpr double kBacklogRounding = 1.0;
}

// A flow's new rate; a windowed write's is also its GPU's send rate (set_rate(f, 0) takes it out).
void FlowFabric::set_rate(Flow& f, double rate) {
    count_rate(f, rate);
    f.rate = rate;
}

// Flow `f`'s part in the rates others count becomes `rate`: its GPU's send rate and its incast queue's
// arrivals (its own rate, f.rate, is the caller's: a flow that has sent its bytes keeps its last one).
void FlowFabric::count_rate(Flow& f, double rate) {
    count_send_rate(f, rate);
    if (f.incast >= 0) count_incast(f, rate);
}

// Flow `f`'s part in its GPU's and output queue's send rates becomes `rate` (its own rate, f.rate, is
// the caller's: a flow that has sent its bytes leaves the send rates but keeps its last rate).
void FlowFabric::count_send_rate(Flow& f, double rate) {
    const bool counts = f.sends && rate != FlowSolver::kUnlimited && rate > 0;
    if (counts || f.counted) {
        Issuer& is = m_issuers[f.src];
        advance_issue(f.src);  // up to now at the old rate
        const double round_trip = double(f.round_trip_ps) * 1e-12;
        Issuer::Output& out = output_of(f);
        if (f.counted) {
            is.rate -= f.rate;
            out.window_rate -= f.rate;
            out.in_flight -= f.rate * round_trip;
        }
        if (counts) {
            is.rate += rate;
            out.window_rate += rate;
            out.in_flight += rate * round_trip;
        }
        is.sending += std::int32_t(counts) - std::int32_t(f.counted);
        if (is.sending == 0) is.rate = 0;
        out.windowed += std::int32_t(counts) - std::int32_t(f.counted);
        if (out.windowed == 0) out.window_rate = out.in_flight = 0;
        // A new step of the link's send rate's history (one per time: the last change in a time step
        // stands), and the steps a whole round trip old dropped (the oldest kept may begin before it).
        const std::uint64_t now = now_ps();
        if (out.window_rate > 0) out.round_trip_ps = std::uint64_t(out.in_flight / out.window_rate * 1e12);
        if (!out.history.empty() && out.history.back().from == now) out.history.back().rate = out.window_rate;
        else out.history.push_back({now, out.window_rate, out.history.empty() ? 0.0 : sent_by(out, now)});
        while (out.history.size() > 1 && out.history[1].from + out.round_trip_ps <= now) out.history.pop_front();
        is.unanswered_ps = ~std::uint64_t(0);
        if (f.queued) {
            if (f.counted) out.rate -= f.rate;
            if (counts) out.rate += rate;
            out.sending += std::int32_t(counts) - std::int32_t(f.counted);
            if (out.sending == 0) out.rate = 0;
        }
        if (!is.dirty) {
            is.dirty = true;
            m_dirty_issuers.push_back(f.src);
        }
    }
    f.counted = counts;
}

// Posted write `id` came: its bytes wait to be issued.
void FlowFabric::issue_write(std::uint32_t id) {
    Flow& f = m_flows[id];
    advance_issue(f.src);
    f.telling = f.queued = true;
    f.unissued = double(f.bytes);
    ++output_of(f).unsent;
    Issuer& is = m_issuers[f.src];
    is.used = true;
    is.pending.push_back(id);
    // Planned in this time step's solve, once every write issued now has come: the packet GPU's
    // round robin shares the gates' room among all of them.
    if (!is.dirty) {
        is.dirty = true;
        m_dirty_issuers.push_back(f.src);
    }
    schedule_solve();
}

// What GPU `gpu`'s gates may hold issued and not yet sent, in payload bytes of writes like `f`.
double FlowFabric::issue_cap(std::uint32_t gpu, const Flow& f) const {
    const Gates g = gates_of(gpu, f);
    return std::max(0.0, std::min(g.buffer, g.window - unanswered(m_issuers[gpu])));
}

// GPU `gpu`'s two gates in payload bytes of writes like `f`: its injection buffer and its window.
FlowFabric::Gates FlowFabric::gates_of(std::uint32_t gpu, const Flow& f) const {
    const double packet = double(std::max<std::uint32_t>(1, f.packet_bytes));
    const double credits = m_credit_bytes ? std::max(1.0, std::ceil((packet + m_header) / m_flit)) : 1.0;
    return {m_inject_units[gpu] / credits * packet, double(f.window) * packet};
}

// Whether GPU `gpu` has pending writes and its window, not its buffer, is the gate that binds: its
// window may free further before the buffer does.
bool FlowFabric::window_binds(std::uint32_t gpu) const {
    const Issuer& is = m_issuers[gpu];
    if (is.pending.empty()) return false;
    const Gates g = gates_of(gpu, m_flows[is.pending.front()]);
    return g.buffer - (g.window - unanswered(is)) > 0;
}

// How fast GPU `gpu` issues while its gates are full: as fast as its gates send, where the buffer binds;
// where the window binds (`binds`: window_binds), as fast as the answers come in, which is each
// output's send rate a round trip of its own ago.
double FlowFabric::issue_rate(std::uint32_t gpu, bool binds) const {
    const Issuer& is = m_issuers[gpu];
    if (!binds) return is.rate;
    double rate = 0;
    for (const Issuer::Output& out : is.outputs) {
        const std::uint64_t then = answered_until(out);
        const std::size_t i = step_at(out, then);
        if (i < out.history.size()) rate += out.history[i].rate;
    }
    return rate;
}

// The round robin's turns at GPU `is`: its pending writes, and the workgroups told that theirs are
// issued that have not come back yet (each may come with its next write).
double FlowFabric::turns(const Issuer& is) const { return double(is.pending.size() + is.credits.size()); }

// What GPU `gpu`'s gates may still issue now, in payload bytes of writes like `f`: their cap, less
// what they hold and the room they keep for the workgroups still to come back (negative: over).
double FlowFabric::free_room(std::uint32_t gpu, const Flow& f) const {
    const Issuer& is = m_issuers[gpu];
    return issue_cap(gpu, f) - gates_hold(is) - credited(is);
}

// The room GPU `is`'s gates keep for the workgroups still to come back.
double FlowFabric::credited(const Issuer& is) const {
    double bytes = 0;
    for (const Issuer::Credit& c : is.credits) bytes += c.bytes;
    return bytes;
}

// Drops the credits of workgroups told before now that did not come back with a write: their room
// goes back to all.
void FlowFabric::expire_credits(Issuer& is) {
    const std::uint64_t now = now_ps();
    is.credits.erase(std::remove_if(is.credits.begin(), is.credits.end(),
                                    [&](const Issuer::Credit& c) { return c.told_ps < now; }),
                     is.credits.end());
}

// Shares `room` among GPU `is`'s turns: round robin, equal shares, the smallest pending writes done
// first (water filling); the shares of the workgroups still to come back are credited to them.
// The pending writes stay in that order, ties in the order they came: it is the order in which they
// finish issuing (each smaller one runs out a turn earlier).
void FlowFabric::share_room(Issuer& is, double room) {
    std::vector<std::uint32_t>& by_size = is.pending;
    std::stable_sort(by_size.begin(), by_size.end(), [&](std::uint32_t a, std::uint32_t b) {
        return m_flows[a].unissued < m_flows[b].unissued;
    });
    const std::size_t n = by_size.size(), away = is.credits.size();
    double left = room;
    std::size_t i = 0;
    while (i < n && left > 0) {
        const double need = m_flows[by_size[i]].unissued;  // the least left: all of it, to all of them?
        const double take = std::min(need, left / double(n - i + away));
        for (std::size_t j = i; j < n; ++j) {
            m_flows[by_size[j]].unissued -= take;
            output_of(m_flows[by_size[j]]).issued += take;
        }
        left -= take * double(n - i);
        if (away > 0) {
            for (Issuer::Credit& c : is.credits) c.bytes += take;
            left -= take * double(away);
        }
        // The writes this turn finished: their last bytes are in their output queues by what has been issued
        // there so far, before the larger writes' rest, each a packet before those finishing in this turn after
        // it to its output (plan_issue's marks).
        const std::size_t first = i;
        while (i < n && m_flows[by_size[i]].unissued <= kIssuedBytes) ++i;
        std::vector<std::uint32_t>& after = m_turn_scratch;  // per output: queued writes finishing in this turn
        after.assign(is.outputs.size(), 0);
        for (std::size_t k = first; k < i; ++k)
            if (const Flow& f = m_flows[by_size[k]]; f.queued) ++after[std::size_t(f.output)];
        for (std::size_t k = first; k < i; ++k) {
            Flow& f = m_flows[by_size[k]];
            const std::uint32_t behind = f.queued ? --after[std::size_t(f.output)] : 0;
            m_issue_marks.push_back({by_size[k], output_of(f).issued, behind});
        }
        if (take < need) return;
    }
    if (i == n && away > 0 && left > 0)  // every pending write is issued: the rest is theirs
        for (Issuer::Credit& c : is.credits) c.bytes += left / double(away);
}

// The step of output `out`'s history in force at time `t`: the last that began at or before it (the
// history's size if none did).
std::size_t FlowFabric::step_at(const Issuer::Output& out, std::uint64_t t) {
    const auto after = std::upper_bound(out.history.begin(), out.history.end(), t,
                                        [](std::uint64_t at, const Issuer::Output::Step& s) { return at < s.from; });
    return after == out.history.begin() ? out.history.size() : std::size_t(after - out.history.begin()) - 1;
}

// What output `out` had sent by time `t` (at or after its history's first step).
double FlowFabric::sent_by(const Issuer::Output& out, std::uint64_t t) {
    const Issuer::Output::Step& s = out.history[step_at(out, t)];
    return s.sent + s.rate * double(t - s.from) * 1e-12;
}

// Until when a GPU's sending through output `out` has been answered: a round trip ago.
std::uint64_t FlowFabric::answered_until(const Issuer::Output& out) const {
    const std::uint64_t now = now_ps();
    return now > out.round_trip_ps ? now - out.round_trip_ps : 0;
}

// What GPU `is` has in flight beyond its gates: what each output sent over its last round trip, the
// mean of its sending writes' round trips.
double FlowFabric::unanswered(const Issuer& is) const {
    const std::uint64_t now = now_ps();
    if (is.unanswered_ps == now) return is.unanswered_bytes;
    double bytes = 0;
    for (const Issuer::Output& out : is.outputs) {
        if (out.history.empty()) continue;
        const std::uint64_t from = std::max(answered_until(out), out.history.front().from);
        if (now > from) bytes += sent_by(out, now) - sent_by(out, from);
    }
    if (!is.incast_rates.empty()) bytes += queued_unanswered(is, now);
    is.unanswered_ps = now;
    is.unanswered_bytes = bytes;
    return bytes;
}

// What GPU `gpu`'s gates hold issued and not yet sent: its output queues' backlogs.
double FlowFabric::gates_hold(const Issuer& is) const {
    double held = 0;
    for (const Issuer::Output& out : is.outputs) held += std::max(0.0, out.issued - out.sent);
    return held;
}

// The pending writes' least bytes left to issue.
double FlowFabric::least_unissued(const Issuer& is) const {
    double least = m_flows[is.pending.front()].unissued;
    for (std::uint32_t id : is.pending) least = std::min(least, m_flows[id].unissued);
    return least;
}

// Brings GPU `gpu`'s issue up to now: its output queues sent at their flows' rates, and the pending
// writes took equal shares of what that freed (their next completion was booked, so none completed
// in between).
void FlowFabric::advance_issue(std::uint32_t gpu) {
    Issuer& is = m_issuers[gpu];
    const std::uint64_t now = now_ps();
    if (now == is.anchor_ps) return;
    const double seconds = double(now - is.anchor_ps) * 1e-12;
    is.anchor_ps = now;
    if (!is.pending.empty()) {
        // The gates stay full: what they sent, plus what their room grew by (the window freeing as the
        // answers to faster sending come in), or less what it shrank by (sending picked up: the gates
        // first send the excess, issuing nothing meanwhile).
        const double moved = is.rate * seconds;
        // free_room() plus `moved`, summed in the order that keeps earlier results bit for bit
        const double issue =
            std::max(0.0, moved + issue_cap(gpu, m_flows[is.pending.front()]) - gates_hold(is) - credited(is));
        const double each = issue / turns(is);
        for (std::uint32_t id : is.pending) {
            Flow& f = m_flows[id];
            output_of(f).issued += std::min(each, f.unissued);
            f.unissued = std::max(0.0, f.unissued - each);
        }
        for (Issuer::Credit& c : is.credits) c.bytes += each;
    }
    // The outputs send at their rates what was issued into them, this interval's issue included.
    for (Issuer::Output& out : is.outputs) out.sent = std::min(out.issued, out.sent + out.rate * seconds);
}

// Issues what GPU `gpu`'s gates have room for now, tells the writes that are done, ends the writes
// (and lets go the signals) whose place in their output queue has been sent, and books the next.
void FlowFabric::plan_issue(std::uint32_t gpu) {
    Issuer& is = m_issuers[gpu];
    advance_issue(gpu);
    expire_credits(is);
    if (!is.pending.empty()) {
        // The writes the fluid has issued whole by now finished at its pace (the gates were full);
        // the ones the room of this moment finishes below are issued at once, as the packet GPU
        // issues a write's packets in the same instant while its buffer and window have room.
        for (std::uint32_t id : is.pending) m_flows[id].paced_done = m_flows[id].unissued <= kIssuedBytes;
        // A workgroup back with a write takes its credit first, then its turns of the room left.
        for (std::uint32_t id : is.pending) {
            Flow& f = m_flows[id];
            for (std::size_t c = 0; c < is.credits.size(); ++c) {
                if (is.credits[c].workgroup != f.workgroup) continue;
                const double take = std::min(f.unissued, is.credits[c].bytes);
                f.unissued -= take;
                output_of(f).issued += take;
                is.credits.erase(is.credits.begin() + std::ptrdiff_t(c));
                break;
            }
        }
        const double room = free_room(gpu, m_flows[is.pending.front()]);
        m_issue_marks.clear();
        if (room > 0) share_room(is, room);
        // Tell the writes that are issued, in the round robin's order (the pending order); those the
        // fluid finished together at its pace one packet's issue apart, as the packet GPU issues
        // their last packets in turn as room frees, and those issued at once now. Their workgroups
        // are credited their turns until they come back (share_room).
        std::vector<std::uint32_t>& done = m_done_scratch;
        done.clear();
        for (std::uint32_t id : is.pending)
            if (m_flows[id].unissued <= kIssuedBytes) done.push_back(id);
        if (!done.empty()) {
            is.pending.erase(std::remove_if(is.pending.begin(), is.pending.end(),
                                            [&](std::uint32_t id) { return m_flows[id].unissued <= kIssuedBytes; }),
                             is.pending.end());
            const double packet = double(std::max<std::uint32_t>(1, m_flows[done.front()].packet_bytes));
            const std::uint64_t turn_ps = is.rate > 0 ? round_ps(packet * 1e12 / is.rate) : 0;
            // Their last packets go into their output queues in that order too: a write is followed
            // there by the last packets of the later ones to the same output, so it ends (and its
            // acknowledgement and release come) a packet's sending before theirs.
            std::vector<std::uint32_t>& later = m_later_scratch;  // per output: done writes still to tell
            later.assign(is.outputs.size(), 0);
            for (std::uint32_t id : done)
                if (m_flows[id].queued) ++later[std::size_t(m_flows[id].output)];
            std::uint64_t turns_before = 0;  // paced writes told before this one
            std::size_t mark = 0;            // the next of m_issue_marks
            for (std::size_t k = 0; k < done.size(); ++k) {
                Flow& f = m_flows[done[k]];
                const std::uint32_t behind = f.queued ? --later[std::size_t(f.output)] : 0;
                const std::uint64_t later_ps = f.paced_done ? turns_before++ * turn_ps : 0;
                // Where this moment's room issued it whole in an earlier turn than the larger writes beside it,
                // its last packet is in its queue by that turn, each one finishing in the same turn after it a
                // packet later. Why: told by the queue's whole issue, a 256 B write issued beside a 64 KiB one
                // ended after it, and a signal released behind it waited the 64 KiB's sending (+27% on
                // switch-8gpu with one lane; scripts/compare_fabrics.py).
                // The marks are in the pending order too (share_room pushed them in it), a part of `done`.
                double by = std::numeric_limits<double>::infinity();
                if (mark < m_issue_marks.size() && m_issue_marks[mark].id == done[k]) {
                    by = m_issue_marks[mark].issued - double(m_issue_marks[mark].behind) * packet;
                    ++mark;
                }
                tell_sent(f, later_ps, double(behind) * packet, by);
                is.credits.push_back(Issuer::Credit{f.workgroup, now_ps() + later_ps, 0.0});
            }
            // With no write left pending, the room the gates still have is the told workgroups' turns.
            const double room = free_room(gpu, m_flows[done.front()]);
            if (is.pending.empty() && room > 0) share_room(is, room);
        }
    }
    // The writes whose last byte has left their output queue end now; the signals behind them go.
    double wait_ps = -1;
    auto sooner = [&](double ps) { wait_ps = wait_ps < 0 ? ps : std::min(wait_ps, ps); };
    for (Issuer::Output& out : is.outputs) {
        while (!out.fifo.empty() && out.fifo.front().first <= out.sent + kIssuedBytes) {
            const std::uint32_t entry = out.fifo.front().second;
            out.fifo.pop_front();
            if (entry & kSignalInFifo) {  // its turn has come: it goes on in its own action
                const std::uint32_t id = entry & ~kSignalInFifo;
                m_flows[id].slip_ps = std::max<std::uint64_t>(1, now_ps());
                m_actions.push(now_ps(), {ActionKind::Slip, id, 0, nullptr});
            } else {
                fifo_due(entry);  // delivers only (no new flow, no new output): `out` stays valid
            }
        }
        if (!out.fifo.empty() && out.rate > 0) sooner((out.fifo.front().first - out.sent) / out.rate * 1e12);
        out.issuing = 0;
    }
    // An output queue whose backlog will empty (it sends faster than its share of the issue comes
    // in): re-planned then, since the bytes it then cannot send stay in the gates.
    for (std::uint32_t id : is.pending) ++output_of(m_flows[id]).issuing;
    const bool binds = window_binds(gpu);
    const double issuing = issue_rate(gpu, binds);
    const double share = is.pending.empty() ? 0 : issuing / turns(is);
    for (const Issuer::Output& out : is.outputs) {
        const double drains = out.rate - double(out.issuing) * share;
        if (out.issued - out.sent > kBacklogRounding && drains > 0) sooner((out.issued - out.sent) / drains * 1e12);
    }
    if (!is.pending.empty() && issuing > 0) {
        const double excess = std::max(0.0, gates_hold(is) - issue_cap(gpu, m_flows[is.pending.front()]));
        sooner((excess + least_unissued(is) * turns(is)) / issuing * 1e12);
    }
    if (binds) {
        // The issue goes at the answers' rate, which changes when the next step of the send rate's
        // history has been answered.
        for (const Issuer::Output& out : is.outputs) {
            const std::size_t i = step_at(out, answered_until(out));
            const std::size_t next = i < out.history.size() ? i + 1 : 0;  // none at or before: the first
            if (next < out.history.size()) sooner(double(out.history[next].from + out.round_trip_ps - now_ps()));
        }
    }
    // The credits of workgroups that do not come back go back to the pending writes, once all of
    // theirs have had their time to come.
    if (!is.pending.empty() && !is.credits.empty()) {
        std::uint64_t last = 0;
        for (const Issuer::Credit& c : is.credits) last = std::max(last, c.told_ps);
        sooner(double(last + 1 - now_ps()));
    }
    if (wait_ps < 0) return;
    const std::uint64_t at = now_ps() + std::max<std::uint64_t>(1, std::uint64_t(std::ceil(wait_ps)));
    if (at == is.booked_ps) return;  // booked already (a plan that changed nothing books nothing new)
    is.booked_ps = at;
    m_actions.push(at, {ActionKind::Issued, gpu, ++is.version, nullptr});
}

// GPU `gpu`'s booked issue completion or output-queue end is due (unless it was re-planned since).
void FlowFabric::issued(std::uint32_t gpu, std::uint32_t version) {
    Issuer& is = m_issuers[gpu];
    if (version != is.version) return;
    advance_issue(gpu);
    const double issuing = issue_rate(gpu, window_binds(gpu));
    if (!is.pending.empty()) {
        // The booking rounded up: a write it may have been booked for is done.
        const double least = least_unissued(is);
        const double excess = std::max(0.0, gates_hold(is) - issue_cap(gpu, m_flows[is.pending.front()]));
        if (least * turns(is) + excess <= issuing * 1e-12 + kIssuedBytes)
            for (std::uint32_t id : is.pending)
                if (m_flows[id].unissued <= least + kIssuedBytes) m_flows[id].unissued = 0;
    }
    const double share = is.pending.empty() ? 0 : issuing / turns(is);
    for (Issuer::Output& out : is.outputs) {  // the booking rounded up: within a picosecond's sending counts as sent
        if (!out.fifo.empty() && out.fifo.front().first - out.sent <= out.rate * 1e-12)
            out.sent = std::max(out.sent, out.fifo.front().first);
        if (out.issued - out.sent <= (out.rate - double(out.issuing) * share) * 1e-12) out.sent = out.issued;
    }
    plan_issue(gpu);
}

// Flow `f`'s output queue: its GPU's on the first link of its route.
FlowFabric::Issuer::Output& FlowFabric::output_of(Flow& f) {
    Issuer& is = m_issuers[f.src];
    if (f.output < 0) {
        const std::uint32_t link = m_routes[f.route].path.front();
        std::size_t o = 0;
        while (o < is.outputs.size() && is.outputs[o].link != link) ++o;
        if (o == is.outputs.size()) {
            is.outputs.emplace_back();
            is.outputs.back().link = link;
        }
        f.output = std::int32_t(o);
    }
    return is.outputs[std::size_t(f.output)];
}

// Tells flow `f`'s GPU, `later_ps` from now, that its last packet is issued (its workgroup goes on),
// and queues its end.
void FlowFabric::tell_sent(Flow& f, std::uint64_t later_ps, double behind_bytes, double by) {
    f.telling = false;
    f.unissued = 0;
    if (f.queued) {
        Issuer::Output& out = output_of(f);
        // Its last byte leaves before the `behind_bytes` issued with it after it (and by `by`, where its turn
        // is known), never before the entries already queued (the queue's counts only grow).
        double count = std::min(out.issued - behind_bytes, by);
        if (!out.fifo.empty()) count = std::max(count, out.fifo.back().first);
        out.fifo.emplace_back(count, std::uint32_t(&f - m_flows.data()));
        out.packet_bytes = f.packet_bytes;
    }
    tlm::tlm_phase phase = FLOW_SENT;
    sc_core::sc_time delay = sc_core::sc_time::from_value(later_ps);
    initiator_of(f.src).nb_transport_bw(*f.trans, phase, delay);
}

// Queued write `f` has sent all its bytes: once none of its output's writes is left to send,
// nothing issued is left unsent there.
void FlowFabric::all_sent(Flow& f) {
    advance_issue(f.src);
    Issuer::Output& out = output_of(f);
    if (--out.unsent == 0) out.sent = out.issued;
}

// Signal `id` goes behind what its output queue holds, if anything: true if it waits there. It
// leaves when the queue has sent what was issued into it before, whatever the rates meanwhile (a
// wait computed once from the rates of the moment is wrong by the rest: a flag that joins the
// solver for its few nanoseconds holds every flow of its link to the flag's own rate).
bool FlowFabric::queue_signal(std::uint32_t id) {
    Flow& f = m_flows[id];
    advance_issue(f.src);
    Issuer::Output& out = output_of(f);
    const double at = signal_place(f, out);
    if (!(at - out.sent > kIssuedBytes)) return false;
    // Its place among the entries: after every one that ends by it (a write that another workgroup
    // issued in this instant ends after it), so that the counts stay in order.
    // Its packet's wire time on the link is the queue's too: what comes behind it leaves that much later.
    const double room = signal_room(f, out);
    auto it = out.fifo.end();
    for (; it != out.fifo.begin() && std::prev(it)->first > at; --it) std::prev(it)->first += room;
    out.fifo.insert(it, {at, id | kSignalInFifo});
    out.issued += room;
    plan_issue(f.src);
    return true;
}

// The room signal `f` takes in output queue `out`, in payload bytes of the writes queued there: its packet's
// wire time on the link at their rate. Why: the packet GPU sends a release between two writes' packets, and
// the write behind it ends that much later. Counted as nothing, an 8-GPU SyncMon ring of 8 workgroups and
// 8 KiB steps ran 19% slow under start skews of a few nanoseconds: every release left in the same picosecond
// as a write ended and its waiter woke a packet early, so each step's ties between a release and the next
// write fell the other way from the packet fabric's and the workgroups bunched (docs/fabrics.md).
double FlowFabric::signal_room(const Flow& f, const Issuer::Output& out) const {
    const TopoLink& l = m_topology->links()[out.link];
    const std::uint64_t packet = l.framed ? std::max<std::uint64_t>(1, m_mtu) : std::max<std::uint32_t>(1, out.packet_bytes);
    return double(packet_wire(l, f.bytes, false)) * double(packet) / double(packet_wire(l, packet, false));
}

// Where signal `f` goes in output queue `out`: behind what was issued into it before, less what the writes
// that other workgroups issued in this same instant put there past their first packet. Why: the packet GPU
// issues a write's packets and a signal in its round robin, a packet a workgroup a turn, so a signal that
// comes in the instant other workgroups issue their writes leaves after their first packets, not after all
// of theirs. (On hierarchical-16gpu's SyncMon ring all-reduce, a workgroup's release whose acknowledgements
// came back in the instant another workgroup's wait ended went a whole write late, step after step.) Its own
// workgroup's writes stay ahead of it: they were issued before it, in program order.
double FlowFabric::signal_place(const Flow& f, const Issuer::Output& out) const {
    const std::uint64_t now = now_ps();
    const std::uint32_t own = f.ext ? f.workgroup : ~std::uint32_t(0);
    double later = 0;
    auto after_its_turn = [&](std::uint32_t w) {
        const Flow& g = m_flows[w];
        if (!g.trans || g.arrived_ps != now || !g.ext || g.workgroup == own || g.output != f.output) return;
        const double issued = double(g.bytes) - g.unissued;
        later += std::max(0.0, issued - double(std::max<std::uint32_t>(1, g.packet_bytes)));
    };
    for (const auto& [count, entry] : out.fifo)
        if (!(entry & kSignalInFifo)) after_its_turn(entry);
    for (std::uint32_t w : m_issuers[f.src].pending) after_its_turn(w);
    return std::max(out.sent, out.issued - later);
}

// Whether queued write `id` waits for its workgroup's write ahead of it on its output (it then goes when that
// one has sent its bytes, unpark). Why: the packet GPU issues a packet a workgroup a turn, and a workgroup's
// next write only after its last one's last packet, so its injection queue holds the writes in batches (every
// workgroup's first write interleaved, then every second one) and its link sends them batch after batch. The
// fluid let every write its window had room for share the link at once (28 of them on a hierarchical-16gpu
// GPU's NIC at the start of a 1 MiB direct all-reduce), so every destination's traffic met at the far leaves
// from the first microsecond (docs/fabrics.md, "Incast queues").
bool FlowFabric::park(std::uint32_t id) {
    Flow& f = m_flows[id];
    Issuer::Output& out = output_of(f);
    const bool behind = std::find(out.sending_wgs.begin(), out.sending_wgs.end(), f.workgroup) != out.sending_wgs.end();
    if (behind) {
        out.parked.push_back(id);
        f.parked = true;
    }
    out.sending_wgs.push_back(f.workgroup);
    return behind;
}

// Queued write `f` has sent its bytes: its workgroup's next write on its output, if one waits, starts.
void FlowFabric::unpark(Flow& f) {
    Issuer::Output& out = output_of(f);
    out.sending_wgs.erase(std::find(out.sending_wgs.begin(), out.sending_wgs.end(), f.workgroup));
    for (auto it = out.parked.begin(); it != out.parked.end(); ++it)
        if (m_flows[*it].workgroup == f.workgroup) {
            start_parked(out, it);
            return;
        }
}

// Parked write `*at` of output `out` starts its flow now.
void FlowFabric::start_parked(Issuer::Output& out, std::vector<std::uint32_t>::iterator at) {
    const std::uint32_t id = *at;
    out.parked.erase(at);
    m_flows[id].parked = false;
    activate(id);
}

// Write `id`'s last byte has left its GPU's output queue: it is delivered one zero-load trip later.
void FlowFabric::fifo_due(std::uint32_t id) {
    Flow& f = m_flows[id];
    if (f.parked) {  // its place in the queue came before its workgroup's write ahead had sent its bytes: it goes now
        Issuer::Output& out = output_of(f);
        start_parked(out, std::find(out.parked.begin(), out.parked.end(), id));
    }
    f.due = true;
    const std::uint64_t now = now_ps();
    const std::uint64_t last = f.bytes - std::uint64_t(f.packets - 1) * f.packet_bytes;
    if (f.ext) f.ext->first_ps = f.packets > 1 ? std::min(now, f.start_ps + zero_load_of(f, f.packet_bytes, false)) : 0;
    if (!f.sent_all && (!m_injection_blocking || held_further_on(id, now)) && carry_on(id, now)) {
        // flow.injection: free gives each write its own max-min rate, as if the GPU had a queue per destination:
        // the output queue's bytes sent then count other writes' bytes too, which no head-of-line blocking holds
        // behind this one, and its flow (held by a slower link further on) may not have carried its own. It is
        // delivered when it has (finish). Why: ending it here ran custom-4gpu's NCCL all-to-all at 2.6x the
        // 32 GB/s link between its switches (tests/python/test_flow_link_bounds.py). Under `blocking` the same
        // holds for a write whose flow goes slower than another of its output's (held_further_on); where its
        // output's writes go at one rate the queue's sent bytes are theirs, and its place in the queue is when
        // the packet GPU sends it. Holding every write to its own last byte, in both modes, failed 25 of the flow
        // test files' comparisons with the packet fabric (2026-12-07; switch-8gpu's 1 MiB ring all-reduce among
        // them) and moved the bench driver's lockstep runs by +7.5% and +14%.
        f.late = true;
        return;
    }
    // Its last packet started one packet's time before its last byte left, at the output queue's rate: the
    // queue sends its writes one after another, and the writes issued after it, which shared its flow's rate
    // in the fluid, wait behind it there. (At its flow's rate, kept when it sent its last byte, the last
    // packet started a packet's time early where a write issued in that packet's time took half the link:
    // its acknowledgement and release came early.)
    const double queue_rate = output_of(f).rate;
    const double rate = queue_rate > 0 ? std::max(queue_rate, f.rate) : f.rate;
    std::uint64_t last_starts = now;
    if (rate > 0 && rate != FlowSolver::kUnlimited)
        last_starts -= std::min(now - f.start_ps, round_ps(double(std::max<std::uint64_t>(last, 1)) * 1e12 / rate));
    if (!f.sent_all && f.incast >= 0 && !f.incast_drained) {
        // Its bytes its share had not yet carried never reach its incast queue, whose arrivals follow the shares
        // (hierarchical-16gpu's 1 MiB direct all-reduce: a GPU's queue received 63% of its link's bytes). Adding
        // them to the queue's backlog here put switch-8gpu's ungated 32-workgroup ring at +12.4% against the
        // packet fabric (from within 3%): the shares of the writes behind it had carried as many early. So only
        // the link's bins get them, now (docs/fabrics.md, "What it reports").
        const std::uint32_t link = m_incasts[std::size_t(f.incast)].link;
        const double left = f.unsent_at(now);
        m_late_busy.push_back({link, now, left * f.incast_weight * 1e12 / m_busy[link].bytes_per_s});
    }
    deliver_queued(f, last, last_starts);
    if (f.sent_all) {
        account_flow(id);
        return;
    }
    // Its bytes have left the queue, whatever its flow's max-min share had carried of them: the flow
    // ends now (in this time step, outside the plan under way), so that the flows the solver holds are
    // the ones the output queue holds.
    f.paced_bytes = 0;
    f.remaining = 0;
    f.anchor_ps = now;
    book_finish(id, now);
}

// Whether `match(id)` holds for a write of GPU `gpu`'s output `output` that is still sending: queued in it (not a
// signal), or still being issued into it.
template <class Match>
bool FlowFabric::any_sending_on(std::uint32_t gpu, std::int32_t output, Match&& match) const {
    const Issuer& is = m_issuers[gpu];
    auto sending = [&](std::uint32_t id) {
        const Flow& g = m_flows[id];
        return g.trans && g.output == output && !g.sent_all && match(id);
    };
    for (const auto& [count, entry] : is.outputs[std::size_t(output)].fifo)
        if (!(entry & kSignalInFifo) && sending(entry)) return true;
    return std::any_of(is.pending.begin(), is.pending.end(), sending);
}

// Whether queued write `id`, due in its output queue at `now` under flow.injection: blocking, is held by a link
// further on: more than a packet of its bytes not yet carried, and its flow slower than another write still sending
// through its output. Its place in the queue is then reached with bytes the faster writes carried, over other
// links: ending it there left the rest of its bytes off its own, and an NCCL all-to-all over one spine
// (rail-16gpu, spines 1, 16 MiB) ended 32% under the spine link's bound while its cross-rail writes shared their
// NIC with a same-rail one (tests/python/test_flow_oversubscribed.py). A faster write that has finished counts
// too (outpaced, mark_outpaced). Where they all go at one rate (one bottleneck, or coupled: injection_key) the
// queue's sent bytes stand for its own.
bool FlowFabric::held_further_on(std::uint32_t id, std::uint64_t now) const {
    const Flow& f = m_flows[id];
    if (f.rate == FlowSolver::kUnlimited) return false;
    const double left = f.unsent_at(now);
    if (left <= double(std::max<std::uint32_t>(1, f.packet_bytes))) return false;
    if (f.outpaced) return true;
    // A write whose flow has no rate yet (a parked one fifo_due has just started, before the solve) has carried
    // nothing: any write sending beside it carried the bytes that reached its place, so it counts as held.
    return any_sending_on(f.src, f.output, [&](std::uint32_t other) {
        return other != id && f.rate < m_flows[other].rate * (1 - 1e-6);
    });
}

// Queued write `f` has sent its bytes: the writes of its output still sending slower than it did are marked
// outpaced (not the ones parked behind their workgroup's write or without a rate yet: they have carried nothing of
// their own, and held_further_on holds those while a write sends beside them). Why: its bytes counted in the output
// queue's sent bytes, so one of them may reach its place with its own not all carried after `f` has gone, when
// held_further_on no longer sees a faster write beside it (the 64-GPU all-to-all over rail-16gpu's spines with each
// channel's sends and receives on one workgroup ended 0.95% under the spines' bound;
// tests/python/test_flow_oversubscribed.py).
void FlowFabric::mark_outpaced(const Flow& f) {
    if (f.rate == FlowSolver::kUnlimited || !(f.rate > 0)) return;
    const double slower = f.rate * (1 - 1e-6);
    any_sending_on(f.src, f.output, [&](std::uint32_t other) {
        Flow& g = m_flows[other];
        if (!g.parked && g.rate > 0 && g.rate < slower) g.outpaced = true;
        return false;  // visit them all
    });
}

// Queued write `f`, whose last packet (`last` bytes) started at `last_starts`, is delivered a zero-load trip later
// (and its incast queue's wait). A single-packet message's NIC processing time is on its way, as in finish().
void FlowFabric::deliver_queued(Flow& f, std::uint64_t last, std::uint64_t last_starts) {
    const bool starts = f.packets == 1 && f.framing.first;
    m_actions.push(last_starts + zero_load_of(f, last, false, starts) + incast_wait_ps(f),
                   {ActionKind::Deliver, f.dst, f.src, f.trans});
}

// Whether queued write `id`, due in its output queue at `now`, still has bytes for its flow to carry; if so its
// Finish is booked at its own rate (the solves skipped it while it waited for its place in the queue).
bool FlowFabric::carry_on(std::uint32_t id, std::uint64_t now) {
    Flow& f = m_flows[id];
    if (f.rate == FlowSolver::kUnlimited) return false;
    f.remaining = f.remaining_at(now);
    f.anchor_ps = now;
    if (f.remaining < kIssuedBytes && !f.paced_bytes) return false;
    if (f.rate > 0) book_finish(id, now + std::uint64_t(std::ceil(f.remaining * 1e12 / f.rate)));
    return true;
}

}  // namespace eidola
