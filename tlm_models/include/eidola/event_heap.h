// A time-ordered queue of a module's own pending actions; the shared calendar (calendar.h) runs
// the module at the time of the earliest one.
// Why: one callback per module draining this heap replaces a thread or an event per workgroup,
// which keeps thousands of GPUs with hundreds of workgroups in memory, and the (time, sequence)
// order makes simultaneous actions deterministic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
#include <vector>

#include <systemc>

#include "eidola/calendar.h"

namespace eidola {

/// Current simulated time in kernel resolution units (picoseconds).
/// Why not sc_time_stamp(): that is an out-of-line library call on every action of every model;
/// the context's current time is the same value, read inline. Why not sc_get_curr_simcontext():
/// the compiler keeps that one out of line (it may create the context), a call through the PLT;
/// while a simulation runs the context exists.
inline std::uint64_t now_ps() { return sc_core::sc_curr_simcontext->time_stamp().value(); }

/// sc_time of a picosecond count.
inline sc_core::sc_time ps_to_time(std::uint64_t ps) { return sc_core::sc_time::from_value(ps); }

/// A FIFO ring of entries: push at the back, pop at the front, no allocation once grown.
/// Why not std::deque: used as a queue it frees and allocates a 512-byte node every few dozen
/// entries, and its front() and back() go through node pointers on every comparison.
template <class Entry>
class EntryRing {
public:
    bool empty() const { return m_count == 0; }
    const Entry& front() const { return m_buf[m_head]; }
    const Entry& back() const { return m_buf[(m_head + m_count - 1) & m_mask]; }
    // Inlined, with grow() kept out of line: the packet fabric pushes half its actions here, and
    // as an out-of-line call this was 2.5% of a torus run.
    [[gnu::always_inline]] inline void push_back(const Entry& e) {
        if (m_count == m_buf.size()) [[unlikely]] grow();
        m_buf[(m_head + m_count) & m_mask] = e;
        ++m_count;
    }
    void pop_front() {
        m_head = (m_head + 1) & m_mask;
        --m_count;
    }

private:
    [[gnu::noinline]] void grow() {
        std::vector<Entry> bigger(m_buf.empty() ? 16 : m_buf.size() * 2);
        for (std::size_t i = 0; i < m_count; ++i) bigger[i] = m_buf[(m_head + i) & m_mask];
        m_buf.swap(bigger);
        m_head = 0;
        m_mask = m_buf.size() - 1;
    }
    std::vector<Entry> m_buf;
    std::size_t m_head = 0, m_count = 0, m_mask = 0;
};

/// Pending actions of type Item, ordered by time then by insertion.
///
/// Why lanes: most actions are scheduled at one of a few constant offsets from now (a link's or a
/// switch's latency, the memory's in-order completions), so each offset's actions arrive already
/// in time order. An action joins the lane whose last action is the latest not after it (each
/// lane stays sorted by time, and by insertion within a time); only one that fits no lane pays
/// for the heap. Popping takes the smallest (time, sequence) of the lane fronts and the heap top,
/// so the order is exactly that of a single heap. With one lane, the packet fabric's hops and
/// credits interleaved and sent most of its actions through the heap.
///
/// Why a lane of its own for actions due now: about half the packet fabric's actions (a head
/// ready, an arbitration) are due at the current time, when every other lane already holds later
/// actions, so best fit sent them all to the heap. The now lane only ever holds actions of one
/// time (it is empty before time moves on), so it stays sorted too. And it comes after every
/// other action of its time: those were pushed before that time was the current one, so their
/// sequence numbers are smaller. Popping therefore compares the now lane's time with the cached
/// earliest time of the rest, and only a pop from the rest scans the lanes.
template <class Item>
class EventHeap {
public:
    /// `run(owner)` drains the due actions; the calendar calls it when the earliest is due.
    EventHeap(void* owner, void (*run)(void*)) : m_client(owner, run) {}

