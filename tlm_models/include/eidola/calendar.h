// One calendar of module wake-ups for every eidola model, driven by one SystemC event.
//
// Why: with a kernel event per module, every action of every GPU and fabric went through the
// kernel's timed-event heap (sc_ppq heapify, sc_event trigger, notify-time comparison: about a
// quarter of the time) and touched a scattered sc_event and process per module, which is what
// made the cost per transaction grow with the GPU count. Here each module keeps its own action
// heap (event_heap.h) and asks the calendar to run it at the time of its earliest action; the
// calendar is one small binary heap of (time, sequence, module) and one SC_METHOD.
//
// Order: wake-ups at the same time run in the order they were asked for, and a wake-up asked
// for at the current time while the calendar runs waits for the next delta cycle, exactly as a
// zero-delay notification of the module's own event did. A module runs at most once per delta.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <systemc>

#include "eidola/flat_index.h"

namespace eidola {

class Calendar;

/// A module the calendar runs: a callback and the wake-up it has asked for.
class CalendarClient {
public:
    /// `run(owner)` is called at each requested time.
    CalendarClient(void* owner, void (*run)(void*));
    CalendarClient(const CalendarClient&) = delete;
    CalendarClient& operator=(const CalendarClient&) = delete;

    /// Asks to be run at absolute time `at_ps` (now if earlier). Nothing to do when a run at or
    /// before that time is already booked: that run drains everything due by then.
    [[gnu::always_inline]] inline void wake_at(std::uint64_t at_ps);

private:
    friend class Calendar;
    static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
    Calendar& m_calendar;
    void* m_owner;
    void (*m_run)(void*);
    std::uint64_t m_wake_ps = kNever;   ///< the booked run's time, kNever when none
    std::uint64_t m_wake_seq = kNever;  ///< the booked run's entry; older entries are stale
};

/// The calendar of the current SystemC simulation context (one per process).
class Calendar {
public:
    /// The calendar of the current simulation context, created on first use (during elaboration).
    static Calendar& current();

    /// Books `client` at `at_ps`, superseding a later booking.
    void book(CalendarClient& client, std::uint64_t at_ps);

private:
    Calendar();
    void run();
    void arm(std::uint64_t now);

    /// One booking; within a time its bookings are kept in the order they were made.
    struct Entry {
        /// Built in place by emplace_back: a temporary's copy is a 16-byte load the processor
        /// cannot forward from the two stores that built it (see EventHeap::push).
        Entry(std::uint64_t s, CalendarClient* c) : seq(s), client(c) {}
        std::uint64_t seq;
        CalendarClient* client;
    };
    /// The bookings of one time. Why buckets: many modules wake at the same instants (fixed
    /// latencies, GPUs in step), so a booking is an append to its time's bucket and only distinct
    /// times pay for the heap.
    struct Bucket {
        std::uint64_t at_ps = 0;
        std::vector<Entry> items;
        std::size_t next = 0;  ///< first booking not yet run
    };
    struct LaterTime {
        bool operator()(const std::pair<std::uint64_t, std::uint32_t>& a,
                        const std::pair<std::uint64_t, std::uint32_t>& b) const {
            return a.first > b.first;
        }
    };
    /// The bucket of `at_ps` when it is not the last one booked (found or made).
    std::uint32_t new_bucket_for(std::uint64_t at_ps);
    void release_front();

    sc_core::sc_event m_event;
    std::vector<Bucket> m_buckets;                              // live and recycled buckets
    std::vector<std::uint32_t> m_free;                          // recycled bucket indices
    std::vector<std::pair<std::uint64_t, std::uint32_t>> m_times;  // min-heap of (time, bucket), distinct times
    FlatIndex m_bucket_of;                                      // time -> its bucket
    std::uint64_t m_last_ps = std::numeric_limits<std::uint64_t>::max();  // the last booked time and its bucket:
    std::uint32_t m_last_bucket = 0;                                      // bookings come in runs of one time
    std::uint64_t m_next_seq = 0;
    std::uint64_t m_armed_ps = 0;  // when m_event fires next (kNever: not armed); 0: the initialisation run
    bool m_running = false;
    const sc_core::sc_simcontext* m_context = nullptr;
};

inline void CalendarClient::wake_at(std::uint64_t at_ps) {
    if (at_ps >= m_wake_ps) return;
    m_calendar.book(*this, at_ps);
}

}  // namespace eidola
