// Lets AT initiators (the eidolon GPUs) drive an LT-only target (an interconnect that implements
// only b_transport). Each accepted request is carried out by one of a pool of worker threads
// with b_transport (a thread is made when a request finds none idle, up to `workers`); its annotated delay is waited out, then the response goes back on the AT
// backward path. Debug transport and DMI pass straight through.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/errors.h"
#include "eidola/params.h"
#include "eidola/registry.h"

namespace eidola {

/// The adapter's parameters.
struct AtToLtAdapterParams : ParamGroup {
    /// The most b_transport calls in progress at once (worker threads); 0: one per request in flight.
    IntParam workers{*this, "workers", 0,
                     "most b_transport calls in progress at once (worker threads, made as requests come); 0: no limit "
                     "but the initiator's own (a GPU's max_outstanding)", 0, 1 << 20};
};

/// AT target in, LT initiator out.
class AtToLtAdapter : public sc_core::sc_module,
                      public ErrorReporter,
                      private tlm::tlm_fw_transport_if<>,
                      private tlm::tlm_bw_transport_if<> {
public:
    /// target: AT, bound to the AT initiator.
    inline static const SocketSpec target_spec{"target", "target", "at", "1", "bound to the AT initiator"};
    /// initiator: LT, bound to the LT target.
    inline static const SocketSpec initiator_spec{"initiator", "initiator", "lt", "1", "bound to the LT target"};
    /// Bound to the AT initiator (see target_spec).
    tlm::tlm_target_socket<> target{target_spec.name.c_str()};
    /// Bound to the LT target (see initiator_spec).
    tlm::tlm_initiator_socket<> initiator{initiator_spec.name.c_str()};

    using Params = AtToLtAdapterParams;
    /// The sockets, for the registry.
    static std::vector<SocketSpec> socket_specs() { return {target_spec, initiator_spec}; }
    SC_HAS_PROCESS(AtToLtAdapter);
    AtToLtAdapter(sc_core::sc_module_name name, const ParamSet& params);

private:
    void worker();
    void respond(tlm::tlm_generic_payload* t);
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p, sc_core::sc_time& d) override;
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& d) override { initiator->b_transport(t, d); }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) override {
        return initiator->get_direct_mem_ptr(t, dmi);
    }
    unsigned int transport_dbg(tlm::tlm_generic_payload& t) override { return initiator->transport_dbg(t); }
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override;
    void invalidate_direct_mem_ptr(sc_dt::uint64 a, sc_dt::uint64 b) override { target->invalidate_direct_mem_ptr(a, b); }

    void spawn_worker();

    std::deque<tlm::tlm_generic_payload*> m_requests, m_responses;
    std::int64_t m_limit = 0;              // most workers (0: no limit)
    std::int64_t m_workers = 0, m_busy = 0;  // made so far; in a b_transport call or waiting out its delay
    sc_core::sc_event m_request_event, m_response_free;
    bool m_response_pending = false;
};

}  // namespace eidola
