// The base protocol's one-at-a-time rule on a fabric's GPU ports, for the fabrics that time a
// transfer themselves and meet the GPUs only at its two ends (the ideal and flow fabrics): one
// BEGIN_REQ awaiting its END_REQ on each initiators[i], one BEGIN_RESP awaiting its END_RESP on each
// targets[i] (the request and response exclusion rules of IEEE 1666-2011's base protocol), the others waiting
// behind it, first in, first out. One copy of the rule, so both fabrics keep it alike; and with it the
// order of the requests that reach a GPU in one picosecond (arrive(), deliver_arrived(): arrival_turns.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/arrival_turns.h"
#include "eidola/errors.h"
#include "eidola/event_heap.h"
#include "eidola/front_queue.h"

namespace eidola {

/// The ports' turns. They keep the fabric's DeliveredRequests (FabricShell::m_delivered): each request
/// is entered as it goes out and looked up, for its source, when it is answered. Fabric (the owner,
/// passed to each call) provides, beside FabricShell's target_of(), initiator_of() and errors():
///   - sending(dst, trans, src): a request is about to go out on initiators[dst] (before the call,
///     which may answer it at once);
///   - answered(dst, trans, src, at_ps): the target of initiators[dst] answered `trans`, which came
///     from port `src`, at `at_ps`;
///   - book_request_free(dst, at_ps), book_response_free(src, at_ps): call request_freed(dst) /
///     response_freed(src) at `at_ps`.
template <class Fabric>
class PortTurns {
public:
    /// Turns for `ports` GPU ports, all free.
    explicit PortTurns(std::uint32_t ports)
        : m_arrival_turns(ports),
          m_request_busy(ports, 0),
          m_response_busy(ports, 0),
          m_in_request(ports, nullptr),
          m_in_response(ports, nullptr),
          m_request_queue(ports),
          m_response_queue(ports) {}

    /// Sends `trans` (from port `src`; the NVLS unit's own accesses use the port count) to the target
    /// of initiators[dst] now, or after the requests waiting there.
    void deliver(Fabric& f, std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src) {
        if (m_request_busy[dst]) {
            m_request_queue[dst].emplace_back(trans, src);
            return;
        }
        f.m_delivered.delivered(dst, trans, src);
        f.sending(dst, trans, src);
        tlm::tlm_phase phase = tlm::BEGIN_REQ;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        m_request_busy[dst] = true;
        const std::uint64_t now = now_ps();
        switch (f.target_of(dst).nb_transport_fw(*trans, phase, delay)) {
            case tlm::TLM_ACCEPTED:  // END_REQ (or a BEGIN_RESP that implies it) comes on the backward path
                m_in_request[dst] = trans;
                return;
            case tlm::TLM_UPDATED:
                if (phase == tlm::END_REQ) {
                    if (delay == sc_core::SC_ZERO_TIME && m_request_queue[dst].empty()) m_request_busy[dst] = false;
                    else f.book_request_free(dst, now + delay.value());
                    return;
                }
                if (phase == tlm::BEGIN_RESP) break;
                f.errors().report(ErrorKind::ModelError, std::string(f.name()) +
                                                             ".initiators: target returned TLM_UPDATED with an illegal phase");
                return;
            case tlm::TLM_COMPLETED: break;
        }
        // Answered at once: the request channel is free, and the answer heads back.
        f.book_request_free(dst, now + delay.value());
        answer(f, dst, trans, now + delay.value());
    }

    /// Holds `trans` (from port `src`, for initiators[dst]), due now, until deliver_arrived(): the requests
    /// that reach a GPU in one picosecond go in their target's round-robin order (arrival_turns.h).
    void arrive(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src) {
        m_arriving.push_back({trans, dst, src});
    }

    /// Delivers what arrive() holds, in its targets' round-robin order; false if it held nothing. A fabric
    /// calls it once its other actions of the picosecond are done, and again while it returns true (a
    /// delivery may book more for now).
    bool deliver_arrived(Fabric& f) {
        if (m_arriving.empty()) return false;
        // m_delivering is empty between calls, so it lends its storage to the reordering.
        m_arrival_turns.order(m_arriving, m_delivering, [](const Arrival& x) { return x.dst; },
                              [](const Arrival& x) { return x.src; });
        m_delivering.swap(m_arriving);  // deliveries never arrive() more, but a held list must not move under them
        for (const Arrival& a : m_delivering) deliver(f, a.dst, a.trans, a.src);
        m_delivering.clear();
        return true;
    }

