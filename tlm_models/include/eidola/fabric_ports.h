// The TLM interfaces behind a fabric's per-port sockets. A fabric binds targets[i] to a
// FabricTargetPort and initiators[i] to a FabricInitiatorPort; each forwards calls to the fabric
// with its port index, so the fabric sees (port, transaction) and no per-port boilerplate.
#pragma once

#include <cstdint>

#include <tlm>

namespace eidola {

/// Forward path of targets[i]: Fabric must provide request(), forward_b_transport(), forward_debug().
template <class Fabric>
struct FabricTargetPort : tlm::tlm_fw_transport_if<> {
    Fabric& fabric;
    std::uint32_t port;
    FabricTargetPort(Fabric& f, std::uint32_t i) : fabric(f), port(i) {}
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p, sc_core::sc_time& d) override {
        return fabric.request(port, t, p, d);
    }
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& d) override { fabric.forward_b_transport(port, t, d); }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(tlm::tlm_generic_payload& t) override { return fabric.forward_debug(t); }
};

/// Backward path of initiators[i]: Fabric must provide response().
template <class Fabric>
struct FabricInitiatorPort : tlm::tlm_bw_transport_if<> {
    Fabric& fabric;
    std::uint32_t port;
    FabricInitiatorPort(Fabric& f, std::uint32_t i) : fabric(f), port(i) {}
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p, sc_core::sc_time& d) override {
        return fabric.response(port, t, p, d);
    }
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
};

}  // namespace eidola
