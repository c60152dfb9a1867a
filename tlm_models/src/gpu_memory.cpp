#include "eidola/gpu_memory.h"

#include <cmath>
#include <cstring>

#include "eidola/atomic_extension.h"
#include "eidola/landing_flag_extension.h"
#include "eidola/round_ps.h"
#include "eidola/train_extension.h"

namespace eidola {

std::uint64_t GpuMemory::schedule(std::uint64_t arrival_ps, std::uint64_t nbytes) {
    std::uint64_t start = arrival_ps > m_free_at_ps ? arrival_ps : m_free_at_ps;
    m_free_at_ps = start + round_ps(double(nbytes) * m_ps_per_byte);
    return m_free_at_ps + m_latency_ps;
}

std::uint64_t GpuMemory::schedule_spread(std::uint64_t first_ps, std::uint64_t arrival_ps, std::uint64_t nbytes,
                                         std::uint64_t last_bytes) {
    // Flows arriving together interleave their bytes at the memory: their earlier bytes are booked
    // on a background timeline of their own (m_spread_at_ps), one after another, and only what does
    // not fit before the flow's end joins the ordinary queue.
    const std::uint64_t from = first_ps > m_spread_at_ps ? first_ps : m_spread_at_ps;
    if (arrival_ps <= from || m_ps_per_byte <= 0) return schedule(arrival_ps, nbytes);
    const double could = double(arrival_ps - from) / m_ps_per_byte;  // bytes it could serve meanwhile
    const std::uint64_t earlier = nbytes > last_bytes ? nbytes - last_bytes : 0;
    const std::uint64_t served = could >= double(earlier) ? earlier : std::uint64_t(could);
    spread(from, served);
    return schedule(arrival_ps, nbytes - served);
}

void GpuMemory::spread(std::uint64_t from_ps, std::uint64_t nbytes) {
    const std::uint64_t from = from_ps > m_spread_at_ps ? from_ps : m_spread_at_ps;
    m_spread_at_ps = from + round_ps(double(nbytes) * m_ps_per_byte);
}

std::uint64_t GpuMemory::schedule_streamed(std::uint64_t arrival_ps, std::uint64_t nbytes, std::uint64_t last_bytes) {
    // The earlier bytes on the background timeline (schedule_spread's), from now; the last ones take their turn in
    // the queue now. Not the whole read in the queue: from its arrival the queue would be held for all of it, and a
    // write arriving meanwhile would wait (3.2 us behind a 16 MiB read at 5.3 TB/s).
    spread(arrival_ps, nbytes > last_bytes ? nbytes - last_bytes : 0);
    const std::uint64_t queued = schedule(arrival_ps, last_bytes);
    const std::uint64_t streamed = m_spread_at_ps + round_ps(double(last_bytes) * m_ps_per_byte) + m_latency_ps;
    return queued > streamed ? queued : streamed;
}

void MemoryAccess::read(tlm::tlm_generic_payload& t, std::uint64_t window_offset) {
    trans = &t;
    command = t.get_command();
    offset = window_offset;
    length = t.get_data_length();
    packets = train_packets(t);
    atomic = command == tlm::TLM_WRITE_COMMAND ? t.get_extension<AtomicExtension>() : nullptr;
    landing = command == tlm::TLM_WRITE_COMMAND ? t.get_extension<LandingFlagExtension>() : nullptr;
}

void GpuMemory::perform(const MemoryAccess& a, bool count) {
    MemoryCounters ignored;
    MemoryCounters& c = count ? m_counters : ignored;
    tlm::tlm_generic_payload& trans = *a.trans;
    const std::uint64_t len = a.length, offset = a.offset;
    const std::uint64_t flag_bytes = m_flags.size() * 8;
    unsigned char* flags = reinterpret_cast<unsigned char*>(m_flags.data());
    const bool touches_flags = offset < flag_bytes;
    const std::uint32_t packets = a.packets;  // a train is that many accesses
    if (a.command == tlm::TLM_READ_COMMAND) {
        if (touches_flags) ++c.flag_reads;
        else c.reads += packets;
        c.bytes_read += len;
        std::memset(trans.get_data_ptr(), 0, len);
        if (touches_flags) std::memcpy(trans.get_data_ptr(), flags + offset, std::min(len, flag_bytes - offset));
    } else if (a.command == tlm::TLM_WRITE_COMMAND) {
        c.bytes_written += len;
        if (a.atomic && touches_flags && offset % 8 == 0) {
            ++c.atomics;
            std::int64_t& word = m_flags[offset / 8];
            word = a.atomic->apply(word);
        } else {
            c.writes += packets;
            if (touches_flags) std::memcpy(flags + offset, trans.get_data_ptr(), std::min(len, flag_bytes - offset));
        }
    }
}

std::int64_t GpuMemory::poll_flag(std::uint64_t index) {
    ++m_counters.flag_reads;
    m_counters.bytes_read += 8;
    return m_flags[index];
}

void GpuMemory::local_atomic(std::uint64_t index, const AtomicExtension& atomic) {
    ++m_counters.atomics;
    m_counters.bytes_written += 8;
    m_flags[index] = atomic.apply(m_flags[index]);
}

void GpuMemory::landing_atomic(std::uint64_t index, AtomicOp op, std::int64_t value) {
    ++m_counters.atomics;
    AtomicExtension atomic;
    atomic.op = op;
    atomic.operand = value;
    m_flags[index] = atomic.apply(m_flags[index]);
}

void GpuMemory::count_local(std::uint64_t reads, std::uint64_t writes, std::uint64_t nbytes) {
    m_counters.reads += reads;
    m_counters.writes += writes;
    m_counters.bytes_read += reads * nbytes;
    m_counters.bytes_written += writes * nbytes;
}

}  // namespace eidola
