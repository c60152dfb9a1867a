// A module's pending actions kept in a timing wheel: the same interface and exactly the same
// (time, insertion) order as EventHeap, for a module with many actions pending at many times.
//
// Why: the packet fabric holds every link's and router's actions in one queue, at offsets that
// vary with packet sizes, link and switch latencies and credit returns. EventHeap's few in-order
// lanes do not fit a fifth of them, which then pay for a binary heap of about a hundred entries,
// and every push and pop scans the lanes: together a third of a torus run's instructions. A wheel
// of fixed-width time buckets makes both a constant-time step (Brown's calendar queue, 1988).
//
// Order: a bucket keeps its actions sorted by time, and by insertion within a time, in a linked
// list; a new action goes after every one of its bucket not later than it, which is at the tail
// in the common case. Only actions within the wheel's horizon of the current time go in; later
// ones wait in a binary heap, and pop takes the earlier of the two. Ties between them go to the
// heap: an action in the heap was pushed when its time was beyond the horizon, so before any
// action of the same time that went into the wheel. Actions due now have a lane of their own,
// as in EventHeap, for the same reason (half the fabric's actions) and with the same tie rule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
#include <vector>

#include "eidola/calendar.h"
#include "eidola/event_heap.h"

namespace eidola {

/// Pending actions of type Item, ordered by time then by insertion (a drop-in for EventHeap).
template <class Item>
class TimingWheel : public QueueFront<TimingWheel<Item>, Item> {
    using Front = QueueFront<TimingWheel<Item>, Item>;
    friend Front;
    using Front::kNone;

public:
    /// `run(owner)` drains the due actions; the calendar calls it when the earliest is due.
    TimingWheel(void* owner, void (*run)(void*)) : m_client(owner, run) { set_horizon(0); }

    /// Sizes the buckets so that actions up to `offset_ps` after now fit the wheel (before any
    /// push). Later ones are still exact, through the heap, only slower.
    void set_horizon(std::uint64_t offset_ps) {
        m_shift = kMinShift;
        while ((std::uint64_t(kBuckets) << m_shift) < 2 * offset_ps) ++m_shift;
        m_buckets.assign(kBuckets, Bucket{kNil, kNil, kNil});
        m_occupied.assign(kBuckets / 64, 0);
    }

    /// Schedules `item` at absolute time `at_ps` (not earlier than now); by value, as in EventHeap.
    [[gnu::always_inline]] inline void push(std::uint64_t at_ps, Item item) {
        const std::uint64_t now = now_ps();
        const bool earliest = at_ps < m_next_ps;
        if (earliest) m_next_ps = at_ps;
        if (at_ps == now) {
            m_now_ps = at_ps;
            m_now.push_back(item);
        } else {
            const std::uint64_t slot = at_ps >> m_shift;
            if (slot - (now >> m_shift) < kBuckets) insert(slot, at_ps, item);
            else m_far.push(FarEntry{at_ps, m_far_seq++, item});
            if (at_ps < m_rest_ps) m_rest_ps = at_ps;
        }
        if (earliest) m_client.wake_at(at_ps);
    }

    /// Takes the next item due at or before `now`; false when none is due.
    bool pop_due(std::uint64_t now, Item& out) {
        if (m_next_ps > now) return false;
        if (!this->take_now(out)) {
            if (m_wheel_count && (m_far.empty() || m_nodes[m_buckets[m_front & kMask].head].at_ps < m_far.top().at_ps)) {
                take_front(out);
            } else {
                out = m_far.top().item;
                m_far.pop();
            }
            m_rest_ps = rest_time();
        }
        ++m_processed;
        this->update_next();
        return true;
    }

    /// Actions processed so far (the model's event count).
    std::uint64_t processed() const { return m_processed; }

private:
    static constexpr std::uint32_t kBuckets = 4096;  // a power of two; 48 KiB of list ends and hints
    static constexpr std::uint64_t kMask = kBuckets - 1;
    static constexpr unsigned kMinShift = 8;         // buckets of at least 256 ps
    static constexpr std::uint32_t kNil = ~std::uint32_t(0);

    struct Node {
        std::uint64_t at_ps;
        Item item;
        std::uint32_t next;
    };
    struct FarEntry {
        std::uint64_t at_ps;
        std::uint64_t seq;
        Item item;
        bool operator>(const FarEntry& o) const { return at_ps != o.at_ps ? at_ps > o.at_ps : seq > o.seq; }
    };

