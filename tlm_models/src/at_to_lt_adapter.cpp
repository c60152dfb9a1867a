#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn for the worker threads

#include "eidola/at_to_lt_adapter.h"

#include "eidola/registry.h"

namespace eidola {

AtToLtAdapter::AtToLtAdapter(sc_core::sc_module_name name, const ParamSet& given)
    : sc_module(name) {
    const Configured<Params> p(given, basename());
    target.bind(*static_cast<tlm::tlm_fw_transport_if<>*>(this));
    initiator.bind(*static_cast<tlm::tlm_bw_transport_if<>*>(this));
    m_limit = p.workers.get();
}

// Why made on demand rather than a fixed pool: a fixed 16 capped every GPU behind an LT IP at 16 transactions in
// flight, whatever its max_outstanding (a user trial: 37.1 us against 13.7 us with 64 workers, 2026-12-07), and
// a pool of max_outstanding threads per binding would cost thousands of idle stacks where few are needed.
void AtToLtAdapter::spawn_worker() {
    ++m_workers;
    sc_core::sc_spawn([this] { worker(); });
}

tlm::tlm_sync_enum AtToLtAdapter::nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase,
                                                  sc_core::sc_time&) {
    if (phase == tlm::BEGIN_REQ) {
        m_requests.push_back(&t);
        // Each queued request needs an idle worker; a new one starts in the next evaluation and takes it.
        if (std::int64_t(m_requests.size()) > m_workers - m_busy && (m_limit == 0 || m_workers < m_limit))
            spawn_worker();
        m_request_event.notify(sc_core::SC_ZERO_TIME);
        phase = tlm::END_REQ;
        return tlm::TLM_UPDATED;
    }
    if (phase == tlm::END_RESP) {
        m_response_pending = false;
        if (!m_responses.empty()) {
            tlm::tlm_generic_payload* next = m_responses.front();
            m_responses.pop_front();
            respond(next);
        }
        return tlm::TLM_COMPLETED;
    }
    errors().fatal(ErrorKind::ModelError, std::string(name()) + ".target: illegal phase on the forward path");
    return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum AtToLtAdapter::nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
    errors().fatal(ErrorKind::ModelError, std::string(name()) + ".initiator: an LT target called the AT backward path");
    return tlm::TLM_COMPLETED;
}

void AtToLtAdapter::worker() {
    for (;;) {
        while (m_requests.empty()) wait(m_request_event);
        tlm::tlm_generic_payload* t = m_requests.front();
        m_requests.pop_front();
        ++m_busy;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        initiator->b_transport(*t, delay);
        wait(delay);  // the LT target's timing annotation becomes real time here
        --m_busy;
        respond(t);
    }
}

void AtToLtAdapter::respond(tlm::tlm_generic_payload* t) {
    if (m_response_pending) {  // one BEGIN_RESP at a time on the socket
        m_responses.push_back(t);
        return;
    }
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    m_response_pending = true;
    if (target->nb_transport_bw(*t, phase, delay) == tlm::TLM_ACCEPTED) return;
    m_response_pending = false;
    if (!m_responses.empty()) {
        tlm::tlm_generic_payload* next = m_responses.front();
        m_responses.pop_front();
        respond(next);
    }
}

namespace {
const bool registered = register_model(model_info<AtToLtAdapter>(
    "AtToLtAdapter", Role::Adapter,
    "Lets AT initiators drive an LT-only target: b_transport in worker threads, AT responses"));
}  // namespace

}  // namespace eidola
