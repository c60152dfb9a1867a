// A time-ordered queue of a module's own pending actions; the shared calendar (calendar.h) runs
// the module at the time of the earliest one.
// Why: one callback per module draining this heap replaces a thread or an event per workgroup,
// which keeps thousands of GPUs with hundreds of workgroups in memory, and the (time, sequence)
// order makes simultaneous actions deterministic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
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
/// entries, and its front() and back() go through node pointers on every comparison. Why not a
/// std::vector for the storage: 24 bytes where one pointer does, and EventHeap keeps five rings
/// in the few cache lines it touches on every action (see its layout).
template <class Entry>
class EntryRing {
public:
    bool empty() const { return m_count == 0; }
    std::size_t size() const { return m_count; }
    const Entry& front() const { return m_buf[m_head]; }
    // Inlined, with grow() kept out of line: the packet fabric pushes half its actions here, and
    // as an out-of-line call this was 2.5% of a torus run.
    // By value, like push() below: see EventHeap::push.
    [[gnu::always_inline]] inline void push_back(Entry e) {
        if (m_count == m_capacity) [[unlikely]] grow();
        m_buf[(m_head + m_count) & (m_capacity - 1)] = e;
        ++m_count;
    }
    void pop_front() {
        m_head = (m_head + 1) & (m_capacity - 1);
        --m_count;
    }

private:
    [[gnu::noinline]] void grow() {
        const std::uint32_t capacity = m_capacity ? m_capacity * 2 : 16;
        std::unique_ptr<Entry[]> bigger(new Entry[capacity]);
        for (std::uint32_t i = 0; i < m_count; ++i) bigger[i] = m_buf[(m_head + i) & (m_capacity - 1)];
        m_buf.swap(bigger);
        m_head = 0;
        m_capacity = capacity;
    }
    std::unique_ptr<Entry[]> m_buf;
    std::uint32_t m_head = 0, m_count = 0, m_capacity = 0;  // capacity: a power of two (or 0)
};

/// What EventHeap and TimingWheel share: the calendar booking and the lane of actions due now.
/// Functions only, reading the queue's own fields (m_client, m_next_ps, m_rest_ps, m_now,
/// m_now_ps): each queue places those in the cache lines its layout wants.
template <class Queue, class Item>
class QueueFront {
public:
    /// Books the module for the earliest remaining item (call after draining).
    void rearm(std::uint64_t /*now*/) {
        if (!empty()) q().m_client.wake_at(q().m_next_ps);
    }

    /// Has the module run at the current time, as pushing an action that does nothing at now
    /// would: the booking is the same (made only if none at or before now exists), without the
    /// action to store, pop and drop. Only from outside the module's own run: there, a pushed
    /// action would be popped in the same run, but the booking would add one more.
    void wake_now() { q().m_client.wake_at(now_ps()); }

    /// Books the module's first run at time 0 (a module that starts work by itself).
    void wake_at_start() { q().m_client.wake_at(0); }

    bool empty() const { return q().m_next_ps == kNone; }

protected:
    static constexpr std::uint64_t kNone = ~std::uint64_t(0);  // no action is due then

    /// Takes the now lane's first action if it is the next due. Ties with the rest go to the
    /// rest: their actions were pushed before that time was the current one, so earlier.
    bool take_now(Item& out) {
        Queue& self = q();
        if (self.m_now.empty() || self.m_now_ps >= self.m_rest_ps) return false;
        out = self.m_now.front();
        self.m_now.pop_front();
        return true;
    }
    /// The earliest pending time again, after a pop (m_rest_ps up to date).
    void update_next() {
        Queue& self = q();
        self.m_next_ps = self.m_now.empty() ? self.m_rest_ps : std::min(self.m_now_ps, self.m_rest_ps);
    }

private:
    Queue& q() { return static_cast<Queue&>(*this); }
    const Queue& q() const { return static_cast<const Queue&>(*this); }
};