    /// Sends `trans`'s response to the initiator of targets[src] now, or after those waiting there.
    void give_back(Fabric& f, std::uint32_t src, tlm::tlm_generic_payload* trans) {
        if (m_response_busy[src]) {
            m_response_queue[src].push_back(trans);
            return;
        }
        tlm::tlm_phase phase = tlm::BEGIN_RESP;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        m_response_busy[src] = true;
        const tlm::tlm_sync_enum status = f.initiator_of(src).nb_transport_bw(*trans, phase, delay);
        if (status == tlm::TLM_ACCEPTED) {  // END_RESP comes on the forward path
            m_in_response[src] = trans;
            return;
        }
        if (delay == sc_core::SC_ZERO_TIME && m_response_queue[src].empty()) m_response_busy[src] = false;
        else f.book_response_free(src, now_ps() + delay.value());
    }

    /// The backward path of initiators[dst]: END_REQ frees its request channel; so does BEGIN_RESP
    /// for the request still awaiting its END_REQ (it implies END_REQ), and BEGIN_RESP is the answer.
    /// Why by transaction: a target may send END_REQ and then BEGIN_RESP for one request, or answer an
    /// earlier request while the next awaits its END_REQ; either way only one free is due.
    tlm::tlm_sync_enum backward(Fabric& f, std::uint32_t dst, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                const sc_core::sc_time& delay) {
        const std::uint64_t at = now_ps() + delay.value();
        if (phase == tlm::END_REQ) {
            if (m_in_request[dst] != &trans) {
                f.report_port_error("initiators", dst, "END_REQ for a transaction not awaiting it");
                return tlm::TLM_COMPLETED;
            }
            end_request(f, dst, at);
            return tlm::TLM_ACCEPTED;
        }
        if (phase == tlm::BEGIN_RESP) {
            if (m_in_request[dst] == &trans) end_request(f, dst, at);
            answer(f, dst, &trans, at);
            return tlm::TLM_COMPLETED;
        }
        f.errors().report(ErrorKind::ModelError, std::string(f.name()) + ".initiators: illegal phase on the backward path");
        return tlm::TLM_COMPLETED;
    }

    /// END_RESP on the forward path of targets[src], at `at_ps`: its response channel is free then.
    void response_ended(Fabric& f, std::uint32_t src, const tlm::tlm_generic_payload& trans, std::uint64_t at_ps) {
        if (m_in_response[src] != &trans) {
            f.report_port_error("targets", src, "END_RESP for a transaction whose response it was not sent");
            return;
        }
        m_in_response[src] = nullptr;
        f.book_response_free(src, at_ps);
    }

    /// initiators[dst]'s request channel is free: the next request waiting there goes.
    void request_freed(Fabric& f, std::uint32_t dst) {
        m_request_busy[dst] = false;
        if (m_request_queue[dst].empty()) return;
        const std::pair<tlm::tlm_generic_payload*, std::uint32_t> w = m_request_queue[dst].front();
        m_request_queue[dst].pop_front();
        deliver(f, dst, w.first, w.second);
    }

    /// targets[src]'s response channel is free: the next response waiting there goes.
    void response_freed(Fabric& f, std::uint32_t src) {
        m_response_busy[src] = false;
        if (m_response_queue[src].empty()) return;
        tlm::tlm_generic_payload* t = m_response_queue[src].front();
        m_response_queue[src].pop_front();
        give_back(f, src, t);
    }

private:
    // The target of initiators[dst] answered `trans` at `at_ps`: its source found, the fabric told.
    void answer(Fabric& f, std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint64_t at_ps) {
        std::uint32_t src = 0;
        if (!f.m_delivered.answered(dst, trans, src)) {
            f.report_unknown_response(dst);
            return;
        }
        f.answered(dst, trans, src, at_ps);
    }

    void end_request(Fabric& f, std::uint32_t dst, std::uint64_t at_ps) {
        m_in_request[dst] = nullptr;
        f.book_request_free(dst, at_ps);
    }

    struct Arrival {
        tlm::tlm_generic_payload* trans;
        std::uint32_t dst, src;
    };
    ArrivalTurns m_arrival_turns;                       // the order of the requests that reach a GPU at once
    std::vector<Arrival> m_arriving, m_delivering;      // arrive()'s, and deliver_arrived()'s scratch
    // Per port: a channel taken, until its free action runs (after the END phase's annotated delay).
    std::vector<std::uint8_t> m_request_busy, m_response_busy;  // bytes, not vector<bool>'s bit arithmetic
    // Per port: the request accepted and awaiting END_REQ, the response accepted and awaiting END_RESP.
    std::vector<const tlm::tlm_generic_payload*> m_in_request, m_in_response;
    std::vector<FrontQueue<std::pair<tlm::tlm_generic_payload*, std::uint32_t>>> m_request_queue;
    std::vector<FrontQueue<tlm::tlm_generic_payload*>> m_response_queue;
};

}  // namespace eidola
