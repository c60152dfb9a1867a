// The port shell every Eidola fabric shares: the sockets targets[i] and initiators[i], the TLM
// interfaces behind them, the port count and the address decode. A fabric derives from
// FabricShell<Itself> and implements request(), response(), forward_b_transport() and
// forward_debug(); each socket forwards to those with its port index (no virtual call, no
// per-port boilerplate), so the fabric sees (port, transaction).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/address_map.h"
#include "eidola/bound_interface.h"
#include "eidola/delivered_requests.h"
#include "eidola/errors.h"
#include "eidola/fabric.h"
#include "eidola/multimem_extension.h"
#include "eidola/registry.h"

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

/// The most GPU ports a fabric may have (the maximum of its `ports` parameter).
inline constexpr std::int64_t kMaxFabricPorts = 1 << 20;

/// targets[i] as the catalog documents it (the same for every Eidola fabric).
inline const SocketSpec kFabricTargetsSocket{"targets[i]", "target", "at+lt", "ports", "bound to GPU i's initiator"};
/// initiators[i] as the catalog documents it.
inline const SocketSpec kFabricInitiatorsSocket{"initiators[i]", "initiator", "at", "ports",
                                                "bound to GPU i's target"};

/// The module base of a fabric with `ports` GPU ports; Derived is the fabric itself (CRTP).
template <class Derived>
class FabricShell : public sc_core::sc_module, public Fabric, public ErrorReporter {
public:
    /// targets[i]: AT/LT target bound to GPU i's initiator.
    sc_core::sc_vector<tlm::tlm_target_socket<>> targets;
    /// initiators[i]: AT initiator bound to GPU i's target.
    sc_core::sc_vector<tlm::tlm_initiator_socket<>> initiators;

    /// The sockets, for the registry.
    static std::vector<SocketSpec> socket_specs() { return {kFabricTargetsSocket, kFabricInitiatorsSocket}; }

    void set_address_map(const AddressMap& map) override { m_map = map; }
    /// Number of GPU ports.
    std::uint32_t ports() const { return m_ports; }

protected:
    FabricShell(sc_core::sc_module_name name, std::uint32_t ports)
        : sc_module(name),
          targets(kFabricTargetsSocket.member().c_str(), ports),
          initiators(kFabricInitiatorsSocket.member().c_str(), ports),
          m_delivered(ports),
          m_ports(ports),
          m_bound_targets(ports, nullptr),
          m_bound_initiators(ports, nullptr) {
        Derived& self = static_cast<Derived&>(*this);  // not yet built: only its address is kept
        for (std::uint32_t i = 0; i < ports; ++i) {
            m_target_ports.push_back(std::make_unique<FabricTargetPort<Derived>>(self, i));
            m_initiator_ports.push_back(std::make_unique<FabricInitiatorPort<Derived>>(self, i));
            targets[i].bind(*m_target_ports[i]);
            initiators[i].bind(*m_initiator_ports[i]);
        }
    }

    /// The port owning `address`, or -1 when no port does (the caller answers with an address error).
    std::int64_t decode(std::uint64_t address) const {
        const std::int64_t port = m_map.window_of(address);
        return port < std::int64_t(m_ports) ? port : -1;
    }

    /// The target (a GPU's) bound to initiators[port], through a dense array of the bound interfaces
    /// rather than the port objects (see bound_interface.h).
    tlm::tlm_fw_transport_if<>& target_of(std::uint32_t port) {
        return bound_interface(initiators, port, m_bound_targets[port]);
    }
    /// The initiator (a GPU's) bound to targets[port], its backward path, likewise.
    tlm::tlm_bw_transport_if<>& initiator_of(std::uint32_t port) {
        return bound_interface(targets, port, m_bound_initiators[port]);
    }

    /// A model error at a GPU port, which stops the run: its sockets ("initiators" or "targets"), its
    /// index, and what went wrong there.
    void report_port_error(const char* sockets, std::uint32_t port, const std::string& what) {
        errors().report(ErrorKind::ModelError, std::string(name()) + "." + sockets + "[" + std::to_string(port) + "]: " + what);
    }

    /// A target answered a transaction it was not sent (found in no DeliveredRequests entry):
    /// a model error, which stops the run.
    void report_unknown_response(std::uint32_t port) {
        report_port_error("initiators", port, "BEGIN_RESP for a transaction it was not sent");
    }

    /// Whether the switch can serve multimem request `t` from GPU `gpu` (a switch that reduces at
    /// `reduce_bytes_per_s`, taking up to `max_bytes` in one transaction); if not, reports why as a
    /// model error, answers `t` with an error status and returns false. Both NVLS fabrics check alike.
    bool multimem_accepted(std::uint32_t gpu, tlm::tlm_generic_payload& t, double reduce_bytes_per_s,
                           std::uint64_t max_bytes) {
        const MultimemExtension& m = *t.get_extension<MultimemExtension>();
        std::string why;
        if (reduce_bytes_per_s <= 0) {
            why = "this fabric has no NVLS (set fabric.switch.nvls on a topology: switch fabric)";
        } else if (t.get_data_length() > max_bytes || t.get_data_length() == 0) {
            why = "its length " + std::to_string(t.get_data_length()) + " B is outside 1 B .. " +
                  std::to_string(max_bytes) + " B";
        } else if (m.member_count == 0 || !m.members) {
            why = "its multicast group has no members";
        } else {
            for (std::uint32_t k = 0; k < m.member_count; ++k)
                if (m.members[k] >= m_ports) why = "its multicast group names GPU " + std::to_string(m.members[k]) +
                                                   ", beyond the fabric's " + std::to_string(m_ports) + " ports";
        }
        if (why.empty()) return true;
        report_port_error("targets", gpu, std::string("a multimem access: ") + why);
        t.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
        return false;
    }

    AddressMap m_map;                 ///< the platform's address map
    DeliveredRequests m_delivered;    ///< per target port: requests delivered and not yet answered, with their sources

private:
    std::uint32_t m_ports;  // kept apart from targets.size(): decode() runs per transaction
    std::vector<std::unique_ptr<FabricTargetPort<Derived>>> m_target_ports;
    std::vector<std::unique_ptr<FabricInitiatorPort<Derived>>> m_initiator_ports;
    std::vector<tlm::tlm_fw_transport_if<>*> m_bound_targets;     // per port, resolved on first use
    std::vector<tlm::tlm_bw_transport_if<>*> m_bound_initiators;  // per port, resolved on first use
};

}  // namespace eidola