/// Pending actions of type Item, ordered by time then by insertion: a GPU's (fabrics, whose
/// actions fall at many offsets, use TimingWheel).
///
/// Why lanes: most actions are scheduled at one of a few constant offsets from now (the memory's
/// in-order completions, a latency), so each offset's actions arrive already in time order. An
/// action joins the lane whose last action is the latest not after it (each lane stays sorted by
/// time, and by insertion within a time); only one that fits no lane pays for the heap. Popping
/// takes the smallest (time, sequence) of the lane fronts and the heap top, so the order is
/// exactly that of a single heap.
///
/// Why a lane of its own for actions due now: many actions (a resume, a response to send, an
/// issue turn) are due at the current time, when every other lane already holds later actions,
/// so best fit would send them all to the heap. The now lane only ever holds actions of one
/// time (it is empty before time moves on), so it stays sorted too. And it comes after every
/// other action of its time: those were pushed before that time was the current one, so their
/// sequence numbers are smaller. Popping therefore compares the now lane's time with the cached
/// earliest time of the rest, and only a pop from the rest scans the lanes.
///
/// Why this layout: with 1,024 GPUs, every GPU's heap is out of the cache each time the GPU runs,
/// so what counts is the cache lines an action touches. The lanes' front keys and back times are
/// kept in small arrays of their own, so push's best-fit scan and pop's minimum scan read one line
/// each instead of four lane objects and the lanes' buffers; only the chosen lane's ring and
/// buffer are touched. The fields are grouped by use into 64-byte lines (the alignment): the
/// calendar's and every action's line, the fronts (pop), the backs and the now lane (push and
/// pop), then the lanes' rings and the heap. No size or processed counter is kept: the earliest
/// time says whether any action is pending, and the sequence counter gives the processed count.
template <class Item>
class alignas(64) EventHeap : public QueueFront<EventHeap<Item>, Item> {
    using Front = QueueFront<EventHeap<Item>, Item>;
    friend Front;
    using Front::kNone;

public:
    /// `run(owner)` drains the due actions; the calendar calls it when the earliest is due.
    EventHeap(void* owner, void (*run)(void*)) : m_client(owner, run) {
        for (int i = 0; i < kLanes; ++i) m_front_ps[i] = m_front_seq[i] = kNone;
    }

    /// Schedules `item` at absolute time `at_ps` (not earlier than now). Always inlined: it is on
    /// every model's per-packet path, and compilers' heuristics otherwise inline it or not
    /// depending on unrelated code in the same file. Why `item` by value: taken by reference, the
    /// caller's item was built in memory by small stores and copied on by 16-byte loads, which
    /// the processor cannot forward from those stores; each such load then waited for every older
    /// store to reach the cache, and at 1,024 GPUs those are cache misses (a quarter of the run).
    [[gnu::always_inline]] inline void push(std::uint64_t at_ps, Item item) {
        const Entry e{at_ps, m_next_seq++, item};
        const bool earliest = at_ps < m_next_ps;
        if (earliest) m_next_ps = at_ps;
        if (m_now.empty() ? at_ps == now_ps() : m_now_ps == at_ps) {
            m_now_ps = at_ps;
            m_now.push_back(item);
        } else {
            // Best fit: the latest back not after at_ps. An empty lane's back is 0, so it takes
            // an action that fits no other lane, and the heap one that fits no lane at all.
            int best = -1;
            for (int i = 0; i < kLanes; ++i)
                if (m_back_ps[i] <= at_ps && (best < 0 || m_back_ps[i] > m_back_ps[best])) best = i;
            if (best >= 0) {
                Lane& lane = m_lanes[best];
                if (lane.empty()) {
                    m_front_ps[best] = at_ps;
                    m_front_seq[best] = e.seq;
                }
                lane.push_back(e);
                m_back_ps[best] = at_ps;
            } else {
                m_heap.push(e);
            }
            if (at_ps < m_rest_ps) m_rest_ps = at_ps;
        }
        if (earliest) m_client.wake_at(at_ps);  // new earliest: have the module run for it
    }

