// Deliberately faulty interconnects for the protocol-checker tests: an AT pass-through bus (one
// port per GPU, decoding windows of 2^40 bytes, 100 ns each way) that breaks one base-protocol
// rule on its fifth transaction. Written against the standard SystemC/TLM headers only.
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace faulty {

/// Which rule the bus breaks.
enum Fault {
    None = 0,
    ResponseTwice = 1,     // sends BEGIN_RESP twice
    ResponseNever = 2,     // never answers one transaction
    ReuseTransaction = 3,  // forwards a request a second time while it is open
    IncompleteStatus = 4,  // answers with TLM_INCOMPLETE_RESPONSE
    ZeroLength = 5,        // forwards a request with data length 0
    OutsideMap = 6,        // forwards a request to an address outside every window
    EndReqTwice = 7,       // sends END_REQ to the initiator for an accepted request
    ByteEnables = 8,       // sets a byte enable length with no byte enable pointer
    StreamingWidth = 9,    // sets the streaming width to 0
    Spin = 10,             // loops forever in nb_transport_fw (a runaway model, for wall limits)
    Misroute = 11,         // forwards a request to the next GPU's port (its address unchanged)
    ErrorStatus = 12,      // answers with TLM_GENERIC_ERROR_RESPONSE
    LateIgnorable = 13,    // sends an ignorable phase for a transaction it has answered (closed)
};

/// An ignorable phase of the bus's own, as a vendor's protocol extension might declare one.
DECLARE_EXTENDED_PHASE(FAULTY_NOTE);

template <int F>
class Bus : public sc_core::sc_module {
public:
    sc_core::sc_vector<tlm_utils::simple_target_socket_tagged<Bus>> target_socket;
    sc_core::sc_vector<tlm_utils::simple_initiator_socket_tagged<Bus>> initiator_socket;

    /// `report`: a file that end_of_simulation() writes the transactions seen to ("": none), as a vendor's IP
    /// writes its statistics at the end of a run; "error": end_of_simulation() reports an error instead.
    Bus(sc_core::sc_module_name name, int ports, std::string report = "")
        : sc_module(name), target_socket("target_socket", ports), initiator_socket("initiator_socket", ports),
          m_req(this, &Bus::request), m_resp(this, &Bus::response), m_report(std::move(report)) {
        static_assert(F >= 0 && F <= 13, "fault kind must be 0..13");
        for (int i = 0; i < ports; ++i) {
            target_socket[i].register_nb_transport_fw(this, &Bus::fw, i);
            initiator_socket[i].register_nb_transport_bw(this, &Bus::bw, i);
        }
    }

    void end_of_simulation() override {
        // "error": the check a vendor's IP makes at the end, reported as SystemC errors are (it throws).
        if (m_report == "error") SC_REPORT_ERROR("faulty::Bus", "transactions still open at the end");
        if (m_report.empty()) return;
        std::ofstream out(m_report);
        out << "transactions " << m_count << "\n";
    }

private:
    tlm::tlm_sync_enum fw(int from, tlm::tlm_generic_payload& t, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
        if (phase != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;  // END_RESP: nothing to do
        m_source[&t] = from;
        const bool faulty = ++m_count == 5;
        if (faulty) m_faulty = &t;
        if (faulty && F == Spin) {
            volatile bool forever = true;  // volatile: the loop must not be optimised away
            while (forever) {
            }
        }
        m_req.notify(t, phase, delay + sc_core::sc_time(100, sc_core::SC_NS));
        phase = tlm::END_REQ;
        if (faulty && F == EndReqTwice) {
            tlm::tlm_phase again = tlm::END_REQ;
            sc_core::sc_time zero = sc_core::SC_ZERO_TIME;
            target_socket[from]->nb_transport_bw(t, again, zero);
        }
        return tlm::TLM_UPDATED;
    }
    void request(tlm::tlm_generic_payload& t, const tlm::tlm_phase&) {
        int to = int(t.get_address() >> 40);
        if (&t == m_faulty && F == Misroute) to = (to + 1) % int(initiator_socket.size());
        if (&t == m_faulty) {
            if (F == ZeroLength) t.set_data_length(0);
            if (F == OutsideMap) t.set_address(t.get_address() + (sc_dt::uint64(1) << 50));
            if (F == ByteEnables) t.set_byte_enable_length(4);
            if (F == StreamingWidth) t.set_streaming_width(0);
        }
        tlm::tlm_phase phase = tlm::BEGIN_REQ;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        initiator_socket[to]->nb_transport_fw(t, phase, delay);
        if (&t == m_faulty && F == ReuseTransaction) {
            phase = tlm::BEGIN_REQ;
            initiator_socket[to]->nb_transport_fw(t, phase, delay);
        }
    }
    tlm::tlm_sync_enum bw(int, tlm::tlm_generic_payload& t, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
        if (phase == tlm::BEGIN_RESP) {
            m_resp.notify(t, phase, delay + sc_core::sc_time(100, sc_core::SC_NS));
            return tlm::TLM_COMPLETED;
        }
        return tlm::TLM_ACCEPTED;
    }
    void response(tlm::tlm_generic_payload& t, const tlm::tlm_phase&) {
        const int to = m_source[&t];
        if (&t == m_faulty) {
            m_faulty = nullptr;
            if (F == ResponseNever) return;
            if (F == IncompleteStatus) t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
            if (F == ErrorStatus) t.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
        }
        tlm::tlm_phase phase = tlm::BEGIN_RESP;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        const bool twice = F == ResponseTwice && m_count >= 5 && !m_doubled;
        target_socket[to]->nb_transport_bw(t, phase, delay);
        if (F == LateIgnorable && m_count >= 5 && !m_doubled) {
            m_doubled = true;
            phase = FAULTY_NOTE;
            target_socket[to]->nb_transport_bw(t, phase, delay);
        }
        if (twice) {
            m_doubled = true;
            phase = tlm::BEGIN_RESP;
            target_socket[to]->nb_transport_bw(t, phase, delay);
        }
    }

    tlm_utils::peq_with_cb_and_phase<Bus> m_req, m_resp;
    std::map<tlm::tlm_generic_payload*, int> m_source;
    tlm::tlm_generic_payload* m_faulty = nullptr;
    int m_count = 0;
    bool m_doubled = false;
    std::string m_report;
};

}  // namespace faulty
