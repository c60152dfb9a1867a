#include "eidola/calendar.h"

#include "eidola/event_heap.h"
#include "eidola/free_list.h"

#include <algorithm>

#include <sysc/kernel/sc_spawn.h>

namespace eidola {

namespace {
constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
}  // namespace

CalendarClient::CalendarClient(void* owner, void (*run)(void*))
    : m_calendar(Calendar::current()), m_owner(owner), m_run(run) {}

Calendar& Calendar::current() {
    // One SystemC context per process; a new context (a fresh kernel) gets a new calendar. The old
    // one is left alive: its kernel may still reference its process.
    static Calendar* calendar = nullptr;
    if (!calendar || calendar->m_context != sc_core::sc_get_curr_simcontext()) calendar = new Calendar();
    return *calendar;
}

Calendar::Calendar() : m_event("eidola_calendar_event"), m_context(sc_core::sc_get_curr_simcontext()) {
    sc_core::sc_spawn_options options;
    options.spawn_method();
    options.set_sensitivity(&m_event);
    // Not dont_initialize(): the initialisation run at time 0 serves the bookings made during
    // elaboration (every GPU starts its workgroups then), as each module's own method did.
    sc_core::sc_spawn([this] { run(); }, "eidola_calendar", &options);
}

std::uint32_t Calendar::new_bucket_for(std::uint64_t at_ps) {
    std::uint32_t b = m_bucket_of.find(at_ps);
    if (b == FlatIndex::kAbsent) {
        b = take_slot(m_buckets, m_free);
        m_buckets[b].at_ps = at_ps;
        m_bucket_of.insert(at_ps, b);
        m_times.emplace_back(at_ps, b);
        std::push_heap(m_times.begin(), m_times.end(), LaterTime{});
    }
    m_last_ps = at_ps;
    m_last_bucket = b;
    return b;
}

void Calendar::book(CalendarClient& client, std::uint64_t at_ps) {
    const std::uint64_t now = m_context->time_stamp().value();
    if (at_ps < now) at_ps = now;
    if (at_ps >= client.m_wake_ps) return;
    client.m_wake_ps = at_ps;
    client.m_wake_seq = m_next_seq;
    // Bookings come in runs of one time: the last bucket is looked up only when the time changes.
    const std::uint32_t b = at_ps == m_last_ps ? m_last_bucket : new_bucket_for(at_ps);
    m_buckets[b].items.emplace_back(m_next_seq++, &client);
    if (!m_running && at_ps < m_armed_ps) {  // while running, run() arms on its way out
        m_armed_ps = at_ps;
        m_event.notify(sc_core::sc_time::from_value(at_ps - now));
    }
}

// One delta cycle: runs the bookings due now that were made before it began; bookings for now
// made meanwhile go to the next delta cycle.
void Calendar::run() {
    const std::uint64_t now = m_context->time_stamp().value();
    const std::uint64_t limit = m_next_seq;
    m_armed_ps = kNever;
    m_running = true;
    if (!m_times.empty() && m_times.front().first <= now) {
        const std::uint32_t b = m_times.front().second;
        // By index: a run may append to this bucket (bookings for now, next delta).
        while (m_buckets[b].next < m_buckets[b].items.size()) {
            const Entry e = m_buckets[b].items[m_buckets[b].next];
            if (e.seq >= limit) break;
            ++m_buckets[b].next;
            CalendarClient& c = *e.client;
            if (c.m_wake_seq != e.seq) continue;  // superseded by an earlier booking
            c.m_wake_ps = kNever;
            c.m_wake_seq = kNever;
            c.m_run(c.m_owner);
        }
    }
    m_running = false;
    // Arm for the earliest live booking, dropping stale ones and spent buckets.
    while (!m_times.empty()) {
        Bucket& front = m_buckets[m_times.front().second];
        while (front.next < front.items.size() && front.items[front.next].client->m_wake_seq != front.items[front.next].seq)
            ++front.next;
        if (front.next < front.items.size()) break;
        release_front();
    }
    if (m_times.empty()) return;
    const std::uint64_t at = m_times.front().first;
    m_armed_ps = at;
    m_event.notify(sc_core::sc_time::from_value(at > now ? at - now : 0));
}

void Calendar::release_front() {
    const std::uint32_t b = m_times.front().second;
    std::pop_heap(m_times.begin(), m_times.end(), LaterTime{});
    m_times.pop_back();
    Bucket& bucket = m_buckets[b];
    m_bucket_of.erase(bucket.at_ps);
    if (m_last_ps == bucket.at_ps) m_last_ps = kNever;
    bucket.items.clear();
    bucket.next = 0;
    m_free.push_back(b);
}

}  // namespace eidola
