#include "eidola/protocol_checker.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "eidola/registry.h"

namespace eidola {

std::string describe(const tlm::tlm_generic_payload& t) {
    std::ostringstream out;
    out << (t.is_read() ? "read" : t.is_write() ? "write" : "ignore") << " of " << t.get_data_length()
        << " bytes at 0x" << std::hex << t.get_address() << std::dec;
    return out.str();
}

ProtocolChecker::ProtocolChecker(sc_core::sc_module_name name, const ParamSet& given)
    : sc_module(name) {
    const auto params = Configured<Params>(given, basename());
    m_toward_gpu = params.toward.get() == "gpu";
    m_window = params.window.get();
    target.bind(*static_cast<tlm::tlm_fw_transport_if<>*>(this));
    initiator.bind(*static_cast<tlm::tlm_bw_transport_if<>*>(this));
}

void ProtocolChecker::violation(const std::string& rule, const std::string& what, const tlm::tlm_generic_payload& t,
                                const char* kind) {
    std::ostringstream msg;
    msg << "TLM-2.0 " << kind << " [" << rule << "] at " << target.name() << " -> " << initiator.name() << ": "
        << what << "; transaction: " << describe(t) << "; phase history:";
    auto it = m_open.find(&t);
    msg << (it == m_open.end() || it->second.history.empty() ? std::string(" (none)") : it->second.history);
    errors().fatal(ErrorKind::Protocol, msg.str());  // the transaction cannot go on: unwind the kernel
}

void ProtocolChecker::note(tlm::tlm_generic_payload& t, const char* event) {
    std::ostringstream h;
    h << " " << event << "@" << sc_core::sc_time_stamp();
    m_open[&t].history += h.str();
}

void ProtocolChecker::check_payload(const tlm::tlm_generic_payload& t, const char* where) {
    if (t.get_data_length() == 0) violation("data length", std::string(where) + ": data length is 0", t);
    if (!t.get_data_ptr()) violation("data pointer", std::string(where) + ": data pointer is null", t);
    if (t.get_streaming_width() == 0)
        violation("streaming width", std::string(where) + ": streaming width is 0 (set it to the data length)", t);
    if (t.get_byte_enable_length() && !t.get_byte_enable_ptr())
        violation("byte enables", std::string(where) + ": byte enable length set with a null byte enable pointer", t);
    if (t.get_byte_enable_ptr() && t.get_byte_enable_length() == 0)
        violation("byte enables", std::string(where) + ": byte enable pointer set with a byte enable length of 0", t);
    const std::uint64_t a = t.get_address();
    const bool inside = m_map.window_of(a) >= 0 || (m_toward_gpu && a < m_map.stride);
    if (m_map.windows && !inside)
        violation("address", std::string(where) + ": address is outside the platform's address map", t);
    // A global address of another GPU's window reached this GPU: the interconnect routed it wrongly.
    // A window-local address (below the stride) names no window, so it cannot be judged.
    const std::int64_t owner = m_map.window_of(a);
    if (m_toward_gpu && m_window >= 0 && owner >= 0 && owner != m_window && a >= m_map.stride) {
        std::ostringstream what;
        what << where << ": the address is in window " << owner << " but reached the GPU owning window " << m_window;
        violation("misrouted", what.str(), t);
    }
}

void ProtocolChecker::check_response_status(const tlm::tlm_generic_payload& t, const char* where) {
    if (t.get_response_status() == tlm::TLM_INCOMPLETE_RESPONSE)
        violation("response status", std::string(where) + ": the response still has TLM_INCOMPLETE_RESPONSE", t);
    // Every access the platform makes is to memory that exists, so any error status is the interconnect's fault
    // and the run cannot go on. An error response is legal under the base protocol, so it is not called a violation.
    if (t.get_response_status() != tlm::TLM_OK_RESPONSE)
        violation("response status",
                  std::string(where) + ": the response status is " + t.get_response_string() +
                      ", not TLM_OK_RESPONSE (legal under the base protocol, but every access here is to memory that "
                      "exists, so the interconnect failed it)",
                  t, "transaction failed");
}

bool ProtocolChecker::is_base_phase(const tlm::tlm_phase& phase) {
    return phase == tlm::BEGIN_REQ || phase == tlm::END_REQ || phase == tlm::BEGIN_RESP || phase == tlm::END_RESP;
}

// A phase beyond the four, which the base protocol admits as an ignorable phase (IEEE 1666-2011's
// ignorable phases, as the flow fabric's FLOW_SENT): sent only while its transaction is open, passed on
// unchanged, leaving the base protocol's state as it was, and so answered TLM_ACCEPTED (a recipient that
// does not know it ignores it).
tlm::tlm_sync_enum ProtocolChecker::ignorable(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase,
                                              sc_core::sc_time& delay, bool forward) {
    const std::string name = phase.get_name();
    if (!m_open.count(&t))
        violation("ignorable phase", "phase " + name + " for a transaction that is not open", t);
    note(t, name.c_str());
    const tlm::tlm_sync_enum status =
        forward ? initiator->nb_transport_fw(t, phase, delay) : target->nb_transport_bw(t, phase, delay);
    if (status != tlm::TLM_ACCEPTED)
        violation("ignorable phase", "phase " + name + " answered with " +
                                         (status == tlm::TLM_COMPLETED ? "TLM_COMPLETED" : "TLM_UPDATED") +
                                         ", not TLM_ACCEPTED: an ignorable phase changes no state",
                  t);
    return status;
}

// After a call returned, the return value may itself be a phase transition.
void ProtocolChecker::after_forward(tlm::tlm_generic_payload& t, tlm::tlm_sync_enum status, const tlm::tlm_phase& phase,
                                    bool from_initiator) {
    auto it = m_open.find(&t);
    if (it == m_open.end() || status == tlm::TLM_ACCEPTED) return;
    if (status == tlm::TLM_COMPLETED) {
        if (from_initiator && it->second.state != State::Responding) check_response_status(t, "TLM_COMPLETED");
        if (m_request_pending == &t) m_request_pending = nullptr;
        if (m_response_pending == &t) m_response_pending = nullptr;
        m_open.erase(it);
        return;
    }
    // TLM_UPDATED
    if (phase == tlm::END_REQ && from_initiator) {
        if (it->second.state != State::Requested)
            violation("phase sequence", "END_REQ returned for a request that was already accepted (END_REQ twice)", t);
        note(t, "END_REQ(return)");
        it->second.state = State::Accepted;
        m_request_pending = nullptr;
    } else if (phase == tlm::BEGIN_RESP && from_initiator) {
        note(t, "BEGIN_RESP(return)");
        check_response_status(t, "BEGIN_RESP");
        it->second.state = State::Responding;
        m_request_pending = nullptr;
        m_response_pending = &t;
    } else if (phase == tlm::END_RESP && !from_initiator) {
        m_response_pending = nullptr;
        m_open.erase(it);
    } else {
        violation("phase sequence", std::string("TLM_UPDATED returned with phase ") + phase.get_name(), t);
    }
}

tlm::tlm_sync_enum ProtocolChecker::nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase,
                                                    sc_core::sc_time& delay) {
    if (!is_base_phase(phase)) return ignorable(t, phase, delay, true);
    if (phase == tlm::BEGIN_REQ) {
        if (m_open.count(&t)) violation("transaction reuse", "BEGIN_REQ for a transaction that has not completed", t);
        if (m_request_pending)
            violation("request exclusion", "BEGIN_REQ before the previous request's END_REQ", t);
        check_payload(t, "BEGIN_REQ");
        m_open[&t] = Record{State::Requested, {}};
        note(t, "BEGIN_REQ");
        m_request_pending = &t;
    } else if (phase == tlm::END_RESP) {
        auto it = m_open.find(&t);
        if (it == m_open.end() || it->second.state != State::Responding)
            violation("phase sequence", "END_RESP for a transaction without BEGIN_RESP", t);
        note(t, "END_RESP");
        m_response_pending = nullptr;
    } else {
        violation("phase sequence", std::string("phase ") + phase.get_name() + " on the forward path", t);
    }
    const tlm::tlm_phase sent = phase;
    const tlm::tlm_sync_enum status = initiator->nb_transport_fw(t, phase, delay);
    if (sent == tlm::END_RESP) {
        m_open.erase(&t);
        return status;
    }
    after_forward(t, status, phase, true);
    return status;
}

