// A GPU's memory as the fabric and its own workgroups see it: flag words with storage,
// data buffers without (only their traffic matters), one latency and one bandwidth.
#pragma once

#include <cstdint>
#include <vector>

#include <tlm>

#include "eidola/program.h"

namespace eidola {

/// Access counters of one memory.
struct MemoryCounters {
    std::uint64_t reads = 0;           ///< reads of data (not flags), local or remote
    std::uint64_t flag_reads = 0;      ///< reads of flag words (polling)
    std::uint64_t writes = 0;          ///< plain writes
    std::uint64_t atomics = 0;         ///< atomic operations on flags
    std::uint64_t bytes_read = 0;      ///< bytes of all reads
    std::uint64_t bytes_written = 0;   ///< bytes of all writes and atomics
};

class AtomicExtension;
class LandingFlagExtension;

/// What the memory needs of a transaction, read from its payload and extensions in one go.
/// Why: between a request's arrival and its completion a large platform runs every other GPU, so
/// the payload and its extension array (a heap block of its own) are out of the cache again; the
/// target reads them once, on arrival, and the completion touches the payload only to answer.
struct MemoryAccess {
    tlm::tlm_generic_payload* trans = nullptr;  ///< the transaction (answered, and read data filled, here)
    const AtomicExtension* atomic = nullptr;    ///< its atomic, for a write that carries one
    const LandingFlagExtension* landing = nullptr;  ///< its put's landing flag, for a write that carries one
    std::uint64_t offset = 0;                   ///< its offset in this GPU's window
    std::uint64_t length = 0;                   ///< its data length
    std::uint32_t packets = 1;                  ///< accesses it stands for (a train's packets)
    tlm::tlm_command command = tlm::TLM_IGNORE_COMMAND;

    /// Reads `trans`'s fields and extensions; `offset` is its window offset.
    void read(tlm::tlm_generic_payload& trans, std::uint64_t offset);
};

/// Timing and contents of one GPU's memory.
///
/// Timing: accesses are served one after another at `bandwidth` (an access of n bytes occupies
/// the memory for n/bandwidth), then take `latency`. An access is performed (a read sampled, a
/// write applied) when it completes: done = max(arrival, free) + n/bandwidth + latency. Why one
/// server: polling reads then queue behind bulk traffic and vice versa, as on real HBM.
class GpuMemory {
public:
    /// latency_ps: access latency; bytes_per_s: bandwidth.
    GpuMemory(std::uint64_t latency_ps, double bytes_per_s) { configure(latency_ps, bytes_per_s); }
    /// Sets the timing (before simulation).
    void configure(std::uint64_t latency_ps, double bytes_per_s) {
        m_latency_ps = latency_ps;
        m_ps_per_byte = 1e12 / bytes_per_s;
    }

    /// The access latency (configure).
    std::uint64_t latency_ps() const { return m_latency_ps; }
    /// Sizes the flag storage (flags occupy offsets [0, 8*count)).
    void set_flag_count(std::uint64_t count) { m_flags.assign(count, 0); }
    std::uint64_t flag_count() const { return m_flags.size(); }

    /// Reserves the memory for an access of `nbytes` arriving at `arrival_ps`; returns its completion time.
    std::uint64_t schedule(std::uint64_t arrival_ps, std::uint64_t nbytes);
    /// The same for a flow whose `nbytes` came in from `first_ps` until `arrival_ps`, the last
    /// `last_bytes` then: the memory served the earlier bytes as they came, as far as its
    /// bandwidth and its queue allowed, so only what it could not keep up with waits.
    std::uint64_t schedule_spread(std::uint64_t first_ps, std::uint64_t arrival_ps, std::uint64_t nbytes,
                                  std::uint64_t last_bytes);
    /// The same for a read whose `nbytes` leave as they are read, from `arrival_ps` (a flow fabric's streamed read):
    /// its bytes but the last `last_bytes` are served at the memory's bandwidth beside its other accesses (as the
    /// packets of a read are, one by one), and its last ones join the queue.
    std::uint64_t schedule_streamed(std::uint64_t arrival_ps, std::uint64_t nbytes, std::uint64_t last_bytes);

    /// When `nbytes` arriving at `arrival_ps` would be in the memory if it were free: its service and latency,
    /// without reserving anything (the last packet of a train, which the memory booked with the train's first).
    std::uint64_t unqueued_done(std::uint64_t arrival_ps, std::uint64_t nbytes) const {
        return arrival_ps + std::uint64_t(double(nbytes) * m_ps_per_byte + 0.5) + m_latency_ps;
    }
    /// Performs an access: reads fill data, writes and atomics update flags. The caller answers it
    /// (see GpuTarget::nb_transport_fw for why not here). `count`: false for debug transport,
    /// which must not disturb the statistics.
    void perform(const MemoryAccess& access, bool count = true);
    /// The same for a transaction at window offset `offset`, answered OK.
    void perform(tlm::tlm_generic_payload& trans, std::uint64_t offset, bool count = true) {
        MemoryAccess access;
        access.read(trans, offset);
        perform(access, count);
        trans.set_response_status(tlm::TLM_OK_RESPONSE);
    }

    /// Reads flag `index` for a local poll (counted as a flag read).
    std::int64_t poll_flag(std::uint64_t index);
    /// Reads flag `index` without counting (reports, deadlock checks).
    std::int64_t peek_flag(std::uint64_t index) const { return m_flags[index]; }
    /// Applies a local atomic to flag `index`.
    void local_atomic(std::uint64_t index, const AtomicExtension& atomic);
    /// Applies a put's landing flag update to flag `index` (counted as an atomic; its bytes are the put's own).
    void landing_atomic(std::uint64_t index, AtomicOp op, std::int64_t value);
    /// Counts local data traffic (a Local op or a local write/read).
    void count_local(std::uint64_t reads, std::uint64_t writes, std::uint64_t nbytes);

    const MemoryCounters& counters() const { return m_counters; }

private:
    std::uint64_t m_latency_ps;
    double m_ps_per_byte;
    std::uint64_t m_free_at_ps = 0;
    std::uint64_t m_spread_at_ps = 0;  // flows' earlier bytes are served up to here (schedule_spread, _streamed)
    /// Books `nbytes` on that background timeline, from `from_ps` or when it is next free, whichever is later.
    void spread(std::uint64_t from_ps, std::uint64_t nbytes);
    std::vector<std::int64_t> m_flags;
    MemoryCounters m_counters;
};

}  // namespace eidola