    /// Schedules `item` at absolute time `at_ps` (not earlier than now). Always inlined: it is on
    /// every model's per-packet path, and compilers' heuristics otherwise inline it or not
    /// depending on unrelated code in the same file.
    [[gnu::always_inline]] inline void push(std::uint64_t at_ps, const Item& item) {
        const Entry e{at_ps, m_next_seq++, item};
        const bool earliest = at_ps < m_next_ps;
        if (earliest) m_next_ps = at_ps;
        if (m_now.empty() ? at_ps == now_ps() : m_now.back().at_ps == at_ps) {
            m_now.push_back(e);
        } else {
            Lane* best = nullptr;
            for (Lane& lane : m_lanes) {  // best fit: the latest back not after at_ps
                if (lane.empty()) {
                    if (!best) best = &lane;
                    continue;
                }
                if (lane.back().at_ps <= at_ps && (!best || best->empty() || lane.back().at_ps > best->back().at_ps))
                    best = &lane;
            }
            if (best) best->push_back(e);
            else m_heap.push(e);
            if (at_ps < m_rest_ps) m_rest_ps = at_ps;
        }
        ++m_size;
        if (earliest) m_client.wake_at(at_ps);  // new earliest: have the module run for it
    }

    /// Takes the next item due at or before `now`; false when none is due.
    bool pop_due(std::uint64_t now, Item& out) {
        if (m_next_ps > now) return false;
        if (!m_now.empty() && m_now.front().at_ps < m_rest_ps) {  // ties go to the rest (see above)
            out = m_now.front().item;
            m_now.pop_front();
        } else {
            // The smallest (time, sequence) of the lane fronts and the heap top.
            Lane* first = nullptr;
            for (Lane& lane : m_lanes)
                if (!lane.empty() && (!first || before(lane.front(), first->front()))) first = &lane;
            if (first && (m_heap.empty() || before(first->front(), m_heap.top()))) {
                out = first->front().item;
                first->pop_front();
            } else {
                out = m_heap.top().item;
                m_heap.pop();
            }
            m_rest_ps = rest_time();
        }
        --m_size;
        ++m_processed;
        m_next_ps = m_now.empty() ? m_rest_ps : std::min(m_now.front().at_ps, m_rest_ps);
        return true;
    }

    /// Books the module for the earliest remaining item (call after draining).
    void rearm(std::uint64_t /*now*/) {
        if (!empty()) m_client.wake_at(m_next_ps);
    }

    /// Has the module run at the current time, as pushing an action that does nothing at now
    /// would: the booking is the same (made only if none at or before now exists), without the
    /// action to store, pop and drop. Only from outside the module's own run: there, a pushed
    /// action would be popped in the same run, but the booking would add one more.
    void wake_now() { m_client.wake_at(now_ps()); }

    /// Books the module's first run at time 0 (a module that starts work by itself).
    void wake_at_start() { m_client.wake_at(0); }

    bool empty() const { return m_size == 0; }
    /// Actions processed so far (the model's event count).
    std::uint64_t processed() const { return m_processed; }

private:
    static constexpr int kLanes = 4;
    static constexpr std::uint64_t kNone = ~std::uint64_t(0);
    struct Entry {
        std::uint64_t at_ps;
        std::uint64_t seq;
        Item item;
        bool operator>(const Entry& o) const { return before(o, *this); }
    };
    using Lane = EntryRing<Entry>;
    /// (time, sequence) order as one 128-bit comparison: branch-free, where the two-step
    /// comparison mispredicts about every other time on these scans.
    static bool before(const Entry& a, const Entry& b) {
        __extension__ using Key = unsigned __int128;  // a GCC and Clang type: __extension__ keeps -Wpedantic quiet
        return ((Key(a.at_ps) << 64) | a.seq) < ((Key(b.at_ps) << 64) | b.seq);
    }
    /// The earliest time in the lanes and the heap (not the now lane), kNone when they are empty.
    std::uint64_t rest_time() const {
        std::uint64_t t = m_heap.empty() ? kNone : m_heap.top().at_ps;
        for (const Lane& lane : m_lanes)
            if (!lane.empty()) t = std::min(t, lane.front().at_ps);
        return t;
    }
    CalendarClient m_client;
    std::uint64_t m_next_ps = kNone;  ///< the earliest pending time (cached: every push compares with it)
    std::uint64_t m_rest_ps = kNone;  ///< the earliest time in the lanes and the heap
    Lane m_now;                       ///< actions due at one time, the current one when they were pushed
    Lane m_lanes[kLanes];
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> m_heap;
    std::size_t m_size = 0;
    std::uint64_t m_next_seq = 0;
    std::uint64_t m_processed = 0;
};

}  // namespace eidola
