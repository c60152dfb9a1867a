#include "eidola/gpu_target.h"

#include "eidola/flow_extension.h"
#include "eidola/traffic_generator.h"
#include "eidola/train_extension.h"
#include "eidola/workgroup_engine.h"
#include "eidola/free_list.h"

namespace eidola {

GpuTarget::GpuTarget(GpuCore& core, WorkgroupEngine& engine, tlm::tlm_target_socket<>& socket)
    : m_core(core), m_engine(engine), m_socket(socket) {}

// A synthetic packet's one-way latency ends here, on arrival, before the memory serves it.
[[gnu::always_inline]] inline void GpuTarget::stamp(tlm::tlm_generic_payload& trans, std::uint64_t at) {
    if (TrafficStamp* s = trans.get_extension<TrafficStamp>()) {
        s->arrive(at);
        ++m_traffic_received;
    }
}

tlm::tlm_sync_enum GpuTarget::nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                              sc_core::sc_time& delay) {
    const std::uint64_t at = now_ps() + delay.value();
    if (phase == tlm::BEGIN_REQ) {
        stamp(trans, at);
        // Everything serve() needs is read now, while the payload and its extensions are in the
        // cache (see MemoryAccess). The answer is written now too: the memory cannot fail, and the
        // initiator reads the status only with the response (IEEE 1666-2011, 14.17); at 1,024 GPUs
        // writing it on completion was a cache miss of its own on every transaction.
        // Read straight into the slot: a MemoryAccess built aside and copied in is a 16-byte copy
        // the processor cannot forward from the stores that built it (see EventHeap::push).
        const std::uint32_t slot = take_slot(m_incoming, m_free_slots);
        MemoryAccess& access = m_incoming[slot];
        access.read(trans, m_core.map.local(trans.get_address()));
        trans.set_response_status(tlm::TLM_OK_RESPONSE);
        std::uint64_t done;
        const FlowExtension* flow = access.packets > 1 ? trans.get_extension<FlowExtension>() : nullptr;
        // A read whose bytes leave as they are read (flow_extension.h), or a flow whose bytes came in over time.
        if (flow && (flow->streamed || (flow->first_ps && flow->first_ps < at))) {
            const std::uint64_t last = access.length - std::uint64_t(access.packets - 1) * flow->packet_bytes;
            done = flow->streamed ? m_core.memory.schedule_streamed(at, access.length, last)
                                  : m_core.memory.schedule_spread(flow->first_ps, at, access.length, last);
        } else {
            done = m_core.memory.schedule(at, access.length);
        }
        const TrainExtension* train = access.landing && !flow && access.packets > 1
                                          ? trans.get_extension<TrainExtension>() : nullptr;
        if (train && train->spacing_ps) {  // a put's train: when its last packet will be in (see m_later)
            if (m_last_landed.size() <= slot) m_last_landed.resize(slot + 1, 0);
            const std::uint64_t last_bytes = access.length - std::uint64_t(access.packets - 1) * train->packet_bytes;
            m_last_landed[slot] =
                m_core.memory.unqueued_done(at + std::uint64_t(access.packets - 1) * train->spacing_ps, last_bytes);
        }
        m_core.actions.push(done, {GpuActionKind::Serve, slot});
        phase = tlm::END_REQ;  // the memory queues requests itself: accept at once
        return tlm::TLM_UPDATED;
    }
    if (phase == tlm::END_RESP) {
        m_core.actions.push(at, {GpuActionKind::NextResponse, 0});
        return tlm::TLM_COMPLETED;
    }
    m_core.fail(m_core.name() + ".target: unexpected phase on the forward path");
    return tlm::TLM_COMPLETED;
}

// Counts an incoming write and wakes the waiters of every flag word it covers.
[[gnu::always_inline]] inline void GpuTarget::wrote(std::uint64_t offset, std::uint64_t length) {
    m_bytes_written += length;
    for (std::uint64_t f = offset / 8; f < m_core.memory.flag_count() && f * 8 < offset + length; ++f)
        m_engine.flag_written(f);
}

