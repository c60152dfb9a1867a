#include "eidola/traffic_generator.h"

#include <cmath>
#include <utility>

namespace eidola {

TrafficGenerator::TrafficGenerator(GpuCore& core, const TrafficSpec& spec, std::vector<std::int32_t> destinations,
                                   std::uint32_t gpus)
    : m_core(core),
      m_spec(spec),
      m_destinations(std::move(destinations)),
      m_gpus(gpus),
      m_end_ps(spec.warmup_ps + spec.duration_ps),
      m_log_miss(spec.probability < 1 ? std::log1p(-spec.probability) : 0),
      // Each GPU's stream depends on the seed and its index only, so adding a GPU leaves the others' alone.
      m_state(spec.seed * 0x9E3779B97F4A7C15ull + std::uint64_t(core.index) * 0xD1B54A32D192ED03ull + 1) {}

// In-flight packets still point at their stamps: detach them, so a payload outliving this
// generator never reaches a freed extension.
TrafficGenerator::~TrafficGenerator() {
    for (auto& s : m_stamps)
        if (s->on) s->on->clear_extension(s.get());
}

// splitmix64: small, fast, and the same sequence on every platform (std distributions are not).
std::uint64_t TrafficGenerator::next_random() {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Cycles up to and including the next success of a Bernoulli(p) trial per cycle: a geometric
// draw by inversion. One event per packet instead of one per cycle, with the same distribution.
std::uint64_t TrafficGenerator::gap_cycles() {
    if (m_spec.probability >= 1) return 1;
    const double u = double((next_random() >> 11) + 1) * 0x1.0p-53;  // in (0, 1]
    return 1 + std::uint64_t(std::floor(std::log(u) / m_log_miss));
}

void TrafficGenerator::start() {
    if (!injecting() || m_spec.probability <= 0) return;
    m_next_cycle = gap_cycles() - 1;  // the first success may be in cycle 0
    book_next();
}

void TrafficGenerator::book_next() {
    const std::uint64_t at = m_next_cycle * m_spec.cycle_ps;
    m_generating = at < m_end_ps;
    if (m_generating) m_core.actions.push(at, {GpuActionKind::Generate, 0});
}

bool TrafficGenerator::create() {
    const std::uint64_t now = now_ps();
    std::int32_t dst;
    if (m_spec.uniform) {
        const std::uint64_t r = next_random() % (m_gpus - 1);
        dst = std::int32_t(r >= m_core.index ? r + 1 : r);
    } else {
        dst = m_destinations.size() == 1 ? m_destinations[0]
                                         : m_destinations[next_random() % m_destinations.size()];
    }
    const bool was_empty = m_queue.empty();
    m_queue.push_back({now, dst});
    ++m_stats.created;
    if (in_window(now)) ++m_stats.offered;
    if (m_queue.size() > m_stats.queue_peak) m_stats.queue_peak = m_queue.size();
    m_next_cycle += gap_cycles();
    book_next();
    return was_empty;
}

void TrafficGenerator::fill(Packet& p, const AddressMap& map, unsigned char* data) {
    const Queued q = m_queue.front();
    m_queue.pop_front();
    TrafficStamp* stamp;
    if (m_free_stamps.empty()) {
        m_stamps.push_back(std::make_unique<TrafficStamp>());
        stamp = m_stamps.back().get();
    } else {
        stamp = m_free_stamps.back();
        m_free_stamps.pop_back();
    }
    stamp->created_ps = q.created_ps;
    stamp->arrived_ps = 0;
    stamp->arrived = false;
    stamp->on = &p;
    p.peer = q.dst;
    p.resumes = false;
    p.set_command(tlm::TLM_WRITE_COMMAND);
    p.set_address(map.global(std::uint32_t(q.dst), m_spec.offset));
    p.set_data_ptr(data);
    p.set_data_length(unsigned(m_spec.packet_bytes));
    p.set_streaming_width(unsigned(m_spec.packet_bytes));
    p.set_byte_enable_ptr(nullptr);
    p.set_dmi_allowed(false);
    p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    p.set_extension(stamp);
}

void TrafficGenerator::answered(Packet& p) {
    TrafficStamp* stamp = p.get_extension<TrafficStamp>();
    p.clear_extension(stamp);
    stamp->on = nullptr;
    m_free_stamps.push_back(stamp);
    // A target that does not stamp (not an eidolon) is taken to have received it when it answered.
    if (!stamp->arrived) stamp->arrived_ps = now_ps();
    if (in_window(stamp->arrived_ps)) ++m_stats.accepted;
    if (!in_window(stamp->created_ps)) return;
    const std::uint64_t one_way = stamp->arrived_ps - stamp->created_ps;
    ++m_stats.measured;
    m_stats.latency_sum_ps += double(one_way);
    m_stats.round_trip_sum_ps += double(now_ps() - stamp->created_ps);
    m_latencies.push_back(one_way);
}

}  // namespace eidola
