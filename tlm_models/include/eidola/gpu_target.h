// The target side of an eidolon GPU: incoming writes, reads and atomics from peers are served by
// the GPU's memory (in turn, at its latency and bandwidth), and flag words they change wake the
// workgroups waiting on them. AT requests are accepted at once and answered one BEGIN_RESP at a
// time; LT callers (b_transport) are served at the time of the call.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include <tlm>

#include "eidola/bound_interface.h"
#include "eidola/gpu_core.h"

namespace eidola {

class WorkgroupEngine;

/// Serves the GPU's target socket; bound as its forward-path interface.
class GpuTarget : public tlm::tlm_fw_transport_if<> {
public:
    GpuTarget(GpuCore& core, WorkgroupEngine& engine, tlm::tlm_target_socket<>& socket);

    /// The memory finished the incoming request in `slot`: apply it and respond.
    void serve(std::uint32_t slot);
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
};

}  // namespace eidola
