// The target side of an eidolon GPU: incoming writes, reads and atomics from peers are served by
// the GPU's memory (in turn, at its latency and bandwidth), and flag words they change wake the
// workgroups waiting on them. AT requests are accepted at once and answered one BEGIN_RESP at a
// time; LT callers (b_transport) are served at the time of the call. A put's transactions carry a
// LandingFlagExtension: its flag changes once the last of its bytes is in the memory.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include <tlm>

#include "eidola/bound_interface.h"
#include "eidola/gpu_core.h"
#include "eidola/landing_flag_extension.h"

namespace eidola {

class WorkgroupEngine;

/// Serves the GPU's target socket; bound as its forward-path interface.
class GpuTarget : public tlm::tlm_fw_transport_if<> {
public:
    GpuTarget(GpuCore& core, WorkgroupEngine& engine, tlm::tlm_target_socket<>& socket);

    /// The memory finished the incoming request in `slot`: apply it and respond.
    void serve(std::uint32_t slot);
    /// A put's train whose last packet landed after the train was served: its bytes count now (see m_later).
    void land(std::uint32_t index);
    /// The response channel is free again (END_RESP arrived): send the next queued response.
    void next_response();
    /// Bytes written into this GPU by peers.
    std::uint64_t bytes_written() const { return m_bytes_written; }
    /// Synthetic-traffic packets that arrived here (carrying a TrafficStamp).
    std::uint64_t traffic_received() const { return m_traffic_received; }

    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay) override;
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(tlm::tlm_generic_payload& trans) override;

private:
    void send_response(tlm::tlm_generic_payload* trans);
    inline void wrote(std::uint64_t offset, std::uint64_t length);
    inline void stamp(tlm::tlm_generic_payload& trans, std::uint64_t at);
    void landed(const LandingFlagExtension& put, std::uint64_t bytes);

    GpuCore& m_core;
    WorkgroupEngine& m_engine;
    tlm::tlm_target_socket<>& m_socket;
    tlm::tlm_bw_transport_if<>* m_fabric = nullptr;      // m_socket's interface (see bound_interface.h)
    std::vector<MemoryAccess> m_incoming;                // slot -> access being served, read on arrival
    std::vector<std::uint32_t> m_free_slots;
    std::deque<tlm::tlm_generic_payload*> m_responses;   // waiting for the response channel
    bool m_response_pending = false;                     // BEGIN_RESP sent, END_RESP not yet seen
    std::uint64_t m_bytes_written = 0;
    std::uint64_t m_traffic_received = 0;
    // A train of a put is served when its first packet is in, but its last lands (packets - 1) x spacing
    // later: its bytes count only then, so the flag never changes before the put's last byte is in.
    struct LaterLanding {
        LandingFlagExtension put;  // a copy: the payload goes back to its initiator with the response
        std::uint64_t bytes;
    };
    std::vector<std::uint64_t> m_last_landed;  // slot -> when a put train's last packet is in memory (0: not one)
    std::vector<LaterLanding> m_later;         // index -> a landing waiting for its Land action
    std::vector<std::uint32_t> m_free_later;
    // Puts partly landed: (initiator GPU, put id) -> bytes in so far. Ordered, so nothing depends on hashing.
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> m_landing;
};

}  // namespace eidola
