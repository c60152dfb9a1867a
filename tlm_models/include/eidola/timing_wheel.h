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
// ones wait in a binary heap, and pop takes the earlier of the two by (time, insertion number).
// An action whose place in its bucket lies more than kMaxWalk nodes into the list goes to the heap
// too. Why: the flow fabric books a flow's Finish again whenever its rate rises, and thousands of
// flows of an all-to-all finish within a bucket's few nanoseconds, so a bucket held thousands of
// Finish actions (most of them stale) in no order of booking, and each booking walked past them:
// 58% of a 64-GPU all-to-all's time. The insertion numbers keep the order exact wherever an action
// went. Actions due now have a lane of their own, as in EventHeap, for the same reason (half the
// fabric's actions) and with the same tie rule (after the wheel's and the heap's of that time,
// pushed earlier).
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
            const std::uint64_t seq = m_seq++;
            if (slot - (now >> m_shift) >= kBuckets || !insert(slot, at_ps, seq, item))
                m_far.push(FarEntry{at_ps, seq, item});
            if (at_ps < m_rest_ps) m_rest_ps = at_ps;
        }
        if (earliest) m_client.wake_at(at_ps);
    }

    /// Takes the next item due at or before `now`; false when none is due.
    bool pop_due(std::uint64_t now, Item& out) {
        if (m_next_ps > now) return false;
        if (!this->take_now(out)) {
            if (m_wheel_count && (m_far.empty() || wheel_first(m_nodes[m_buckets[m_front & kMask].head], m_far.top()))) {
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
    /// Actions waiting in the heap rather than the wheel (for tests: those beyond the horizon, and those whose
    /// place in their bucket was too deep to walk to).
    std::size_t far_size() const { return m_far.size(); }

private:
    static constexpr std::uint32_t kBuckets = 4096;  // a power of two; 48 KiB of list ends and hints
    static constexpr std::uint64_t kMask = kBuckets - 1;
    static constexpr unsigned kMinShift = 8;         // buckets of at least 256 ps
    static constexpr std::uint32_t kNil = ~std::uint32_t(0);
    static constexpr unsigned kMaxWalk = 32;         // nodes an insertion walks before it goes to the heap

    struct Node {
        std::uint64_t at_ps;
        std::uint64_t seq;  // insertion number (m_seq), shared with the heap's entries
        Item item;
        std::uint32_t next;
    };
    struct FarEntry {
        std::uint64_t at_ps;
        std::uint64_t seq;
        Item item;
        bool operator>(const FarEntry& o) const { return at_ps != o.at_ps ? at_ps > o.at_ps : seq > o.seq; }
    };

    // Whether wheel node `w` comes before heap entry `f`: by time, then by insertion.
    static bool wheel_first(const Node& w, const FarEntry& f) {
        return w.at_ps != f.at_ps ? w.at_ps < f.at_ps : w.seq < f.seq;
    }

    // A node for (at_ps, seq, item) from the free list or the pool's end; its next is kNil.
    [[gnu::always_inline]] inline std::uint32_t new_node(std::uint64_t at_ps, std::uint64_t seq, Item item) {
        if (m_free == kNil) {
            m_nodes.push_back(Node{at_ps, seq, item, kNil});
            return std::uint32_t(m_nodes.size() - 1);
        }
        const std::uint32_t n = m_free;
        Node& node = m_nodes[n];
        m_free = node.next;
        if (m_free == kNil) m_free_last = kNil;
        node.at_ps = at_ps;  // field by field, not through a temporary Node (see EventHeap::push)
        node.seq = seq;
        node.item = item;
        node.next = kNil;
        return n;
    }

    // Links a node for (at_ps, item) into the bucket of `slot`, after the bucket's last node
    // not later than it; false (nothing linked) where that is more than kMaxWalk nodes in.
    [[gnu::always_inline]] inline bool insert(std::uint64_t slot, std::uint64_t at_ps, std::uint64_t seq, Item item) {
        const std::uint64_t b = slot & kMask;
        Bucket& bucket = m_buckets[b];
        if (bucket.tail == kNil) {
            const std::uint32_t n = new_node(at_ps, seq, item);
            bucket.head = bucket.tail = n;
            m_occupied[b >> 6] |= std::uint64_t(1) << (b & 63);
            if (!m_wheel_count || slot < m_front) m_front = slot;
        } else if (m_nodes[bucket.tail].at_ps <= at_ps) {
            const std::uint32_t n = new_node(at_ps, seq, item);
            m_nodes[bucket.tail].next = n;
            bucket.tail = n;
        } else if (m_nodes[bucket.head].at_ps > at_ps) {
            const std::uint32_t n = new_node(at_ps, seq, item);
            m_nodes[n].next = bucket.head;
            bucket.head = n;
        } else {  // somewhere inside: after the last node not later than it
            // The walk starts at the node inserted inside last when that one is not later: many
            // actions for one time (a flow fabric's thousands of flows answered at once) then
            // cost a step each, not a walk past all those already in before them.
            std::uint32_t prev = bucket.head;
            if (bucket.hint != kNil && m_nodes[bucket.hint].at_ps <= at_ps) prev = bucket.hint;
            for (unsigned steps = 0; m_nodes[m_nodes[prev].next].at_ps <= at_ps; ++steps) {
                if (steps == kMaxWalk) return false;
                prev = m_nodes[prev].next;
            }
            const std::uint32_t n = new_node(at_ps, seq, item);
            m_nodes[n].next = m_nodes[prev].next;
            m_nodes[prev].next = n;
            bucket.hint = n;
        }
        ++m_wheel_count;
        return true;
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
    std::uint64_t m_seq = 0;  ///< insertion number of the next action into the wheel or the heap
    std::uint64_t m_processed = 0;
};

}  // namespace eidola
