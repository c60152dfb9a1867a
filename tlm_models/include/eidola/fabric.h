// What every Eidola fabric offers beyond its sockets: the address map it routes by and its
// link statistics. Third-party interconnects need not implement it; their links are then
// simply not reported. Failures go to the Simulation's error collector (errors.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "eidola/address_map.h"

namespace eidola {

/// Traffic over one fabric link (for the ideal fabric: one source/destination GPU pair).
struct LinkStats {
    std::int32_t src;                  ///< source node (GPU index for GPU nodes, then switches)
    std::int32_t dst;                  ///< destination node
    std::uint64_t bytes = 0;           ///< payload bytes carried (requests' and responses' data)
    std::uint64_t wire_bytes = 0;      ///< bytes on the wire, headers included
    std::uint64_t packets = 0;         ///< packets carried
    std::uint64_t busy_ps = 0;         ///< time the link was transmitting (summed over its lanes)
    std::uint32_t lanes = 1;           ///< parallel links (lanes) it stands for: one port
    std::uint64_t lane_busy_max_ps = 0;  ///< busy time of its busiest lane (busy_ps with one lane)
    double queue_mean_ps = 0;          ///< mean wait from eligible at the input to transmission
    double queue_p50_ps = 0;           ///< median of that wait (log-bucketed, within 9%)
    double queue_p99_ps = 0;           ///< 99th percentile of that wait (log-bucketed, within 9%)
    double queue_max_ps = 0;           ///< longest such wait
    std::uint32_t peak_occupancy = 0;  ///< most packets held at once in the receiving input buffer
    /// Time a packet ready to leave the receiving input waited behind its channel's head, bound
    /// for another output (head-of-line blocking): that of the input's most blocked channel.
    std::uint64_t hol_blocked_ps = 0;
    /// Time the link had a free lane and packets waiting for it that could not start for lack of
    /// credits still on their way back: the next buffer held no packet waiting to leave, so it is
    /// shorter than the credit round trip (a buffer backed up by congestion further on does not count).
    std::uint64_t credit_stall_ps = 0;
    /// Time the link had a free lane and packets waiting for it that could not start because the next buffer was
    /// full of packets waiting to leave it: back-pressure from congestion further on, which credit_stall_ps leaves
    /// out. Every incast has it, at no cost; where it idles a link other traffic needs, congestion spreads, which a
    /// fluid leaves out (docs/router.md).
    std::uint64_t backpressure_ps = 0;
    /// Whether the fabric models the receiving input buffer and its credits: where it does not (the flow fabric, a
    /// fluid), hol_blocked_ps, credit_stall_ps and backpressure_ps are unavailable and the links table reports them
    /// as NaN, not 0.
    bool buffers_modelled = true;
    /// (bin, busy ps) of every bin of bin_ps() the link was busy in, in time order. Sparse: a
    /// link busy for a moment after seconds of idle time must not hold a slot per idle bin.
    std::vector<std::pair<std::uint64_t, float>> busy_bins;
    /// (bin, payload bytes) of every bin of bin_ps() the link carried data in, in time order (sparse,
    /// as busy_bins). On the ideal fabric, which has no link timing, this is the traffic over time.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> byte_bins;
};
/// Columns of the "links" result table, filled from LinkStats. The Python bridge (eidola/run/tables.py) turns
/// every `*_ps` column into a `*_ns` one, in nanoseconds: `Result.links` has busy_ns, queue_mean_ns and so on.
inline const std::vector<std::string> kLinkColumns = {
    "src", "dst", "lanes", "bytes", "wire_bytes", "packets", "busy_ps", "lane_busy_max_ps", "queue_mean_ps",
    "queue_p50_ps", "queue_p99_ps", "queue_max_ps", "peak_occupancy", "hol_blocked_ps", "credit_stall_ps",
    "backpressure_ps"};
/// Columns of the "link_bins" result table: LinkStats::busy_bins and byte_bins, one row per bin with either.
inline const std::vector<std::string> kLinkBinColumns = {"link", "bin", "start_ps", "busy_ps", "bytes"};

/// Traffic between one source and one destination GPU.
struct PairStats {
    std::int32_t src;           ///< source GPU
    std::int32_t dst;           ///< destination GPU
    std::uint64_t bytes = 0;    ///< request payload bytes
    std::uint64_t packets = 0;  ///< request packets
    double latency_sum_ps = 0;  ///< summed request latency, injection to delivery
    double latency_max_ps = 0;  ///< longest request latency
};
/// `pairs` sorted by (src, dst): a deterministic table.
inline std::vector<PairStats> sorted_pairs(std::vector<PairStats> pairs) {
    std::sort(pairs.begin(), pairs.end(), [](const PairStats& a, const PairStats& b) {
        return a.src != b.src ? a.src < b.src : a.dst < b.dst;
    });
    return pairs;
}
/// The pairs of `by_pair` (keyed however the fabric likes), sorted by (src, dst).
inline std::vector<PairStats> sorted_pairs(const std::unordered_map<std::uint64_t, PairStats>& by_pair) {
    std::vector<PairStats> out;
    out.reserve(by_pair.size());
    for (const auto& entry : by_pair) out.push_back(entry.second);
    return sorted_pairs(std::move(out));
}
/// Columns of the "pairs" result table, filled from PairStats.
inline const std::vector<std::string> kPairColumns = {"src", "dst", "bytes", "packets", "latency_mean_ps",
                                                      "latency_max_ps"};

/// What a switch's NVLink SHARP unit did (multimem_extension.h).
struct NvlsCounters {
    bool enabled = false;              ///< the fabric has an NVLS switch (fabric.switch.nvls)
    std::uint64_t stores = 0;          ///< multimem stores served (transactions, one per packet the GPUs sent)
    std::uint64_t load_reduces = 0;    ///< multimem load-reduces served (transactions)
    std::uint64_t copies = 0;          ///< writes the switch sent to members for the stores
    std::uint64_t copy_bytes = 0;      ///< their data bytes
    std::uint64_t member_reads = 0;    ///< reads the switch sent to members for the load-reduces
    std::uint64_t reduced_bytes = 0;   ///< member data summed: k x n for a load-reduce of n bytes on k members
    std::uint64_t reduce_busy_ps = 0;  ///< time the reduction engine was busy
};
/// Columns of the "nvls" result table, a row per fabric with NVLS, filled from NvlsCounters.
inline const std::vector<std::string> kNvlsColumns = {"stores", "load_reduces", "copies", "copy_bytes",
                                                      "member_reads", "reduced_bytes", "reduce_busy_ps"};

/// A fabric model of this project.
class Fabric {
public:
    virtual ~Fabric() = default;
    /// Sets the map that routes a global address to GPU port i (before simulation).
    virtual void set_address_map(const AddressMap& map) = 0;
    /// Per-link statistics, in a deterministic order.
    virtual std::vector<LinkStats> link_stats() const = 0;
    /// Actions processed (the fabric's share of the event count).
    virtual std::uint64_t events() const = 0;
    /// Per GPU pair traffic and latency (empty when the fabric does not track it).
    virtual std::vector<PairStats> pair_stats() const { return {}; }
    /// Width of the over-time bins in LinkStats::busy_bins and byte_bins (0: none).
    virtual std::uint64_t bin_ps() const { return 0; }
    /// Times those bins doubled in width to stay within stats.max_bins (bin_budget.h): bin_ps() is the
    /// stats.bin asked for times 2 to this power.
    virtual std::uint32_t bin_doublings() const { return 0; }
    /// What its NVLS switch did (NvlsCounters::enabled false: it has none).
    virtual NvlsCounters nvls_counters() const { return {}; }
    /// Per GPU port, how long the GPU's window (gpus.max_outstanding) held its flows back, where this fabric paces
    /// the GPUs' windows itself (flows); empty where the GPUs count it (packets) or nothing does.
    virtual std::vector<std::uint64_t> window_full_ps() const { return {}; }
    /// Readable names of the nodes its LinkStats::src and dst number ("gpu3", "n1.nic3", "rail3";
    /// empty: the numbers are GPU indices, or it has no names).
    virtual std::vector<std::string> node_names() const { return {}; }
};

}  // namespace eidola
