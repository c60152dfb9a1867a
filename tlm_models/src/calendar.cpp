#include "eidola/calendar.h"

#include <algorithm>
#include <memory>

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

void Calendar::book(CalendarClient& client, std::uint64_t at_ps) {
    const std::uint64_t now = sc_core::sc_time_stamp().value();
    if (at_ps < now) at_ps = now;
    if (at_ps >= client.m_wake_ps) return;
    client.m_wake_ps = at_ps;
    client.m_wake_seq = m_next_seq;
    m_heap.push_back(Entry{at_ps, m_next_seq++, &client});
    std::push_heap(m_heap.begin(), m_heap.end(), Later{});
    if (!m_running && at_ps < m_armed_ps) {  // while running, run() arms on its way out
        m_armed_ps = at_ps;
        m_event.notify(sc_core::sc_time::from_value(at_ps - now));
    }
}

// One delta cycle: runs the bookings due now that were made before it began; bookings for now
// made meanwhile go to the next delta cycle.
void Calendar::run() {
    const std::uint64_t now = sc_core::sc_time_stamp().value();
    const std::uint64_t limit = m_next_seq;
    m_armed_ps = kNever;
    m_running = true;
    while (!m_heap.empty() && m_heap.front().at_ps <= now && m_heap.front().seq < limit) {
        const Entry e = m_heap.front();
        std::pop_heap(m_heap.begin(), m_heap.end(), Later{});
        m_heap.pop_back();
        CalendarClient& c = *e.client;
        if (c.m_wake_seq != e.seq) continue;  // superseded by an earlier booking
        c.m_wake_ps = kNever;
        c.m_wake_seq = kNever;
        c.m_run(c.m_owner);
    }
    m_running = false;
    arm(now);
}

void Calendar::arm(std::uint64_t now) {
    while (!m_heap.empty() && m_heap.front().client->m_wake_seq != m_heap.front().seq) {  // drop stale tops
        std::pop_heap(m_heap.begin(), m_heap.end(), Later{});
        m_heap.pop_back();
    }
    if (m_heap.empty()) return;
    const std::uint64_t at = m_heap.front().at_ps;
    m_armed_ps = at;
    m_event.notify(sc_core::sc_time::from_value(at > now ? at - now : 0));
}

}  // namespace eidola