void GpuTarget::serve(std::uint32_t slot) {
    const MemoryAccess access = m_incoming[slot];  // a copy: the slot is free again from here
    m_free_slots.push_back(slot);
    m_core.memory.perform(access);
    if (access.command == tlm::TLM_WRITE_COMMAND) wrote(access.offset, access.length);
    if (access.landing) {
        const std::uint64_t last = slot < m_last_landed.size() ? m_last_landed[slot] : 0;
        if (last > now_ps()) {  // a train whose last packet is not in yet: its bytes count when it is
            const std::uint32_t index = take_slot(m_later, m_free_later);
            m_later[index] = LaterLanding{*access.landing, access.length};
            m_core.actions.push(last, {GpuActionKind::Land, index});
        } else {
            landed(*access.landing, access.length);
        }
        if (slot < m_last_landed.size()) m_last_landed[slot] = 0;
    }
    send_response(access.trans);
}

// A put's bytes landed: once all of them are in (its parts may come in any order), its flag changes.
void GpuTarget::landed(const LandingFlagExtension& put, std::uint64_t bytes) {
    if (bytes < put.total_bytes) {  // one of several parts: count it, and go on only with the last
        const auto key = std::make_pair(put.initiator, put.put_id);
        std::uint64_t& in = m_landing[key];
        in += bytes;
        if (in < put.total_bytes) return;
        m_landing.erase(key);
    }
    const std::uint64_t flag = m_core.map.local(put.flag_address) / 8;
    if (flag >= m_core.memory.flag_count()) {
        m_core.fail(m_core.name() + ".target: a put's landing flag is outside the flag words");
        return;
    }
    m_core.memory.landing_atomic(flag, put.op, put.value);
    m_engine.flag_written(flag);
}

void GpuTarget::land(std::uint32_t index) {
    const LaterLanding later = m_later[index];
    m_free_later.push_back(index);
    landed(later.put, later.bytes);
}

void GpuTarget::next_response() {
    m_response_pending = false;
    if (m_responses.empty()) return;
    tlm::tlm_generic_payload* t = m_responses.front();
    m_responses.pop_front();
    send_response(t);
}

void GpuTarget::send_response(tlm::tlm_generic_payload* trans) {
    if (m_response_pending) {  // base protocol: one BEGIN_RESP at a time on a socket
        m_responses.push_back(trans);
        return;
    }
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    tlm::tlm_sync_enum status = bound_interface(m_socket, m_fabric).nb_transport_bw(*trans, phase, delay);
    m_response_pending = true;
    if (status == tlm::TLM_ACCEPTED) return;  // END_RESP will come on the forward path
    if (status == tlm::TLM_UPDATED && phase != tlm::END_RESP) {
        m_core.fail(m_core.name() + ".target: nb_transport_bw returned TLM_UPDATED with an illegal phase");
        return;
    }
    m_core.actions.push(now_ps() + delay.value(), {GpuActionKind::NextResponse, 0});
}

// Loosely timed callers run ahead of simulated time: the access takes effect, and queues for the
// memory, at the time of the call; its service time is added to the caller's annotated delay.
// (Reserving the memory at the annotated future time would block earlier AT accesses behind it.)
void GpuTarget::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    const std::uint64_t now = now_ps();
    stamp(trans, now + delay.value());
    const std::uint64_t done = m_core.memory.schedule(now, trans.get_data_length()) + delay.value();
    const std::uint64_t offset = m_core.map.local(trans.get_address());
    m_core.memory.perform(trans, offset);
    if (trans.is_write()) {
        wrote(offset, trans.get_data_length());
        if (const LandingFlagExtension* l = trans.get_extension<LandingFlagExtension>())
            landed(*l, trans.get_data_length());
    }
    delay = ps_to_time(done - now);
}

unsigned int GpuTarget::transport_dbg(tlm::tlm_generic_payload& trans) {
    m_core.memory.perform(trans, m_core.map.local(trans.get_address()), false);
    return trans.get_data_length();
}

}  // namespace eidola
