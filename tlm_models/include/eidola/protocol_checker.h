// A TLM-2.0 base-protocol checker: a pass-through module inserted on a binding (check_protocol:
// true). It forwards every call unchanged in both directions and checks the traffic against the
// base protocol's rules; a violation is reported as a Protocol error (see errors.h) naming the
// checker's socket, the rule, the transaction and its phase history, and ends the run.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/address_map.h"
#include "eidola/errors.h"
#include "eidola/params.h"
#include "eidola/registry.h"

namespace eidola {

/// The checker's parameters.
struct ProtocolCheckerParams : ParamGroup {
    /// Which way requests flow, which decides the addresses accepted.
    ChoiceParam toward{*this, "toward", {"fabric", "gpu"},
                       "which way requests flow: into the fabric (global addresses) or into a GPU (global or "
                       "window-local)"};
    /// Toward a GPU: the window it owns, so a request for another window is a misroute.
    IntParam window{*this, "window", -1,
                    "toward a GPU: the window that GPU owns, so a request for another window is a misroute "
                    "(-1: not checked)", -1, 1 << 20};
};

/// Checks one binding: `target` faces the initiator, `initiator` faces the original target.
class ProtocolChecker : public sc_core::sc_module,
                        public ErrorReporter,
                        private tlm::tlm_fw_transport_if<>,
                        private tlm::tlm_bw_transport_if<> {
public:
    /// target: faces the checked initiator.
    inline static const SocketSpec target_spec{"target", "target", "at+lt", "1", "faces the checked initiator"};
    /// initiator: faces the checked target.
    inline static const SocketSpec initiator_spec{"initiator", "initiator", "at+lt", "1", "faces the checked target"};
    /// Bound to the checked initiator (AT and LT calls pass through).
    tlm::tlm_target_socket<> target{target_spec.name.c_str()};
    /// Bound to the checked target.
    tlm::tlm_initiator_socket<> initiator{initiator_spec.name.c_str()};

    using Params = ProtocolCheckerParams;
    /// The sockets, for the registry.
    static std::vector<SocketSpec> socket_specs() { return {target_spec, initiator_spec}; }
    ProtocolChecker(sc_core::sc_module_name name, const ParamSet& params);

    /// Addresses are checked against this map (before simulation).
    void set_address_map(const AddressMap& map) { m_map = map; }
    /// Transactions still awaiting their response, described (for a run that ended with them open).
    std::vector<std::string> unanswered() const;

private:
    enum class State : std::uint8_t { Requested, Accepted, Responding };
    struct Record {
        State state;
        std::string history;
    };

    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p, sc_core::sc_time& d) override;
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& d) override;
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) override;
    unsigned int transport_dbg(tlm::tlm_generic_payload& t) override;
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p, sc_core::sc_time& d) override;
    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) override;

    void check_payload(const tlm::tlm_generic_payload& t, const char* where);
    void check_response_status(const tlm::tlm_generic_payload& t, const char* where);
    void note(tlm::tlm_generic_payload& t, const char* event);
    static bool is_base_phase(const tlm::tlm_phase& phase);
    tlm::tlm_sync_enum ignorable(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase, sc_core::sc_time& delay,
                                 bool forward);
    void after_forward(tlm::tlm_generic_payload& t, tlm::tlm_sync_enum status, const tlm::tlm_phase& phase,
                       bool from_initiator);
    [[noreturn]] void violation(const std::string& rule, const std::string& what, const tlm::tlm_generic_payload& t,
                                const char* kind = "base protocol violation");

    AddressMap m_map;
    bool m_toward_gpu;  // addresses may be window-local on the way into a GPU
    std::int64_t m_window = -1;  // toward a GPU: the window it owns (-1: misroutes not checked)
    std::unordered_map<const tlm::tlm_generic_payload*, Record> m_open;
    const tlm::tlm_generic_payload* m_request_pending = nullptr;   // BEGIN_REQ awaiting END_REQ
    const tlm::tlm_generic_payload* m_response_pending = nullptr;  // BEGIN_RESP awaiting END_RESP
};

/// Text of a transaction for reports: command, address, length.
std::string describe(const tlm::tlm_generic_payload& t);

}  // namespace eidola