    /// Takes the next item due at or before `now`; false when none is due.
    bool pop_due(std::uint64_t now, Item& out) {
        if (m_next_ps > now) return false;
        if (!this->take_now(out)) {
            // The smallest (time, sequence) of the lane fronts (an empty lane's is the largest
            // key) and the heap top.
            int first = 0;
            for (int i = 1; i < kLanes; ++i)
                if (before(m_front_ps[i], m_front_seq[i], m_front_ps[first], m_front_seq[first])) first = i;
            if (m_front_ps[first] != kNone &&
                (m_heap.empty() ||
                 before(m_front_ps[first], m_front_seq[first], m_heap.top().at_ps, m_heap.top().seq))) {
                Lane& lane = m_lanes[first];
                out = lane.front().item;
                lane.pop_front();
                if (lane.empty()) {
                    m_front_ps[first] = m_front_seq[first] = kNone;
                    m_back_ps[first] = 0;
                } else {
                    m_front_ps[first] = lane.front().at_ps;
                    m_front_seq[first] = lane.front().seq;
                }
            } else {
                out = m_heap.top().item;
                m_heap.pop();
            }
            m_rest_ps = rest_time();
        }
        this->update_next();
        return true;
    }

    /// Actions waiting in the fallback heap (they fitted no lane), for tests.
    std::size_t fallback_size() const { return m_heap.size(); }
    /// Actions processed so far (the model's event count): every action pushed and no longer pending.
    std::uint64_t processed() const {
        std::size_t pending = m_now.size() + m_heap.size();
        for (const Lane& lane : m_lanes) pending += lane.size();
        return m_next_seq - pending;
    }

private:
    static constexpr int kLanes = 4;
    struct Entry {
        std::uint64_t at_ps;
        std::uint64_t seq;
        Item item;
        bool operator>(const Entry& o) const { return before(o.at_ps, o.seq, at_ps, seq); }
    };
    using Lane = EntryRing<Entry>;
    /// (time, sequence) order as one 128-bit comparison: branch-free, where the two-step
    /// comparison mispredicts about every other time on these scans.
    static bool before(std::uint64_t a_ps, std::uint64_t a_seq, std::uint64_t b_ps, std::uint64_t b_seq) {
        __extension__ using Key = unsigned __int128;  // a GCC and Clang type: __extension__ keeps -Wpedantic quiet
        return ((Key(a_ps) << 64) | a_seq) < ((Key(b_ps) << 64) | b_seq);
    }
    /// The earliest time in the lanes and the heap (not the now lane), kNone when they are empty.
    std::uint64_t rest_time() const {
        std::uint64_t t = m_heap.empty() ? kNone : m_heap.top().at_ps;
        for (int i = 0; i < kLanes; ++i) t = std::min(t, m_front_ps[i]);
        return t;
    }

    // Line 0: read by the calendar and by every push and pop.
    CalendarClient m_client;
    std::uint64_t m_next_ps = kNone;  ///< the earliest pending time, kNone when none (every push compares with it)
    std::uint64_t m_rest_ps = kNone;  ///< the earliest time in the lanes and the heap
    std::uint64_t m_next_seq = 0;     ///< the next action's sequence number (= actions ever pushed)
    // Line 1: the lanes' first keys, for pop's scan; (kNone, kNone) for an empty lane.
    alignas(64) std::uint64_t m_front_ps[kLanes];
    std::uint64_t m_front_seq[kLanes];
    // Line 2: the lanes' last times, for push's best fit (0 for an empty lane), and the now lane.
    alignas(64) std::uint64_t m_back_ps[kLanes] = {};
    std::uint64_t m_now_ps = 0;  ///< the time of the now lane's actions (when it has any)
    EntryRing<Item> m_now;       ///< actions due at m_now_ps, the current time when they were pushed
    // Lines 3 and 4: the storage, touched only for the lane or heap an action goes to or comes from.
    alignas(64) Lane m_lanes[kLanes];
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> m_heap;
    static_assert(sizeof(CalendarClient) + 3 * sizeof(std::uint64_t) <= 64 && sizeof(Lane) <= 24,
                  "the hot fields no longer fit their lines: regroup them");
};

}  // namespace eidola