    // Links a node for (at_ps, item) into the bucket of `slot`, after the bucket's last node
    // not later than it.
    [[gnu::always_inline]] inline void insert(std::uint64_t slot, std::uint64_t at_ps, Item item) {
        std::uint32_t n;
        if (m_free != kNil) {
            n = m_free;
            Node& node = m_nodes[n];
            m_free = node.next;
            if (m_free == kNil) m_free_last = kNil;
            node.at_ps = at_ps;  // field by field, not through a temporary Node (see EventHeap::push)
            node.item = item;
            node.next = kNil;
        } else {
            n = std::uint32_t(m_nodes.size());
            m_nodes.push_back(Node{at_ps, item, kNil});
        }
        const std::uint64_t b = slot & kMask;
        Bucket& bucket = m_buckets[b];
        if (bucket.tail == kNil) {
            bucket.head = bucket.tail = n;
            m_occupied[b >> 6] |= std::uint64_t(1) << (b & 63);
            if (!m_wheel_count || slot < m_front) m_front = slot;
        } else if (m_nodes[bucket.tail].at_ps <= at_ps) {
            m_nodes[bucket.tail].next = n;
            bucket.tail = n;
        } else if (m_nodes[bucket.head].at_ps > at_ps) {
            m_nodes[n].next = bucket.head;
            bucket.head = n;
        } else {  // somewhere inside: after the last node not later than it
            // The walk starts at the node inserted inside last when that one is not later: many
            // actions for one time (a flow fabric's thousands of flows answered at once) then
            // cost a step each, not a walk past all those already in before them.
            std::uint32_t prev = bucket.head;
            if (bucket.hint != kNil && m_nodes[bucket.hint].at_ps <= at_ps) prev = bucket.hint;
            while (m_nodes[m_nodes[prev].next].at_ps <= at_ps) prev = m_nodes[prev].next;
            m_nodes[n].next = m_nodes[prev].next;
            m_nodes[prev].next = n;
            bucket.hint = n;
        }
        ++m_wheel_count;
    }

    // Pops the wheel's earliest node and moves m_front to the next occupied bucket.
    void take_front(Item& out) {
        const std::uint64_t b = m_front & kMask;
        Bucket& bucket = m_buckets[b];
        const std::uint32_t n = bucket.head;
        out = m_nodes[n].item;
        if (bucket.hint == n) bucket.hint = kNil;  // it must stay a node of this bucket
        bucket.head = m_nodes[n].next;
        m_nodes[n].next = kNil;
        if (m_free_last == kNil) m_free = n;
        else m_nodes[m_free_last].next = n;
        m_free_last = n;
        if (bucket.head != kNil) {
            --m_wheel_count;
            return;
        }
        bucket.tail = kNil;
        m_occupied[b >> 6] &= ~(std::uint64_t(1) << (b & 63));
        if (--m_wheel_count == 0) return;
        // Every pending slot lies in [m_front, m_front + kBuckets): the next occupied bucket in
        // circular order from here holds the earliest.
        std::uint64_t i = (b + 1) & kMask;
        std::uint64_t word = m_occupied[i >> 6] & (~std::uint64_t(0) << (i & 63));
        while (!word) {
            i = ((i >> 6) + 1) * 64 & kMask;
            word = m_occupied[i >> 6];
        }
        const std::uint64_t found = (i & ~std::uint64_t(63)) | std::uint64_t(__builtin_ctzll(word));
        m_front += (found - b) & kMask;
    }

    // The earliest time in the wheel and the heap (not the now lane), kNone when they are empty.
    std::uint64_t rest_time() const {
        std::uint64_t t = m_far.empty() ? kNone : m_far.top().at_ps;
        if (m_wheel_count) t = std::min(t, m_nodes[m_buckets[m_front & kMask].head].at_ps);
        return t;
    }

    CalendarClient m_client;
    std::uint64_t m_next_ps = kNone;  ///< the earliest pending time
    std::uint64_t m_rest_ps = kNone;  ///< the earliest time in the wheel and the heap
    EntryRing<Item> m_now;            ///< actions due at m_now_ps, the current time when they were pushed
    std::uint64_t m_now_ps = 0;
    unsigned m_shift = kMinShift;     ///< bucket width: 2^m_shift ps
    std::uint64_t m_front = 0;        ///< slot of the wheel's earliest node (when it has any)
    std::uint64_t m_wheel_count = 0;  ///< nodes in the wheel
    struct Bucket {
        std::uint32_t head, tail;  // first and last node, kNil when empty
        std::uint32_t hint;        // a node of this bucket to start an insertion's walk at, or kNil
    };
    std::vector<Bucket> m_buckets;
    std::vector<std::uint64_t> m_occupied;        ///< one bit per non-empty bucket
    std::vector<Node> m_nodes;                    ///< node pool, indexed by the lists
    // Free nodes, linked through next, reused in the order they were freed. Why not last freed,
    // first reused: most actions are due one fixed latency after they are pushed, so they are
    // popped in the order they were pushed; reusing nodes in that order makes the pops walk the
    // pool in address order, which the hardware prefetches, instead of jumping about a pool of
    // megabytes (two actions per transaction in flight).
    std::uint32_t m_free = kNil, m_free_last = kNil;
    std::priority_queue<FarEntry, std::vector<FarEntry>, std::greater<FarEntry>> m_far;  ///< beyond the horizon
    std::uint64_t m_far_seq = 0;
    std::uint64_t m_processed = 0;
};

}  // namespace eidola
