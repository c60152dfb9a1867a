// Which upstream port each delivered request came from, kept per target port in delivery order,
// so that a fabric can send the target's response back the way the request came.
//
// Why not a hash map from transaction to source (as before): with 1,024 GPUs and 64 requests in
// flight each, that map is 2 MiB probed at random twice per transaction, a last-level cache miss
// each time. Targets mostly answer in the order they were sent requests (a GPU's memory serves
// in arrival order), so the answer is found at the head of its port's queue, and the lines a
// transaction touches are the queue's two ends: a few hundred bytes per port, which stay cached.
// A target may still answer out of order; the entry is then found by a scan and left as a hole.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace eidola {

/// Requests delivered to each target port and not yet answered, with their source ports.
class DeliveredRequests {
public:
    /// Sizes the table for `ports` target ports.
    explicit DeliveredRequests(std::uint32_t ports) : m_ports(ports) {}

    /// Request `trans` from port `src` was sent to target port `dst`.
    [[gnu::always_inline]] inline void delivered(std::uint32_t dst, const void* trans, std::uint32_t src) {
        Port& p = m_ports[dst];
        if (p.count == p.capacity) [[unlikely]] grow(p);
        p.ring[(p.head + p.count) & (p.capacity - 1)] = Entry{trans, src};
        ++p.count;
    }

    /// Target port `dst` answered `trans`: gives its source port and forgets it. False when `dst`
    /// was never sent `trans` (or has answered it already).
    [[gnu::always_inline]] inline bool answered(std::uint32_t dst, const void* trans, std::uint32_t& src) {
        Port& p = m_ports[dst];
        if (p.count && p.ring[p.head].trans == trans) {  // in order: the oldest
            src = p.ring[p.head].src;
            pop_front(p);
            return true;
        }
        return answered_out_of_order(p, trans, src);
    }

    /// The source of `trans`, delivered to `dst` and not yet answered, without forgetting it
    /// (a fabric that must find room before it takes the response in); false when absent.
    bool find(std::uint32_t dst, const void* trans, std::uint32_t& src) const {
        const Port& p = m_ports[dst];
        for (std::uint32_t i = 0; i < p.count; ++i) {
            const Entry& e = p.ring[(p.head + i) & (p.capacity - 1)];
            if (e.trans != trans) continue;
            src = e.src;
            return true;
        }
        return false;
    }

    /// Entries port `dst` holds: its oldest and newest unanswered requests and everything
    /// delivered between them, answered or not (for tests: the ring never keeps more).
    std::uint32_t held(std::uint32_t dst) const { return m_ports[dst].count; }

private:
    struct Entry {
        const void* trans;  // nullptr: answered out of order (a hole, skipped when it reaches the head)
        std::uint32_t src;
    };
    /// One port's ring of entries (a power-of-two capacity, or 0).
    struct Port {
        std::unique_ptr<Entry[]> ring;
        std::uint32_t head = 0, count = 0, capacity = 0;
    };

    static void pop_front(Port& p) {
        do {
            p.head = (p.head + 1) & (p.capacity - 1);
            --p.count;
        } while (p.count && !p.ring[p.head].trans);
    }

    [[gnu::noinline]] static bool answered_out_of_order(Port& p, const void* trans, std::uint32_t& src) {
        for (std::uint32_t i = 1; i < p.count; ++i) {
            Entry& e = p.ring[(p.head + i) & (p.capacity - 1)];
            if (e.trans != trans) continue;
            src = e.src;
            if (i == p.count - 1) {  // the newest (answered at once): drop it and any holes before it
                do --p.count;
                while (p.count && !p.ring[(p.head + p.count - 1) & (p.capacity - 1)].trans);
            } else {
                e.trans = nullptr;
            }
            return true;
        }
        return false;
    }

    [[gnu::noinline]] static void grow(Port& p) {
        const std::uint32_t capacity = p.capacity ? p.capacity * 2 : 16;
        std::unique_ptr<Entry[]> bigger(new Entry[capacity]);
        for (std::uint32_t i = 0; i < p.count; ++i) bigger[i] = p.ring[(p.head + i) & (p.capacity - 1)];
        p.ring.swap(bigger);
        p.head = 0;
        p.capacity = capacity;
    }

    std::vector<Port> m_ports;
};

}  // namespace eidola