tlm::tlm_sync_enum ProtocolChecker::nb_transport_bw(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase,
                                                    sc_core::sc_time& delay) {
    if (!is_base_phase(phase)) return ignorable(t, phase, delay, false);
    auto it = m_open.find(&t);
    if (phase == tlm::END_REQ) {
        if (it == m_open.end() || it->second.state != State::Requested || m_request_pending != &t)
            violation("phase sequence", "END_REQ without a pending BEGIN_REQ", t);
        note(t, "END_REQ");
        it->second.state = State::Accepted;
        m_request_pending = nullptr;
    } else if (phase == tlm::BEGIN_RESP) {
        if (it == m_open.end())
            violation("response sent twice", "BEGIN_RESP for a transaction that is not open (answered already, "
                                             "or never requested)", t);
        if (it->second.state == State::Responding)
            violation("response sent twice", "second BEGIN_RESP for the same transaction", t);
        if (m_response_pending) violation("response exclusion", "BEGIN_RESP before the previous END_RESP", t);
        check_response_status(t, "BEGIN_RESP");
        note(t, "BEGIN_RESP");
        if (m_request_pending == &t) m_request_pending = nullptr;  // BEGIN_RESP implies END_REQ
        it->second.state = State::Responding;
        m_response_pending = &t;
    } else {
        violation("phase sequence", std::string("phase ") + phase.get_name() + " on the backward path", t);
    }
    const tlm::tlm_sync_enum status = target->nb_transport_bw(t, phase, delay);
    after_forward(t, status, phase, false);
    if (status == tlm::TLM_COMPLETED && m_response_pending == &t) m_response_pending = nullptr;
    return status;
}

void ProtocolChecker::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    if (m_open.count(&t)) violation("transaction reuse", "b_transport on a transaction that has not completed", t);
    check_payload(t, "b_transport");
    initiator->b_transport(t, delay);
    check_response_status(t, "b_transport");
}

bool ProtocolChecker::get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
    return initiator->get_direct_mem_ptr(t, dmi);
}

unsigned int ProtocolChecker::transport_dbg(tlm::tlm_generic_payload& t) { return initiator->transport_dbg(t); }

void ProtocolChecker::invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
    target->invalidate_direct_mem_ptr(start, end);
}

std::vector<std::string> ProtocolChecker::unanswered() const {
    std::vector<std::string> out;
    for (const auto& [t, record] : m_open) {
        std::ostringstream line;
        line << "TLM-2.0 base protocol violation [response never sent] at " << target.name() << " -> "
             << initiator.name() << ": " << describe(*t) << " was never answered; phase history:" << record.history;
        out.push_back(line.str());
    }
    std::sort(out.begin(), out.end());
    return out;
}

namespace {
const bool registered = register_model(model_info<ProtocolChecker>(
    "ProtocolChecker", Role::Checker,
    "Checks the TLM-2.0 base protocol on one binding and forwards everything unchanged"));
}  // namespace

}  // namespace eidola
