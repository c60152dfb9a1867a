// Synthetic traffic at one eidolon GPU: a Bernoulli injection process that creates write packets
// into a source queue, from which the GPU's initiator issues them alongside its workgroups'
// transfers (round robin, within the same outstanding limit). Latency runs from creation, so time
// spent in the source queue counts, as in an open-loop network study. The destination's target
// stamps each packet's arrival into its TrafficStamp extension (ignorable, so a third-party
// interconnect carries it untouched), and the response brings the stamp home: every statistic is
// kept here, at the source.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <tlm>

#include "eidola/gpu_core.h"
#include "eidola/traffic_spec.h"

namespace eidola {

/// Columns of the "traffic" result table: one row per generating GPU, counts over the measurement window.
inline const std::vector<std::string> kTrafficColumns = {
    "gpu", "injecting", "created", "offered", "accepted", "measured", "latency_sum_ps", "round_trip_sum_ps",
    "received", "queue_peak"};
/// Columns of the "traffic_summary" result table: one row for the whole run.
inline const std::vector<std::string> kTrafficSummaryColumns = {
    "window_ps", "cycle_ps", "latency_p50_ps", "latency_p99_ps", "latency_max_ps"};

/// Carried by a synthetic packet: when it was created, and when it reached its destination's target.
class TrafficStamp : public tlm::tlm_extension<TrafficStamp> {
public:
    /// Records arrival at a target at time `at_ps` (the first target to see it).
    void arrive(std::uint64_t at_ps) {
        if (!arrived) {
            arrived = true;
            arrived_ps = at_ps;
        }
    }
    std::uint64_t created_ps = 0;   ///< creation at the source (source queueing counts from here)
    std::uint64_t arrived_ps = 0;   ///< arrival at the destination's target
    bool arrived = false;           ///< whether a target stamped arrived_ps
    tlm::tlm_generic_payload* on = nullptr;  ///< the payload it is attached to, while in flight
    tlm::tlm_extension_base* clone() const override { return new TrafficStamp(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const TrafficStamp&>(other);
    }
    // Owned by its generator, which reuses it: a payload destroyed with it attached must not delete it.
    void free() override {}
};

/// What one generator measured (see kTrafficColumns).
struct TrafficStats {
    std::uint64_t created = 0;          ///< packets created in all
    std::uint64_t offered = 0;          ///< created inside the window
    std::uint64_t accepted = 0;         ///< arrived at their destination inside the window
    std::uint64_t measured = 0;         ///< created inside the window and answered (their latencies are kept)
    double latency_sum_ps = 0;          ///< one-way latencies of the measured packets
    double round_trip_sum_ps = 0;       ///< creation to response of the measured packets
    std::uint64_t queue_peak = 0;       ///< most packets waiting in the source queue at once
};

/// One GPU's generator; the GpuInitiator pulls its packets (see GpuInitiator::attach_traffic).
class TrafficGenerator {
public:
    /// `destinations` empty and !spec.uniform: this GPU creates nothing (its pattern maps it to itself).
    TrafficGenerator(GpuCore& core, const TrafficSpec& spec, std::vector<std::int32_t> destinations,
                     std::uint32_t gpus);
    ~TrafficGenerator();
    TrafficGenerator(const TrafficGenerator&) = delete;
    TrafficGenerator& operator=(const TrafficGenerator&) = delete;

    /// Whether this GPU creates packets at all.
    bool injecting() const { return m_spec.uniform ? m_gpus > 1 : !m_destinations.empty(); }
    /// Schedules the first creation (at time 0, from the GPU's process).
    void start();
    /// A Generate action fell due: creates one packet now and schedules the next. Returns whether
    /// the source queue was empty before (the initiator then queues the generator for issue).
    bool create();
    /// Packets waiting in the source queue.
    bool pending() const { return !m_queue.empty(); }
    /// Whether it has a creation booked: it has not yet reached the end of its window.
    bool generating() const { return m_generating; }
    /// Fills `p` with the oldest queued packet (a write to its destination) and dequeues it.
    void fill(Packet& p, const AddressMap& map, unsigned char* data);
    /// The response to one of this generator's packets arrived: records it and detaches its stamp.
    void answered(Packet& p);

    const TrafficStats& stats() const { return m_stats; }
    /// One-way latencies (ps) of the measured packets, in the order they were answered.
    const std::vector<std::uint64_t>& latencies() const { return m_latencies; }

private:
    struct Queued {
        std::uint64_t created_ps;
        std::int32_t dst;
    };
    std::uint64_t next_random();
    std::uint64_t gap_cycles();
    /// Books the creation at cycle m_next_cycle, if it falls inside the window (generating() says whether it did).
    void book_next();
    bool in_window(std::uint64_t t) const { return t >= m_spec.warmup_ps && t < m_end_ps; }

    GpuCore& m_core;
    TrafficSpec m_spec;
    std::vector<std::int32_t> m_destinations;
    std::uint32_t m_gpus;
    std::uint64_t m_end_ps;
    double m_log_miss;                 // ln(1 - p), for geometric gaps
    std::uint64_t m_state;             // splitmix64 state
    std::uint64_t m_next_cycle = 0;    // cycle of the next creation
    bool m_generating = false;         // a creation is booked (generating())
    std::deque<Queued> m_queue;
    std::vector<std::unique_ptr<TrafficStamp>> m_stamps;
    std::vector<TrafficStamp*> m_free_stamps;
    TrafficStats m_stats;
    std::vector<std::uint64_t> m_latencies;
};

}  // namespace eidola
